func.func @wrong_result_type(%x: tensor<3xf32>, %y: tensor<3xf32>) {
  %0 = fuse.add %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf64>
  return
}
