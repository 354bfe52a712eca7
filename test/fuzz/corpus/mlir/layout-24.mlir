func.func @argmax_axis(%x: tensor<2x3xf32>) {
  %0 = fuse.argmax %x {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x1xi64>
  return
}
