// RUN: fusec-opt %s --split-input-file --fuse-lower-precision | FileCheck %s
// RUN: fusec-opt %s --split-input-file --fuse-lower-precision=dtype=f16 | FileCheck %s --check-prefix=F16
// RUN: not fusec-opt %s --split-input-file --fuse-lower-precision=dtype=fp8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: --precision: 'fp8' is not a precision fusec lowers to (bf16 or f16)

// The signature stays f32: a cast after each input a lowered op reads.
// Everything between runs in bf16; a matmul read only in f32 (here,
// returned) writes its f32 accumulator instead of a cast after it.
// CHECK-LABEL: func.func @boundaries(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK-DAG: %[[X:.*]] = fuse.cast %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-DAG: %[[W:.*]] = fuse.cast %arg1 : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK: %[[S:.*]] = fuse.sin %[[X]] : tensor<4x8xbf16>
// CHECK: %[[M:.*]] = fuse.matmul %[[S]], %[[W]] : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xf32>
// CHECK: return %[[M]] : tensor<4x3xf32>
// F16-LABEL: func.func @boundaries
// F16: fuse.matmul {{.*}} : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
func.func @boundaries(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %s = fuse.sin %x : tensor<4x8xf32>
  %m = fuse.matmul %s, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %m : tensor<4x3xf32>
}

// -----

// A value read by lowered ops and returned: one cast back to f32 for the
// return.
// CHECK-LABEL: func.func @mixed_readers
// CHECK: %[[M:.*]] = fuse.matmul {{.*}} -> tensor<4x3xbf16>
// CHECK: %[[WIDE:.*]] = fuse.cast %[[M]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK: %[[E:.*]] = fuse.exp %[[M]] : tensor<4x3xbf16>
// CHECK: %[[EW:.*]] = fuse.cast %[[E]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK: return %[[WIDE]], %[[EW]]
func.func @mixed_readers(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %m = fuse.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %e = fuse.exp %m : tensor<4x3xf32>
  return %m, %e : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Arithmetic whose result becomes an integer stays f32 back to where it
// starts (here, positions read from an i64 input: T5's relative position
// buckets); a matmul feeding such a cast is not exact anyway and is
// lowered, writing its f32 accumulator for the f32 ops.
// CHECK-LABEL: func.func @exact_integers
// CHECK: %[[P:.*]] = fuse.cast %arg0 : tensor<8xi64> to tensor<8xf32>
// CHECK: %[[L:.*]] = fuse.log %[[P]] : tensor<8xf32>
// CHECK: %[[B:.*]] = fuse.mul %[[L]], %{{.*}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: fuse.cast %[[B]] : tensor<8xf32> to tensor<8xi64>
// CHECK: %[[M:.*]] = fuse.matmul {{.*}} : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xf32>
// CHECK: %[[F:.*]] = fuse.floor %[[M]] : tensor<2x2xf32>
// CHECK: fuse.cast %[[F]] : tensor<2x2xf32> to tensor<2x2xi32>
func.func @exact_integers(%positions: tensor<8xi64>, %a: tensor<2x2xf32>) -> (tensor<8xi64>, tensor<2x2xi32>) {
  %p = fuse.cast %positions : tensor<8xi64> to tensor<8xf32>
  %l = fuse.log %p : tensor<8xf32>
  %scale = fuse.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %b = fuse.mul %l, %scale : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %bucket = fuse.cast %b : tensor<8xf32> to tensor<8xi64>
  %m = fuse.matmul %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %f = fuse.floor %m : tensor<2x2xf32>
  %i = fuse.cast %f : tensor<2x2xf32> to tensor<2x2xi32>
  return %bucket, %i : tensor<8xi64>, tensor<2x2xi32>
}

// -----

// A bitcast reads f32 bits: its operand stays f32. Tensors of other
// dtypes are left as they are.
// CHECK-LABEL: func.func @untouched
// CHECK: %[[E:.*]] = fuse.exp %{{.*}} : tensor<4xbf16>
// CHECK: %[[W:.*]] = fuse.cast %[[E]] : tensor<4xbf16> to tensor<4xf32>
// CHECK: fuse.bitcast %[[W]] : tensor<4xf32> to tensor<4xi32>
// CHECK: fuse.exp %arg1 : tensor<4xf16>
// CHECK: fuse.neg %arg2 : tensor<4xf64>
func.func @untouched(%x: tensor<4xf32>, %h: tensor<4xf16>, %d: tensor<4xf64>) -> (tensor<4xi32>, tensor<4xf16>, tensor<4xf64>) {
  %e = fuse.exp %x : tensor<4xf32>
  %bits = fuse.bitcast %e : tensor<4xf32> to tensor<4xi32>
  %eh = fuse.exp %h : tensor<4xf16>
  %nd = fuse.neg %d : tensor<4xf64>
  return %bits, %eh, %nd : tensor<4xi32>, tensor<4xf16>, tensor<4xf64>
}
