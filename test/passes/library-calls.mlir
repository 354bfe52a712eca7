// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls))' --verify-diagnostics | FileCheck %s
// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls{epilogues=false}))' 2>/dev/null | FileCheck %s --check-prefix=CPU
// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls,fuse-decompose-composites,fuse-make-broadcasts-explicit,canonicalize,cse,fuse-form-fusion-regions))' 2>/dev/null | FileCheck %s --check-prefix=FUSED
// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls{epilogues=false}))' 2>&1 >/dev/null | FileCheck %s --check-prefix=CPUREMARK
// CPUREMARK: remark: 'fuse.matmul' runs as one library call with its transpose of the rhs and scale folded in; the bias add runs in a kernel after the call: bias adds and activations are folded on the CUDA target only

// Linear + bias + gelu(tanh): transpose, scale, bias and activation all go
// into one call.
// CHECK-LABEL: func.func @linear_gelu_tanh
// CHECK-NOT: fuse.transpose
// CHECK-NOT: fuse.add
// CHECK: %[[Y:.*]] = fuse.matmul %arg0, %arg1 bias %arg2 {alpha = 2.000000e+00 : f64, epilogue = "gelu_tanh", transpose_b = true}
// CHECK-NOT: fuse.gelu
// CHECK: return %[[Y]]
// On the CPU only the transpose and the scale fold; the bias and gelu stay.
// CPU-LABEL: func.func @linear_gelu_tanh
// CPU: fuse.matmul %arg0, %arg1 {alpha = 2.000000e+00 : f64, transpose_b = true}
// CPU: fuse.add
// CPU: fuse.gelu
// FUSED-LABEL: func.func @linear_gelu_tanh
// FUSED-NEXT: %[[Y:.*]] = fuse.matmul %arg0, %arg1 bias %arg2
// FUSED-NEXT: return %[[Y]]
func.func @linear_gelu_tanh(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %t = fuse.transpose %w {perm = array<i64: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  // expected-remark @+1 {{'fuse.matmul' runs as one library call with its transpose of the rhs, scale, bias add and gelu_tanh epilogue folded in}}
  %m = fuse.matmul %x, %t : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %c = fuse.constant dense<2.0> : tensor<f32>
  %s = fuse.mul %m, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %a = fuse.add %s, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y = fuse.gelu %a {approximate = "tanh"} : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Exact gelu is no cuBLASLt epilogue: the bias folds, gelu stays (and fuses
// into one kernel that reads the call's output once).
// CHECK-LABEL: func.func @linear_gelu_erf
// CHECK: %[[B:.*]] = fuse.reshape %arg2 : tensor<1x6xbf16> to tensor<6xbf16>
// CHECK: %[[M:.*]] = fuse.matmul %arg0, %arg1 bias %[[B]] : (tensor<4x8xbf16>, tensor<8x6xbf16>, tensor<6xbf16>)
// CHECK: fuse.gelu %[[M]]
// FUSED-LABEL: func.func @linear_gelu_erf
// FUSED: %[[M:.*]] = fuse.matmul
// FUSED: fuse.fusion ins(%[[M]] : tensor<4x6xbf16>)
// FUSED: fuse.erf
func.func @linear_gelu_erf(%x: tensor<4x8xbf16>, %w: tensor<8x6xbf16>, %b: tensor<1x6xbf16>) -> tensor<4x6xbf16> {
  // expected-remark @+1 {{with its bias add folded in; exact (erf) gelu is not a cuBLASLt epilogue}}
  %m = fuse.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x6xbf16>) -> tensor<4x6xbf16>
  %a = fuse.add %b, %m : (tensor<1x6xbf16>, tensor<4x6xbf16>) -> tensor<4x6xbf16>
  %y = fuse.gelu %a : tensor<4x6xbf16>
  return %y : tensor<4x6xbf16>
}

// -----

// Gemm: transposes and alpha on the call, beta * C as a kernel, C added as
// the bias when it is a vector of N.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[C:.*]] = fuse.mul %arg2
// CHECK: fuse.matmul %arg0, %arg1 bias %[[C]] {alpha = 5.000000e-01 : f64, transpose_a = true, transpose_b = true}
func.func @gemm(%a: tensor<32x8xf32>, %b: tensor<16x32xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  // expected-remark @+1 {{with its bias add folded in}}
  %y = fuse.gemm %a, %b c %c {alpha = 0.5 : f64, beta = 3.0 : f64, trans_a = true, trans_b = true} : (tensor<32x8xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A C that is not a vector of N stays an add; gemm without C is the call.
// CHECK-LABEL: func.func @gemm_matrix_c
// CHECK: %[[M:.*]] = fuse.matmul %arg0, %arg1 :
// CHECK: fuse.add %[[M]], %arg2
func.func @gemm_matrix_c(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>, %c: tensor<8x1xf32>) -> tensor<8x16xf32> {
  // expected-remark @+1 {{'fuse.matmul' runs as one library call}}
  %y = fuse.gemm %a, %b c %c : (tensor<8x32xf32>, tensor<32x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A batch of activations times one weight is one product: the epilogue
// folds. A partly broadcast batch is made explicit.
// CHECK-LABEL: func.func @batched
// CHECK: fuse.matmul %arg0, %arg1 {epilogue = "relu"} : (tensor<2x3x4x8xf32>, tensor<8x5xf32>)
// CHECK: %[[A:.*]] = fuse.broadcast_to %arg2 : tensor<3x4x8xf32> to tensor<2x3x4x8xf32>
// CHECK: %[[B:.*]] = fuse.broadcast_to %arg3 : tensor<2x1x8x5xf32> to tensor<2x3x8x5xf32>
// CHECK: %[[M:.*]] = fuse.matmul %[[A]], %[[B]] :
// CHECK: fuse.relu %[[M]]
func.func @batched(%x: tensor<2x3x4x8xf32>, %w: tensor<8x5xf32>, %y: tensor<3x4x8xf32>, %v: tensor<2x1x8x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  // expected-remark @+1 {{with its relu epilogue folded in}}
  %m = fuse.matmul %x, %w : (tensor<2x3x4x8xf32>, tensor<8x5xf32>) -> tensor<2x3x4x5xf32>
  %r = fuse.relu %m : tensor<2x3x4x5xf32>
  // expected-remark @+1 {{the activation runs in a kernel after the call: a batched call takes no epilogue}}
  %n = fuse.matmul %y, %v : (tensor<3x4x8xf32>, tensor<2x1x8x5xf32>) -> tensor<2x3x4x5xf32>
  %s = fuse.relu %n : tensor<2x3x4x5xf32>
  return %r, %s : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// Scales that would change the product's special values stay separate: 0
// (0 * inf is NaN) and non-finite ones; f64 calls take no epilogue; a
// product with a second user keeps its add.
// CHECK-LABEL: func.func @not_folded
// CHECK: fuse.matmul %arg0, %arg1 : (tensor<2x3xf32>, tensor<3x4xf32>)
// CHECK: fuse.mul
// CHECK: fuse.matmul %arg2, %arg3 : (tensor<2x3xf64>, tensor<3x4xf64>)
// CHECK: fuse.relu
// CHECK: %[[M:.*]] = fuse.matmul %arg0, %arg1 :
// CHECK: fuse.add %[[M]], %arg4
func.func @not_folded(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %xd: tensor<2x3xf64>, %wd: tensor<3x4xf64>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf64>, tensor<2x4xf32>, tensor<2x4xf32>) {
  // expected-remark @+1 {{'fuse.matmul' runs as one library call}}
  %m = fuse.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %zero = fuse.constant dense<0.0> : tensor<f32>
  %s = fuse.mul %m, %zero : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  // expected-remark @+1 {{f64 calls take no epilogue}}
  %md = fuse.matmul %xd, %wd : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
  %rd = fuse.relu %md : tensor<2x4xf64>
  // expected-remark @+1 {{'fuse.matmul' runs as one library call}}
  %m2 = fuse.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %a = fuse.add %m2, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %s, %rd, %a, %m2 : tensor<2x4xf32>, tensor<2x4xf64>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// int8 weights with one scale per output channel: few rows run as the
// quantized GEMV; a constant [k, n] weight is transposed at compile time.
// More rows dequantize, then call the library.
// CHECK-LABEL: func.func @int8_weights
// CHECK: %[[D:.*]] = fuse.dequantize_linear
// CHECK: %[[WT:.*]] = fuse.constant dense<{{\[\[}}1, 3], [2, 4]]> : tensor<2x2xi8>
// CHECK: fuse.quantized_matmul %arg0, %[[WT]], %arg1 : (tensor<1x2xbf16>, tensor<2x2xi8>, tensor<2xbf16>) -> tensor<1x2xbf16>
// CHECK: fuse.matmul %arg2, %[[D]] :
func.func @int8_weights(%x: tensor<1x2xbf16>, %s: tensor<2xbf16>, %many: tensor<9x2xbf16>) -> (tensor<1x2xbf16>, tensor<9x2xbf16>) {
  %w = fuse.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %d = fuse.dequantize_linear %w, %s {axis = 1 : i64} : (tensor<2x2xi8>, tensor<2xbf16>) -> tensor<2x2xbf16>
  // expected-remark @+1 {{'fuse.matmul' with int8 weights and 1 row(s) runs as one quantized GEMV kernel}}
  %y = fuse.matmul %x, %d : (tensor<1x2xbf16>, tensor<2x2xbf16>) -> tensor<1x2xbf16>
  // expected-remark @+1 {{its int8 weights (9 rows, more than 8) are dequantized by a kernel before the call}}
  %z = fuse.matmul %many, %d : (tensor<9x2xbf16>, tensor<2x2xbf16>) -> tensor<9x2xbf16>
  return %y, %z : tensor<1x2xbf16>, tensor<9x2xbf16>
}

// -----

// GELU's tanh approximation as the exporters write it out (GPT-2's
// x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x * x * x)))) after a
// linear layer is the call's gelu_tanh epilogue.
// CHECK-LABEL: func.func @linear_gelu_written_out
// CHECK: %[[Y:.*]] = fuse.matmul %arg0, %arg1 bias %arg2 {epilogue = "gelu_tanh"}
// CHECK-NOT: fuse.tanh
// CHECK: return %[[Y]]
// CPU-LABEL: func.func @linear_gelu_written_out
// CPU: fuse.tanh
func.func @linear_gelu_written_out(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %cubic = fuse.constant dense<0.044715> : tensor<f32>
  %sqrt = fuse.constant dense<0.797884583> : tensor<f32>
  %one = fuse.constant dense<1.0> : tensor<f32>
  %half = fuse.constant dense<0.5> : tensor<f32>
  // expected-remark @+1 {{with its bias add and gelu_tanh epilogue (written out) folded in}}
  %m = fuse.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %y = fuse.add %b, %m : (tensor<6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %y2 = fuse.mul %y, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %y3 = fuse.mul %y, %y2 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %k = fuse.mul %cubic, %y3 : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %inner = fuse.add %y, %k : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %u = fuse.mul %sqrt, %inner : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %t = fuse.tanh %u : tensor<4x6xf32>
  %e = fuse.add %one, %t : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %p = fuse.mul %y, %e : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %g = fuse.mul %half, %p : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

// The same with pow(x, 3), 0.5 * x first and the constants rounded to bf16.
// CHECK-LABEL: func.func @matmul_gelu_written_out_pow
// CHECK: %[[Y:.*]] = fuse.matmul %arg0, %arg1 {epilogue = "gelu_tanh"}
// CHECK-NOT: fuse.pow
// CHECK: return %[[Y]]
func.func @matmul_gelu_written_out_pow(%x: tensor<4x8xbf16>, %w: tensor<8x6xbf16>) -> tensor<4x6xbf16> {
  %three = fuse.constant dense<3.0> : tensor<bf16>
  %cubic = fuse.constant dense<0.0446777344> : tensor<bf16>
  %sqrt = fuse.constant dense<0.796875> : tensor<bf16>
  %one = fuse.constant dense<1.0> : tensor<bf16>
  %half = fuse.constant dense<0.5> : tensor<bf16>
  // expected-remark @+1 {{with its gelu_tanh epilogue (written out) folded in}}
  %y = fuse.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x6xbf16>) -> tensor<4x6xbf16>
  %h = fuse.mul %y, %half : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<4x6xbf16>
  %y3 = fuse.pow %y, %three : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<4x6xbf16>
  %k = fuse.mul %y3, %cubic : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<4x6xbf16>
  %inner = fuse.add %k, %y : (tensor<4x6xbf16>, tensor<4x6xbf16>) -> tensor<4x6xbf16>
  %u = fuse.mul %inner, %sqrt : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<4x6xbf16>
  %t = fuse.tanh %u : tensor<4x6xbf16>
  %e = fuse.add %t, %one : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<4x6xbf16>
  %g = fuse.mul %h, %e : (tensor<4x6xbf16>, tensor<4x6xbf16>) -> tensor<4x6xbf16>
  return %g : tensor<4x6xbf16>
}

// -----

// Not folded: the pre-activation is also an output, or a constant is not
// GELU's (0.6 for 0.5).
// CHECK-LABEL: func.func @gelu_written_out_not_folded
// CHECK-COUNT-2: fuse.tanh
func.func @gelu_written_out_not_folded(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %three = fuse.constant dense<3.0> : tensor<f32>
  %cubic = fuse.constant dense<0.044715> : tensor<f32>
  %sqrt = fuse.constant dense<0.797884583> : tensor<f32>
  %one = fuse.constant dense<1.0> : tensor<f32>
  %half = fuse.constant dense<0.5> : tensor<f32>
  %wrong = fuse.constant dense<0.6> : tensor<f32>
  // expected-remark @+1 {{'fuse.matmul' runs as one library call}}
  %y = fuse.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %y3 = fuse.pow %y, %three : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %k = fuse.mul %y3, %cubic : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %inner = fuse.add %k, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %u = fuse.mul %inner, %sqrt : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %t = fuse.tanh %u : tensor<4x6xf32>
  %e = fuse.add %t, %one : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = fuse.mul %y, %e : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %g = fuse.mul %p, %half : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  // expected-remark @+1 {{'fuse.matmul' runs as one library call}}
  %z = fuse.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %z3 = fuse.pow %z, %three : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %zk = fuse.mul %z3, %cubic : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %zinner = fuse.add %zk, %z : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %zu = fuse.mul %zinner, %sqrt : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %zt = fuse.tanh %zu : tensor<4x6xf32>
  %ze = fuse.add %zt, %one : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %zp = fuse.mul %z, %ze : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %zg = fuse.mul %zp, %wrong : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  return %g, %y, %zg : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
