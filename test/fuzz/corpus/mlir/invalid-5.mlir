func.func @bool_only(%x: tensor<3xf32>) {
  %0 = fuse.not %x : tensor<3xf32>
  return
}
