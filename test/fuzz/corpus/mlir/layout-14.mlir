func.func @concat_dims(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  %0 = fuse.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}
