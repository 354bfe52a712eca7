func.func @transpose(%x: tensor<2x3x4xf32>, %z: tensor<2x0x3xbf16>, %s: tensor<i1>) -> (tensor<4x2x3xf32>, tensor<3x2x0xbf16>, tensor<i1>) {
  %0 = fuse.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = fuse.transpose %z {perm = array<i64: 2, 0, 1>} : tensor<2x0x3xbf16> -> tensor<3x2x0xbf16>
  %2 = fuse.transpose %s {perm = array<i64>} : tensor<i1> -> tensor<i1>
  return %0, %1, %2 : tensor<4x2x3xf32>, tensor<3x2x0xbf16>, tensor<i1>
}
