module {
  func.func @colsum(%arg0: tensor<1024x300xf32> {fuse.name = "x"}) -> (tensor<300xf32> {fuse.name = "y"}) {
    %0 = fuse.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false} : tensor<1024x300xf32> -> tensor<300xf32>
    return %0 : tensor<300xf32>
  }
}
