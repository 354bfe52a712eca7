// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls))' 2>/dev/null | FileCheck %s
// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls{pad-columns=false}))' 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: fusec-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fuse-prepare-library-calls))' 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// GPT-2's head: 1001 bf16 columns are not whole 16-byte rows. The constant
// weight and bias get zero columns up to 1008 and the users read a slice.
// CHECK-LABEL: func.func @head
// CHECK-DAG: %[[W:.*]] = fuse.constant dense<{{.*}}> : tensor<768x1008xbf16>
// CHECK-DAG: %[[B:.*]] = fuse.constant dense<{{.*}}> : tensor<1008xbf16>
// CHECK: %[[M:.*]] = fuse.matmul %arg0, %[[W]] bias %[[B]] : (tensor<64x768xbf16>, tensor<768x1008xbf16>, tensor<1008xbf16>) -> tensor<64x1008xbf16>
// CHECK: %[[S:.*]] = fuse.slice %[[M]] {axes = array<i64: 1>, ends = array<i64: 1001>, starts = array<i64: 0>} : tensor<64x1008xbf16> -> tensor<64x1001xbf16>
// CHECK: fuse.cast %[[S]]
// OFF-LABEL: func.func @head
// OFF: fuse.matmul {{.*}} -> tensor<64x1001xbf16>
// OFF-NOT: fuse.slice
// REMARK: remark: 'fuse.matmul' runs as one library call with its bias add folded in; its 1001 columns are padded to 1008 (whole 16-byte rows, which cuBLASLt's fast kernels need) and its users read a slice of the result
func.func @head(%x: tensor<64x768xbf16>) -> tensor<64x1001xf32> {
  %w = fuse.constant dense<1.0> : tensor<768x1001xbf16>
  %b = fuse.constant dense<0.5> : tensor<1001xbf16>
  %m = fuse.matmul %x, %w : (tensor<64x768xbf16>, tensor<768x1001xbf16>) -> tensor<64x1001xbf16>
  %a = fuse.add %m, %b : (tensor<64x1001xbf16>, tensor<1001xbf16>) -> tensor<64x1001xbf16>
  %c = fuse.cast %a : tensor<64x1001xbf16> to tensor<64x1001xf32>
  return %c : tensor<64x1001xf32>
}

// -----

// A transposed weight ([n, k], PyTorch's Linear) gets zero rows; f32
// columns align at 4.
// CHECK-LABEL: func.func @transposed_f32
// CHECK: %[[W:.*]] = fuse.constant dense<{{.*}}> : tensor<260x128xf32>
// CHECK: %[[M:.*]] = fuse.matmul %arg0, %[[W]] {transpose_b = true} : (tensor<2x64x128xf32>, tensor<260x128xf32>) -> tensor<2x64x260xf32>
// CHECK: fuse.slice %[[M]] {axes = array<i64: 2>, ends = array<i64: 257>, starts = array<i64: 0>} : tensor<2x64x260xf32> -> tensor<2x64x257xf32>
func.func @transposed_f32(%x: tensor<2x64x128xf32>) -> tensor<2x64x257xf32> {
  %w = fuse.constant dense<2.0> : tensor<257x128xf32>
  %m = fuse.matmul %x, %w {transpose_b = true} : (tensor<2x64x128xf32>, tensor<257x128xf32>) -> tensor<2x64x257xf32>
  return %m : tensor<2x64x257xf32>
}

// -----

// Left alone: aligned columns, a small call (padding would cost more than
// the slow kernel), and a weight computed at run time.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: fuse.slice
// CHECK: fuse.matmul {{.*}} -> tensor<64x1024xbf16>
// CHECK: fuse.matmul {{.*}} -> tensor<8x1001xbf16>
// CHECK: fuse.matmul {{.*}} -> tensor<64x1001xbf16>
// CHECK-NOT: fuse.slice
func.func @left_alone(%x: tensor<64x768xbf16>, %small: tensor<8x768xbf16>, %v: tensor<768x1001xbf16>) -> (tensor<64x1024xbf16>, tensor<8x1001xbf16>, tensor<64x1001xbf16>) {
  %aligned = fuse.constant dense<1.0> : tensor<768x1024xbf16>
  %w = fuse.constant dense<1.0> : tensor<768x1001xbf16>
  %a = fuse.matmul %x, %aligned : (tensor<64x768xbf16>, tensor<768x1024xbf16>) -> tensor<64x1024xbf16>
  %s = fuse.matmul %small, %w : (tensor<8x768xbf16>, tensor<768x1001xbf16>) -> tensor<8x1001xbf16>
  %r = fuse.matmul %x, %v : (tensor<64x768xbf16>, tensor<768x1001xbf16>) -> tensor<64x1001xbf16>
  return %a, %s, %r : tensor<64x1024xbf16>, tensor<8x1001xbf16>, tensor<64x1001xbf16>
}
