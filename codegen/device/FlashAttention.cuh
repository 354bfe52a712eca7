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

// ---------------------------------------------------------------------------
// f16 and bf16 on tensor cores (sm_80+: mma.sync m16n8k16, ldmatrix,
// cp.async), FlashAttention-2's structure: a block holds Warps * 16 query
// rows (16 per warp) in registers as mma operands; key and value tiles of
// BlockN rows stream through shared memory, double-buffered by cp.async;
// each warp's scores stay in registers, go through the online softmax
// there (exp2 of scores scaled by scale * log2(e)) and become the operand
// of the product with v without leaving them. Causal blocks skip the key
// tiles past their diagonal.
// Requires: head dims equal, a multiple of 64 (swizzled rows of 8 16-byte
// chunks or more); every row start 16-byte aligned (strides and offsets
// multiples of 8 elements).

extern __shared__ __align__(128) unsigned char fusec_attention_smem[];

template <bool Bf16>
static __device__ __forceinline__ void
fusec_attention_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                    unsigned b1) {
  if (Bf16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
}

template <bool Bf16>
static __device__ __forceinline__ unsigned fusec_attention_pack(float lo,
                                                                float hi) {
  unsigned packed;
  if (Bf16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
}

static __device__ __forceinline__ void
fusec_attention_ldmatrix(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

static __device__ __forceinline__ void
fusec_attention_ldmatrix_trans(unsigned (&r)[4], unsigned address) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(address));
}

static __device__ __forceinline__ float fusec_attention_exp2(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 16 bytes from global to shared, asynchronously; zeros where `valid` is
// false (rows past the end).
static __device__ __forceinline__ void
fusec_attention_copy16(unsigned shared, const void *global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared),
               "l"(global), "r"(valid ? 16 : 0));
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of rows of
// `Chunks` chunks: the chunk index xor the row's low 3 bits, so that the 8
// rows an ldmatrix reads hit 8 different bank groups.
template <int Chunks>
static __device__ __forceinline__ unsigned fusec_attention_swizzle(int row,
                                                                   int chunk) {
  return (unsigned)((row * Chunks + (chunk ^ (row & 7))) * 16);
}

// Loads `Rows` rows of HeadDim elements (row r from `base + r * stride`,
// rows at or past `valid_rows` as zeros) into a swizzled tile.
template <int Rows, int HeadDim, int Threads>
static __device__ __forceinline__ void
fusec_attention_load_tile(unsigned tile, const uint16_t *base,
                          long long stride, int valid_rows) {
  enum { Chunks = HeadDim / 8 };
#pragma unroll
  for (int i = threadIdx.x; i < Rows * Chunks; i += Threads) {
    const int row = i / Chunks, chunk = i % Chunks;
    const bool valid = row < valid_rows;
    const uint16_t *source = base + (valid ? row : 0) * stride + chunk * 8;
    fusec_attention_copy16(tile + fusec_attention_swizzle<Chunks>(row, chunk),
                           source, valid);
  }
}

template <bool Bf16, int HeadDim, int BlockN, int Warps, bool Causal>
static __device__ __forceinline__ void
fusec_attention_tensor_cores(const fusec_attention_args &a) {
  enum {
    BlockM = 16 * Warps,
    Threads = 32 * Warps,
    Chunks = HeadDim / 8,
    TileN = BlockN / 8,   // n-tiles of 8 keys in a key block
    TileD = HeadDim / 8,  // n-tiles of 8 head elements in the output
    StepsD = HeadDim / 16 // k-steps of the score product
  };
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.x * BlockM;
  const int bh = blockIdx.y;
  const int h = bh % a.heads, bb = bh / a.heads;
  const int kvh = h / (a.heads / a.kv_heads);
  const uint16_t *query = (const uint16_t *)a.query + a.q.offset +
                          bb * a.q.batch + h * a.q.head;
  const uint16_t *keys = (const uint16_t *)a.key + a.k.offset +
                         bb * a.k.batch + kvh * a.k.head;
  const uint16_t *values = (const uint16_t *)a.value + a.v.offset +
                           bb * a.v.batch + kvh * a.v.head;
  const unsigned smem =
      (unsigned)__cvta_generic_to_shared(fusec_attention_smem);
  const unsigned q_tile = smem;
  const unsigned k_tiles = q_tile + BlockM * HeadDim * 2;
  const unsigned v_tiles = k_tiles + 2 * BlockN * HeadDim * 2;
  const unsigned tile_bytes = BlockN * HeadDim * 2;

  // Key blocks this query block may see.
  int key_begin = 0, key_end = a.key_len;
  if (Causal) {
    long long last = (long long)m0 + BlockM - 1 + a.causal_offset + 1;
    if (last < key_end)
      key_end = last > 0 ? (int)last : 0;
    if (a.window_left >= 0) {
      long long first = (long long)m0 + a.causal_offset - a.window_left;
      key_begin = first > 0 ? (int)(first / BlockN * BlockN) : 0;
    }
  }
  const int blocks = key_end > key_begin
                         ? (key_end - key_begin + BlockN - 1) / BlockN
                         : 0;

  fusec_attention_load_tile<BlockM, HeadDim, Threads>(
      q_tile, query + (long long)m0 * a.q.row, a.q.row, a.query_len - m0);
  if (blocks > 0) {
    fusec_attention_load_tile<BlockN, HeadDim, Threads>(
        k_tiles, keys + (long long)key_begin * a.k.row, a.k.row,
        a.key_len - key_begin);
    fusec_attention_load_tile<BlockN, HeadDim, Threads>(
        v_tiles, values + (long long)key_begin * a.v.row, a.v.row,
        a.key_len - key_begin);
  }
  asm volatile("cp.async.commit_group;");

  unsigned q_frag[StepsD][4];
  float o[TileD][4];
#pragma unroll
  for (int j = 0; j < TileD; ++j)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const float scale_log2 = a.scale * 1.4426950408889634f;
  const int row_a = m0 + warp * 16 + g, row_b = row_a + 8;

  for (int block = 0; block < blocks; ++block) {
    const int n0 = key_begin + block * BlockN;
    const int buffer = block & 1;
    // The next key and value tiles load while this one computes.
    if (block + 1 < blocks) {
      const int next = n0 + BlockN;
      fusec_attention_load_tile<BlockN, HeadDim, Threads>(
          k_tiles + (buffer ^ 1) * tile_bytes,
          keys + (long long)next * a.k.row, a.k.row, a.key_len - next);
      fusec_attention_load_tile<BlockN, HeadDim, Threads>(
          v_tiles + (buffer ^ 1) * tile_bytes,
          values + (long long)next * a.v.row, a.v.row, a.key_len - next);
    }
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 1;");
    __syncthreads();
    if (block == 0) {
      // The warp's 16 query rows as mma A operands, kept in registers.
#pragma unroll
      for (int s = 0; s < StepsD; ++s) {
        const int m = lane >> 3, r = lane & 7;
        const int row = warp * 16 + r + (m & 1) * 8;
        const int chunk = s * 2 + (m >> 1);
        fusec_attention_ldmatrix(q_frag[s],
                                 q_tile + fusec_attention_swizzle<Chunks>(
                                              row, chunk));
      }
    }
    const unsigned k_tile = k_tiles + buffer * tile_bytes;
    const unsigned v_tile = v_tiles + buffer * tile_bytes;

    // Scores: 16 rows x BlockN keys per warp.
    float s[TileN][4];
#pragma unroll
    for (int j = 0; j < TileN; ++j)
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int step = 0; step < StepsD; ++step)
#pragma unroll
      for (int j = 0; j < TileN; j += 2) {
        unsigned b[4];
        const int m = lane >> 3, r = lane & 7;
        const int key = j * 8 + r + (m >> 1) * 8;
        const int chunk = step * 2 + (m & 1);
        fusec_attention_ldmatrix(
            b, k_tile + fusec_attention_swizzle<Chunks>(key, chunk));
        fusec_attention_mma<Bf16>(s[j], q_frag[step], b[0], b[1]);
        fusec_attention_mma<Bf16>(s[j + 1], q_frag[step], b[2], b[3]);
      }

    // Scale (to log2 units), bias, hidden keys.
#pragma unroll
    for (int j = 0; j < TileN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = e < 2 ? row_a : row_b;
        const int key = n0 + j * 8 + 2 * t + (e & 1);
        float x = s[j][e] * scale_log2;
        if (a.bias_kind != 0 && i < a.query_len && key < a.key_len) {
          const long long at = a.b.offset + bb * a.b.batch + h * a.b.head +
                                (long long)i * a.b.row + key * a.b.column;
          if (a.bias_kind == 1) {
            const uint16_t raw = ((const uint16_t *)a.bias)[at];
            x += (Bf16 ? fusec_bf16_to_f32(raw) : fusec_f16_to_f32(raw)) *
                 1.4426950408889634f;
          } else if (!((const unsigned char *)a.bias)[at]) {
            x = -INFINITY;
          }
        }
        bool hidden = key >= a.key_len;
        if (Causal)
          hidden = hidden || key > i + a.causal_offset ||
                   (a.window_left >= 0 &&
                    key < i + a.causal_offset - a.window_left);
        s[j][e] = hidden ? -INFINITY : x;
      }

    // The online softmax of rows g and g + 8 (a quad of lanes holds each).
    float corr[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float m = row_max[half];
      bool nan = false;
#pragma unroll
      for (int j = 0; j < TileN; ++j) {
        const float x0 = s[j][2 * half], x1 = s[j][2 * half + 1];
        nan |= x0 != x0 || x1 != x1;
        m = fmaxf(m, fmaxf(x0, x1));
      }
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // A NaN score makes the row NaN, as softmax does.
      if (nan)
        m = NAN;
      // Nothing visible yet: exponents against 0 (all give 0).
      const float base = m == -INFINITY ? 0.f : m;
      corr[half] = fusec_attention_exp2(row_max[half] - base);
      row_max[half] = m;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < TileN; ++j) {
        s[j][2 * half] = fusec_attention_exp2(s[j][2 * half] - base);
        s[j][2 * half + 1] = fusec_attention_exp2(s[j][2 * half + 1] - base);
        sum += s[j][2 * half] + s[j][2 * half + 1];
      }
      row_sum[half] = row_sum[half] * corr[half] + sum;
    }
#pragma unroll
    for (int j = 0; j < TileD; ++j) {
      o[j][0] *= corr[0];
      o[j][1] *= corr[0];
      o[j][2] *= corr[1];
      o[j][3] *= corr[1];
    }

    // o += p v: the scores' accumulators are the A operands (rounded to
    // the dtype), v through ldmatrix.trans.
#pragma unroll
    for (int step = 0; step < BlockN / 16; ++step) {
      unsigned p[4];
      p[0] = fusec_attention_pack<Bf16>(s[2 * step][0], s[2 * step][1]);
      p[1] = fusec_attention_pack<Bf16>(s[2 * step][2], s[2 * step][3]);
      p[2] = fusec_attention_pack<Bf16>(s[2 * step + 1][0], s[2 * step + 1][1]);
      p[3] = fusec_attention_pack<Bf16>(s[2 * step + 1][2], s[2 * step + 1][3]);
#pragma unroll
      for (int j = 0; j < TileD; j += 2) {
        unsigned b[4];
        const int m = lane >> 3, r = lane & 7;
        const int key = step * 16 + r + (m & 1) * 8;
        const int chunk = j + (m >> 1);
        fusec_attention_ldmatrix_trans(
            b, v_tile + fusec_attention_swizzle<Chunks>(key, chunk));
        fusec_attention_mma<Bf16>(o[j], p, b[0], b[1]);
        fusec_attention_mma<Bf16>(o[j + 1], p, b[2], b[3]);
      }
    }
    __syncthreads(); // the buffer is refilled two blocks on
  }
  asm volatile("cp.async.wait_group 0;");

  // The sums over the quad, then each row's output: zeros or NaN for a
  // row that saw no key.
  float inverse[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum = row_sum[half];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const bool masked = row_max[half] == -INFINITY;
    inverse[half] = masked ? (a.zero_masked_rows ? 0.f : NAN) : 1.f / sum;
  }
  uint16_t *out = (uint16_t *)a.output + a.o.offset + bb * a.o.batch +
                  h * a.o.head;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int i = half ? row_b : row_a;
    if (i >= a.query_len)
      continue;
    uint16_t *orow = out + (long long)i * a.o.row;
#pragma unroll
    for (int j = 0; j < TileD; ++j) {
      const float inv = inverse[half];
      // A masked row's accumulators are 0: 0 * NaN is NaN as wanted, and
      // 0 * 0 zero.
      const float x0 = inv != inv ? inv : o[j][2 * half] * inv;
      const float x1 = inv != inv ? inv : o[j][2 * half + 1] * inv;
      *(unsigned *)(orow + j * 8 + 2 * t) = fusec_attention_pack<Bf16>(x0, x1);
    }
  }
}
