func.func @batched(%x: tensor<2x3x4x8xf32>, %w: tensor<8x5xf32>, %y: tensor<3x4x8xf32>, %v: tensor<2x1x8x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  %m = fuse.matmul %x, %w : (tensor<2x3x4x8xf32>, tensor<8x5xf32>) -> tensor<2x3x4x5xf32>
  %r = fuse.relu %m : tensor<2x3x4x5xf32>
  %n = fuse.matmul %y, %v : (tensor<3x4x8xf32>, tensor<2x1x8x5xf32>) -> tensor<2x3x4x5xf32>
  %s = fuse.relu %n : tensor<2x3x4x5xf32>
  return %r, %s : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}
