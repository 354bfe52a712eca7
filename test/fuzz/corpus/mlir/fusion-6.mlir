func.func @constants(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %half = fuse.constant dense<0.5> : tensor<f32>
  %d = fuse.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = fuse.mul %x, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = fuse.add %0, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
