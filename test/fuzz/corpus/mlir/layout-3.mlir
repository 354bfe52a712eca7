func.func @gather(%x: tensor<2x3x4xf16>, %i: tensor<5xi32>, %j: tensor<i64>) -> (tensor<2x5x4xf16>, tensor<3x4xf16>) {
  %0 = fuse.gather %x, %i {axis = -2 : i64} : (tensor<2x3x4xf16>, tensor<5xi32>) -> tensor<2x5x4xf16>
  %1 = fuse.gather %x, %j {axis = 0 : i64} : (tensor<2x3x4xf16>, tensor<i64>) -> tensor<3x4xf16>
  return %0, %1 : tensor<2x5x4xf16>, tensor<3x4xf16>
}
