// Fused attention on the host (codegen/cpu/AttentionCppPrinter.cpp calls
// it): for each (batch, head, tile of query rows), the keys in tiles, an
// online softmax (running max and sum, rescaled as the max grows), so the
// queryLen x keyLen scores never exist beyond one tile. The products of a
// tile are loops whose innermost index runs over keys or value columns, so
// the compiler vectorizes them without a BLAS.

#include <stdlib.h>

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
  int parallel;
};

// One thread's tiles (on the heap: at head dim 256 in f64 they take 1 MB).
template <typename A, int QueryTile, int KeyTile, int HeadDim,
          int ValueHeadDim>
struct fusec_attention_tiles {
  A q[QueryTile][HeadDim]; // the query tile, scaled
  A acc[QueryTile][ValueHeadDim];
  A s[QueryTile][KeyTile];  // scores, then probabilities
  A kt[HeadDim][KeyTile];   // the key tile, transposed
  A v[KeyTile][ValueHeadDim];
  A row_max[QueryTile], row_sum[QueryTile];
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
  const int64_t query_tiles = (a.query_len + QueryTile - 1) / QueryTile;
  const int64_t tasks = a.batch * a.heads * query_tiles;
  const A minus_inf = -(A)INFINITY;
  typedef fusec_attention_tiles<A, QueryTile, KeyTile, HeadDim, ValueHeadDim>
      Tiles;
#pragma omp parallel if (a.parallel)
  {
  Tiles *tiles = (Tiles *)malloc(sizeof(Tiles));
#pragma omp for schedule(dynamic, 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t tile = task % query_tiles;
    const int64_t h = task / query_tiles % a.heads;
    const int64_t bb = task / query_tiles / a.heads;
    const int64_t kvh = h / group;
    const int64_t i0 = tile * QueryTile;
    const int64_t rows = a.query_len - i0 < QueryTile ? a.query_len - i0
                                                      : QueryTile;
    A(*q)[HeadDim] = tiles->q;
    A(*acc)[ValueHeadDim] = tiles->acc;
    A(*s)[KeyTile] = tiles->s;
    A(*kt)[KeyTile] = tiles->kt;
    A(*vt)[ValueHeadDim] = tiles->v;
    A *row_max = tiles->row_max, *row_sum = tiles->row_sum;
    for (int64_t r = 0; r < rows; ++r) {
      const T *qrow = query + a.q.offset + bb * a.q.batch + h * a.q.head +
                      (i0 + r) * a.q.row;
      for (int64_t d = 0; d < HeadDim; ++d)
        q[r][d] = Traits::load(qrow[d]) * (A)a.scale;
      for (int64_t d = 0; d < ValueHeadDim; ++d)
        acc[r][d] = 0;
      row_max[r] = minus_inf;
      row_sum[r] = 0;
    }
    // Keys some row of the tile may see.
    int64_t key_begin = 0, key_end = a.key_len;
    if (a.causal) {
      const int64_t last = i0 + rows - 1 + a.causal_offset + 1;
      key_end = last < key_end ? (last > 0 ? last : 0) : key_end;
      if (a.window_left >= 0) {
        const int64_t first = i0 + a.causal_offset - a.window_left;
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
        for (int64_t d = 0; d < ValueHeadDim; ++d)
          vt[c][d] = Traits::load(vrow[d]);
      }
      // A last, partial tile: zero keys past the end (the loops below run
      // over whole tiles to vectorize; their scores are never read).
      for (int64_t c = keys; c < KeyTile; ++c)
        for (int64_t d = 0; d < HeadDim; ++d)
          kt[d][c] = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        A *srow = s[r];
        for (int64_t c = 0; c < KeyTile; ++c)
          srow[c] = 0;
        for (int64_t d = 0; d < HeadDim; ++d) {
          const A qd = q[r][d];
#pragma omp simd
          for (int64_t c = 0; c < KeyTile; ++c)
            srow[c] += qd * kt[d][c];
        }
        // The bias, then the hidden keys.
        if (a.bias_kind != 0) {
          const int64_t base = a.b.offset + bb * a.b.batch + h * a.b.head +
                               i * a.b.row;
          for (int64_t c = 0; c < keys; ++c) {
            const int64_t at = base + (j0 + c) * a.b.column;
            if (a.bias_kind == 1)
              srow[c] += Traits::load(((const T *)a.bias)[at]);
            else if (!((const uint8_t *)a.bias)[at])
              srow[c] = minus_inf;
          }
        }
        if (a.causal)
          for (int64_t c = 0; c < keys; ++c) {
            const int64_t j = j0 + c;
            if (j > i + a.causal_offset ||
                (a.window_left >= 0 &&
                 j < i + a.causal_offset - a.window_left))
              srow[c] = minus_inf;
          }
        // A NaN score makes the max NaN, and with it the row (as softmax).
        A tile_max = row_max[r];
        for (int64_t c = 0; c < keys; ++c)
          tile_max = srow[c] != srow[c] || tile_max != tile_max
                         ? (A)NAN
                         : (srow[c] > tile_max ? srow[c] : tile_max);
        if (tile_max == minus_inf)
          continue; // nothing visible yet
        const A correction = Traits::exp(row_max[r] - tile_max);
        row_max[r] = tile_max;
        A sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < KeyTile; ++c) {
          const A p = c < keys ? Traits::exp(srow[c] - tile_max) : (A)0;
          srow[c] = p;
          sum += p;
        }
        row_sum[r] = row_sum[r] * correction + sum;
        A *arow = acc[r];
#pragma omp simd
        for (int64_t d = 0; d < ValueHeadDim; ++d)
          arow[d] *= correction;
        for (int64_t c = 0; c < keys; ++c) {
          const A p = srow[c];
          const A *vrow = vt[c];
#pragma omp simd
          for (int64_t d = 0; d < ValueHeadDim; ++d)
            arow[d] += p * vrow[d];
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      T *orow = output + a.o.offset + bb * a.o.batch + h * a.o.head +
                (i0 + r) * a.o.row;
      // A row that saw no key: zeros (ONNX Attention) or NaN (softmax).
      const bool masked = row_max[r] == minus_inf;
      const A inverse = (A)1 / row_sum[r];
      for (int64_t d = 0; d < ValueHeadDim; ++d)
        orow[d] = Traits::store(masked ? (a.zero_masked_rows ? (A)0 : (A)NAN)
                                       : acc[r][d] * inverse);
    }
  }
  free(tiles);
  }
}
