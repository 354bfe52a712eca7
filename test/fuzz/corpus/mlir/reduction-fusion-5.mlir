func.func @column_mean_centered(%x: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %m = fuse.reduce_mean %x {axes = array<i64: 0>} : tensor<64x8xf32> -> tensor<1x8xf32>
  %c = fuse.sub %x, %m : (tensor<64x8xf32>, tensor<1x8xf32>) -> tensor<64x8xf32>
  return %c : tensor<64x8xf32>
}
