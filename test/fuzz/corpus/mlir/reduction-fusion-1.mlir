func.func @layer_norm(%x: tensor<8x128xf32>, %w: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<8x128xf32> {
  %y = fuse.layer_norm %x weight %w bias %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}
