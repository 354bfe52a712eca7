func.func @bad_broadcast_to(%x: tensor<3xf32>) {
  %0 = fuse.broadcast_to %x : tensor<3xf32> to tensor<2x4xf32>
  return
}
