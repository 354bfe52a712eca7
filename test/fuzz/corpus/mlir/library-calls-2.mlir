func.func @gemm(%a: tensor<32x8xf32>, %b: tensor<16x32xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  %y = fuse.gemm %a, %b c %c {alpha = 0.5 : f64, beta = 3.0 : f64, trans_a = true, trans_b = true} : (tensor<32x8xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
