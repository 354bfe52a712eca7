func.func @argmax_result_dtype(%x: tensor<2x3xf32>) {
  %0 = fuse.argmax %x : tensor<2x3xf32> -> tensor<1x3xi32>
  return
}
