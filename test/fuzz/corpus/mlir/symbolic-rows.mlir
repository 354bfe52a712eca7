module {
  func.func @dyn(%arg0: tensor<?x64xf32> {fuse.dims = ["batch", 64], fuse.name = "x"}, %arg1: tensor<64xf32> {fuse.name = "b"}) -> (tensor<?x64xf32> {fuse.name = "s"}, tensor<?x64xf32> {fuse.name = "z"}) attributes {fuse.symbols = [["batch", 1, 512]]} {
    %0 = fuse.add %arg0, %arg1 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %1 = fuse.sin %0 : tensor<?x64xf32>
    %2 = fuse.softmax %1 : tensor<?x64xf32>
    return %2, %1 : tensor<?x64xf32>, tensor<?x64xf32>
  }
}
