func.func @different_spaces(%x: tensor<8x16xf32>) -> tensor<1x1xf32> {
  %r = fuse.reduce_sum %x {axes = array<i64: 1>} : tensor<8x16xf32> -> tensor<8x1xf32>
  %t = fuse.reduce_sum %r {axes = array<i64: 0>} : tensor<8x1xf32> -> tensor<1x1xf32>
  return %t : tensor<1x1xf32>
}
