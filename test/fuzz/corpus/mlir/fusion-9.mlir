func.func @shared_broadcast_siblings(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wb = fuse.broadcast_to %w : tensor<8xf32> to tensor<4x8xf32>
  %a = fuse.mul %x, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = fuse.sub %x, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}
