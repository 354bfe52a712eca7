module {
  func.func @seed(%arg0: tensor<2x3xf32> {fuse.name = "x"}, %arg1: tensor<2x3xf32> {fuse.name = "y"}) -> (tensor<2x3xf32> {fuse.name = "z"}) {
    %0 = fuse.sin %arg0 : tensor<2x3xf32>
    %1 = fuse.sin %0 : tensor<2x3xf32>
    %2 = fuse.sin %1 : tensor<2x3xf32>
    %3 = fuse.sin %2 : tensor<2x3xf32>
    %4 = fuse.mul %3, %arg1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = fuse.add %4, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    return %5 : tensor<2x3xf32>
  }
}
