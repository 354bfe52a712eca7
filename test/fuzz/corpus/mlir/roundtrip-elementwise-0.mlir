func.func @elementwise(%f: tensor<2x3xf32>, %i: tensor<2x3xi32>, %b: tensor<2x3xi1>, %h: tensor<2x3xf16>, %r: tensor<3xf32>) {
  %neg = fuse.neg %i : tensor<2x3xi32>
  %abs = fuse.abs %i : tensor<2x3xi32>
  %exp = fuse.exp %f : tensor<2x3xf32>
  %log = fuse.log %f : tensor<2x3xf32>
  %sin = fuse.sin %f : tensor<2x3xf32>
  %cos = fuse.cos %f : tensor<2x3xf32>
  %tanh = fuse.tanh %f : tensor<2x3xf32>
  %sigmoid = fuse.sigmoid %f : tensor<2x3xf32>
  %relu = fuse.relu %i : tensor<2x3xi32>
  %sqrt = fuse.sqrt %f : tensor<2x3xf32>
  %rsqrt = fuse.rsqrt %f : tensor<2x3xf32>
  %reciprocal = fuse.reciprocal %f : tensor<2x3xf32>
  %erf = fuse.erf %f : tensor<2x3xf32>
  %floor = fuse.floor %f : tensor<2x3xf32>
  %ceil = fuse.ceil %f : tensor<2x3xf32>
  %not = fuse.not %b : tensor<2x3xi1>
  %add = fuse.add %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %sub = fuse.sub %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %mul = fuse.mul %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %div = fuse.div %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %pow = fuse.pow %f, %f : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %max = fuse.max %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %min = fuse.min %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %eq = fuse.eq %h, %h : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  %ne = fuse.ne %h, %h : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  %lt = fuse.lt %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %le = fuse.le %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %gt = fuse.gt %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %ge = fuse.ge %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %and = fuse.and %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %or = fuse.or %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %bcast = fuse.add %f, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}
