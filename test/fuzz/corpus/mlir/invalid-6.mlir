func.func @cast_changes_shape(%x: tensor<2x3xf32>) {
  %0 = fuse.cast %x : tensor<2x3xf32> to tensor<6xi32>
  return
}
