func.func @arg_reductions(%x: tensor<2x3x4xf64>, %z: tensor<0x3xf32>) -> (tensor<2x1x4xi64>, tensor<2x3xi64>, tensor<0xi64>) {
  %0 = fuse.argmax %x {axis = 1 : i64} : tensor<2x3x4xf64> -> tensor<2x1x4xi64>
  %1 = fuse.argmin %x {axis = -1 : i64, keepdims = false, select_last_index = true} : tensor<2x3x4xf64> -> tensor<2x3xi64>
  %2 = fuse.argmax %z {axis = 1 : i64, keepdims = false} : tensor<0x3xf32> -> tensor<0xi64>
  return %0, %1, %2 : tensor<2x1x4xi64>, tensor<2x3xi64>, tensor<0xi64>
}
