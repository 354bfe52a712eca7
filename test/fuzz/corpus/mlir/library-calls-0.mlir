func.func @linear_gelu_tanh(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %t = fuse.transpose %w {perm = array<i64: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  %m = fuse.matmul %x, %t : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %c = fuse.constant dense<2.0> : tensor<f32>
  %s = fuse.mul %m, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %a = fuse.add %s, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y = fuse.gelu %a {approximate = "tanh"} : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
