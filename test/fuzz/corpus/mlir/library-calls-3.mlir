func.func @gemm_matrix_c(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>, %c: tensor<8x1xf32>) -> tensor<8x16xf32> {
  %y = fuse.gemm %a, %b c %c : (tensor<8x32xf32>, tensor<32x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
