func.func @slice_axis_twice(%x: tensor<2x3xf32>) {
  %0 = fuse.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 1, 1>, axes = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}
