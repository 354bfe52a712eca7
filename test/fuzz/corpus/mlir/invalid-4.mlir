func.func @dynamic_shape(%x: tensor<?xf32>) {
  %0 = fuse.exp %x : tensor<?xf32>
  return
}
