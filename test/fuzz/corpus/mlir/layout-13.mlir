func.func @concat_dtypes(%x: tensor<2x3xf32>, %y: tensor<2x3xbf16>) {
  %0 = fuse.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xbf16>) -> tensor<4x3xf32>
  return
}
