func.func @linear_gelu_erf(%x: tensor<4x8xbf16>, %w: tensor<8x6xbf16>, %b: tensor<1x6xbf16>) -> tensor<4x6xbf16> {
  %m = fuse.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x6xbf16>) -> tensor<4x6xbf16>
  %a = fuse.add %b, %m : (tensor<1x6xbf16>, tensor<4x6xbf16>) -> tensor<4x6xbf16>
  %y = fuse.gelu %a : tensor<4x6xbf16>
  return %y : tensor<4x6xbf16>
}
