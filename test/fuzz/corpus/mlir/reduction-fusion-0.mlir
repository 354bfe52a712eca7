func.func @softmax(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %y = fuse.softmax %x {axis = -1 : i64} : tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}
