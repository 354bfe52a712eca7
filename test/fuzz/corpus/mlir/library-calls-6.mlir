func.func @int8_weights(%x: tensor<1x2xbf16>, %s: tensor<2xbf16>, %many: tensor<9x2xbf16>) -> (tensor<1x2xbf16>, tensor<9x2xbf16>) {
  %w = fuse.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %d = fuse.dequantize_linear %w, %s {axis = 1 : i64} : (tensor<2x2xi8>, tensor<2xbf16>) -> tensor<2x2xbf16>
  %y = fuse.matmul %x, %d : (tensor<1x2xbf16>, tensor<2x2xbf16>) -> tensor<1x2xbf16>
  %z = fuse.matmul %many, %d : (tensor<9x2xbf16>, tensor<2x2xbf16>) -> tensor<9x2xbf16>
  return %y, %z : tensor<1x2xbf16>, tensor<9x2xbf16>
}
