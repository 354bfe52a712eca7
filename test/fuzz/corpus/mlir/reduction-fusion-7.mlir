func.func @layer_norms_share_weights(%x: tensor<8x128xf32>, %w: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<8x128xf32> {
  %y = fuse.layer_norm %x weight %w bias %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %t = fuse.transpose %y {perm = array<i64: 1, 0>} : tensor<8x128xf32> -> tensor<128x8xf32>
  %t2 = fuse.transpose %t {perm = array<i64: 1, 0>} : tensor<128x8xf32> -> tensor<8x128xf32>
  %z = fuse.layer_norm %t2 weight %w bias %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<8x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  return %z : tensor<8x128xf32>
}
