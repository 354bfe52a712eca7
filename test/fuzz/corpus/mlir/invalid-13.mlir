func.func @unsupported_dtype(%x: tensor<3xi16>) {
  %0 = fuse.neg %x : tensor<3xi16>
  return
}
