// RUN: fusec-opt %s --fuse-lower-precision | FileCheck %s
// RUN: fusec-opt %s --fuse-lower-precision=dtype=f16 | FileCheck %s --check-prefix=F16
// RUN: fusec-opt %s '--fuse-lower-precision=keep=keep_me' | FileCheck %s --check-prefix=KEEP
// RUN: fusec-opt %s --fuse-lower-precision=dtype=f16 2>&1 >/dev/null | FileCheck %s --check-prefix=SATURATE
// SATURATE: remark: --precision: 1 of 4 values of this constant lie past f16's largest finite value and saturate to it
// RUN: not fusec-opt %s '--fuse-lower-precision=keep=keep_me,no_such_node' 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: --keep-f32: the model has no node named 'no_such_node'

// The nodes --keep-f32 names (their NameLoc) stay f32.
// Constants are converted once (no cast at run time): a finite value past
// the dtype's range saturates (f32's lowest is bf16's lowest, f16's is
// -65504), so `(1 - mask) * lowest` stays 0 where the mask is 1; infinities
// and NaN stay what they are. An f32 op's constant stays f32 as well.
// CHECK-LABEL: func.func @constants
// CHECK-DAG: fuse.constant dense<[-3.389530e+38, 0xFF80, 0x7FC0, 1.000000e+00]> : tensor<4xbf16>
// CHECK-DAG: fuse.constant dense<1.000000e+00> : tensor<4xbf16>
// CHECK-NOT: fuse.constant {{.*}}f32
// F16-LABEL: func.func @constants
// F16-DAG: fuse.constant dense<[-6.550400e+04, 0xFC00, 0x7E00, 1.000000e+00]> : tensor<4xf16>
// KEEP-LABEL: func.func @constants
// KEEP-DAG: %[[C:.*]] = fuse.constant dense<[-3.40282347E+38, 0xFF800000, 0x7FC00000, 1.000000e+00]> : tensor<4xf32>
// KEEP-DAG: fuse.constant dense<[-3.389530e+38, 0xFF80, 0x7FC0, 1.000000e+00]> : tensor<4xbf16>
// KEEP: fuse.mul %{{.*}}, %[[C]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @constants(%mask: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %lowest = fuse.constant dense<[-3.40282347e+38, 0xFF800000, 0x7FC00000, 1.0]> : tensor<4xf32>
  %one = fuse.constant dense<1.0> : tensor<4xf32>
  %inverted = fuse.sub %one, %mask : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %masked = fuse.mul %inverted, %lowest : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %kept = fuse.mul %mask, %lowest : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("keep_me")
  return %masked, %kept : tensor<4xf32>, tensor<4xf32>
}

