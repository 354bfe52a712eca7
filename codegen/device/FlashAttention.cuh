// Fused attention on CUDA cores: one warp per query row walks the keys
// with an online softmax (running max and sum, rescaled as the max
// grows), the head dims split among its lanes, so the scores never reach
// memory. Every dtype and head dim up to 256; the tensor-core kernels
// (f16/bf16) are faster where they apply.

// Where element (b, h, t, d) of an operand lies: offset + b * batch +
// h * head + t * row + d; the bias's (b, h, i, j): offset + b * batch +
// h * head + i * row + j * column.
struct fusec_attention_layout {
  long long offset, batch, head, row;
};
struct fusec_attention_bias_layout {
  long long offset, batch, head, row, column;
};

struct fusec_attention_args {
  const void *query, *key, *value, *bias;
  void *output;
  int batch, heads, kv_heads, query_len, key_len;
  fusec_attention_layout q, k, v, o;
  fusec_attention_bias_layout b;
  int bias_kind; // 0 none, 1 added, 2 bool: false hides the key
  float scale;
  int causal;
  long long causal_offset, window_left; // window_left < 0: no window
  int zero_masked_rows;
};

// Traits: `storage`, `acc` (float, double for f64), static acc load(storage)
// and storage store(acc), static acc exp(acc).
template <typename Traits, int HeadDim, int ValueHeadDim>
static __device__ __forceinline__ void
fusec_attention_warp_row(const fusec_attention_args &a) {
  typedef typename Traits::storage T;
  typedef typename Traits::acc A;
  enum {
    QueryPerLane = (HeadDim + 31) / 32,
    ValuePerLane = (ValueHeadDim + 31) / 32
  };
  const int lane = threadIdx.x & 31;
  const long long row =
      (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= (long long)a.batch * a.heads * a.query_len)
    return;
  const int i = (int)(row % a.query_len);
  const int h = (int)(row / a.query_len % a.heads);
  const int bb = (int)(row / a.query_len / a.heads);
  const int kvh = h / (a.heads / a.kv_heads);
  const T *query = (const T *)a.query + a.q.offset + bb * a.q.batch +
                   h * a.q.head + i * a.q.row;
  const T *keys = (const T *)a.key + a.k.offset + bb * a.k.batch +
                  kvh * a.k.head;
  const T *values = (const T *)a.value + a.v.offset + bb * a.v.batch +
                    kvh * a.v.head;
  A q[QueryPerLane], acc[ValuePerLane];
#pragma unroll
  for (int t = 0; t < QueryPerLane; ++t) {
    const int d = lane + 32 * t;
    q[t] = d < HeadDim ? Traits::load(query[d]) * (A)a.scale : (A)0;
  }
#pragma unroll
  for (int t = 0; t < ValuePerLane; ++t)
    acc[t] = 0;
  A max = -(A)INFINITY, sum = 0;
  bool nan = false;
  long long first = 0, last = a.key_len; // keys [first, last) may be seen
  if (a.causal) {
    const long long end = i + a.causal_offset + 1;
    last = end < last ? (end > 0 ? end : 0) : last;
    if (a.window_left >= 0) {
      const long long begin = i + a.causal_offset - a.window_left;
      first = begin > 0 ? begin : 0;
    }
  }
  for (long long j = first; j < last; ++j) {
    const T *krow = keys + j * a.k.row;
    A partial = 0;
#pragma unroll
    for (int t = 0; t < QueryPerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < HeadDim)
        partial += q[t] * Traits::load(krow[d]);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      partial += __shfl_xor_sync(0xffffffffu, partial, offset);
    A s = partial;
    if (a.bias_kind != 0) {
      const long long at = a.b.offset + bb * a.b.batch + h * a.b.head +
                           i * a.b.row + j * a.b.column;
      if (a.bias_kind == 1)
        s += Traits::load(((const T *)a.bias)[at]);
      else if (!((const unsigned char *)a.bias)[at])
        s = -(A)INFINITY;
    }
    if (s != s || s == (A)INFINITY) { // softmax: inf - inf is NaN
      nan = true;
      continue;
    }
    if (s == -(A)INFINITY)
      continue;
    const T *vrow = values + j * a.v.row;
    A weight;
    if (s > max) {
      const A correction = Traits::exp(max - s); // 0 from -inf
      sum *= correction;
#pragma unroll
      for (int t = 0; t < ValuePerLane; ++t)
        acc[t] *= correction;
      max = s;
      weight = 1;
    } else {
      weight = Traits::exp(s - max);
    }
    sum += weight;
#pragma unroll
    for (int t = 0; t < ValuePerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < ValueHeadDim)
        acc[t] += weight * Traits::load(vrow[d]);
    }
  }
  T *out = (T *)a.output + a.o.offset + bb * a.o.batch + h * a.o.head +
           i * a.o.row;
  // A NaN score makes the row NaN (as softmax); a row that saw no key is
  // zeros (ONNX Attention) or NaN (softmax of -inf everywhere).
  const bool masked = max == -(A)INFINITY;
#pragma unroll
  for (int t = 0; t < ValuePerLane; ++t) {
    const int d = lane + 32 * t;
    if (d < ValueHeadDim)
      out[d] = Traits::store(
          nan ? (A)NAN
              : masked ? (a.zero_masked_rows ? (A)0 : (A)NAN) : acc[t] / sum);
  }
}
