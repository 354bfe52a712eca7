func.func @concat_axis(%x: tensor<2x3xf32>) {
  %0 = fuse.concat %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
