func.func @seed(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = fuse.sin %x : tensor<2x3xf32>
  %1 = fuse.sin %0 : tensor<2x3xf32>
  %2 = fuse.mul %1, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = fuse.add %2, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}
