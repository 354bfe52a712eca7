module {
  func.func @attn(%arg0: tensor<?x16x64xf32> {fuse.dims = ["batch", 16, 64], fuse.name = "x"}) -> (tensor<?x16x64xf32> {fuse.name = "y"}) attributes {fuse.symbols = [["batch", 1, 8]]} {
    %0 = fuse.constant dense<2.500000e-01> : tensor<f32>
    %1 = fuse.reshape %arg0 : tensor<?x16x64xf32> to tensor<?x16x4x16xf32>
    %2 = fuse.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : tensor<?x16x4x16xf32> -> tensor<?x4x16x16xf32>
    %3 = fuse.sin %arg0 : tensor<?x16x64xf32>
    %4 = fuse.reshape %3 : tensor<?x16x64xf32> to tensor<?x16x4x16xf32>
    %5 = fuse.transpose %4 {perm = array<i64: 0, 2, 3, 1>} : tensor<?x16x4x16xf32> -> tensor<?x4x16x16xf32>
    %6 = fuse.matmul %2, %5 : (tensor<?x4x16x16xf32>, tensor<?x4x16x16xf32>) -> tensor<?x4x16x16xf32>
    %7 = fuse.mul %6, %0 : (tensor<?x4x16x16xf32>, tensor<f32>) -> tensor<?x4x16x16xf32>
    %8 = fuse.softmax %7 : tensor<?x4x16x16xf32>
    %9 = fuse.cos %arg0 : tensor<?x16x64xf32>
    %10 = fuse.reshape %9 : tensor<?x16x64xf32> to tensor<?x16x4x16xf32>
    %11 = fuse.transpose %10 {perm = array<i64: 0, 2, 1, 3>} : tensor<?x16x4x16xf32> -> tensor<?x4x16x16xf32>
    %12 = fuse.matmul %8, %11 : (tensor<?x4x16x16xf32>, tensor<?x4x16x16xf32>) -> tensor<?x4x16x16xf32>
    %13 = fuse.transpose %12 {perm = array<i64: 0, 2, 1, 3>} : tensor<?x4x16x16xf32> -> tensor<?x16x4x16xf32>
    %14 = fuse.reshape %13 : tensor<?x16x4x16xf32> to tensor<?x16x64xf32>
    return %14 : tensor<?x16x64xf32>
  }
}
