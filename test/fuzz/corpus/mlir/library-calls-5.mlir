func.func @not_folded(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %xd: tensor<2x3xf64>, %wd: tensor<3x4xf64>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf64>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %m = fuse.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %zero = fuse.constant dense<0.0> : tensor<f32>
  %s = fuse.mul %m, %zero : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %md = fuse.matmul %xd, %wd : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
  %rd = fuse.relu %md : tensor<2x4xf64>
  %m2 = fuse.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %a = fuse.add %m2, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %s, %rd, %a, %m2 : tensor<2x4xf32>, tensor<2x4xf64>, tensor<2x4xf32>, tensor<2x4xf32>
}
