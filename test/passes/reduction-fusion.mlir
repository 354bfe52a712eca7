// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-decompose-composites,fuse-make-broadcasts-explicit,canonicalize,cse,fuse-form-fusion-regions))' --verify-diagnostics | FileCheck %s

// Softmax: max, broadcast, sub, exp, sum, broadcast, div in one region.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[R:.*]] = fuse.fusion ins(%{{.*}} : tensor<8x128xf32>) -> tensor<8x128xf32>
// CHECK: %[[M:.*]] = fuse.reduce_max %{{.*}} {axes = array<i64: 1>}
// CHECK: %[[MB:.*]] = fuse.broadcast_to %[[M]] : tensor<8x1xf32> to tensor<8x128xf32>
// CHECK: %[[E:.*]] = fuse.exp
// CHECK: %[[S:.*]] = fuse.reduce_sum %[[E]]
// CHECK: %[[SB:.*]] = fuse.broadcast_to %[[S]]
// CHECK: %[[Y:.*]] = fuse.div %[[E]], %[[SB]]
// CHECK: fuse.yield %[[Y]]
// CHECK-NOT: fuse.fusion
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %y = fuse.softmax %x {axis = -1 : i64} : tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}

// -----

// Layer norm with weight and bias: one region; the weight and bias are
// region inputs read through broadcasts.
// CHECK-LABEL: func.func @layer_norm
// CHECK: fuse.fusion ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
// CHECK-COUNT-2: fuse.reduce_sum
// CHECK: fuse.rsqrt
// CHECK: fuse.yield
// CHECK-NOT: fuse.fusion
func.func @layer_norm(%x: tensor<8x128xf32>, %w: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<8x128xf32> {
  %y = fuse.layer_norm %x weight %w bias %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}

// -----

// x + r, then layer norm: one region with two results when the sum is
// used too (bf16 computed in f32 inside).
// CHECK-LABEL: func.func @add_layer_norm
// CHECK: %[[R:.*]]:2 = fuse.fusion ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128xbf16>, tensor<8x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<8x128xbf16>, tensor<8x128xbf16>
// CHECK: %[[A:.*]] = fuse.add
// CHECK: fuse.cast %[[A]] : tensor<8x128xbf16> to tensor<8x128xf32>
// CHECK-COUNT-2: fuse.reduce_sum
// CHECK-NOT: fuse.fusion
// CHECK: return %[[R]]#{{[01]}}, %[[R]]#{{[01]}}
func.func @add_layer_norm(%x: tensor<8x128xbf16>, %r: tensor<8x128xbf16>, %w: tensor<128xbf16>, %b: tensor<128xbf16>) -> (tensor<8x128xbf16>, tensor<8x128xbf16>) {
  %s = fuse.add %x, %r : (tensor<8x128xbf16>, tensor<8x128xbf16>) -> tensor<8x128xbf16>
  %y = fuse.layer_norm %s weight %w bias %b : (tensor<8x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<8x128xbf16>
  return %y, %s : tensor<8x128xbf16>, tensor<8x128xbf16>
}

// -----

// RMS norm times its weight: one region; the bf16 weight is cast after its
// broadcast, inside the region.
// CHECK-LABEL: func.func @rms_norm
// CHECK: fuse.fusion ins(%{{.*}}, %{{.*}} : tensor<8x128xbf16>, tensor<128xbf16>) -> tensor<8x128xbf16>
// CHECK: fuse.reduce_sum
// CHECK: %[[WB:.*]] = fuse.broadcast_to %{{.*}} : tensor<128xbf16> to tensor<8x128xbf16>
// CHECK: fuse.cast %[[WB]] : tensor<8x128xbf16> to tensor<8x128xf32>
// CHECK-NOT: fuse.fusion
func.func @rms_norm(%x: tensor<8x128xbf16>, %w: tensor<128xbf16>) -> tensor<8x128xbf16> {
  %y = fuse.rms_norm %x weight %w {epsilon = 1.0e-6 : f64} : (tensor<8x128xbf16>, tensor<128xbf16>) -> tensor<8x128xbf16>
  return %y : tensor<8x128xbf16>
}

// -----

// Layer norm followed by gelu: the epilogue joins the region.
// CHECK-LABEL: func.func @layer_norm_gelu
// CHECK: fuse.fusion
// CHECK: fuse.reduce_sum
// CHECK: fuse.erf
// CHECK: fuse.yield
// CHECK-NOT: fuse.fusion
func.func @layer_norm_gelu(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %y = fuse.layer_norm %x : (tensor<8x128xf32>) -> tensor<8x128xf32>
  %z = fuse.gelu %y : tensor<8x128xf32>
  return %z : tensor<8x128xf32>
}

// -----

// A column reduction's result exists only after the whole column is read:
// subtracting it from every element is a second kernel.
// CHECK-LABEL: func.func @column_mean_centered
// CHECK: %[[M:.*]] = fuse.fusion ins(%{{.*}} : tensor<64x8xf32>) -> tensor<1x8xf32>
// CHECK: fuse.reduce_sum
// CHECK: fuse.div
// CHECK: fuse.fusion ins(%[[M]], %{{.*}} : tensor<1x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
// CHECK: fuse.broadcast_to
// CHECK: fuse.sub
func.func @column_mean_centered(%x: tensor<64x8xf32>) -> tensor<64x8xf32> {
  // expected-remark @+1 {{not fused with its consumer 'fuse.broadcast_to': it reduces [64]x8 as columns, whose results exist only after the whole column is read; only ops on the reduced shape follow it}}
  %m = fuse.reduce_mean %x {axes = array<i64: 0>} : tensor<64x8xf32> -> tensor<1x8xf32>
  %c = fuse.sub %x, %m : (tensor<64x8xf32>, tensor<1x8xf32>) -> tensor<64x8xf32>
  return %c : tensor<64x8xf32>
}

// -----

// Reductions over different axes walk different spaces: two kernels.
// CHECK-LABEL: func.func @different_spaces
// CHECK-COUNT-2: fuse.fusion
func.func @different_spaces(%x: tensor<8x16xf32>) -> tensor<1x1xf32> {
  // expected-remark @+1 {{not fused with its consumer 'fuse.reduce_sum': it reduces [8]x1 but its producer 8x[16]; one kernel walks one space}}
  %r = fuse.reduce_sum %x {axes = array<i64: 1>} : tensor<8x16xf32> -> tensor<8x1xf32>
  %t = fuse.reduce_sum %r {axes = array<i64: 0>} : tensor<8x1xf32> -> tensor<1x1xf32>
  return %t : tensor<1x1xf32>
}

// -----

// Two layer norms with the same weight and bias, a path through layout
// kernels between them: CSE shares the weight's and the bias's broadcasts,
// and each is copied into the second region, so the first region writes
// only its result (not the broadcast 8x128 weight and bias) and the second
// reads the 128-element vectors.
// CHECK-LABEL: func.func @layer_norms_share_weights
// CHECK: fuse.fusion ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32> {
// CHECK: fuse.transpose
// CHECK: fuse.transpose
// CHECK: fuse.fusion ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32> {
// CHECK-COUNT-2: fuse.reduce_sum
// CHECK: return
func.func @layer_norms_share_weights(%x: tensor<8x128xf32>, %w: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<8x128xf32> {
  // expected-remark @+2 {{copied into the region of its consumer 'fuse.mul', as it cannot join it where it is: the path through 'fuse.transpose' outside the region would form a cycle}}
  // expected-remark @+1 {{copied into the region of its consumer 'fuse.add', as it cannot join it where it is: the path through 'fuse.transpose' outside the region would form a cycle}}
  %y = fuse.layer_norm %x weight %w bias %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  // expected-remark @+1 {{not fused: 'fuse.transpose' moves elements}}
  %t = fuse.transpose %y {perm = array<i64: 1, 0>} : tensor<8x128xf32> -> tensor<128x8xf32>
  // expected-remark @+3 {{not fused: 'fuse.transpose' moves elements}}
  // expected-remark @+2 {{not fused with its consumer 'fuse.reduce_sum': layout ops run as kernels of their own}}
  // expected-remark @+1 {{not fused with its consumer 'fuse.sub': layout ops run as kernels of their own}}
  %t2 = fuse.transpose %t {perm = array<i64: 1, 0>} : tensor<128x8xf32> -> tensor<8x128xf32>
  %z = fuse.layer_norm %t2 weight %w bias %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  return %z : tensor<8x128xf32>
}

// -----

// A mean over a symbolic dim divides by the run's count: dim_size(seq)
// times 8 folds to one fuse.dim_size, which the reduction's region reads
// as one of the sizes its kernel takes (cloned in, as a splat constant is)
// rather than a one-element region of its own.
// CHECK-LABEL: func.func @mean_over_seq
// CHECK: fuse.fusion ins(%{{.*}} : tensor<?x?x8xf32>) -> tensor<?x1x1xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.dim_size {factor = 8 : i64, symbols = ["seq"]} : tensor<i64>
// CHECK: fuse.reduce_sum
// CHECK: fuse.div
// CHECK-NOT: fuse.fusion
func.func @mean_over_seq(%t: tensor<?x?x8xf32> {fuse.dims = ["batch", "seq", 8]}) -> tensor<?x1x1xf32> attributes {fuse.symbols = [["batch", 1, 4], ["seq", 1, 40]]} {
  %0 = fuse.reduce_mean %t {axes = array<i64: 1, 2>} : tensor<?x?x8xf32> -> tensor<?x1x1xf32>
  return %0 : tensor<?x1x1xf32>
}

// -----

// A symbolic size an elementwise op reads is cloned into its region too;
// where another op reads it as well (here the function returns it), it is
// also a region of its own.
// CHECK-LABEL: func.func @divide_by_seq
// CHECK: %[[SIZE:.*]] = fuse.fusion -> tensor<i64>
// CHECK-NEXT: fuse.dim_size {symbols = ["seq"]}
// CHECK: %[[Y:.*]] = fuse.fusion ins(%{{.*}} : tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.dim_size {symbols = ["seq"]}
// CHECK: fuse.div
// CHECK: return %[[Y]], %[[SIZE]]
func.func @divide_by_seq(%x: tensor<?x8xf32> {fuse.dims = ["seq", 8]}) -> (tensor<?x8xf32>, tensor<i64>) attributes {fuse.symbols = [["seq", 1, 64]]} {
  %n = fuse.dim_size {symbols = ["seq"]} : tensor<i64>
  %b = fuse.broadcast_to %n : tensor<i64> to tensor<?x8xi64>
  %f = fuse.cast %b : tensor<?x8xi64> to tensor<?x8xf32>
  %y = fuse.div %x, %f : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y, %n : tensor<?x8xf32>, tensor<i64>
}
