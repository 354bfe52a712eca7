func.func @pad_length(%x: tensor<2x3xf32>) {
  %0 = fuse.pad %x {pads = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
  return
}
