func.func @no_cycle(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = fuse.exp %x : tensor<2x3xf32>
  %1 = fuse.reduce_sum %0 {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  %2 = fuse.reshape %1 : tensor<2xf32> to tensor<2x1xf32>
  %3 = fuse.broadcast_to %2 : tensor<2x1xf32> to tensor<2x3xf32>
  %4 = fuse.add %0, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}
