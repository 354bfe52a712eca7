func.func @rms_norm(%x: tensor<8x128xbf16>, %w: tensor<128xbf16>) -> tensor<8x128xbf16> {
  %y = fuse.rms_norm %x weight %w {epsilon = 1.0e-6 : f64} : (tensor<8x128xbf16>, tensor<128xbf16>) -> tensor<8x128xbf16>
  return %y : tensor<8x128xbf16>
}
