func.func @reshape_count(%x: tensor<2x3xf32>) {
  %0 = fuse.reshape %x : tensor<2x3xf32> to tensor<2x4xf32>
  return
}
