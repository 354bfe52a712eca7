func.func @float_only(%x: tensor<3xi32>) {
  %0 = fuse.sin %x : tensor<3xi32>
  return
}
