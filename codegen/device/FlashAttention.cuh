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
  // Causal blocks with the most key blocks (the last) start first.
  const int m_block = Causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int m0 = m_block * BlockM;
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

    // Scale (to log2 units), bias, hidden keys.
#pragma unroll
    for (int r = 0; r < RowTiles; ++r)
#pragma unroll
      for (int j = 0; j < TileN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = warp_row0 + r * 16 + (e < 2 ? 0 : 8);
          const int key = n0 + j * 8 + 2 * t + (e & 1);
          float x = s[r][j][e] * scale_log2;
          if (a.bias_kind != 0 && i < a.query_len && key < a.key_len) {
            const long long at = a.b.offset + bb * a.b.batch +
                                  h * a.b.head + (long long)i * a.b.row +
                                  key * a.b.column;
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
          s[r][j][e] = hidden ? -INFINITY : x;
        }

    // The online softmax of rows g and g + 8 of each row tile (a quad of
    // lanes holds each row).
#pragma unroll
    for (int r = 0; r < RowTiles; ++r) {
      float corr[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float m = row_max[r][half];
        bool nan = false;
#pragma unroll
        for (int j = 0; j < TileN; ++j) {
          const float x0 = s[r][j][2 * half], x1 = s[r][j][2 * half + 1];
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
        corr[half] = fusec_attention_exp2(row_max[r][half] - base);
        row_max[r][half] = m;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < TileN; ++j) {
          s[r][j][2 * half] = fusec_attention_exp2(s[r][j][2 * half] - base);
          s[r][j][2 * half + 1] =
              fusec_attention_exp2(s[r][j][2 * half + 1] - base);
          sum += s[r][j][2 * half] + s[r][j][2 * half + 1];
        }
        row_sum[r][half] = row_sum[r][half] * corr[half] + sum;
      }
#pragma unroll
      for (int j = 0; j < TileD; ++j) {
        o[r][j][0] *= corr[0];
        o[r][j][1] *= corr[0];
        o[r][j][2] *= corr[1];
        o[r][j][3] *= corr[1];
      }
    }

    // o += p v: the scores' accumulators are the A operands (rounded to
    // the dtype), v through ldmatrix.trans, each v fragment for every row
    // tile.
#pragma unroll
    for (int step = 0; step < BlockN / 16; ++step) {
      unsigned p[RowTiles][4];
#pragma unroll
      for (int r = 0; r < RowTiles; ++r) {
        p[r][0] =
            fusec_attention_pack<Bf16>(s[r][2 * step][0], s[r][2 * step][1]);
        p[r][1] =
            fusec_attention_pack<Bf16>(s[r][2 * step][2], s[r][2 * step][3]);
        p[r][2] = fusec_attention_pack<Bf16>(s[r][2 * step + 1][0],
                                             s[r][2 * step + 1][1]);
        p[r][3] = fusec_attention_pack<Bf16>(s[r][2 * step + 1][2],
                                             s[r][2 * step + 1][3]);
      }
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

  // The sums over the quad, then each row's output: zeros or NaN for a
  // row that saw no key.
  uint16_t *out = (uint16_t *)a.output + a.o.offset + bb * a.o.batch +
                  h * a.o.head;
#pragma unroll
  for (int r = 0; r < RowTiles; ++r)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = row_sum[r][half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const bool masked = row_max[r][half] == -INFINITY;
      const float inv =
          masked ? (a.zero_masked_rows ? 0.f : NAN) : 1.f / sum;
      const int i = warp_row0 + r * 16 + half * 8;
      if (i >= a.query_len)
        continue;
      uint16_t *orow = out + (long long)i * a.o.row;
#pragma unroll
      for (int j = 0; j < TileD; ++j) {
        // A masked row's accumulators are 0: NaN stays NaN, 0 * 0 is 0.
        const float x0 = inv != inv ? inv : o[r][j][2 * half] * inv;
        const float x1 = inv != inv ? inv : o[r][j][2 * half + 1] * inv;
        *(unsigned *)(orow + j * 8 + 2 * t) =
            fusec_attention_pack<Bf16>(x0, x1);
      }
    }
}
