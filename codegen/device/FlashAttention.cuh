// Fused attention on CUDA cores: one warp per query row walks the keys
// with an online softmax (running max and sum, rescaled as the max
// grows), the head dims split among its lanes, so the scores never reach
// memory. Every dtype and head dim up to 256; the tensor-core kernels
// (f16/bf16) are faster where they apply.

// fusec_attention_args: device/AttentionArgs.h.

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
  const bool zero = a.zero_nan_rows && (nan || masked || sum != sum);
#pragma unroll
  for (int t = 0; t < ValuePerLane; ++t) {
    const int d = lane + 32 * t;
    if (d < ValueHeadDim)
      out[d] = Traits::store(
          zero ? (A)0
          : nan ? (A)NAN
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

// The bias and the hidden keys in the scores of a 16-row tile against the
// key block at n0 (an mma accumulator layout: rows i0 in elements 0 and 1,
// i0 + 8 in 2 and 3; keys n0 + 8 j + 2 t, + 1). With a bias the scores
// move to log2 units here (the softmax's scale is then 1).
template <bool Bf16, int TileN, bool Causal>
static __device__ __forceinline__ void
fusec_attention_mask_scores(float (&s)[TileN][4], const fusec_attention_args &a,
                            int i0, int n0, int t, int bb, int h,
                            float scale_log2) {
#pragma unroll
  for (int j = 0; j < TileN; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = i0 + (e < 2 ? 0 : 8);
      const int key = n0 + j * 8 + 2 * t + (e & 1);
      float x = s[j][e];
      if (a.bias_kind != 0) {
        x *= scale_log2;
        if (i < a.query_len && key < a.key_len) {
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
      }
      bool hidden = key >= a.key_len;
      if (Causal)
        hidden =
            hidden || key > i + a.causal_offset ||
            (a.window_left >= 0 && key < i + a.causal_offset - a.window_left);
      s[j][e] = hidden ? -INFINITY : x;
    }
}

// One key block's step of the online softmax of rows g and g + 8 of a
// 16-row tile (a quad of lanes holds each row): the scores become their
// exponents against the new maxima and the sums grow; the output rows must
// then shrink by `corr`.
template <int TileN>
static __device__ __forceinline__ void
fusec_attention_softmax_step(float (&s)[TileN][4], float (&row_max)[2],
                             float (&row_sum)[2], float scale,
                             float (&corr)[2]) {
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
    // Nothing visible yet: exponents against 0 (all give 0). Scores are
    // raw or (with a bias) in log2 units; maxima in the same units, so
    // exp2(s * scale - max * scale) is one fma and an exp2.
    const float base = m == -INFINITY ? 0.f : m * scale;
    corr[half] = fusec_attention_exp2(row_max[half] * scale - base);
    row_max[half] = m;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < TileN; ++j) {
      s[j][2 * half] = fusec_attention_exp2(fmaf(s[j][2 * half], scale, -base));
      s[j][2 * half + 1] =
          fusec_attention_exp2(fmaf(s[j][2 * half + 1], scale, -base));
      sum += s[j][2 * half] + s[j][2 * half + 1];
    }
    row_sum[half] = row_sum[half] * corr[half] + sum;
  }
}

template <int TileD>
static __device__ __forceinline__ void
fusec_attention_rescale(float (&o)[TileD][4], const float (&corr)[2]) {
#pragma unroll
  for (int j = 0; j < TileD; ++j) {
    o[j][0] *= corr[0];
    o[j][1] *= corr[0];
    o[j][2] *= corr[1];
    o[j][3] *= corr[1];
  }
}

// The exponents of keys [16 step, 16 step + 16) as the A operand of the
// product with v (rounded to the dtype): the accumulator layout of two
// 8-key tiles is the A fragment's.
template <bool Bf16, int TileN>
static __device__ __forceinline__ void
fusec_attention_p_fragment(unsigned (&p)[4], const float (&s)[TileN][4],
                           int step) {
  p[0] = fusec_attention_pack<Bf16>(s[2 * step][0], s[2 * step][1]);
  p[1] = fusec_attention_pack<Bf16>(s[2 * step][2], s[2 * step][3]);
  p[2] = fusec_attention_pack<Bf16>(s[2 * step + 1][0], s[2 * step + 1][1]);
  p[3] = fusec_attention_pack<Bf16>(s[2 * step + 1][2], s[2 * step + 1][3]);
}

// Rows i0 and i0 + 8 of the output from a 16-row tile's accumulators, after
// the sums over the quad: zeros or NaN for a row that saw no key.
template <bool Bf16, int TileD>
static __device__ __forceinline__ void
fusec_attention_store_tile(uint16_t *out, const fusec_attention_args &a, int i0,
                           int t, const float (&o)[TileD][4],
                           const float (&row_max)[2],
                           const float (&row_sum)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum = row_sum[half];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const bool masked = row_max[half] == -INFINITY;
    const bool zero = a.zero_nan_rows && (masked || sum != sum);
    const float inv = masked ? (a.zero_masked_rows ? 0.f : NAN) : 1.f / sum;
    const int i = i0 + half * 8;
    if (i >= a.query_len)
      continue;
    uint16_t *orow = out + (long long)i * a.o.row;
#pragma unroll
    for (int j = 0; j < TileD; ++j) {
      // A masked row's accumulators are 0: NaN stays NaN, 0 * 0 is 0.
      const float x0 = zero ? 0.f : inv != inv ? inv : o[j][2 * half] * inv;
      const float x1 = zero ? 0.f : inv != inv ? inv : o[j][2 * half + 1] * inv;
      *(unsigned *)(orow + j * 8 + 2 * t) = fusec_attention_pack<Bf16>(x0, x1);
    }
  }
}

// The query block of this block of threads: causal blocks with the most key
// blocks (the last) start first.
template <bool Causal>
static __device__ __forceinline__ int
fusec_attention_query_block(const fusec_attention_args &a) {
  const int block = a.heads_in_grid_x ? blockIdx.y : blockIdx.x;
  const int blocks = a.heads_in_grid_x ? gridDim.y : gridDim.x;
  return Causal ? blocks - 1 - block : block;
}

// The key blocks query rows [m0, m0 + BlockM) may see: from the first key
// (0, or the sliding window's first, rounded down to a block), as many
// blocks of BlockN as reach the last key any of them sees (every key, or
// up to the causal diagonal).
template <int BlockN, bool Causal>
static __device__ __forceinline__ int
fusec_attention_first_key(const fusec_attention_args &a, int m0) {
  if (!Causal || a.window_left < 0)
    return 0;
  long long first = (long long)m0 + a.causal_offset - a.window_left;
  return first > 0 ? (int)(first / BlockN * BlockN) : 0;
}
template <int BlockM, int BlockN, bool Causal>
static __device__ __forceinline__ int
fusec_attention_key_blocks(const fusec_attention_args &a, int m0,
                           int key_begin) {
  long long key_end = a.key_len;
  if (Causal) {
    long long last = (long long)m0 + BlockM - 1 + a.causal_offset + 1;
    if (last < key_end)
      key_end = last > 0 ? last : 0;
  }
  return key_end > key_begin
             ? (int)((key_end - key_begin + BlockN - 1) / BlockN)
             : 0;
}

// RowTiles: 16-row tiles of queries per warp (two halve the shared-memory
// reads per multiply: each k and v fragment serves both). QInRegisters:
// the warp's query fragments stay in registers for the whole loop (else
// they are read from shared memory for each key block, for registers).
template <bool Bf16, int HeadDim, int BlockN, int Warps, int RowTiles,
          bool QInRegisters, bool Causal>
static __device__ __forceinline__ void
fusec_attention_tensor_cores(const fusec_attention_args &a) {
  enum {
    WarpRows = 16 * RowTiles,
    BlockM = WarpRows * Warps,
    Threads = 32 * Warps,
    Chunks = HeadDim / 8,
    TileN = BlockN / 8,   // n-tiles of 8 keys in a key block
    TileD = HeadDim / 8,  // n-tiles of 8 head elements in the output
    StepsD = HeadDim / 16 // k-steps of the score product
  };
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int m_block = fusec_attention_query_block<Causal>(a);
  const int m0 = m_block * BlockM;
  const int bh = a.heads_in_grid_x ? blockIdx.x : blockIdx.y;
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

  const int key_begin = fusec_attention_first_key<BlockN, Causal>(a, m0);
  const int blocks =
      fusec_attention_key_blocks<BlockM, BlockN, Causal>(a, m0, key_begin);

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

  unsigned q_frag[QInRegisters ? RowTiles : 1][QInRegisters ? StepsD : 1][4];
  float o[RowTiles][TileD][4];
#pragma unroll
  for (int r = 0; r < RowTiles; ++r)
#pragma unroll
    for (int j = 0; j < TileD; ++j)
      o[r][j][0] = o[r][j][1] = o[r][j][2] = o[r][j][3] = 0.f;
  float row_max[RowTiles][2], row_sum[RowTiles][2];
#pragma unroll
  for (int r = 0; r < RowTiles; ++r) {
    row_max[r][0] = row_max[r][1] = -INFINITY;
    row_sum[r][0] = row_sum[r][1] = 0.f;
  }
  const float scale_log2 = a.scale * 1.4426950408889634f;
  const int warp_row0 = m0 + warp * WarpRows + g;
  // The A fragment of the warp's query rows [16 * r, 16 * r + 16) for
  // k-step `step`, from the swizzled query tile.
  auto load_query = [&](unsigned (&frag)[4], int r, int step) {
    const int m = lane >> 3, rr = lane & 7;
    const int row = warp * WarpRows + r * 16 + rr + (m & 1) * 8;
    const int chunk = step * 2 + (m >> 1);
    fusec_attention_ldmatrix(
        frag, q_tile + fusec_attention_swizzle<Chunks>(row, chunk));
  };

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
    if (QInRegisters && block == 0) {
#pragma unroll
      for (int r = 0; r < RowTiles; ++r)
#pragma unroll
        for (int step = 0; step < StepsD; ++step)
          load_query(q_frag[QInRegisters ? r : 0][QInRegisters ? step : 0], r,
                     step);
    }
    const unsigned k_tile = k_tiles + buffer * tile_bytes;
    const unsigned v_tile = v_tiles + buffer * tile_bytes;

    // Scores: the warp's rows x BlockN keys.
    float s[RowTiles][TileN][4];
#pragma unroll
    for (int r = 0; r < RowTiles; ++r)
#pragma unroll
      for (int j = 0; j < TileN; ++j)
        s[r][j][0] = s[r][j][1] = s[r][j][2] = s[r][j][3] = 0.f;
#pragma unroll
    for (int step = 0; step < StepsD; ++step) {
      unsigned q_step[RowTiles][4];
#pragma unroll
      for (int r = 0; r < RowTiles; ++r) {
        if (QInRegisters) {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            q_step[r][e] =
                q_frag[QInRegisters ? r : 0][QInRegisters ? step : 0][e];
        } else {
          load_query(q_step[r], r, step);
        }
      }
#pragma unroll
      for (int j = 0; j < TileN; j += 2) {
        unsigned b[4];
        const int m = lane >> 3, rr = lane & 7;
        const int key = j * 8 + rr + (m >> 1) * 8;
        const int chunk = step * 2 + (m & 1);
        fusec_attention_ldmatrix(
            b, k_tile + fusec_attention_swizzle<Chunks>(key, chunk));
#pragma unroll
        for (int r = 0; r < RowTiles; ++r) {
          fusec_attention_mma<Bf16>(s[r][j], q_step[r], b[0], b[1]);
          fusec_attention_mma<Bf16>(s[r][j + 1], q_step[r], b[2], b[3]);
        }
      }
    }

    // The bias and the hidden keys, on the blocks that have any: the last
    // (ragged) block, those crossing the causal diagonal or the window's
    // edge.
    const bool ragged = n0 + BlockN > a.key_len;
    const bool edge =
        Causal && (n0 + BlockN - 1 > m0 + a.causal_offset ||
                   (a.window_left >= 0 &&
                    n0 < m0 + BlockM - 1 + a.causal_offset - a.window_left));
    const float scale = a.bias_kind != 0 ? 1.f : scale_log2;
    if (a.bias_kind != 0 || ragged || edge) {
#pragma unroll
      for (int r = 0; r < RowTiles; ++r)
        fusec_attention_mask_scores<Bf16, TileN, Causal>(
            s[r], a, warp_row0 + r * 16, n0, t, bb, h, scale_log2);
    }

#pragma unroll
    for (int r = 0; r < RowTiles; ++r) {
      float corr[2];
      fusec_attention_softmax_step<TileN>(s[r], row_max[r], row_sum[r], scale,
                                          corr);
      fusec_attention_rescale<TileD>(o[r], corr);
    }

    // o += p v: the scores' accumulators are the A operands (rounded to
    // the dtype), v through ldmatrix.trans, each v fragment for every row
    // tile.
#pragma unroll
    for (int step = 0; step < BlockN / 16; ++step) {
      unsigned p[RowTiles][4];
#pragma unroll
      for (int r = 0; r < RowTiles; ++r)
        fusec_attention_p_fragment<Bf16, TileN>(p[r], s[r], step);
#pragma unroll
      for (int j = 0; j < TileD; j += 2) {
        unsigned b[4];
        const int m = lane >> 3, rr = lane & 7;
        const int key = step * 16 + rr + (m & 1) * 8;
        const int chunk = j + (m >> 1);
        fusec_attention_ldmatrix_trans(
            b, v_tile + fusec_attention_swizzle<Chunks>(key, chunk));
#pragma unroll
        for (int r = 0; r < RowTiles; ++r) {
          fusec_attention_mma<Bf16>(o[r][j], p[r], b[0], b[1]);
          fusec_attention_mma<Bf16>(o[r][j + 1], p[r], b[2], b[3]);
        }
      }
    }
    __syncthreads(); // the buffer is refilled two blocks on
  }
  asm volatile("cp.async.wait_group 0;");

  uint16_t *out = (uint16_t *)a.output + a.o.offset + bb * a.o.batch +
                  h * a.o.head;
#pragma unroll
  for (int r = 0; r < RowTiles; ++r)
    fusec_attention_store_tile<Bf16, TileD>(out, a, warp_row0 + r * 16, t, o[r],
                                            row_max[r], row_sum[r]);
}

// ---------------------------------------------------------------------------
// Decode (a few query rows against a long key sequence): the keys split
// among blocks (Flash-Decoding) so that the whole GPU reads the cache. A
// block takes one (batch, kv head) and one split of the keys, for all
// Rows = group * query_len query rows that share the kv head (each key and
// value row is read once for all of them). The block leaves its rows'
// partial maxima, sums and weighted sums in the scratch; the last block of
// a (batch, kv head) to finish (a counter in the scratch, which it resets)
// merges the splits by their log-sum-exp.
// Scratch: B * kv_heads counters, then per (b, kv head, split, row) the
// max, the sum and the ValueHeadDim weighted sums, as floats (log2 units).
//
// How a warp walks its keys, by what the rows allow:
// - Stages > 0 (key and value rows of the same whole 16-byte chunks,
//   8, 16 or 32 of them): tiles of 32 / (chunks / 8) keys per warp stream
//   through shared memory by cp.async, Stages deep (each warp its own
//   ring, so no block barrier in the loop), swizzled so that neither the
//   scores (chunks / 8 lanes per key) nor the weighted sum (lanes side by
//   side over a row's chunks) conflict on banks;
// - VectorKeys / VectorValues: 32 keys at a time straight from global
//   memory, a lane per key row (all its 16-byte chunks at once) for the
//   scores, groups of lanes over each value row's chunks for the sum;
// - else element by element, a lane per key, a lane per head element.
template <typename Traits, int HeadDim, int ValueHeadDim, int Rows,
          bool VectorKeys, bool VectorValues, int Stages>
static __device__ __forceinline__ void
fusec_attention_split_keys(const fusec_attention_args &a, int splits,
                           int split_keys, unsigned char *scratch) {
  typedef typename Traits::storage T;
  enum {
    Warps = 4,
    PerChunk = 16 / sizeof(T),
    KeyChunks = HeadDim >= PerChunk ? HeadDim / PerChunk : 1,
    // Vector and staged values: a row's chunks over LanesPerRow lanes,
    // RowsAtOnce rows per warp-wide load; else a lane per head element.
    ValueChunks = ValueHeadDim >= PerChunk ? ValueHeadDim / PerChunk : 1,
    LanesPerRow = ValueChunks < 32 ? ValueChunks : 32,
    RowsAtOnce = 32 / LanesPerRow,
    ChunksPerLane = ValueChunks / LanesPerRow,
    AccPerLane = VectorValues || Stages > 0 ? ChunksPerLane * PerChunk
                                            : (ValueHeadDim + 31) / 32,
    // Value rows in flight per lane: at most 16 chunks (64 registers).
    StepsAtOnce = 32 / RowsAtOnce * ChunksPerLane > 16
                      ? 16 / ChunksPerLane
                      : 32 / RowsAtOnce,
    // Staged: lanes per key for the scores (8 chunks each), keys per tile.
    KeyParts = KeyChunks >= 8 ? KeyChunks / 8 : 1,
    TileKeys = 32 / KeyParts,
    TileBytes = TileKeys * KeyChunks * 16,
    // q's rows: 16 bytes of padding after each part's 8 chunks, so that
    // the parts' lanes read q from different banks.
    PartElements = 8 * PerChunk,
    QueryStride = HeadDim + HeadDim / PartElements * 4
  };
  __shared__ __align__(16) float q[Rows][QueryStride];
  // Element d of a query row.
  auto q_at = [](int d) { return d + d / PartElements * 4; };
  __shared__ float warp_max[Warps][Rows], warp_sum[Warps][Rows];
  __shared__ int warp_nan[Warps][Rows];
  __shared__ float warp_acc[Warps][Rows][ValueHeadDim];
  __shared__ bool last_block;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int split = blockIdx.x, pair = blockIdx.y;
  const int kvh = pair % a.kv_heads, bb = pair / a.kv_heads;
  const int group = a.heads / a.kv_heads;
  const float scale_log2 = a.scale * 1.4426950408889634f;
  // Row r: query head kvh * group + r / query_len, query r % query_len.
  for (int e = threadIdx.x; e < Rows * HeadDim; e += 32 * Warps) {
    const int r = e / HeadDim, d = e % HeadDim;
    const int h = kvh * group + r / a.query_len, i = r % a.query_len;
    q[r][q_at(d)] = r < group * a.query_len
                  ? Traits::load(((const T *)a.query)[a.q.offset +
                                                       bb * a.q.batch +
                                                       h * a.q.head +
                                                       i * a.q.row + d]) *
                        scale_log2
                  : 0.f;
  }
  __syncthreads();
  const T *keys = (const T *)a.key + a.k.offset + bb * a.k.batch +
                  kvh * a.k.head;
  const T *values = (const T *)a.value + a.v.offset + bb * a.v.batch +
                    kvh * a.v.head;
  const int key_begin = split * split_keys;
  const int key_end =
      key_begin + split_keys < a.key_len ? key_begin + split_keys : a.key_len;
  float max[Rows], sum[Rows], acc[Rows][AccPerLane];
  bool nan[Rows];
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    max[r] = -INFINITY;
    sum[r] = 0.f;
    nan[r] = false;
#pragma unroll
    for (int t = 0; t < AccPerLane; ++t)
      acc[r][t] = 0.f;
  }
  // The online softmax over the warp's keys: `s` holds each lane's key
  // j's scores (log2 units); masked become -inf, then the probabilities,
  // the running maxima and the rescaled sums. Lanes with `counted` false
  // hold a copy of another lane's key and add nothing to the sums.
  auto update = [&](float(&s)[Rows], int j, bool counted) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const int h = kvh * group + r / a.query_len, i = r % a.query_len;
      bool hidden = j >= key_end || r >= group * a.query_len;
      if (a.causal)
        hidden = hidden || j > i + a.causal_offset ||
                 (a.window_left >= 0 &&
                  j < i + a.causal_offset - a.window_left);
      if (!hidden && a.bias_kind != 0) {
        const long long at = a.b.offset + bb * a.b.batch + h * a.b.head +
                             (long long)i * a.b.row + (long long)j * a.b.column;
        if (a.bias_kind == 1)
          s[r] += Traits::load(((const T *)a.bias)[at]) * 1.4426950408889634f;
        else if (!((const unsigned char *)a.bias)[at])
          hidden = true;
      }
      s[r] = hidden ? -INFINITY : s[r];
      nan[r] = nan[r] || s[r] != s[r] || s[r] == INFINITY;
      float m = s[r];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
      m = fmaxf(m, max[r]);
      const float base = m == -INFINITY ? 0.f : m;
      const float correction = fusec_attention_exp2(max[r] - base);
      max[r] = m;
      const float p = fusec_attention_exp2(s[r] - base);
      s[r] = p;
      sum[r] = sum[r] * correction + (counted ? p : 0.f);
#pragma unroll
      for (int t = 0; t < AccPerLane; ++t)
        acc[r][t] *= correction;
    }
  };
  // acc += p(key) * value row chunk, `elements` a 16-byte chunk of the row
  // of the key whose probabilities lane `owner` holds.
  auto accumulate = [&](const float(&s)[Rows], int owner, const T *elements,
                        int t) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const float p = __shfl_sync(0xffffffffu, s[r], owner);
#pragma unroll
      for (int u = 0; u < PerChunk; ++u)
        acc[r][t * PerChunk + u] =
            fmaf(p, Traits::load(elements[u]), acc[r][t * PerChunk + u]);
    }
  };
  if (Stages > 0) {
    const unsigned ring =
        (unsigned)__cvta_generic_to_shared(fusec_attention_smem) +
        warp * Stages * 2 * TileBytes;
    // This warp's tiles: keys key_begin + (t * Warps + warp) * TileKeys...
    const int span = key_end - key_begin - warp * TileKeys;
    const int tiles =
        span > 0 ? (span + Warps * TileKeys - 1) / (Warps * TileKeys) : 0;
    auto load = [&](int t) {
      const int first = key_begin + (t * Warps + warp) * TileKeys;
      const unsigned k_tile = ring + (t % Stages) * 2 * TileBytes;
#pragma unroll
      for (int e = lane; e < TileKeys * KeyChunks; e += 32) {
        const int row = e / KeyChunks, chunk = e % KeyChunks;
        const bool valid = first + row < key_end;
        const long long j = valid ? first + row : key_begin;
        const unsigned at = fusec_attention_swizzle<KeyChunks>(row, chunk);
        fusec_attention_copy16(k_tile + at, keys + j * a.k.row + chunk * PerChunk,
                               valid);
        fusec_attention_copy16(k_tile + TileBytes + at,
                               values + j * a.v.row + chunk * PerChunk, valid);
      }
    };
#pragma unroll
    for (int t = 0; t < Stages - 1; ++t) {
      if (t < tiles)
        load(t);
      asm volatile("cp.async.commit_group;");
    }
    const int key_of_lane = lane / KeyParts, part = lane % KeyParts;
    for (int t = 0; t < tiles; ++t) {
      if (t + Stages - 1 < tiles)
        load(t + Stages - 1);
      asm volatile("cp.async.commit_group;");
      asm volatile("cp.async.wait_group %0;" ::"n"(Stages - 1));
      __syncwarp();
      const unsigned k_tile = ring + (t % Stages) * 2 * TileBytes;
      const unsigned v_tile = k_tile + TileBytes;
      // Scores: KeyParts lanes per key, 8 chunks each, then their sum;
      // even and odd chunks in two sums, for half the dependent chain.
      float s[Rows], odd[Rows];
#pragma unroll
      for (int r = 0; r < Rows; ++r)
        s[r] = odd[r] = 0.f;
      // Part p takes its chunks in the order i ^ (p * 8 / KeyParts): the
      // 8 lanes of a quarter warp (8 / KeyParts keys x KeyParts parts)
      // then read 8 different bank groups of the swizzled tile.
#pragma unroll
      for (int i = 0; i < 8 && i < KeyChunks; ++i) {
        const int chunk = part * 8 + (i ^ (part * 8 / KeyParts));
        uint4 raw;
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
                     : "r"(k_tile + fusec_attention_swizzle<KeyChunks>(
                                        key_of_lane, chunk)));
        const T *elements = (const T *)&raw;
#pragma unroll
        for (int u = 0; u < PerChunk; ++u) {
          const float k = Traits::load(elements[u]);
#pragma unroll
          for (int r = 0; r < Rows; ++r) {
            float &sum = i % 2 ? odd[r] : s[r];
            sum = fmaf(q[r][q_at(chunk * PerChunk + u)], k, sum);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < Rows; ++r)
        s[r] += odd[r];
#pragma unroll
      for (int offset = 1; offset < KeyParts; offset <<= 1)
#pragma unroll
        for (int r = 0; r < Rows; ++r)
          s[r] += __shfl_xor_sync(0xffffffffu, s[r], offset);
      update(s, key_begin + (t * Warps + warp) * TileKeys + key_of_lane,
             part == 0);
      // The weighted sum: RowsAtOnce value rows per step, their chunks
      // side by side.
#pragma unroll
      for (int step = 0; step < TileKeys / RowsAtOnce; ++step) {
        const int row = step * RowsAtOnce + lane / LanesPerRow;
#pragma unroll
        for (int t2 = 0; t2 < ChunksPerLane; ++t2) {
          uint4 raw;
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                       : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
                       : "r"(v_tile + fusec_attention_swizzle<ValueChunks>(
                                          row, lane % LanesPerRow +
                                                   t2 * LanesPerRow)));
          accumulate(s, row * KeyParts, (const T *)&raw, t2);
        }
      }
      __syncwarp(); // the next iteration's load overwrites this stage
    }
    asm volatile("cp.async.wait_group 0;");
  } else {
    for (int j0 = key_begin + warp * 32; j0 < key_end; j0 += 32 * Warps) {
      const int j = j0 + lane;
      float s[Rows];
#pragma unroll
      for (int r = 0; r < Rows; ++r)
        s[r] = 0.f;
      if (j < key_end) {
        const T *krow = keys + (long long)j * a.k.row;
        if (VectorKeys) {
          // At most 16 chunks (64 registers) in flight.
          enum { Batch = KeyChunks < 16 ? KeyChunks : 16 };
#pragma unroll
          for (int c0 = 0; c0 < KeyChunks; c0 += Batch) {
            uint4 chunks[Batch];
#pragma unroll
            for (int c = 0; c < Batch; ++c)
              if (c0 + c < KeyChunks)
                chunks[c] = __ldcs((const uint4 *)krow + c0 + c);
#pragma unroll
            for (int c = 0; c < Batch && c0 + c < KeyChunks; ++c) {
              const T *elements = (const T *)&chunks[c];
#pragma unroll
              for (int u = 0; u < PerChunk; ++u) {
                const float k = Traits::load(elements[u]);
#pragma unroll
                for (int r = 0; r < Rows; ++r)
                  s[r] = fmaf(q[r][q_at((c0 + c) * PerChunk + u)], k, s[r]);
              }
            }
          }
        } else {
          for (int d = 0; d < HeadDim; ++d) {
            const float k = Traits::load(krow[d]);
#pragma unroll
            for (int r = 0; r < Rows; ++r)
              s[r] = fmaf(q[r][q_at(d)], k, s[r]);
          }
        }
      }
      update(s, j, true);
      // The weighted sum over the 32 keys (p of key c is lane c's s).
      const int keys_here = key_end - j0 < 32 ? key_end - j0 : 32;
      if (VectorValues) {
        // Lane: row offset `sub` within a step, chunks `column` +
        // t * LanesPerRow of that row.
        const int sub = lane / LanesPerRow, column = lane % LanesPerRow;
#pragma unroll
        for (int step0 = 0; step0 < 32 / RowsAtOnce; step0 += StepsAtOnce) {
          uint4 chunks[StepsAtOnce][ChunksPerLane];
#pragma unroll
          for (int step = 0; step < StepsAtOnce; ++step) {
            const int c = (step0 + step) * RowsAtOnce + sub;
            const uint4 *vrow =
                (const uint4 *)(values + (long long)(j0 + c) * a.v.row);
#pragma unroll
            for (int t = 0; t < ChunksPerLane; ++t)
              chunks[step][t] = c < keys_here
                                    ? __ldcs(vrow + column + t * LanesPerRow)
                                    : make_uint4(0u, 0u, 0u, 0u);
          }
#pragma unroll
          for (int step = 0; step < StepsAtOnce; ++step)
#pragma unroll
            for (int t = 0; t < ChunksPerLane; ++t)
              accumulate(s, (step0 + step) * RowsAtOnce + sub,
                         (const T *)&chunks[step][t], t);
        }
      } else {
        for (int c = 0; c < keys_here; ++c) {
          const T *vrow = values + (long long)(j0 + c) * a.v.row;
          float v[AccPerLane];
#pragma unroll
          for (int t = 0; t < AccPerLane; ++t) {
            const int d = lane + 32 * t;
            v[t] = d < ValueHeadDim ? Traits::load(vrow[d]) : 0.f;
          }
#pragma unroll
          for (int r = 0; r < Rows; ++r) {
            const float p = __shfl_sync(0xffffffffu, s[r], c);
#pragma unroll
            for (int t = 0; t < AccPerLane; ++t)
              acc[r][t] = fmaf(p, v[t], acc[r][t]);
          }
        }
      }
    }
  }
  // The block's rows: warps' maxima, sums (over lanes, then warps) and
  // weighted sums merged through shared memory.
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    float total = sum[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      total += __shfl_xor_sync(0xffffffffu, total, offset);
    const int any_nan = __any_sync(0xffffffffu, nan[r]);
    if (lane == 0) {
      warp_max[warp][r] = max[r];
      warp_sum[warp][r] = total;
      warp_nan[warp][r] = any_nan;
    }
    if (VectorValues || Stages > 0) {
      // Lanes that read the same chunks of other rows add up.
#pragma unroll
      for (int t = 0; t < AccPerLane; ++t)
#pragma unroll
        for (int offset = LanesPerRow; offset < 32; offset <<= 1)
          acc[r][t] += __shfl_xor_sync(0xffffffffu, acc[r][t], offset);
      if (lane < LanesPerRow)
#pragma unroll
        for (int t = 0; t < ChunksPerLane; ++t)
#pragma unroll
          for (int u = 0; u < PerChunk; ++u)
            warp_acc[warp][r][(lane + t * LanesPerRow) * PerChunk + u] =
                acc[r][t * PerChunk + u];
    } else {
#pragma unroll
      for (int t = 0; t < AccPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d < ValueHeadDim)
          warp_acc[warp][r][d] = acc[r][t];
      }
    }
  }
  __syncthreads();
  unsigned *counters = (unsigned *)scratch;
  const int pairs = a.batch * a.kv_heads;
  float *partial = (float *)(scratch + ((pairs * 4 + 15) / 16) * 16);
  const int stride = ValueHeadDim + 2; // max, sum, weighted sums
  float *mine = partial + ((long long)(pair * splits + split) * Rows) * stride;
  for (int e = threadIdx.x; e < Rows * ValueHeadDim; e += 32 * Warps) {
    const int r = e / ValueHeadDim, d = e % ValueHeadDim;
    float m = -INFINITY;
    bool any_nan = false;
    for (int w = 0; w < Warps; ++w) {
      m = fmaxf(m, warp_max[w][r]);
      any_nan = any_nan || warp_nan[w][r];
    }
    const float base = m == -INFINITY ? 0.f : m;
    float s = 0.f, x = 0.f;
    for (int w = 0; w < Warps; ++w) {
      const float f = fusec_attention_exp2(warp_max[w][r] - base);
      s += warp_sum[w][r] * f;
      x += warp_acc[w][r][d] * f;
    }
    if (any_nan)
      m = NAN;
    if (d == 0) {
      mine[r * stride] = m;
      mine[r * stride + 1] = s;
    }
    mine[r * stride + 2 + d] = x;
  }
  // The last block of this (batch, kv head) merges every split.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last_block = atomicAdd(&counters[pair], 1u) == (unsigned)splits - 1;
  __syncthreads();
  if (!last_block)
    return;
  __threadfence();
  // One pass over the splits, rescaling as the maximum grows; the
  // partials read from L2 (other blocks wrote them; L1 may be stale).
  const float *all = partial + (long long)pair * splits * Rows * stride;
  for (int e = threadIdx.x; e < Rows * ValueHeadDim; e += 32 * Warps) {
    const int r = e / ValueHeadDim, d = e % ValueHeadDim;
    if (r >= group * a.query_len)
      continue;
    float m = -INFINITY, s = 0.f, x = 0.f;
    bool any_nan = false;
#pragma unroll 4
    for (int sp = 0; sp < splits; ++sp) {
      const float *row = all + (sp * Rows + r) * stride;
      const float ms = __ldcg(row), ss = __ldcg(row + 1),
                  xs = __ldcg(row + 2 + d);
      any_nan = any_nan || ms != ms;
      const float grown = fmaxf(m, ms);
      const float base = grown == -INFINITY ? 0.f : grown;
      const float old_scale = fusec_attention_exp2(m - base),
                  new_scale = fusec_attention_exp2(ms - base);
      s = s * old_scale + ss * new_scale;
      x = x * old_scale + xs * new_scale;
      m = grown;
    }
    const bool masked = m == -INFINITY;
    const bool zero = a.zero_nan_rows && (any_nan || masked || s != s);
    const float out_value =
        zero ? 0.f
        : any_nan ? NAN
        : masked ? (a.zero_masked_rows ? 0.f : NAN) : x / s;
    const int h = kvh * group + r / a.query_len, i = r % a.query_len;
    ((T *)a.output)[a.o.offset + bb * a.o.batch + h * a.o.head +
                    i * a.o.row + d] = Traits::store(out_value);
  }
  if (threadIdx.x == 0)
    counters[pair] = 0; // as the next launch expects it
}
