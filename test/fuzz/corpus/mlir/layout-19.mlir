func.func @gather_result(%x: tensor<2x3xf32>, %i: tensor<4x5xi64>) {
  %0 = fuse.gather %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x5xi64>) -> tensor<4x5x3xf32>
  return
}
