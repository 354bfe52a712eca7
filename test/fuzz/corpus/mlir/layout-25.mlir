func.func @argmin_empty(%x: tensor<2x0xf32>) {
  %0 = fuse.argmin %x {axis = 1 : i64} : tensor<2x0xf32> -> tensor<2x1xi64>
  return
}
