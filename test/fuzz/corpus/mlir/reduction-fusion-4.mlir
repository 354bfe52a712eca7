func.func @layer_norm_gelu(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %y = fuse.layer_norm %x : (tensor<8x128xf32>) -> tensor<8x128xf32>
  %z = fuse.gelu %y : tensor<8x128xf32>
  return %z : tensor<8x128xf32>
}
