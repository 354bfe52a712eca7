func.func @fusion_arg_types(%x: tensor<3xf32>) {
  %0 = fuse.fusion ins(%x : tensor<3xf32>) -> tensor<3xf64> {
  ^bb0(%a: tensor<3xf64>):
    fuse.yield %a : tensor<3xf64>
  }
  return
}
