// The arguments of the fused attention kernels of both targets
// (device/AttentionCpu.h, device/FlashAttention.cuh), which the printers
// fill with literals (codegen/AttentionKernel.cpp).

// Where operand element (b, h, t, d) lies: offset + b * batch + h * head +
// t * row + d; the bias's (b, h, i, j): offset + b * batch + h * head +
// i * row + j * column.
struct fusec_attention_layout {
  int64_t offset, batch, head, row;
};
struct fusec_attention_bias_layout {
  int64_t offset, batch, head, row, column;
};

struct fusec_attention_args {
  const void *query, *key, *value, *bias;
  void *output;
  int64_t batch, heads, kv_heads, query_len, key_len;
  fusec_attention_layout q, k, v, o;
  fusec_attention_bias_layout b;
  int bias_kind; // 0 none, 1 added, 2 bool: false hides the key
  double scale;
  int causal;
  int64_t causal_offset, window_left; // window_left < 0: no window
  int zero_masked_rows;
  int zero_nan_rows; // every row whose softmax is NaN is zero
  int parallel; // C++: split the tiles among OpenMP threads
  // CUDA tensor-core kernels: the (batch, head) pairs run along blockIdx.x
  // and the query blocks along blockIdx.y, as gridDim.y (65535 at most)
  // cannot hold that many pairs; else the other way round.
  int heads_in_grid_x;
};

