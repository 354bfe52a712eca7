// RUN: fusec-opt %s --split-input-file --fuse-form-fusion-regions --verify-diagnostics | FileCheck %s

// A vertical chain becomes one region.
// CHECK-LABEL: func.func @sin4
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: %[[R:.*]] = fuse.fusion ins(%[[X]] : tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-COUNT-4: fuse.sin
// CHECK: fuse.yield
// CHECK: return %[[R]]
func.func @sin4(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = fuse.sin %x : tensor<2x3xf32>
  %1 = fuse.sin %0 : tensor<2x3xf32>
  %2 = fuse.sin %1 : tensor<2x3xf32>
  %3 = fuse.sin %2 : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// x*y + x reads x once; a broadcast bias is an input of its own shape.
// CHECK-LABEL: func.func @muladd_bias
// CHECK: fuse.fusion ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: fuse.mul
// CHECK: fuse.add
// CHECK: fuse.add
// CHECK-NOT: fuse.fusion
func.func @muladd_bias(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = fuse.mul %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = fuse.add %0, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = fuse.add %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A producer with two consumers is computed once, inside the one region;
// an intermediate that is also a graph output becomes a second result.
// CHECK-LABEL: func.func @shared_producer_multi_output
// CHECK: %[[R:.*]]:2 = fuse.fusion
// CHECK: %[[S:.*]] = fuse.sin
// CHECK-NOT: fuse.sin
// CHECK: %[[C:.*]] = fuse.cos %[[S]]
// CHECK: %[[E:.*]] = fuse.exp %[[S]]
// CHECK: %[[A:.*]] = fuse.add %[[C]], %[[E]]
// CHECK: fuse.yield %[[S]], %[[A]]
// CHECK: return %[[R]]#1, %[[R]]#0
func.func @shared_producer_multi_output(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %s = fuse.sin %x : tensor<16xf32>
  %c = fuse.cos %s : tensor<16xf32>
  %e = fuse.exp %s : tensor<16xf32>
  %a = fuse.add %c, %e : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %a, %s : tensor<16xf32>, tensor<16xf32>
}

// -----

// Recomputing exp for every row would duplicate work: it keeps its own kernel.
// CHECK-LABEL: func.func @broadcast_producer
// CHECK: %[[E:.*]] = fuse.fusion ins(%{{.*}} : tensor<8xf32>) -> tensor<8xf32>
// CHECK: fuse.exp
// CHECK: fuse.fusion ins(%{{.*}}, %[[E]] : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: fuse.add
func.func @broadcast_producer(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{not fused with its consumer 'fuse.add': its result is broadcast from 8 to 32 elements, and recomputing it per element would duplicate work}}
  %e = fuse.exp %b : tensor<8xf32>
  %0 = fuse.add %x, %e : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A view keeps element order: it does not split a pointwise chain.
// CHECK-LABEL: func.func @view_joins_chain
// CHECK: %[[R:.*]] = fuse.fusion ins(%{{.*}} : tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x3xf32>):
// CHECK-NEXT: %[[S:.*]] = fuse.sin %[[A]]
// CHECK-NEXT: %[[V:.*]] = fuse.reshape %[[S]]
// CHECK-NEXT: %[[C:.*]] = fuse.cos %[[V]]
// CHECK-NEXT: fuse.yield %[[C]]
// CHECK-NOT: fuse.fusion
func.func @view_joins_chain(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = fuse.sin %x : tensor<2x3xf32>
  %1 = fuse.reshape %0 : tensor<2x3xf32> to tensor<6xf32>
  %2 = fuse.cos %1 : tensor<6xf32>
  return %2 : tensor<6xf32>
}

// -----

// A reshape of a reduction's result cannot join it: it stays a buffer
// alias, and fusing exp with add would form a cycle through it.
// CHECK-LABEL: func.func @no_cycle
// CHECK-COUNT-2: fuse.fusion
func.func @no_cycle(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-remark @+1 {{not fused with its consumer 'fuse.add': the path through 'fuse.reshape' outside the region would form a cycle}}
  %0 = fuse.exp %x : tensor<2x3xf32>
  %1 = fuse.reduce_sum %0 {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  // expected-remark @+1 {{not fused: 'fuse.reshape' only changes the shape; it runs as a buffer alias between kernels}}
  %2 = fuse.reshape %1 : tensor<2xf32> to tensor<2x1xf32>
  %3 = fuse.broadcast_to %2 : tensor<2x1xf32> to tensor<2x3xf32>
  %4 = fuse.add %0, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// -----

// Splat constants are cloned into the region; dense ones are inputs.
// CHECK-LABEL: func.func @constants
// CHECK: %[[D:.*]] = fuse.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
// CHECK-NOT: fuse.constant dense<5.000000e-01>
// CHECK: fuse.fusion ins(%{{.*}}, %[[D]] : tensor<2x3xf32>, tensor<3xf32>)
// CHECK: fuse.constant dense<5.000000e-01> : tensor<f32>
// CHECK: fuse.mul
// CHECK: fuse.add
func.func @constants(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %half = fuse.constant dense<0.5> : tensor<f32>
  // expected-remark @+1 {{not fused: 'fuse.constant' is a dense constant; kernels read it as an input buffer}}
  %d = fuse.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = fuse.mul %x, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = fuse.add %0, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Independent chains make separate regions; select, cast, compare and
// broadcast_to fuse like any pointwise op.
// CHECK-LABEL: func.func @independent_and_mixed
// CHECK: fuse.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.neg
// CHECK: %[[G:.*]] = fuse.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.gt
// CHECK: fuse.fusion ins(%[[G]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.broadcast_to
// CHECK-NEXT: fuse.select
// CHECK-NEXT: fuse.cast
// CHECK-NOT: fuse.fusion
func.func @independent_and_mixed(%x: tensor<4xf32>, %y: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf16>) {
  %n = fuse.neg %x : tensor<4xf32>
  // expected-remark @+1 {{not fused with its consumer 'fuse.broadcast_to': its result is broadcast from 4 to 8 elements}}
  %g = fuse.gt %y, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %gb = fuse.broadcast_to %g : tensor<4xi1> to tensor<2x4xi1>
  %s = fuse.select %gb, %y, %v : (tensor<2x4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %c = fuse.cast %s : tensor<2x4xf32> to tensor<2x4xf16>
  return %n, %c : tensor<4xf32>, tensor<2x4xf16>
}

// -----

// A broadcast shared by consumers that cannot share a region (a path
// through layout kernels between them) is copied into each one: both read
// the 8-element weight, and the first region does not write the broadcast
// 4x8 out for the second.
// CHECK-LABEL: func.func @shared_broadcast_copied
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>)
// CHECK: fuse.fusion ins(%[[W]], %[[X]] : tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: fuse.broadcast_to
// CHECK: fuse.mul
// CHECK: fuse.transpose
// CHECK: fuse.transpose
// CHECK: fuse.fusion ins(%[[W]], %{{.*}} : tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: fuse.broadcast_to
// CHECK-NEXT: fuse.add
func.func @shared_broadcast_copied(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{copied into the region of its consumer 'fuse.add', as it cannot join it where it is: the path through 'fuse.transpose' outside the region would form a cycle}}
  %wb = fuse.broadcast_to %w : tensor<8xf32> to tensor<4x8xf32>
  %a = fuse.mul %x, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{not fused: 'fuse.transpose' moves elements}}
  %t = fuse.transpose %a {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  // expected-remark @+2 {{not fused: 'fuse.transpose' moves elements}}
  // expected-remark @+1 {{not fused with its consumer 'fuse.add': layout ops run as kernels of their own}}
  %t2 = fuse.transpose %t {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %b = fuse.add %t2, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// Consumers that can share a region share the broadcast too: no copy.
// CHECK-LABEL: func.func @shared_broadcast_siblings
// CHECK: fuse.fusion
// CHECK-COUNT-1: fuse.broadcast_to
// CHECK-NOT: fuse.broadcast_to
// CHECK-NOT: fuse.fusion
func.func @shared_broadcast_siblings(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wb = fuse.broadcast_to %w : tensor<8xf32> to tensor<4x8xf32>
  %a = fuse.mul %x, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = fuse.sub %x, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}
