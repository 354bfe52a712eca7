func.func @fusion_yield_types(%x: tensor<3xf32>) {
  %0:2 = fuse.fusion ins(%x : tensor<3xf32>) -> tensor<3xf32>, tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    fuse.yield %a : tensor<3xf32>
  }
  return
}
