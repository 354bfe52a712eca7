// RUN: fusec-opt %s | fusec-opt | FileCheck %s
// Every op of the dialect survives a print/parse round trip.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%f: tensor<2x3xf32>, %i: tensor<2x3xi32>, %b: tensor<2x3xi1>, %h: tensor<2x3xf16>, %r: tensor<3xf32>) {
  // CHECK: fuse.neg %{{.*}} : tensor<2x3xi32>
  %neg = fuse.neg %i : tensor<2x3xi32>
  // CHECK: fuse.abs %{{.*}} : tensor<2x3xi32>
  %abs = fuse.abs %i : tensor<2x3xi32>
  // CHECK: fuse.exp %{{.*}} : tensor<2x3xf32>
  %exp = fuse.exp %f : tensor<2x3xf32>
  // CHECK: fuse.log %{{.*}} : tensor<2x3xf32>
  %log = fuse.log %f : tensor<2x3xf32>
  // CHECK: fuse.sin %{{.*}} : tensor<2x3xf32>
  %sin = fuse.sin %f : tensor<2x3xf32>
  // CHECK: fuse.cos %{{.*}} : tensor<2x3xf32>
  %cos = fuse.cos %f : tensor<2x3xf32>
  // CHECK: fuse.tanh %{{.*}} : tensor<2x3xf32>
  %tanh = fuse.tanh %f : tensor<2x3xf32>
  // CHECK: fuse.sigmoid %{{.*}} : tensor<2x3xf32>
  %sigmoid = fuse.sigmoid %f : tensor<2x3xf32>
  // CHECK: fuse.relu %{{.*}} : tensor<2x3xi32>
  %relu = fuse.relu %i : tensor<2x3xi32>
  // CHECK: fuse.sqrt %{{.*}} : tensor<2x3xf32>
  %sqrt = fuse.sqrt %f : tensor<2x3xf32>
  // CHECK: fuse.rsqrt %{{.*}} : tensor<2x3xf32>
  %rsqrt = fuse.rsqrt %f : tensor<2x3xf32>
  // CHECK: fuse.reciprocal %{{.*}} : tensor<2x3xf32>
  %reciprocal = fuse.reciprocal %f : tensor<2x3xf32>
  // CHECK: fuse.erf %{{.*}} : tensor<2x3xf32>
  %erf = fuse.erf %f : tensor<2x3xf32>
  // CHECK: fuse.floor %{{.*}} : tensor<2x3xf32>
  %floor = fuse.floor %f : tensor<2x3xf32>
  // CHECK: fuse.ceil %{{.*}} : tensor<2x3xf32>
  %ceil = fuse.ceil %f : tensor<2x3xf32>
  // CHECK: fuse.not %{{.*}} : tensor<2x3xi1>
  %not = fuse.not %b : tensor<2x3xi1>
  // CHECK: fuse.add %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %add = fuse.add %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK: fuse.sub %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %sub = fuse.sub %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK: fuse.mul %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %mul = fuse.mul %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK: fuse.div %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %div = fuse.div %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK: fuse.pow %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %pow = fuse.pow %f, %f : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: fuse.max %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %max = fuse.max %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK: fuse.min %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %min = fuse.min %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK: fuse.eq %{{.*}}, %{{.*}} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  %eq = fuse.eq %h, %h : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  // CHECK: fuse.ne %{{.*}}, %{{.*}} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  %ne = fuse.ne %h, %h : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  // CHECK: fuse.lt %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %lt = fuse.lt %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  // CHECK: fuse.le %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %le = fuse.le %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  // CHECK: fuse.gt %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %gt = fuse.gt %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  // CHECK: fuse.ge %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %ge = fuse.ge %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  // CHECK: fuse.and %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %and = fuse.and %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: fuse.or %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %or = fuse.or %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: fuse.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %bcast = fuse.add %f, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}
