func.func @slice_step_zero(%x: tensor<2x3xf32>) {
  %0 = fuse.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: -1>, steps = array<i64: 0>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}
