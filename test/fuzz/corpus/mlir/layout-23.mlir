func.func @pad_int_value(%x: tensor<2xi8>) {
  %0 = fuse.pad %x {pads = array<i64: 1, 0>, constant_value = 128.0 : f64} : tensor<2xi8> -> tensor<3xi8>
  return
}
