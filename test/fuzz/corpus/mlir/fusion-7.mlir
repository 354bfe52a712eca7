func.func @independent_and_mixed(%x: tensor<4xf32>, %y: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf16>) {
  %n = fuse.neg %x : tensor<4xf32>
  %g = fuse.gt %y, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %gb = fuse.broadcast_to %g : tensor<4xi1> to tensor<2x4xi1>
  %s = fuse.select %gb, %y, %v : (tensor<2x4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %c = fuse.cast %s : tensor<2x4xf32> to tensor<2x4xf16>
  return %n, %c : tensor<4xf32>, tensor<2x4xf16>
}
