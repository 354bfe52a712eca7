// RUN: fusec-opt %s --split-input-file --verify-diagnostics | fusec-opt --split-input-file | FileCheck %s
// The layout ops survive a print/parse round trip, with their ONNX attrs
// (negative axes, INT64_MIN/INT64_MAX bounds, zero-size dims) as written;
// the verifiers' errors follow.

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x3x4xf32>, %z: tensor<2x0x3xbf16>, %s: tensor<i1>) -> (tensor<4x2x3xf32>, tensor<3x2x0xbf16>, tensor<i1>) {
  // CHECK: fuse.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %0 = fuse.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: fuse.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : tensor<2x0x3xbf16> -> tensor<3x2x0xbf16>
  %1 = fuse.transpose %z {perm = array<i64: 2, 0, 1>} : tensor<2x0x3xbf16> -> tensor<3x2x0xbf16>
  // CHECK: fuse.transpose %{{.*}} {perm = array<i64>} : tensor<i1> -> tensor<i1>
  %2 = fuse.transpose %s {perm = array<i64>} : tensor<i1> -> tensor<i1>
  return %0, %1, %2 : tensor<4x2x3xf32>, tensor<3x2x0xbf16>, tensor<i1>
}

// -----

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<2x3x4xf32>) -> (tensor<2x1x2xf32>, tensor<2x3x4xf32>, tensor<2x0x4xf32>) {
  // CHECK: fuse.slice %{{.*}} {axes = array<i64: 1, -1>, ends = array<i64: 2, -9223372036854775808>, starts = array<i64: 1, -1>, steps = array<i64: 1, -2>} : tensor<2x3x4xf32> -> tensor<2x1x2xf32>
  %0 = fuse.slice %x {starts = array<i64: 1, -1>, ends = array<i64: 2, -9223372036854775808>, axes = array<i64: 1, -1>, steps = array<i64: 1, -2>} : tensor<2x3x4xf32> -> tensor<2x1x2xf32>
  // CHECK: fuse.slice %{{.*}} {ends = array<i64: 9223372036854775807>, starts = array<i64: -100>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %1 = fuse.slice %x {starts = array<i64: -100>, ends = array<i64: 9223372036854775807>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  // CHECK: fuse.slice %{{.*}} {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 5>} : tensor<2x3x4xf32> -> tensor<2x0x4xf32>
  %2 = fuse.slice %x {starts = array<i64: 5>, ends = array<i64: 1>, axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x0x4xf32>
  return %0, %1, %2 : tensor<2x1x2xf32>, tensor<2x3x4xf32>, tensor<2x0x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat
func.func @concat(%x: tensor<2x3xi64>, %y: tensor<2x5xi64>, %z: tensor<2x0xi64>) -> (tensor<2x8xi64>, tensor<2x3xi64>) {
  // CHECK: fuse.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x0xi64>, tensor<2x5xi64>) -> tensor<2x8xi64>
  %0 = fuse.concat %x, %z, %y {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x0xi64>, tensor<2x5xi64>) -> tensor<2x8xi64>
  // CHECK: fuse.concat %{{.*}} {axis = 0 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %1 = fuse.concat %x {axis = 0 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0, %1 : tensor<2x8xi64>, tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @gather
func.func @gather(%x: tensor<2x3x4xf16>, %i: tensor<5xi32>, %j: tensor<i64>) -> (tensor<2x5x4xf16>, tensor<3x4xf16>) {
  // CHECK: fuse.gather %{{.*}}, %{{.*}} {axis = -2 : i64} : (tensor<2x3x4xf16>, tensor<5xi32>) -> tensor<2x5x4xf16>
  %0 = fuse.gather %x, %i {axis = -2 : i64} : (tensor<2x3x4xf16>, tensor<5xi32>) -> tensor<2x5x4xf16>
  // The default axis 0 is not printed.
  // CHECK: fuse.gather %{{.*}}, %{{.*}} : (tensor<2x3x4xf16>, tensor<i64>) -> tensor<3x4xf16>
  %1 = fuse.gather %x, %j {axis = 0 : i64} : (tensor<2x3x4xf16>, tensor<i64>) -> tensor<3x4xf16>
  return %0, %1 : tensor<2x5x4xf16>, tensor<3x4xf16>
}

// -----

// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<2x3xi8>, %b: tensor<4xi1>) -> (tensor<3x4xi8>, tensor<2x4xi8>, tensor<6xi1>) {
  // CHECK: fuse.pad %{{.*}} {constant_value = -7.000000e+00 : f64, pads = array<i64: 1, -1, 0, 2>} : tensor<2x3xi8> -> tensor<3x4xi8>
  %0 = fuse.pad %x {pads = array<i64: 1, -1, 0, 2>, constant_value = -7.0 : f64} : tensor<2x3xi8> -> tensor<3x4xi8>
  // CHECK: fuse.pad %{{.*}} {axes = array<i64: -1>, pads = array<i64: 0, 1>} : tensor<2x3xi8> -> tensor<2x4xi8>
  %1 = fuse.pad %x {pads = array<i64: 0, 1>, axes = array<i64: -1>} : tensor<2x3xi8> -> tensor<2x4xi8>
  // CHECK: fuse.pad %{{.*}} {constant_value = 1.000000e+00 : f64, pads = array<i64: 1, 1>} : tensor<4xi1> -> tensor<6xi1>
  %2 = fuse.pad %b {pads = array<i64: 1, 1>, constant_value = 1.0 : f64} : tensor<4xi1> -> tensor<6xi1>
  return %0, %1, %2 : tensor<3x4xi8>, tensor<2x4xi8>, tensor<6xi1>
}

// -----

// CHECK-LABEL: func.func @arg_reductions
func.func @arg_reductions(%x: tensor<2x3x4xf64>, %z: tensor<0x3xf32>) -> (tensor<2x1x4xi64>, tensor<2x3xi64>, tensor<0xi64>) {
  // CHECK: fuse.argmax %{{.*}} {axis = 1 : i64} : tensor<2x3x4xf64> -> tensor<2x1x4xi64>
  %0 = fuse.argmax %x {axis = 1 : i64} : tensor<2x3x4xf64> -> tensor<2x1x4xi64>
  // CHECK: fuse.argmin %{{.*}} {axis = -1 : i64, keepdims = false, select_last_index = true} : tensor<2x3x4xf64> -> tensor<2x3xi64>
  %1 = fuse.argmin %x {axis = -1 : i64, keepdims = false, select_last_index = true} : tensor<2x3x4xf64> -> tensor<2x3xi64>
  // An empty result may reduce nothing.
  // CHECK: fuse.argmax %{{.*}} {axis = 1 : i64, keepdims = false} : tensor<0x3xf32> -> tensor<0xi64>
  %2 = fuse.argmax %z {axis = 1 : i64, keepdims = false} : tensor<0x3xf32> -> tensor<0xi64>
  return %0, %1, %2 : tensor<2x1x4xi64>, tensor<2x3xi64>, tensor<0xi64>
}

// -----

func.func @perm_not_a_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'fuse.transpose' op perm [0, 0, 1] is not a permutation of the 3 dims [0, 3)}}
  %0 = fuse.transpose %x {perm = array<i64: 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.transpose' op result type tensor<2x3xf32> does not match the expected tensor<3x2xf32>}}
  %0 = fuse.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @slice_step_zero(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.slice' op step 0 (for axis 1) is 0; steps must be non-zero}}
  %0 = fuse.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: -1>, steps = array<i64: 0>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @slice_axis_twice(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.slice' op axes [1, -1] names dim 1 twice}}
  %0 = fuse.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 1, 1>, axes = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @slice_axis_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.slice' op axes [2] has axis 2 out of range for rank 2 (expected [-2, 2))}}
  %0 = fuse.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 2>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @slice_lengths(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.slice' op has 1 starts but 2 ends}}
  %0 = fuse.slice %x {starts = array<i64: 0>, ends = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<1x1xf32>
  return
}

// -----

func.func @slice_result(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.slice' op result type tensor<2x3xf32> does not match the expected tensor<2x2xf32>}}
  %0 = fuse.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 1>, steps = array<i64: -2>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_dtypes(%x: tensor<2x3xf32>, %y: tensor<2x3xbf16>) {
  // expected-error @+1 {{'fuse.concat' op operand #1 has dtype bf16 but operand #0 has f32}}
  %0 = fuse.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xbf16>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_dims(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error @+1 {{'fuse.concat' op operand #1 of shape 2x4 differs from operand #0 of shape 2x3 in dim 1 (only the concat axis 0 may differ)}}
  %0 = fuse.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.concat' op axis -3 is out of range for rank 2 (expected [-2, 2))}}
  %0 = fuse.concat %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_nothing() {
  // expected-error @+1 {{'fuse.concat' op needs at least one operand}}
  %0 = fuse.concat {axis = 0 : i64} : () -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<2x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'fuse.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = fuse.gather %x, %i : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_scalar(%x: tensor<f32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{'fuse.gather' op data must have rank 1 or more, not a scalar}}
  %0 = fuse.gather %x, %i : (tensor<f32>, tensor<2xi32>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_result(%x: tensor<2x3xf32>, %i: tensor<4x5xi64>) {
  // expected-error @+1 {{'fuse.gather' op result type tensor<4x5x3xf32> does not match the expected tensor<2x4x5xf32>}}
  %0 = fuse.gather %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x5xi64>) -> tensor<4x5x3xf32>
  return
}

// -----

func.func @pad_length(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.pad' op pads [1, 1] has 2 values; expected 4 (a begin and an end for each dim)}}
  %0 = fuse.pad %x {pads = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @pad_crop(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.pad' op pads of dim 0 (begin -2, end -1) remove more than its 2 elements}}
  %0 = fuse.pad %x {pads = array<i64: -2, 0, -1, 0>} : tensor<2x3xf32> -> tensor<0x3xf32>
  return
}

// -----

func.func @pad_bool_value(%x: tensor<2xi1>) {
  // expected-error @+1 {{'fuse.pad' op constant_value 2 is not 0 or 1, as an i1 pad needs}}
  %0 = fuse.pad %x {pads = array<i64: 1, 0>, constant_value = 2.0 : f64} : tensor<2xi1> -> tensor<3xi1>
  return
}

// -----

func.func @pad_int_value(%x: tensor<2xi8>) {
  // expected-error @+1 {{'fuse.pad' op constant_value 128 is not a whole number in the range of i8}}
  %0 = fuse.pad %x {pads = array<i64: 1, 0>, constant_value = 128.0 : f64} : tensor<2xi8> -> tensor<3xi8>
  return
}

// -----

func.func @argmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.argmax' op axis 2 is out of range for rank 2 (expected [-2, 2))}}
  %0 = fuse.argmax %x {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x1xi64>
  return
}

// -----

func.func @argmin_empty(%x: tensor<2x0xf32>) {
  // expected-error @+1 {{'fuse.argmin' op reduces dim 1 of size 0 (shape 2x0): an empty sequence has no index}}
  %0 = fuse.argmin %x {axis = 1 : i64} : tensor<2x0xf32> -> tensor<2x1xi64>
  return
}

// -----

func.func @argmax_result_dtype(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.argmax' op result #0 must be statically shaped tensor of 64-bit signless integer values}}
  %0 = fuse.argmax %x : tensor<2x3xf32> -> tensor<1x3xi32>
  return
}

// -----

func.func @argmax_keepdims(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.argmax' op result type tensor<1x3xi64> does not match the expected tensor<3xi64>}}
  %0 = fuse.argmax %x {keepdims = false} : tensor<2x3xf32> -> tensor<1x3xi64>
  return
}
