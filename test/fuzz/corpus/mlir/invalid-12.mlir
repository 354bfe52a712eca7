func.func @add_on_bool(%x: tensor<3xi1>, %y: tensor<3xi1>) {
  %0 = fuse.add %x, %y : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return
}
