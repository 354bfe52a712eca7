func.func @yield_outside_fusion(%x: tensor<3xf32>) {
  fuse.yield %x : tensor<3xf32>
}
