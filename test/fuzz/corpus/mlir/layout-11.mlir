func.func @slice_lengths(%x: tensor<2x3xf32>) {
  %0 = fuse.slice %x {starts = array<i64: 0>, ends = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<1x1xf32>
  return
}
