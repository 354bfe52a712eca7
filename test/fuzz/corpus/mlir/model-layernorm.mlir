module {
  func.func @ln(%arg0: tensor<64x4096xf32> {fuse.name = "x"}, %arg1: tensor<4096xf32> {fuse.name = "w"}, %arg2: tensor<4096xf32> {fuse.name = "b"}) -> (tensor<64x4096xf32> {fuse.name = "y"}) {
    %0 = fuse.layer_norm %arg0 weight %arg1 bias %arg2 : (tensor<64x4096xf32>, tensor<4096xf32>, tensor<4096xf32>) -> tensor<64x4096xf32>
    return %0 : tensor<64x4096xf32>
  }
}
