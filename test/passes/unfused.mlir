// RUN: fusec-opt %s --fuse-unfused | FileCheck %s
// The unfused baseline: one region, hence one kernel, per op.

// CHECK-LABEL: func.func @seed
// CHECK: %[[A:.*]] = fuse.fusion ins(%{{.*}} : tensor<2x3xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.sin
// CHECK-NEXT: fuse.yield
// CHECK: %[[B:.*]] = fuse.fusion ins(%[[A]]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.sin
// CHECK: %[[C:.*]] = fuse.fusion ins(%[[B]], %{{.*}} :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.mul
// CHECK: fuse.fusion ins(%[[C]], %[[B]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.add
func.func @seed(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = fuse.sin %x : tensor<2x3xf32>
  %1 = fuse.sin %0 : tensor<2x3xf32>
  %2 = fuse.mul %1, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = fuse.add %2, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}
