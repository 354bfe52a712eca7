func.func @dtype_mismatch(%x: tensor<3xf32>, %y: tensor<3xf64>) {
  %0 = fuse.mul %x, %y : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  return
}
