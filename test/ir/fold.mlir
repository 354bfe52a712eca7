// RUN: fusec-opt %s --canonicalize | FileCheck %s
// Constant folding through the op table's reference, and the identities.

// CHECK-LABEL: func.func @fold_constants
func.func @fold_constants() -> (tensor<2xf32>, tensor<i8>, tensor<2xi1>, tensor<2xi32>) {
  %a = fuse.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = fuse.constant dense<0.5> : tensor<f32>
  %sum = fuse.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %neg = fuse.neg %sum : tensor<2xf32>
  %big = fuse.constant dense<100> : tensor<i8>
  // i8 arithmetic wraps: 100 + 100 = -56.
  %wrap = fuse.add %big, %big : (tensor<i8>, tensor<i8>) -> tensor<i8>
  %lt = fuse.lt %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xi1>
  %f = fuse.constant dense<[2.7, -2.7]> : tensor<2xf32>
  // Float to int truncates toward zero.
  %i = fuse.cast %f : tensor<2xf32> to tensor<2xi32>
  // CHECK-DAG: fuse.constant dense<[-1.500000e+00, -2.500000e+00]> : tensor<2xf32>
  // CHECK-DAG: fuse.constant dense<-56> : tensor<i8>
  // CHECK-DAG: fuse.constant dense<false> : tensor<2xi1>
  // CHECK-DAG: fuse.constant dense<[2, -2]> : tensor<2xi32>
  // CHECK-NOT: fuse.add
  // CHECK-NOT: fuse.cast
  return %neg, %wrap, %lt, %i : tensor<2xf32>, tensor<i8>, tensor<2xi1>, tensor<2xi32>
}

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xi1>)
func.func @identities(%x: tensor<2x3xf32>, %b: tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>) {
  %zero = fuse.constant dense<-0.0> : tensor<f32>
  %one = fuse.constant dense<1.0> : tensor<3xf32>
  %t = fuse.constant dense<true> : tensor<i1>
  %0 = fuse.add %x, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = fuse.mul %one, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = fuse.neg %x : tensor<2x3xf32>
  %3 = fuse.neg %2 : tensor<2x3xf32>
  %4 = fuse.cast %x : tensor<2x3xf32> to tensor<2x3xf32>
  %5 = fuse.and %b, %t : (tensor<2x3xi1>, tensor<i1>) -> tensor<2x3xi1>
  %6 = fuse.select %t, %x, %2 : (tensor<i1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[B]], %[[X]]
  return %0, %1, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>
}

// An identity that would change the result type is not applied.
// CHECK-LABEL: func.func @no_identity_across_broadcast
func.func @no_identity_across_broadcast(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = fuse.constant dense<0.0> : tensor<2x3xf32>
  // CHECK: fuse.add
  %0 = fuse.add %x, %zero : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @layout_ops
func.func @layout_ops(%x: tensor<6xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  // CHECK-DAG: %[[R:.*]] = fuse.reshape %{{.*}} : tensor<6xf32> to tensor<2x3xf32>
  %r1 = fuse.reshape %x : tensor<6xf32> to tensor<3x2xf32>
  %r2 = fuse.reshape %r1 : tensor<3x2xf32> to tensor<2x3xf32>
  %s = fuse.constant dense<2.0> : tensor<3xf32>
  // CHECK-DAG: %[[B:.*]] = fuse.constant dense<2.000000e+00> : tensor<4x3xf32>
  %b = fuse.broadcast_to %s : tensor<3xf32> to tensor<4x3xf32>
  // CHECK: return %[[R]], %[[B]]
  return %r2, %b : tensor<2x3xf32>, tensor<4x3xf32>
}

// x + 0.0 is not x when x is -0.0 (the sum is +0.0); x - (-0.0) is not x
// either. x + (-0.0) and x - 0.0 are. Integer zeros are always identities.
// CHECK-LABEL: func.func @signed_zero_identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<4xi32>)
func.func @signed_zero_identities(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %pz = fuse.constant dense<0.0> : tensor<f32>
  %nz = fuse.constant dense<-0.0> : tensor<f32>
  %iz = fuse.constant dense<0> : tensor<i32>
  // CHECK: %[[A:.*]] = fuse.add %[[X]], %{{.*}}
  %0 = fuse.add %x, %pz : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: %[[S:.*]] = fuse.sub %[[X]], %{{.*}}
  %1 = fuse.sub %x, %nz : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = fuse.add %nz, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = fuse.sub %x, %pz : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %4 = fuse.add %i, %iz : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  // CHECK: return %[[A]], %[[S]], %[[X]], %[[X]], %[[I]]
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// Integer constants fold exactly above 2^53, and an i64 becomes the
// nearest f32 in one rounding.
// CHECK-LABEL: func.func @exact_integers
func.func @exact_integers() -> (tensor<i64>, tensor<i64>, tensor<f32>) {
  %a = fuse.constant dense<9007199254740993> : tensor<i64>
  %one = fuse.constant dense<1> : tensor<i64>
  %max = fuse.constant dense<9223372036854775807> : tensor<i64>
  // CHECK-DAG: fuse.constant dense<9007199254740994> : tensor<i64>
  %0 = fuse.add %a, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  // INT64_MAX + 1 wraps to INT64_MIN.
  // CHECK-DAG: fuse.constant dense<-9223372036854775808> : tensor<i64>
  %1 = fuse.add %max, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  // 2^53 + 1 rounds to 2^53 (ties to even) in f32 as in f64.
  // CHECK-DAG: fuse.constant dense<9.00719925E+15> : tensor<f32>
  %2 = fuse.cast %a : tensor<i64> to tensor<f32>
  return %0, %1, %2 : tensor<i64>, tensor<i64>, tensor<f32>
}

// Float to int saturates to the range and maps NaN to 0, as kernels do.
// CHECK-LABEL: func.func @saturating_casts
func.func @saturating_casts() -> (tensor<4xi8>, tensor<3xi64>) {
  %f = fuse.constant dense<[300.75, -300.75, 0x7FC00000, -128.75]> : tensor<4xf32>
  %d = fuse.constant dense<[1.0e20, -1.0e20, 0x7FF0000000000000]> : tensor<3xf64>
  // CHECK-DAG: fuse.constant dense<[127, -128, 0, -128]> : tensor<4xi8>
  // CHECK-DAG: fuse.constant dense<[9223372036854775807, -9223372036854775808, 9223372036854775807]> : tensor<3xi64>
  // CHECK-NOT: fuse.cast
  %0 = fuse.cast %f : tensor<4xf32> to tensor<4xi8>
  %1 = fuse.cast %d : tensor<3xf64> to tensor<3xi64>
  return %0, %1 : tensor<4xi8>, tensor<3xi64>
}

// Float to float rounds once to nearest even and never truncates: a bf16
// scale below 1 stays itself in f32 (it folded to 0 once, which zeroed
// dequantized constant weights), f32 to bf16 rounds 0.732421875 up and
// 1e-3 (0x3A83126F) down to 0x3A83.
// CHECK-LABEL: func.func @float_casts_round
func.func @float_casts_round() -> (tensor<4xf32>, tensor<3xbf16>, tensor<2xf64>) {
  %s = fuse.constant dense<5.859380e-03> : tensor<4xbf16>
  %f = fuse.constant dense<[0.732421875, -1.75, 1.0e-3]> : tensor<3xf32>
  %h = fuse.constant dense<[0.5, -2.5e-1]> : tensor<2xf16>
  // CHECK-DAG: fuse.constant dense<0.005859375> : tensor<4xf32>
  // CHECK-DAG: fuse.constant dense<[7.343750e-01, -1.750000e+00, 9.994500e-04]> : tensor<3xbf16>
  // CHECK-DAG: fuse.constant dense<[5.000000e-01, -2.500000e-01]> : tensor<2xf64>
  // CHECK-NOT: fuse.cast
  %0 = fuse.cast %s : tensor<4xbf16> to tensor<4xf32>
  %1 = fuse.cast %f : tensor<3xf32> to tensor<3xbf16>
  %2 = fuse.cast %h : tensor<2xf16> to tensor<2xf64>
  return %0, %1, %2 : tensor<4xf32>, tensor<3xbf16>, tensor<2xf64>
}

// pow(x, 2) on floats is x * x (the exact square, rounded once); not for
// integers, other exponents, or an exponent that broadcasts x.
// CHECK-LABEL: func.func @square
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xi32>, %[[H:.*]]: tensor<4xbf16>)
func.func @square(%x: tensor<4xf32>, %y: tensor<4xi32>, %h: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xbf16>, tensor<2x4xf32>, tensor<4xf32>) {
  %two = fuse.constant dense<2.0> : tensor<f32>
  // CHECK-DAG: fuse.mul %[[X]], %[[X]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = fuse.pow %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %i2 = fuse.constant dense<2> : tensor<i32>
  // CHECK-DAG: fuse.pow %[[Y]], %{{.*}} : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %b = fuse.pow %y, %i2 : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  // CHECK-DAG: %[[THREE:.*]] = fuse.constant dense<3.000000e+00> : tensor<f32>
  // CHECK-DAG: fuse.pow %[[X]], %[[THREE]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %three = fuse.constant dense<3.0> : tensor<f32>
  %c = fuse.pow %x, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  // Not every element 2: not a square.
  // CHECK-DAG: %[[MIXED:.*]] = fuse.constant dense<[2.000000e+00, 3.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
  // CHECK-DAG: fuse.pow %[[X]], %[[MIXED]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %mixed = fuse.constant dense<[2.0, 3.0, 2.0, 2.0]> : tensor<4xf32>
  %f = fuse.pow %x, %mixed : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %htwo = fuse.constant dense<2.0> : tensor<4xbf16>
  // CHECK-DAG: fuse.mul %[[H]], %[[H]] : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %d = fuse.pow %h, %htwo : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %wide = fuse.constant dense<2.0> : tensor<2x4xf32>
  // CHECK-DAG: fuse.pow %[[X]], %{{.*}} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %e = fuse.pow %x, %wide : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a, %b, %c, %d, %e, %f : tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xbf16>, tensor<2x4xf32>, tensor<4xf32>
}

// Views instead of kernels: a reduction over axes of size 1 only, with the
// axes dropped, is a reshape (sum, prod, max, min, mean; not l2, whose
// result is |x|); a transpose that keeps the order of the dims larger than
// 1 is a reshape; one that reorders them stays.
// CHECK-LABEL: func.func @unit_views
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x3xf32>, %[[H:.*]]: tensor<1x1x4x8xf32>)
func.func @unit_views(%x: tensor<2x1x3xf32>, %h: tensor<1x1x4x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x4x1x8xf32>, tensor<1x8x1x4xf32>) {
  // CHECK-COUNT-5: fuse.reshape %[[X]] : tensor<2x1x3xf32> to tensor<2x3xf32>
  %sum = fuse.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x1x3xf32> -> tensor<2x3xf32>
  %prod = fuse.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : tensor<2x1x3xf32> -> tensor<2x3xf32>
  %max = fuse.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<2x1x3xf32> -> tensor<2x3xf32>
  %min = fuse.reduce_min %x {axes = array<i64: 1>, keepdims = false} : tensor<2x1x3xf32> -> tensor<2x3xf32>
  %mean = fuse.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : tensor<2x1x3xf32> -> tensor<2x3xf32>
  // CHECK: fuse.reduce_l2
  %l2 = fuse.reduce_l2 %x {axes = array<i64: 1>, keepdims = false} : tensor<2x1x3xf32> -> tensor<2x3xf32>
  // CHECK: fuse.reshape %[[H]] : tensor<1x1x4x8xf32> to tensor<1x4x1x8xf32>
  %heads = fuse.transpose %h {perm = array<i64: 0, 2, 1, 3>} : tensor<1x1x4x8xf32> -> tensor<1x4x1x8xf32>
  // CHECK: fuse.transpose %[[H]]
  %swapped = fuse.transpose %h {perm = array<i64: 0, 3, 1, 2>} : tensor<1x1x4x8xf32> -> tensor<1x8x1x4xf32>
  return %sum, %prod, %max, %min, %mean, %l2, %heads, %swapped : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x4x1x8xf32>, tensor<1x8x1x4xf32>
}
