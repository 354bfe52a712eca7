func.func @pad_bool_value(%x: tensor<2xi1>) {
  %0 = fuse.pad %x {pads = array<i64: 1, 0>, constant_value = 2.0 : f64} : tensor<2xi1> -> tensor<3xi1>
  return
}
