func.func @pad(%x: tensor<2x3xi8>, %b: tensor<4xi1>) -> (tensor<3x4xi8>, tensor<2x4xi8>, tensor<6xi1>) {
  %0 = fuse.pad %x {pads = array<i64: 1, -1, 0, 2>, constant_value = -7.0 : f64} : tensor<2x3xi8> -> tensor<3x4xi8>
  %1 = fuse.pad %x {pads = array<i64: 0, 1>, axes = array<i64: -1>} : tensor<2x3xi8> -> tensor<2x4xi8>
  %2 = fuse.pad %b {pads = array<i64: 1, 1>, constant_value = 1.0 : f64} : tensor<4xi1> -> tensor<6xi1>
  return %0, %1, %2 : tensor<3x4xi8>, tensor<2x4xi8>, tensor<6xi1>
}
