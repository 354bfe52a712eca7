func.func @gather_scalar(%x: tensor<f32>, %i: tensor<2xi32>) {
  %0 = fuse.gather %x, %i : (tensor<f32>, tensor<2xi32>) -> tensor<2xf32>
  return
}
