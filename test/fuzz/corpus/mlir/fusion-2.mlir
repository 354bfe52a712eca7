func.func @shared_producer_multi_output(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %s = fuse.sin %x : tensor<16xf32>
  %c = fuse.cos %s : tensor<16xf32>
  %e = fuse.exp %s : tensor<16xf32>
  %a = fuse.add %c, %e : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %a, %s : tensor<16xf32>, tensor<16xf32>
}
