func.func @transpose_result(%x: tensor<2x3xf32>) {
  %0 = fuse.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}
