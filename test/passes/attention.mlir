// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-form-attention))' --verify-diagnostics | FileCheck %s
// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-form-attention,fuse-prepare-library-calls,fuse-decompose-composites,fuse-make-broadcasts-explicit,canonicalize,cse,fuse-form-fusion-regions))' 2>/dev/null | FileCheck %s --check-prefix=FUSED

// GPT-2: q, k and v are slices of one [B, T, 3 * H * D] projection, split
// into heads by reshape and transpose; a constant causal mask (true where
// hidden) selects -inf; the merge transposes and reshapes back. All of it
// is one attention reading the projection at columns 0, 64 and 128 and
// writing [B, T, H * D].
// CHECK-LABEL: func.func @gpt2
// CHECK-NEXT: %[[A:.*]] = fuse.attention %arg0, %arg0, %arg0 {causal = true, head_dim = 16 : i64, key_column = 64 : i64, kv_num_heads = 4 : i64, num_heads = 4 : i64, scale = 2.500000e-01 : f64, value_column = 128 : i64, value_head_dim = 16 : i64} : (tensor<1x4x192xf32>, tensor<1x4x192xf32>, tensor<1x4x192xf32>) -> tensor<1x4x64xf32>
// CHECK-NEXT: return %[[A]]
// FUSED-LABEL: func.func @gpt2
// FUSED-NEXT: %[[R:.*]] = fuse.fusion ins(%arg0 : tensor<1x4x192xf32>)
// FUSED-NEXT: ^bb0(%[[X:.*]]: tensor<1x4x192xf32>):
// FUSED-NEXT: fuse.attention %[[X]], %[[X]], %[[X]]
// FUSED: return %[[R]]
func.func @gpt2(%qkv: tensor<1x4x192xf32>) -> tensor<1x4x64xf32> {
  %q = fuse.slice %qkv {axes = array<i64: 2>, starts = array<i64: 0>, ends = array<i64: 64>} : tensor<1x4x192xf32> -> tensor<1x4x64xf32>
  %k = fuse.slice %qkv {axes = array<i64: 2>, starts = array<i64: 64>, ends = array<i64: 128>} : tensor<1x4x192xf32> -> tensor<1x4x64xf32>
  %v = fuse.slice %qkv {axes = array<i64: 2>, starts = array<i64: 128>, ends = array<i64: 192>} : tensor<1x4x192xf32> -> tensor<1x4x64xf32>
  %q4 = fuse.reshape %q : tensor<1x4x64xf32> to tensor<1x4x4x16xf32>
  %k4 = fuse.reshape %k : tensor<1x4x64xf32> to tensor<1x4x4x16xf32>
  %v4 = fuse.reshape %v : tensor<1x4x64xf32> to tensor<1x4x4x16xf32>
  %qh = fuse.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
  %kt = fuse.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x4x16xf32> -> tensor<1x4x16x4xf32>
  %vh = fuse.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
  %s = fuse.matmul %qh, %kt : (tensor<1x4x4x16xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x4x4xf32>
  %c = fuse.constant dense<4.0> : tensor<f32>
  %scaled = fuse.div %s, %c : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %hidden = fuse.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1>
  %ninf = fuse.constant dense<0xFF800000> : tensor<f32>
  %masked = fuse.select %hidden, %ninf, %scaled : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = fuse.softmax %masked : tensor<1x4x4x4xf32>
  %o = fuse.matmul %p, %vh : (tensor<1x4x4x4xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ot = fuse.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
  %y = fuse.reshape %ot : tensor<1x4x4x16xf32> to tensor<1x4x64xf32>
  return %y : tensor<1x4x64xf32>
}

// -----

// Llama: q and k come out of the rotary embedding as [B, H, T, D]; the
// scale divides before an additive constant of 0 and -inf (above a diagonal
// shifted by 2: a query sees 2 keys more than its index), which is the
// causal rule with offset 2. A multiply of q by a scalar folds into the
// scale too.
// CHECK-LABEL: func.func @llama
// CHECK-NEXT: fuse.attention %arg0, %arg1, %arg2 {causal = true, causal_offset = 2 : i64, head_dim = 8 : i64, kv_num_heads = 2 : i64, num_heads = 2 : i64, scale = 1.000000e+00 : f64, value_head_dim = 8 : i64} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
func.func @llama(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32> {
  %two = fuse.constant dense<2.0> : tensor<f32>
  %qs = fuse.mul %q, %two : (tensor<1x2x3x8xf32>, tensor<f32>) -> tensor<1x2x3x8xf32>
  %kt = fuse.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x5x8xf32> -> tensor<1x2x8x5xf32>
  %s = fuse.matmul %qs, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %c = fuse.constant dense<2.0> : tensor<f32>
  %scaled = fuse.div %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %causal = fuse.constant dense<[[0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<3x5xf32>
  %biased = fuse.add %scaled, %causal : (tensor<1x2x3x5xf32>, tensor<3x5xf32>) -> tensor<1x2x3x5xf32>
  %p = fuse.softmax %biased : tensor<1x2x3x5xf32>
  %o = fuse.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  return %o : tensor<1x2x3x8xf32>
}

// -----

// A bias that is not a causal pattern is the kernel's: an input added, and
// a bool input whose true hides (the select puts -inf where it holds),
// negated into "visible".
// CHECK-LABEL: func.func @biases
// CHECK: fuse.attention %arg0, %arg1, %arg2 bias %arg3 {head_dim = 8 : i64, kv_num_heads = 2 : i64, num_heads = 2 : i64, scale = 1.000000e+00 : f64, value_head_dim = 8 : i64}
// CHECK: %[[KEEP:.*]] = fuse.not %arg4
// CHECK: fuse.attention %arg0, %arg1, %arg2 bias %[[KEEP]]
func.func @biases(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %b: tensor<2x1x5xf32>, %hide: tensor<3x5xi1>) -> (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) {
  %kt = fuse.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x5x8xf32> -> tensor<1x2x8x5xf32>
  %s = fuse.matmul %q, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %biased = fuse.add %s, %b : (tensor<1x2x3x5xf32>, tensor<2x1x5xf32>) -> tensor<1x2x3x5xf32>
  %p = fuse.softmax %biased : tensor<1x2x3x5xf32>
  %o = fuse.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  %kt2 = fuse.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x5x8xf32> -> tensor<1x2x8x5xf32>
  %s2 = fuse.matmul %q, %kt2 : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %ninf = fuse.constant dense<0xFF800000> : tensor<f32>
  %masked = fuse.select %hide, %ninf, %s2 : (tensor<3x5xi1>, tensor<f32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %p2 = fuse.softmax %masked : tensor<1x2x3x5xf32>
  %o2 = fuse.matmul %p2, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  return %o, %o2 : tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
}

// -----

// A sliding window of 1 key before the diagonal, as a constant mask.
// CHECK-LABEL: func.func @window
// CHECK: fuse.attention %arg0, %arg1, %arg2 {causal = true, head_dim = 8 : i64, kv_num_heads = 1 : i64, num_heads = 1 : i64, scale = 1.000000e+00 : f64, value_head_dim = 8 : i64, window_left = 1 : i64}
func.func @window(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %kt = fuse.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x8xf32> -> tensor<1x1x8x4xf32>
  %s = fuse.matmul %q, %kt : (tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x4x4xf32>
  %keep = fuse.constant dense<[[true, false, false, false], [true, true, false, false], [false, true, true, false], [false, false, true, true]]> : tensor<4x4xi1>
  %ninf = fuse.constant dense<0xFF800000> : tensor<f32>
  %masked = fuse.select %keep, %s, %ninf : (tensor<4x4xi1>, tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %p = fuse.softmax %masked : tensor<1x1x4x4xf32>
  %o = fuse.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// torch's dynamo exporter writes k^T with the batch dims merged around the
// transpose: reshape [B, H, Tk, D] to [B*H, Tk, D], transpose [0, 2, 1],
// reshape to [B, H, D, Tk] (and scales q and k^T by sqrt(scale) each).
// Attention reads k as [B, H, Tk, D]. With symbolic dims, the dims the
// reshapes name say that the merged and split dims are the same.
// CHECK-LABEL: func.func @dynamo_key
// CHECK-NEXT: %[[A:.*]] = fuse.attention %arg0, %arg1, %arg2 {head_dim = 16 : i64, kv_num_heads = 4 : i64, num_heads = 4 : i64, scale = 2.500000e-01 : f64, value_head_dim = 16 : i64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: return %[[A]]
func.func @dynamo_key(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %root = fuse.constant dense<0.5> : tensor<1xf32>
  %qs = fuse.mul %q, %root : (tensor<2x4x8x16xf32>, tensor<1xf32>) -> tensor<2x4x8x16xf32>
  %merged = fuse.reshape %k : tensor<2x4x8x16xf32> to tensor<8x8x16xf32>
  %swapped = fuse.transpose %merged {perm = array<i64: 0, 2, 1>} : tensor<8x8x16xf32> -> tensor<8x16x8xf32>
  %kt = fuse.reshape %swapped : tensor<8x16x8xf32> to tensor<2x4x16x8xf32>
  %kts = fuse.mul %kt, %root : (tensor<2x4x16x8xf32>, tensor<1xf32>) -> tensor<2x4x16x8xf32>
  %s = fuse.matmul %qs, %kts : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %p = fuse.softmax %s : tensor<2x4x8x8xf32>
  %o = fuse.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @dynamo_key_symbolic
// CHECK-NEXT: %[[A:.*]] = fuse.attention %arg0, %arg1, %arg2 {{.*}} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
func.func @dynamo_key_symbolic(%q: tensor<?x4x?x16xf32> {fuse.dims = ["batch", 4, "seq", 16]}, %k: tensor<?x4x?x16xf32> {fuse.dims = ["batch", 4, "seq", 16]}, %v: tensor<?x4x?x16xf32> {fuse.dims = ["batch", 4, "seq", 16]}) -> tensor<?x4x?x16xf32> attributes {fuse.symbols = [["batch", 1, 8], ["seq", 1, 64]]} {
  %merged = fuse.reshape %k {fuse.dims = ["4*batch", "seq", 16]} : tensor<?x4x?x16xf32> to tensor<?x?x16xf32>
  %swapped = fuse.transpose %merged {perm = array<i64: 0, 2, 1>} : tensor<?x?x16xf32> -> tensor<?x16x?xf32>
  %kt = fuse.reshape %swapped {fuse.dims = ["batch", 4, 16, "seq"]} : tensor<?x16x?xf32> to tensor<?x4x16x?xf32>
  %s = fuse.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c = fuse.constant dense<0.25> : tensor<f32>
  %scaled = fuse.mul %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = fuse.softmax %scaled : tensor<?x4x?x?xf32>
  %o = fuse.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// The same reshapes, but the first merges the wrong dims ([B, H*Tk, D]
// with H*Tk dynamic): not the transpose of k, so no attention.
func.func @dynamo_key_wrong_merge(%q: tensor<?x4x?x16xf32> {fuse.dims = ["batch", 4, "seq", 16]}, %k: tensor<?x4x?x16xf32> {fuse.dims = ["batch", 4, "seq", 16]}, %v: tensor<?x4x?x16xf32> {fuse.dims = ["batch", 4, "seq", 16]}) -> tensor<?x4x?x16xf32> attributes {fuse.symbols = [["batch", 1, 8], ["seq", 1, 64]]} {
  %merged = fuse.reshape %k {fuse.dims = ["batch", "4*seq", 16]} : tensor<?x4x?x16xf32> to tensor<?x?x16xf32>
  %swapped = fuse.transpose %merged {perm = array<i64: 0, 2, 1>} : tensor<?x?x16xf32> -> tensor<?x16x?xf32>
  %kt = fuse.reshape %swapped {fuse.dims = ["batch", 4, 16, "seq"]} : tensor<?x16x?xf32> to tensor<?x4x16x?xf32>
  %s = fuse.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  // expected-remark @+1 {{attention not formed: the key operand is not a transposed [B, H, Tk, D] tensor}}
  %p = fuse.softmax %s : tensor<?x4x?x?xf32>
  %o = fuse.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Where the chain differs from attention, it stays, with a remark.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: fuse.attention
func.func @not_attention(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %kt_given: tensor<1x2x8x5xf32>, %v: tensor<1x2x5x8xf32>, %b: tensor<3x5xf32>) -> (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x5xf32>) {
  %c = fuse.constant dense<0.5> : tensor<f32>
  %kt = fuse.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x5x8xf32> -> tensor<1x2x8x5xf32>
  %s = fuse.matmul %q, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %biased = fuse.add %s, %b : (tensor<1x2x3x5xf32>, tensor<3x5xf32>) -> tensor<1x2x3x5xf32>
  %scaled = fuse.mul %biased, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  // expected-remark @+1 {{attention not formed: the scale applies after the bias}}
  %p = fuse.softmax %scaled : tensor<1x2x3x5xf32>
  %o = fuse.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  %s2 = fuse.matmul %q, %kt_given : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  // expected-remark @+1 {{attention not formed: the key operand is not a transposed [B, H, Tk, D] tensor (its head dim would not be contiguous)}}
  %p2 = fuse.softmax %s2 : tensor<1x2x3x5xf32>
  %o2 = fuse.matmul %p2, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  %kt3 = fuse.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x5x8xf32> -> tensor<1x2x8x5xf32>
  %s3 = fuse.matmul %q, %kt3 : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  // expected-remark @+1 {{attention not formed: the probabilities have other users than the matmul with v}}
  %p3 = fuse.softmax %s3 : tensor<1x2x3x5xf32>
  %o3 = fuse.matmul %p3, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  return %o, %o2, %o3, %p3 : tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x5xf32>
}

// -----

// Grouped-query heads as torch writes them: each of the 2 kv heads
// repeated for 2 query heads (reshape, broadcast, reshape) is read once
// per group by the kernel instead.
// CHECK-LABEL: func.func @grouped
// CHECK-NEXT: fuse.attention %arg0, %arg1, %arg2 {head_dim = 8 : i64, kv_num_heads = 2 : i64, num_heads = 4 : i64, scale = 1.000000e+00 : f64, value_head_dim = 8 : i64} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32>
func.func @grouped(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %k5 = fuse.reshape %k : tensor<1x2x5x8xf32> to tensor<1x2x1x5x8xf32>
  %kg = fuse.broadcast_to %k5 : tensor<1x2x1x5x8xf32> to tensor<1x2x2x5x8xf32>
  %kr = fuse.reshape %kg : tensor<1x2x2x5x8xf32> to tensor<1x4x5x8xf32>
  %v5 = fuse.reshape %v : tensor<1x2x5x8xf32> to tensor<1x2x1x5x8xf32>
  %vg = fuse.broadcast_to %v5 : tensor<1x2x1x5x8xf32> to tensor<1x2x2x5x8xf32>
  %vr = fuse.reshape %vg : tensor<1x2x2x5x8xf32> to tensor<1x4x5x8xf32>
  %kt = fuse.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x5x8xf32> -> tensor<1x4x8x5xf32>
  %s = fuse.matmul %q, %kt : (tensor<1x4x3x8xf32>, tensor<1x4x8x5xf32>) -> tensor<1x4x3x5xf32>
  %p = fuse.softmax %s : tensor<1x4x3x5xf32>
  %o = fuse.matmul %p, %vr : (tensor<1x4x3x5xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32>
  return %o : tensor<1x4x3x8xf32>
}
