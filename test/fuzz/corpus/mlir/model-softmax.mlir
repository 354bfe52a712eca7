module {
  func.func @softmax(%arg0: tensor<4x10xf32> {fuse.name = "x"}) -> (tensor<4x10xf32> {fuse.name = "y"}) {
    %0 = fuse.softmax %arg0 : tensor<4x10xf32>
    return %0 : tensor<4x10xf32>
  }
}
