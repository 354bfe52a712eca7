// Fused attention on the host (codegen/cpu/AttentionCppPrinter.cpp calls
// it): for each (batch, head, tile of query rows), the keys in tiles, an
// online softmax (running max and sum, rescaled as the max grows), so the
// queryLen x keyLen scores never exist beyond one tile. The products of a
// tile are loops whose innermost index runs over keys or value columns, so
// the compiler vectorizes them without a BLAS.

#include <stdlib.h>

// fusec_attention_args: device/AttentionArgs.h.

// The products run on blocks of this many rows by this many columns (keys,
// or value elements), their sums in vector registers. Tiles are multiples
// of them; the value head dim is padded to the columns with zeros. 6 x 16
// is SGEMM's AVX2 block: 12 accumulators, two loads and a broadcast in 16
// registers, each loaded key column feeding 6 rows (4 rows: T = 512 ran in
// 14-16 ms on 2 cores, 6 rows in 8.5-9.8 ms).
#define FUSEC_ATTENTION_ROWS 6
#define FUSEC_ATTENTION_COLUMNS 16

// c + a * b for the products' sums: one fused multiply-add where the CPU
// has it (kernels compile with -ffp-contract=off, which keeps each ONNX op
// rounding on its own; a sum of products has no such order to keep),
// else a multiply and an add (fma would be a libm call).
static inline float fusec_attention_madd(float c, float a, float b) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return c + a * b;
#endif
}
static inline double fusec_attention_madd(double c, double a, double b) {
#if defined(__FMA__)
  return __builtin_fma(a, b, c);
#else
  return c + a * b;
#endif
}

// Scores to exp(score - max), returning their sum (one vectorized loop).
template <typename Traits, int KeyTile>
static inline typename Traits::acc
fusec_attention_probabilities(typename Traits::acc *scores,
                              typename Traits::acc max) {
  typename Traits::acc sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < KeyTile; ++c) {
    const typename Traits::acc p = Traits::exp(scores[c] - max);
    scores[c] = p;
    sum += p;
  }
  return sum;
}

// One thread's tiles (on the heap: at head dim 256 in f64 they take 1 MB).
template <typename A, int QueryTile, int KeyTile, int HeadDim,
          int PaddedValueHeadDim>
struct fusec_attention_tiles {
  A q[QueryTile][HeadDim]; // the query tile, scaled
  A acc[QueryTile][PaddedValueHeadDim];
  A s[QueryTile][KeyTile];  // scores, then probabilities
  A kt[HeadDim][KeyTile];   // the key tile, transposed
  A v[KeyTile][PaddedValueHeadDim];
  A row_max[QueryTile], row_sum[QueryTile], correction[QueryTile];
};

// Traits: `storage` (the tensors' element type), `acc` (f32, f64 for f64),
// static acc load(storage) and storage store(acc), static acc exp(acc).
template <typename Traits, int QueryTile, int KeyTile, int HeadDim,
          int ValueHeadDim>
static void fusec_attention_cpu(const fusec_attention_args &a) {
  typedef typename Traits::storage T;
  typedef typename Traits::acc A;
  const T *query = (const T *)a.query;
  const T *key = (const T *)a.key;
  const T *value = (const T *)a.value;
  T *output = (T *)a.output;
  const int64_t group = a.heads / a.kv_heads;
  // Few query rows per head (a decode step) with grouped heads: one tile
  // holds every query row of the heads that share a kv head, which then
  // read each key and value tile once, for rows that fill the register
  // blocks. Else a tile holds QueryTile rows of one head.
  const bool grouped =
      group > 1 && a.query_len > 0 && group * a.query_len <= QueryTile;
  const int64_t query_tiles =
      grouped ? 1 : (a.query_len + QueryTile - 1) / QueryTile;
  const int64_t task_heads = grouped ? a.kv_heads : a.heads;
  const int64_t tasks = a.batch * task_heads * query_tiles;
  const A minus_inf = -(A)INFINITY;
  enum {
    PaddedValueHeadDim = (ValueHeadDim + FUSEC_ATTENTION_COLUMNS - 1) /
                         FUSEC_ATTENTION_COLUMNS * FUSEC_ATTENTION_COLUMNS
  };
  typedef fusec_attention_tiles<A, QueryTile, KeyTile, HeadDim,
                                PaddedValueHeadDim>
      Tiles;
  static_assert(QueryTile % FUSEC_ATTENTION_ROWS == 0 &&
                    KeyTile % FUSEC_ATTENTION_COLUMNS == 0,
                "tiles are whole register blocks");
#pragma omp parallel if (a.parallel)
  {
  Tiles *tiles = (Tiles *)malloc(sizeof(Tiles));
#pragma omp for schedule(dynamic, 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t tile = task % query_tiles;
    const int64_t task_head = task / query_tiles % task_heads;
    const int64_t bb = task / query_tiles / task_heads;
    const int64_t kvh = grouped ? task_head : task_head / group;
    const int64_t i0 = tile * QueryTile;
    const int64_t rows =
        grouped ? group * a.query_len
                : (a.query_len - i0 < QueryTile ? a.query_len - i0 : QueryTile);
    // The head and the query position of the tile's row r; the first and
    // last query positions among its rows.
    auto head_of = [&](int64_t r) {
      return grouped ? kvh * group + r / a.query_len : task_head;
    };
    auto query_of = [&](int64_t r) {
      return grouped ? r % a.query_len : i0 + r;
    };
    const int64_t first_query = grouped ? 0 : i0;
    const int64_t last_query = grouped ? a.query_len - 1 : i0 + rows - 1;
    // The products run over the row blocks that hold a row of the tile
    // (one for a decode step, not QueryTile / FUSEC_ATTENTION_ROWS), and
    // below over the column blocks that hold a key.
    const int64_t row_blocks_end = (rows + FUSEC_ATTENTION_ROWS - 1) /
                                   FUSEC_ATTENTION_ROWS * FUSEC_ATTENTION_ROWS;
    A(*q)[HeadDim] = tiles->q;
    A(*acc)[PaddedValueHeadDim] = tiles->acc;
    A(*s)[KeyTile] = tiles->s;
    A(*kt)[KeyTile] = tiles->kt;
    A(*vt)[PaddedValueHeadDim] = tiles->v;
    A *row_max = tiles->row_max, *row_sum = tiles->row_sum,
      *correction = tiles->correction;
    for (int64_t r = 0; r < QueryTile; ++r) {
      const T *qrow = query + a.q.offset + bb * a.q.batch +
                      head_of(r) * a.q.head + query_of(r) * a.q.row;
      for (int64_t d = 0; d < HeadDim; ++d)
        q[r][d] = r < rows ? Traits::load(qrow[d]) * (A)a.scale : (A)0;
      for (int64_t d = 0; d < PaddedValueHeadDim; ++d)
        acc[r][d] = 0;
      row_max[r] = minus_inf;
      row_sum[r] = 0;
    }
    // Keys some row of the tile may see.
    int64_t key_begin = 0, key_end = a.key_len;
    if (a.causal) {
      const int64_t last = last_query + a.causal_offset + 1;
      key_end = last < key_end ? (last > 0 ? last : 0) : key_end;
      if (a.window_left >= 0) {
        const int64_t first = first_query + a.causal_offset - a.window_left;
        key_begin = first > 0 ? first : 0;
      }
    }
    for (int64_t j0 = key_begin; j0 < key_end; j0 += KeyTile) {
      const int64_t keys = key_end - j0 < KeyTile ? key_end - j0 : KeyTile;
      for (int64_t c = 0; c < keys; ++c) {
        const T *krow = key + a.k.offset + bb * a.k.batch + kvh * a.k.head +
                        (j0 + c) * a.k.row;
        const T *vrow = value + a.v.offset + bb * a.v.batch +
                        kvh * a.v.head + (j0 + c) * a.v.row;
        for (int64_t d = 0; d < HeadDim; ++d)
          kt[d][c] = Traits::load(krow[d]);
        for (int64_t d = 0; d < PaddedValueHeadDim; ++d)
          vt[c][d] = d < ValueHeadDim ? Traits::load(vrow[d]) : (A)0;
      }
      // A last, partial tile: zero keys past the end up to a whole column
      // block (the products below run over whole blocks; their
      // probabilities are 0).
      const int64_t key_blocks_end =
          (keys + FUSEC_ATTENTION_COLUMNS - 1) / FUSEC_ATTENTION_COLUMNS *
          FUSEC_ATTENTION_COLUMNS;
      for (int64_t c = keys; c < key_blocks_end; ++c) {
        for (int64_t d = 0; d < HeadDim; ++d)
          kt[d][c] = 0;
        for (int64_t d = 0; d < PaddedValueHeadDim; ++d)
          vt[c][d] = 0;
      }
      // Scores of FUSEC_ATTENTION_ROWS rows by FUSEC_ATTENTION_COLUMNS keys
      // at a time, their sums in registers: each key element loaded feeds
      // a row block's worth of multiply-adds.
      for (int64_t r0 = 0; r0 < row_blocks_end; r0 += FUSEC_ATTENTION_ROWS)
        for (int64_t c0 = 0; c0 < key_blocks_end;
             c0 += FUSEC_ATTENTION_COLUMNS) {
          A block[FUSEC_ATTENTION_ROWS][FUSEC_ATTENTION_COLUMNS] = {};
          for (int64_t d = 0; d < HeadDim; ++d)
            for (int64_t r = 0; r < FUSEC_ATTENTION_ROWS; ++r) {
              const A qd = q[r0 + r][d];
#pragma omp simd
              for (int64_t c = 0; c < FUSEC_ATTENTION_COLUMNS; ++c)
                block[r][c] = fusec_attention_madd(block[r][c], qd, kt[d][c0 + c]);
            }
          for (int64_t r = 0; r < FUSEC_ATTENTION_ROWS; ++r)
            for (int64_t c = 0; c < FUSEC_ATTENTION_COLUMNS; ++c)
              s[r0 + r][c0 + c] = block[r][c];
        }
      for (int64_t r = 0; r < row_blocks_end; ++r) {
        const int64_t i = query_of(r);
        A *srow = s[r];
        correction[r] = 1;
        if (r >= rows) { // a row past the end: computes nothing
          for (int64_t c = 0; c < KeyTile; ++c)
            srow[c] = 0;
          continue;
        }
        // The bias, then the hidden keys.
        if (a.bias_kind != 0) {
          const int64_t base = a.b.offset + bb * a.b.batch +
                               head_of(r) * a.b.head +
                               i * a.b.row;
          for (int64_t c = 0; c < keys; ++c) {
            const int64_t at = base + (j0 + c) * a.b.column;
            if (a.bias_kind == 1)
              srow[c] += Traits::load(((const T *)a.bias)[at]);
            else if (!((const uint8_t *)a.bias)[at])
              srow[c] = minus_inf;
          }
        }
        // Keys the rule hides: only tiles on the diagonal (or the window's
        // edge) have any.
        if (a.causal && (j0 + keys - 1 > i + a.causal_offset ||
                         (a.window_left >= 0 &&
                          j0 < i + a.causal_offset - a.window_left)))
          for (int64_t c = 0; c < keys; ++c) {
            const int64_t j = j0 + c;
            if (j > i + a.causal_offset ||
                (a.window_left >= 0 &&
                 j < i + a.causal_offset - a.window_left))
              srow[c] = minus_inf;
          }
        // A NaN score makes the max NaN, and with it the row (as softmax).
        A tile_max = row_max[r];
        int nan = tile_max != tile_max;
#pragma omp simd reduction(max : tile_max) reduction(| : nan)
        for (int64_t c = 0; c < keys; ++c) {
          tile_max = srow[c] > tile_max ? srow[c] : tile_max;
          nan |= srow[c] != srow[c];
        }
        if (nan)
          tile_max = (A)NAN;
        if (tile_max == minus_inf) { // nothing visible yet
          for (int64_t c = 0; c < KeyTile; ++c)
            srow[c] = 0;
          continue;
        }
        correction[r] = Traits::exp(row_max[r] - tile_max);
        row_max[r] = tile_max;
        // Keys past the end weigh exp(-inf) = 0: the loop runs whole.
        for (int64_t c = keys; c < KeyTile; ++c)
          srow[c] = minus_inf;
        const A sum =
            fusec_attention_probabilities<Traits, KeyTile>(srow, tile_max);
        row_sum[r] = row_sum[r] * correction[r] + sum;
      }
      // acc = acc * correction + p v, a row block by a column chunk at a
      // time in registers.
      for (int64_t r0 = 0; r0 < row_blocks_end; r0 += FUSEC_ATTENTION_ROWS)
        for (int64_t d0 = 0; d0 < PaddedValueHeadDim;
             d0 += FUSEC_ATTENTION_COLUMNS) {
          A block[FUSEC_ATTENTION_ROWS][FUSEC_ATTENTION_COLUMNS];
          for (int64_t r = 0; r < FUSEC_ATTENTION_ROWS; ++r)
#pragma omp simd
            for (int64_t d = 0; d < FUSEC_ATTENTION_COLUMNS; ++d)
              block[r][d] = acc[r0 + r][d0 + d] * correction[r0 + r];
          for (int64_t c = 0; c < keys; ++c)
            for (int64_t r = 0; r < FUSEC_ATTENTION_ROWS; ++r) {
              const A p = s[r0 + r][c];
#pragma omp simd
              for (int64_t d = 0; d < FUSEC_ATTENTION_COLUMNS; ++d)
                block[r][d] = fusec_attention_madd(block[r][d], p, vt[c][d0 + d]);
            }
          for (int64_t r = 0; r < FUSEC_ATTENTION_ROWS; ++r)
            for (int64_t d = 0; d < FUSEC_ATTENTION_COLUMNS; ++d)
              acc[r0 + r][d0 + d] = block[r][d];
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
      T *orow = output + a.o.offset + bb * a.o.batch + head_of(r) * a.o.head +
                query_of(r) * a.o.row;
      // A row that saw no key: zeros (ONNX Attention) or NaN (softmax).
      const bool masked = row_max[r] == minus_inf;
      const bool zero = a.zero_nan_rows && (masked || row_sum[r] != row_sum[r] ||
                                            row_max[r] != row_max[r]);
      const A inverse = (A)1 / row_sum[r];
      for (int64_t d = 0; d < ValueHeadDim; ++d)
        orow[d] = Traits::store(zero ? (A)0
                                : masked ? (a.zero_masked_rows ? (A)0 : (A)NAN)
                                         : acc[r][d] * inverse);
    }
  }
  free(tiles);
  }
}
