// RUN: fusec-opt %s | fusec-opt | FileCheck %s
// The non-table ops and fusion regions survive a print/parse round trip.

// CHECK-LABEL: func.func @other_ops
func.func @other_ops(%x: tensor<2x3xf32>, %c: tensor<2x3xi1>, %v: tensor<3xf32>) -> tensor<6xf32> {
  // CHECK: fuse.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s = fuse.select %c, %x, %v : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: fuse.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xbf16>
  %k = fuse.cast %s : tensor<2x3xf32> to tensor<2x3xbf16>
  // CHECK: fuse.broadcast_to %{{.*}} : tensor<3xf32> to tensor<4x3xf32>
  %b = fuse.broadcast_to %v : tensor<3xf32> to tensor<4x3xf32>
  // CHECK: fuse.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
  %d = fuse.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  // CHECK: fuse.constant dense<7> : tensor<i64>
  %i = fuse.constant dense<7> : tensor<i64>
  // CHECK: fuse.reshape %{{.*}} : tensor<2x3xf32> to tensor<6xf32>
  %r = fuse.reshape %s : tensor<2x3xf32> to tensor<6xf32>
  return %r : tensor<6xf32>
}

// CHECK-LABEL: func.func @region
func.func @region(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: %[[R:.*]]:2 = fuse.fusion ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, tensor<4xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>):
  // CHECK-NEXT:   %[[S:.*]] = fuse.sin %[[A]] : tensor<4xf32>
  // CHECK-NEXT:   %[[M:.*]] = fuse.mul %[[S]], %[[B]]
  // CHECK-NEXT:   fuse.yield %[[S]], %[[M]] : tensor<4xf32>, tensor<4xf32>
  %r:2 = fuse.fusion ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %s = fuse.sin %a : tensor<4xf32>
    %m = fuse.mul %s, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    fuse.yield %s, %m : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @attention
// CHECK: fuse.attention %arg0, %arg0, %arg0 bias %arg1 {causal = true, causal_offset = 3 : i64, head_dim = 16 : i64, key_column = 64 : i64, kv_num_heads = 2 : i64, num_heads = 4 : i64, scale = 2.500000e-01 : f64, value_column = 96 : i64, value_head_dim = 16 : i64, window_left = 8 : i64, zero_masked_rows = true} : (tensor<2x5x128xbf16>, tensor<2x5x128xbf16>, tensor<2x5x128xbf16>, tensor<5x5xi1>) -> tensor<2x5x64xbf16>
func.func @attention(%qkv: tensor<2x5x128xbf16>, %keep: tensor<5x5xi1>) -> tensor<2x5x64xbf16> {
  %0 = fuse.attention %qkv, %qkv, %qkv bias %keep {num_heads = 4 : i64, kv_num_heads = 2 : i64, head_dim = 16 : i64, value_head_dim = 16 : i64, key_column = 64 : i64, value_column = 96 : i64, scale = 0.25 : f64, causal = true, causal_offset = 3 : i64, window_left = 8 : i64, zero_masked_rows = true} : (tensor<2x5x128xbf16>, tensor<2x5x128xbf16>, tensor<2x5x128xbf16>, tensor<5x5xi1>) -> tensor<2x5x64xbf16>
  return %0 : tensor<2x5x64xbf16>
}
