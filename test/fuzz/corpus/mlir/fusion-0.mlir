func.func @sin4(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = fuse.sin %x : tensor<2x3xf32>
  %1 = fuse.sin %0 : tensor<2x3xf32>
  %2 = fuse.sin %1 : tensor<2x3xf32>
  %3 = fuse.sin %2 : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}
