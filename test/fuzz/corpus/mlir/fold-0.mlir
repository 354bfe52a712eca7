func.func @fold_constants() -> (tensor<2xf32>, tensor<i8>, tensor<2xi1>, tensor<2xi32>) {
  %a = fuse.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = fuse.constant dense<0.5> : tensor<f32>
  %sum = fuse.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %neg = fuse.neg %sum : tensor<2xf32>
  %big = fuse.constant dense<100> : tensor<i8>
  %wrap = fuse.add %big, %big : (tensor<i8>, tensor<i8>) -> tensor<i8>
  %lt = fuse.lt %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xi1>
  %f = fuse.constant dense<[2.7, -2.7]> : tensor<2xf32>
  %i = fuse.cast %f : tensor<2xf32> to tensor<2xi32>
  return %neg, %wrap, %lt, %i : tensor<2xf32>, tensor<i8>, tensor<2xi1>, tensor<2xi32>
}

func.func @identities(%x: tensor<2x3xf32>, %b: tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>) {
  %zero = fuse.constant dense<-0.0> : tensor<f32>
  %one = fuse.constant dense<1.0> : tensor<3xf32>
  %t = fuse.constant dense<true> : tensor<i1>
  %0 = fuse.add %x, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = fuse.mul %one, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = fuse.neg %x : tensor<2x3xf32>
  %3 = fuse.neg %2 : tensor<2x3xf32>
  %4 = fuse.cast %x : tensor<2x3xf32> to tensor<2x3xf32>
  %5 = fuse.and %b, %t : (tensor<2x3xi1>, tensor<i1>) -> tensor<2x3xi1>
  %6 = fuse.select %t, %x, %2 : (tensor<i1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>
}

func.func @no_identity_across_broadcast(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = fuse.constant dense<0.0> : tensor<2x3xf32>
  %0 = fuse.add %x, %zero : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

func.func @layout_ops(%x: tensor<6xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %r1 = fuse.reshape %x : tensor<6xf32> to tensor<3x2xf32>
  %r2 = fuse.reshape %r1 : tensor<3x2xf32> to tensor<2x3xf32>
  %s = fuse.constant dense<2.0> : tensor<3xf32>
  %b = fuse.broadcast_to %s : tensor<3xf32> to tensor<4x3xf32>
  return %r2, %b : tensor<2x3xf32>, tensor<4x3xf32>
}

func.func @signed_zero_identities(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %pz = fuse.constant dense<0.0> : tensor<f32>
  %nz = fuse.constant dense<-0.0> : tensor<f32>
  %iz = fuse.constant dense<0> : tensor<i32>
  %0 = fuse.add %x, %pz : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = fuse.sub %x, %nz : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = fuse.add %nz, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = fuse.sub %x, %pz : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %4 = fuse.add %i, %iz : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

func.func @exact_integers() -> (tensor<i64>, tensor<i64>, tensor<f32>) {
  %a = fuse.constant dense<9007199254740993> : tensor<i64>
  %one = fuse.constant dense<1> : tensor<i64>
  %max = fuse.constant dense<9223372036854775807> : tensor<i64>
  %0 = fuse.add %a, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %1 = fuse.add %max, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %2 = fuse.cast %a : tensor<i64> to tensor<f32>
  return %0, %1, %2 : tensor<i64>, tensor<i64>, tensor<f32>
}
