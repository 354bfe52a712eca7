module {
  func.func @gemm_relu(%arg0: tensor<32x64xf32> {fuse.name = "a"}, %arg1: tensor<48x64xf32> {fuse.name = "b"}, %arg2: tensor<48xf32> {fuse.name = "c"}) -> (tensor<32x48xf32> {fuse.name = "y"}) {
    %0 = fuse.gemm %arg0, %arg1 c %arg2 {alpha = 5.000000e-01 : f64, trans_b = true} : (tensor<32x64xf32>, tensor<48x64xf32>, tensor<48xf32>) -> tensor<32x48xf32>
    %1 = fuse.relu %0 : tensor<32x48xf32>
    return %1 : tensor<32x48xf32>
  }
}
