// Fused attention in f16 and bf16 on sm_90a's warpgroup tensor cores
// (wgmma), after FlashAttention-3. It follows device/FlashAttention.cuh in
// a program's prelude and uses its helpers (the mask, online-softmax and
// store steps of a 16-row tile, cp.async, the shared memory).
//
// A block is three warpgroups:
// - a producer, which copies q and then each key and value block (128 rows)
//   into shared memory by cp.async, two stages deep, in the 128-byte
//   swizzled layout wgmma reads (rows of 64 elements per panel, 8-row
//   groups 1024 bytes apart); mbarriers say when a stage is full (the
//   copies landed) and when it is empty again (both consumers are done);
// - two consumers of 64 query rows each (the wgmma's M). The scores read q
//   and k from shared memory; the product with v takes the exponents from
//   registers (the scores' accumulator layout is the A operand's) and v
//   from shared memory, transposed. A consumer issues the scores of key
//   block n and the product of block n - 1 with v together, waits for the
//   scores only, and runs their softmax while the tensor cores work on the
//   product; the two consumers issue their products in turns (ping-pong),
//   so that one's softmax overlaps the other's products.
// The producer gives its registers to the consumers (setmaxnreg).
// Requires: sm_90a; head dims equal, 64 or 128; rows 16-byte aligned.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

#define FUSEC_WGMMA_D32                                                        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "     \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31"
#define FUSEC_WGMMA_D64                                                        \
  FUSEC_WGMMA_D32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "  \
                  "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "    \
                  "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FUSEC_WGMMA_OUT8(i)                                                    \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),  \
      "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define FUSEC_WGMMA_OUT32                                                      \
  FUSEC_WGMMA_OUT8(0), FUSEC_WGMMA_OUT8(8), FUSEC_WGMMA_OUT8(16),              \
      FUSEC_WGMMA_OUT8(24)
#define FUSEC_WGMMA_OUT64                                                      \
  FUSEC_WGMMA_OUT32, FUSEC_WGMMA_OUT8(32), FUSEC_WGMMA_OUT8(40),               \
      FUSEC_WGMMA_OUT8(48), FUSEC_WGMMA_OUT8(56)

// d (64 x 128, f32) = a (64 x 16) b (16 x 128) (+ d when `accumulate`),
// both operands K-major in shared memory.
#define FUSEC_WGMMA_SS_N128(TYPE)                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                    \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE    \
               " {" FUSEC_WGMMA_D64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"         \
               : FUSEC_WGMMA_OUT64                                             \
               : "l"(a), "l"(b), "r"(accumulate))
// d (64 x N, f32) += a (64 x 16, registers) b (16 x N), b MN-major in
// shared memory (transposed); the operands after d's are a's 4 registers
// and b's descriptor.
#define FUSEC_WGMMA_RS(SHAPE, D, OUT, A_AND_B, TYPE)                           \
  asm volatile("wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE     \
               " {" D "}, " A_AND_B ", 1, 1, 1, 1;\n"                          \
               : OUT                                                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b))
#define FUSEC_WGMMA_RS_N64(TYPE)                                               \
  FUSEC_WGMMA_RS("m64n64k16", FUSEC_WGMMA_D32, FUSEC_WGMMA_OUT32,              \
                 "{%32, %33, %34, %35}, %36", TYPE)
#define FUSEC_WGMMA_RS_N128(TYPE)                                              \
  FUSEC_WGMMA_RS("m64n128k16", FUSEC_WGMMA_D64, FUSEC_WGMMA_OUT64,             \
                 "{%64, %65, %66, %67}, %68", TYPE)

// The instruction of the operands' dtype (a function's `Bf16`).
#define FUSEC_WGMMA_OF_DTYPE(INSTRUCTION)                                      \
  do {                                                                         \
    if (Bf16)                                                                  \
      INSTRUCTION("bf16");                                                     \
    else                                                                       \
      INSTRUCTION("f16");                                                      \
  } while (0)

template <bool Bf16>
static __device__ __forceinline__ void
fusec_wgmma_scores(float (&d)[64], unsigned long long a, unsigned long long b,
                   int accumulate) {
  FUSEC_WGMMA_OF_DTYPE(FUSEC_WGMMA_SS_N128);
}

// d (64 x 2 Regs) += a b: head dims 64 and 128.
template <bool Bf16, int Regs>
static __device__ __forceinline__ void
fusec_wgmma_values(float (&d)[Regs], const unsigned (&a)[4],
                   unsigned long long b) {
  static_assert(Regs == 32 || Regs == 64, "value rows of 64 or 128");
  if constexpr (Regs == 32)
    FUSEC_WGMMA_OF_DTYPE(FUSEC_WGMMA_RS_N64);
  else
    FUSEC_WGMMA_OF_DTYPE(FUSEC_WGMMA_RS_N128);
}

// A shared-memory matrix descriptor: a tile of 128-byte swizzled rows whose
// 8-row groups lie 1024 bytes apart; `panels`: the byte distance between
// 64-element panels of an MN-major operand (K-major ones ignore it).
static __device__ __forceinline__ unsigned long long
fusec_wgmma_descriptor(unsigned address, unsigned panels) {
  return (unsigned long long)((address & 0x3ffff) >> 4) |
         (unsigned long long)((panels >> 4) & 0x3fff) << 16 |
         (unsigned long long)(1024 >> 4) << 32 | 1ull << 62;
}

static __device__ __forceinline__ void fusec_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void fusec_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
static __device__ __forceinline__ void fusec_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Registers an issued wgmma reads or writes, pinned: the compiler neither
// reuses them nor moves their reads above the wait that completes it.
template <int N>
static __device__ __forceinline__ void fusec_wgmma_keep(float *x) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+f"(x[i])::"memory");
}
template <int N>
static __device__ __forceinline__ void fusec_wgmma_keep(unsigned *x) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+r"(x[i])::"memory");
}
// Shared memory written by cp.async (the generic proxy) visible to wgmma
// (the async proxy).
static __device__ __forceinline__ void fusec_wgmma_shared_fence() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// mbarriers in shared memory: a stage full (its copies landed) or empty
// (its readers are done); a waiter names the phase it waits for by parity.
static __device__ __forceinline__ void fusec_mbarrier_init(unsigned barrier,
                                                           unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier),
               "r"(count)
               : "memory");
}
static __device__ __forceinline__ void fusec_mbarrier_wait(unsigned barrier,
                                                           unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(barrier), "r"(parity)
                 : "memory");
  } while (!done);
}
static __device__ __forceinline__ void fusec_mbarrier_arrive(unsigned barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier)
               : "memory");
}
// Arrives on `barrier` once the thread's earlier cp.async copies landed.
static __device__ __forceinline__ void
fusec_mbarrier_arrive_after_copies(unsigned barrier) {
  asm volatile(
      "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(barrier)
      : "memory");
}

// Thread `thread` of `Threads`' share of loading `Rows` rows of HeadDim
// elements (row r from `base + r * stride`, rows at or past `valid_rows`
// as zeros) into panels of 64 elements, each Rows x 128 bytes, chunk c of
// row r at chunk c ^ (r % 8): the 128-byte swizzle wgmma reads. A thread
// keeps one chunk column, so its rows share one swizzle and one pointer
// walks them.
template <int Rows, int HeadDim, int Threads>
static __device__ __forceinline__ void
fusec_wgmma_load_tile(int thread, unsigned tile, const uint16_t *base,
                      long long stride, int valid_rows) {
  enum { Chunks = HeadDim / 8, RowsPerPass = Threads / Chunks };
  static_assert(RowsPerPass % 8 == 0, "a thread's rows share their swizzle");
  const int chunk = thread % Chunks, row0 = thread / Chunks;
  const unsigned column =
      tile + (chunk >> 3) * (Rows * 128) + (((chunk & 7) ^ (row0 & 7)) << 4);
  const uint16_t *source = base + row0 * stride + chunk * 8;
#pragma unroll 4
  for (int row = row0; row < Rows; row += RowsPerPass) {
    const bool valid = row < valid_rows;
    fusec_attention_copy16(column + row * 128, valid ? source : base, valid);
    source += RowsPerPass * stride;
  }
}

template <bool Bf16, int HeadDim, bool Causal>
static __device__ __forceinline__ void
fusec_attention_wgmma(const fusec_attention_args &a) {
  enum {
    BlockM = 128,
    BlockN = 128,
    ConsumerWarps = 8,
    TileN = BlockN / 8,    // 8-key column tiles of the scores
    TileD = HeadDim / 8,   // 8-element column tiles of the output
    StepsD = HeadDim / 16, // k-steps of the scores
    StepsN = BlockN / 16,  // k-steps of the product with v
    QBytes = BlockM * HeadDim * 2,
    TileBytes = BlockN * HeadDim * 2
  };
  const int warpgroup = threadIdx.x >> 7;
  const int m_block = fusec_attention_query_block<Causal>(a);
  const int m0 = m_block * BlockM;
  const int bh = a.heads_in_grid_x ? blockIdx.x : blockIdx.y;
  const int h = bh % a.heads, bb = bh / a.heads;
  const int kvh = h / (a.heads / a.kv_heads);
  // Tiles start at the swizzle's period (1024 bytes): q, two stages of k,
  // two of v, then the mbarriers (8 bytes each): q full, k full, v full,
  // k empty and v empty per stage.
  const unsigned smem =
      ((unsigned)__cvta_generic_to_shared(fusec_attention_smem) + 1023u) &
      ~1023u;
  const unsigned q_tile = smem;
  const unsigned k_tiles = q_tile + QBytes;
  const unsigned v_tiles = k_tiles + 2 * TileBytes;
  const unsigned q_full = v_tiles + 2 * TileBytes;
  const unsigned k_full = q_full + 8, v_full = k_full + 16;
  const unsigned k_empty = v_full + 16, v_empty = k_empty + 16;

  const int key_begin = fusec_attention_first_key<BlockN, Causal>(a, m0);
  const int blocks =
      fusec_attention_key_blocks<BlockM, BlockN, Causal>(a, m0, key_begin);

  if (threadIdx.x == 0) {
    fusec_mbarrier_init(q_full, 128);
    for (int stage = 0; stage < 2; ++stage) {
      fusec_mbarrier_init(k_full + 8 * stage, 128);
      fusec_mbarrier_init(v_full + 8 * stage, 128);
      fusec_mbarrier_init(k_empty + 8 * stage, ConsumerWarps);
      fusec_mbarrier_init(v_empty + 8 * stage, ConsumerWarps);
    }
  }
  __syncthreads();

  if (warpgroup == 0) {
    // The producer: q, then key block n and value block n - 1 in the order
    // the consumers read them. A stage is refilled once both consumers
    // released what it held two blocks before.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (blocks == 0)
      return;
    const int thread = threadIdx.x;
    const uint16_t *query =
        (const uint16_t *)a.query + a.q.offset + bb * a.q.batch + h * a.q.head;
    const uint16_t *keys =
        (const uint16_t *)a.key + a.k.offset + bb * a.k.batch + kvh * a.k.head;
    const uint16_t *values = (const uint16_t *)a.value + a.v.offset +
                             bb * a.v.batch + kvh * a.v.head;
    fusec_wgmma_load_tile<BlockM, HeadDim, 128>(thread, q_tile,
                                                query + (long long)m0 * a.q.row,
                                                a.q.row, a.query_len - m0);
    fusec_mbarrier_arrive_after_copies(q_full);
    auto load = [&](int n, unsigned tiles, unsigned full, unsigned empty,
                    const uint16_t *rows, long long stride) {
      const int stage = n & 1;
      if (n >= 2)
        fusec_mbarrier_wait(empty + 8 * stage, ((n >> 1) & 1) ^ 1);
      const int n0 = key_begin + n * BlockN;
      fusec_wgmma_load_tile<BlockN, HeadDim, 128>(
          thread, tiles + stage * TileBytes, rows + (long long)n0 * stride,
          stride, a.key_len - n0);
      fusec_mbarrier_arrive_after_copies(full + 8 * stage);
    };
    for (int n = 0; n < blocks; ++n) {
      load(n, k_tiles, k_full, k_empty, keys, a.k.row);
      if (n >= 1)
        load(n - 1, v_tiles, v_full, v_empty, values, a.v.row);
    }
    load(blocks - 1, v_tiles, v_full, v_empty, values, a.v.row);
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int consumer = warpgroup - 1;
  const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int warp_row0 = m0 + consumer * 64 + warp * 16 + g;
  const float scale_log2 = a.scale * 1.4426950408889634f;
  const float scale = a.bias_kind != 0 ? 1.f : scale_log2;

  float o[TileD][4];
#pragma unroll
  for (int j = 0; j < TileD; ++j)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  float s[TileN][4];
  unsigned p[StepsN][4];
  float(&s_flat)[TileN * 4] = *reinterpret_cast<float(*)[TileN * 4]>(s);
  float(&o_flat)[TileD * 4] = *reinterpret_cast<float(*)[TileD * 4]>(o);

  // The scores of key block `block` (in k stage block % 2).
  auto issue_scores = [&](int block) {
    const unsigned k_tile = k_tiles + (block & 1) * TileBytes;
#pragma unroll
    for (int step = 0; step < StepsD; ++step) {
      const unsigned along = (step & 3) * 32; // 16 elements a step
      fusec_wgmma_scores<Bf16>(
          s_flat,
          fusec_wgmma_descriptor(q_tile + (step >> 2) * (BlockM * 128) +
                                     consumer * (64 * 128) + along,
                                 16),
          fusec_wgmma_descriptor(k_tile + (step >> 2) * (BlockN * 128) + along,
                                 16),
          step > 0);
    }
    fusec_wgmma_commit();
  };
  // The scores' bias, hidden keys and softmax step (`corr` for the output).
  auto softmax = [&](int block, float(&corr)[2]) {
    const int n0 = key_begin + block * BlockN;
    const bool ragged = n0 + BlockN > a.key_len;
    const bool edge =
        Causal && (n0 + BlockN - 1 > m0 + a.causal_offset ||
                   (a.window_left >= 0 &&
                    n0 < m0 + BlockM - 1 + a.causal_offset - a.window_left));
    if (a.bias_kind != 0 || ragged || edge)
      fusec_attention_mask_scores<Bf16, TileN, Causal>(s, a, warp_row0, n0, t,
                                                       bb, h, scale_log2);
    fusec_attention_softmax_step<TileN>(s, row_max, row_sum, scale, corr);
  };
  // The exponents as the operand of the next product with v.
  auto pack_exponents = [&]() {
#pragma unroll
    for (int step = 0; step < StepsN; ++step)
      fusec_attention_p_fragment<Bf16, TileN>(p[step], s, step);
  };
  // o += p v of key block `block` (in v stage block % 2).
  auto issue_values = [&](int block) {
    const unsigned v_tile = v_tiles + (block & 1) * TileBytes;
#pragma unroll
    for (int step = 0; step < StepsN; ++step)
      fusec_wgmma_values<Bf16>(
          o_flat, p[step],
          fusec_wgmma_descriptor(v_tile + step * (16 * 128), BlockN * 128));
    fusec_wgmma_commit();
  };
  auto release = [&](unsigned barrier) {
    if (lane == 0)
      fusec_mbarrier_arrive(barrier);
  };
  // Ping-pong on named barriers 1 and 2: a consumer waits for its turn to
  // issue products, and gives the other one its turn once it has.
  auto my_turn = [&]() {
    if (consumer == 0)
      asm volatile("bar.sync 1, 256;\n" ::: "memory");
    else
      asm volatile("bar.sync 2, 256;\n" ::: "memory");
  };
  auto their_turn = [&]() {
    if (consumer == 0)
      asm volatile("bar.arrive 2, 256;\n" ::: "memory");
    else
      asm volatile("bar.arrive 1, 256;\n" ::: "memory");
  };

  // Each consumer issues products blocks + 1 times: the first scores,
  // blocks - 1 times scores and a product with v, the last product. The
  // first consumer goes first; the second gives it no turn after its last.
  if (blocks > 0) {
    if (consumer == 1)
      their_turn();
    fusec_mbarrier_wait(q_full, 0);
    fusec_mbarrier_wait(k_full, 0);
    fusec_wgmma_shared_fence();
    my_turn();
    fusec_wgmma_fence();
    issue_scores(0);
    their_turn();
    fusec_wgmma_wait<0>();
    fusec_wgmma_keep<TileN * 4>(s_flat);
    release(k_empty);
    float corr[2];
    softmax(0, corr);
    pack_exponents();
    for (int block = 1; block < blocks; ++block) {
      fusec_mbarrier_wait(k_full + 8 * (block & 1), (block >> 1) & 1);
      fusec_mbarrier_wait(v_full + 8 * ((block - 1) & 1),
                          ((block - 1) >> 1) & 1);
      fusec_wgmma_shared_fence();
      my_turn();
      fusec_wgmma_fence();
      issue_scores(block);
      issue_values(block - 1);
      their_turn();
      fusec_wgmma_wait<1>();
      fusec_wgmma_keep<TileN * 4>(s_flat);
      release(k_empty + 8 * (block & 1));
      softmax(block, corr);
      // p is the product's operand until it completes.
      fusec_wgmma_wait<0>();
      fusec_wgmma_keep<TileD * 4>(o_flat);
      fusec_wgmma_keep<StepsN * 4>(&p[0][0]);
      release(v_empty + 8 * ((block - 1) & 1));
      fusec_attention_rescale<TileD>(o, corr);
      pack_exponents();
    }
    fusec_mbarrier_wait(v_full + 8 * ((blocks - 1) & 1),
                        ((blocks - 1) >> 1) & 1);
    fusec_wgmma_shared_fence();
    my_turn();
    fusec_wgmma_fence();
    issue_values(blocks - 1);
    if (consumer == 0)
      their_turn();
    fusec_wgmma_wait<0>();
    fusec_wgmma_keep<TileD * 4>(o_flat);
    fusec_wgmma_keep<StepsN * 4>(&p[0][0]);
  }

  uint16_t *out =
      (uint16_t *)a.output + a.o.offset + bb * a.o.batch + h * a.o.head;
  fusec_attention_store_tile<Bf16, TileD>(out, a, warp_row0, t, o, row_max,
                                          row_sum);
}

#endif // __CUDA_ARCH_FEAT_SM90_ALL
