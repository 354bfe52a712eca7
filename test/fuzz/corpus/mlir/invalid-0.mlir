func.func @not_broadcastable(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %0 = fuse.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}
