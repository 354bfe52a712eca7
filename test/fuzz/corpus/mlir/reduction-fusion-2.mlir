func.func @add_layer_norm(%x: tensor<8x128xbf16>, %r: tensor<8x128xbf16>, %w: tensor<128xbf16>, %b: tensor<128xbf16>) -> (tensor<8x128xbf16>, tensor<8x128xbf16>) {
  %s = fuse.add %x, %r : (tensor<8x128xbf16>, tensor<8x128xbf16>) -> tensor<8x128xbf16>
  %y = fuse.layer_norm %s weight %w bias %b : (tensor<8x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<8x128xbf16>
  return %y, %s : tensor<8x128xbf16>, tensor<8x128xbf16>
}
