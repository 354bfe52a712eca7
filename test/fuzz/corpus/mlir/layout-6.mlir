func.func @perm_not_a_permutation(%x: tensor<2x3x4xf32>) {
  %0 = fuse.transpose %x {perm = array<i64: 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
  return
}
