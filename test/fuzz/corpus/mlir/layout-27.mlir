func.func @argmax_keepdims(%x: tensor<2x3xf32>) {
  %0 = fuse.argmax %x {keepdims = false} : tensor<2x3xf32> -> tensor<1x3xi64>
  return
}
