func.func @shared_broadcast_copied(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %wb = fuse.broadcast_to %w : tensor<8xf32> to tensor<4x8xf32>
  %a = fuse.mul %x, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = fuse.transpose %a {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %t2 = fuse.transpose %t {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %b = fuse.add %t2, %wb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}
