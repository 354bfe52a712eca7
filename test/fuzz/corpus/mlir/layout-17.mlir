func.func @gather_float_indices(%x: tensor<2x3xf32>, %i: tensor<2xf32>) {
  %0 = fuse.gather %x, %i : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}
