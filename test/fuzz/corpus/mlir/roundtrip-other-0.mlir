func.func @other_ops(%x: tensor<2x3xf32>, %c: tensor<2x3xi1>, %v: tensor<3xf32>) -> tensor<6xf32> {
  %s = fuse.select %c, %x, %v : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %k = fuse.cast %s : tensor<2x3xf32> to tensor<2x3xbf16>
  %b = fuse.broadcast_to %v : tensor<3xf32> to tensor<4x3xf32>
  %d = fuse.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %i = fuse.constant dense<7> : tensor<i64>
  %r = fuse.reshape %s : tensor<2x3xf32> to tensor<6xf32>
  return %r : tensor<6xf32>
}

func.func @region(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = fuse.fusion ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %s = fuse.sin %a : tensor<4xf32>
    %m = fuse.mul %s, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    fuse.yield %s, %m : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
