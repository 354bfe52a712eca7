func.func @slice(%x: tensor<2x3x4xf32>) -> (tensor<2x1x2xf32>, tensor<2x3x4xf32>, tensor<2x0x4xf32>) {
  %0 = fuse.slice %x {starts = array<i64: 1, -1>, ends = array<i64: 2, -9223372036854775808>, axes = array<i64: 1, -1>, steps = array<i64: 1, -2>} : tensor<2x3x4xf32> -> tensor<2x1x2xf32>
  %1 = fuse.slice %x {starts = array<i64: -100>, ends = array<i64: 9223372036854775807>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %2 = fuse.slice %x {starts = array<i64: 5>, ends = array<i64: 1>, axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x0x4xf32>
  return %0, %1, %2 : tensor<2x1x2xf32>, tensor<2x3x4xf32>, tensor<2x0x4xf32>
}
