// RUN: fusec-opt %s --split-input-file --verify-diagnostics

func.func @not_broadcastable(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes 2x3 and 4 are not broadcast-compatible}}
  // expected-error @+1 {{'fuse.add' op failed to infer returned types}}
  %0 = fuse.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @dtype_mismatch(%x: tensor<3xf32>, %y: tensor<3xf64>) {
  // expected-error @+2 {{'fuse.mul' operands have different dtypes: f32 and f64}}
  // expected-error @+1 {{'fuse.mul' op failed to infer returned types}}
  %0 = fuse.mul %x, %y : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  return
}

// -----

func.func @wrong_result_type(%x: tensor<3xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'fuse.add' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<3xf64>'}}
  // expected-error @+1 {{'fuse.add' op failed to infer returned types}}
  %0 = fuse.add %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf64>
  return
}

// -----

func.func @float_only(%x: tensor<3xi32>) {
  // expected-error @+1 {{'fuse.sin' does not accept dtype i32}}
  %0 = fuse.sin %x : tensor<3xi32>
  return
}

// -----

func.func @bool_only(%x: tensor<3xf32>) {
  // expected-error @+1 {{'fuse.not' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = fuse.not %x : tensor<3xf32>
  return
}

// -----

func.func @cast_changes_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.cast' op changes the shape from tensor<2x3xf32> to tensor<6xi32>; a cast only converts the dtype}}
  %0 = fuse.cast %x : tensor<2x3xf32> to tensor<6xi32>
  return
}

// -----

func.func @bad_broadcast_to(%x: tensor<3xf32>) {
  // expected-error @+1 {{'fuse.broadcast_to' op cannot broadcast tensor<3xf32> to tensor<2x4xf32>}}
  %0 = fuse.broadcast_to %x : tensor<3xf32> to tensor<2x4xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'fuse.reshape' op cannot reshape 6 elements (tensor<2x3xf32>) into 8 (tensor<2x4xf32>)}}
  %0 = fuse.reshape %x : tensor<2x3xf32> to tensor<2x4xf32>
  return
}

// -----

func.func @select_dtypes(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi32>) {
  // expected-error @+2 {{'fuse.select' true and false values have different dtypes: f32 and i32}}
  // expected-error @+1 {{'fuse.select' op failed to infer returned types}}
  %0 = fuse.select %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  return
}

// -----

func.func @fusion_arg_types(%x: tensor<3xf32>) {
  // expected-error @+1 {{'fuse.fusion' op input #0 has type tensor<3xf32> but its block argument has type tensor<3xf64>}}
  %0 = fuse.fusion ins(%x : tensor<3xf32>) -> tensor<3xf64> {
  ^bb0(%a: tensor<3xf64>):
    fuse.yield %a : tensor<3xf64>
  }
  return
}

// -----

func.func @fusion_yield_types(%x: tensor<3xf32>) {
  // expected-error @+1 {{'fuse.fusion' op yields 1 values whose types do not match its 2 results}}
  %0:2 = fuse.fusion ins(%x : tensor<3xf32>) -> tensor<3xf32>, tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    fuse.yield %a : tensor<3xf32>
  }
  return
}

// -----

func.func @add_on_bool(%x: tensor<3xi1>, %y: tensor<3xi1>) {
  // expected-error @+1 {{'fuse.add' op operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<3xi1>'}}
  %0 = fuse.add %x, %y : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return
}

// -----

func.func @unsupported_dtype(%x: tensor<3xi4>) {
  // expected-error @+1 {{but got 'tensor<3xi4>'}}
  %0 = fuse.neg %x : tensor<3xi4>
  return
}

// -----

func.func @yield_outside_fusion(%x: tensor<3xf32>) {
  // expected-error @+1 {{'fuse.yield' op expects parent op 'fuse.fusion'}}
  fuse.yield %x : tensor<3xf32>
}

// -----

func.func @attention_heads_do_not_group(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x5x8xf32>) {
  // expected-error @+1 {{'fuse.attention' op num_heads (3) must be a positive multiple of kv_num_heads (2)}}
  %0 = fuse.attention %q, %k, %k {num_heads = 3 : i64, kv_num_heads = 2 : i64, head_dim = 8 : i64, value_head_dim = 8 : i64, scale = 1.0 : f64} : (tensor<1x3x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x3x4x8xf32>
  return
}

// -----

func.func @attention_columns_past_the_end(%x: tensor<1x4x64xf32>) {
  // expected-error @+1 {{'fuse.attention' op key [1x4x64] must be [1, 4, C] with its 4 heads of 16 in columns 32..96 of C}}
  %0 = fuse.attention %x, %x, %x {num_heads = 4 : i64, kv_num_heads = 4 : i64, head_dim = 16 : i64, value_head_dim = 16 : i64, key_column = 32 : i64, scale = 1.0 : f64} : (tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_bias_does_not_broadcast(%q: tensor<1x2x4x8xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{'fuse.attention' op bias [3x5] must broadcast to the scores [1x2x4x4]}}
  %0 = fuse.attention %q, %q, %q bias %b {num_heads = 2 : i64, kv_num_heads = 2 : i64, head_dim = 8 : i64, value_head_dim = 8 : i64, scale = 1.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<3x5xf32>) -> tensor<1x2x4x8xf32>
  return
}
