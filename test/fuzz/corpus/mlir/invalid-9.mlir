func.func @select_dtypes(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi32>) {
  %0 = fuse.select %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  return
}
