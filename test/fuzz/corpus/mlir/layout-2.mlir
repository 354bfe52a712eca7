func.func @concat(%x: tensor<2x3xi64>, %y: tensor<2x5xi64>, %z: tensor<2x0xi64>) -> (tensor<2x8xi64>, tensor<2x3xi64>) {
  %0 = fuse.concat %x, %z, %y {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x0xi64>, tensor<2x5xi64>) -> tensor<2x8xi64>
  %1 = fuse.concat %x {axis = 0 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0, %1 : tensor<2x8xi64>, tensor<2x3xi64>
}
