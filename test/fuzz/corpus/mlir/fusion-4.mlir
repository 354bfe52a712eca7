func.func @view_joins_chain(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = fuse.sin %x : tensor<2x3xf32>
  %1 = fuse.reshape %0 : tensor<2x3xf32> to tensor<6xf32>
  %2 = fuse.cos %1 : tensor<6xf32>
  return %2 : tensor<6xf32>
}
