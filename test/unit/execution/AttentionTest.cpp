//===- AttentionTest.cpp - Fused attention against an f64 reference ------===//
//
// Attention built as graphs in the forms models write it (the graph op
// `attention`; the matmul / scale / mask / softmax / matmul chain on
// [B, H, T, D] tensors; the same chain with the head split of a fused qkv
// projection and the head merge around it), compiled with the public API,
// run on seeded inputs and compared with the plain f64 loops below (an
// independent reference: it shares no code with the compiler). Each case
// also states its program: one attention kernel, no matmul call, and no
// layout kernel around it.
//
// Every check is a function of the Target: the CPU test cases and the [gpu]
// ones run the same code.
//
//===----------------------------------------------------------------------===//

#include "test/unit/TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace fusec;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Form {
  /// The graph op `attention` on [B, H, T, D] operands.
  Op,
  /// The graph op on [B, T, heads * D] operands and result.
  OpTokensFirst,
  /// matmul(q, transpose(k)) * scale, masked, softmax, matmul with v.
  Chain,
  /// The chain on slices of one [B, T, 3 * H * D] projection, split into
  /// heads by reshape and transpose, and merged back to [B, T, H * Dv].
  ChainFromProjection,
};

enum class Mask {
  None,
  /// Query i sees keys j <= i + offset.
  Causal,
  /// Causal, and only the `window` keys before the diagonal.
  Window,
  /// A random float bias added to the scores.
  Additive,
  /// A random bool mask (true: visible).
  Keep,
  /// A bool mask hiding every key of rows 0 and 2.
  MaskedRows,
};

struct AttentionCase {
  std::string label;
  DType dtype;
  int64_t batch, heads, kvHeads, queries, keys, headDim, valueHeadDim;
  Form form;
  Mask mask = Mask::None;
  int64_t causalOffset = 0, window = -1;
  /// q and k are uniform in [-range, range] (large logits for a large one).
  double range = 1.0;
  /// Op forms: a row that sees no key is zeros (else NaN, as softmax).
  bool zeroMaskedRows = false;
  /// Puts a NaN into q[0, 0, 1, 0]: that row's outputs are NaN.
  bool nanQuery = false;
  /// Chain forms: the probabilities pass through Where(IsNaN(p), 0, p), as
  /// the exporters write SDPA: rows whose softmax is NaN (wholly masked, a
  /// NaN query) are zeros.
  bool zeroNanRows = false;
};

std::string describe(const AttentionCase &c) {
  std::ostringstream os;
  os << c.label << " (" << dtypeName(c.dtype) << ", B " << c.batch << ", H "
     << c.heads << "/" << c.kvHeads << ", Tq " << c.queries << ", Tk " << c.keys
     << ", D " << c.headDim << "/" << c.valueHeadDim << ")";
  return os.str();
}

bool visible(const AttentionCase &c, int64_t i, int64_t j) {
  if (c.mask == Mask::Causal || c.mask == Mask::Window) {
    if (j > i + c.causalOffset)
      return false;
    if (c.mask == Mask::Window && j < i + c.causalOffset - c.window)
      return false;
  }
  return true;
}

/// The inputs a case reads, and the graph that reads them.
struct Built {
  Graph graph;
  std::vector<Tensor> inputs;
  /// q, k and v as [B, H, T, D] (whatever the graph takes), and the bias
  /// broadcast to [Tq, Tk] (empty: none).
  Tensor q, k, v, bias;
};

/// [B, H, T, D] -> [B, T, H * D].
Tensor tokensFirst(const Tensor &x) {
  int64_t b = x.shape[0], h = x.shape[1], t = x.shape[2], d = x.shape[3];
  Tensor out(x.dtype, {b, t, h * d});
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t ti = 0; ti < t; ++ti)
        for (int64_t di = 0; di < d; ++di)
          out.set(((bi * t + ti) * h + hi) * d + di,
                  x.at(((bi * h + hi) * t + ti) * d + di));
  return out;
}

double scaleOf(const AttentionCase &c) {
  return 1.0 / std::sqrt(static_cast<double>(c.headDim));
}

Built build(const AttentionCase &c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Built built;
  built.q = randomTensor(c.dtype, {c.batch, c.heads, c.queries, c.headDim}, rng,
                         -c.range, c.range);
  built.k = randomTensor(c.dtype, {c.batch, c.kvHeads, c.keys, c.headDim}, rng,
                         -c.range, c.range);
  built.v = randomTensor(c.dtype, {c.batch, c.kvHeads, c.keys, c.valueHeadDim},
                         rng, -1.0, 1.0);
  if (c.nanQuery)
    built.q.set(c.headDim, kNaN); // q[0, 0, 1, 0]
  GraphBuilder b("attention");
  std::string bias;
  if (c.mask == Mask::Additive) {
    built.bias = randomTensor(c.dtype, {c.queries, c.keys}, rng, -2.0, 2.0);
    bias = b.input("bias", c.dtype, built.bias.shape);
    built.inputs.push_back(built.bias);
  } else if (c.mask == Mask::Keep || c.mask == Mask::MaskedRows) {
    built.bias = Tensor(DType::I1, {c.queries, c.keys});
    std::bernoulli_distribution keep(0.7);
    for (int64_t i = 0; i < c.queries; ++i)
      for (int64_t j = 0; j < c.keys; ++j)
        built.bias.set(i * c.keys + j, c.mask == Mask::MaskedRows
                                           ? (i != 0 && i != 2)
                                           : keep(rng));
    bias = b.input("mask", DType::I1, built.bias.shape);
    built.inputs.push_back(built.bias);
  }
  const double scale = scaleOf(c);
  if (c.form == Form::Op || c.form == Form::OpTokensFirst) {
    bool tokens = c.form == Form::OpTokensFirst;
    Tensor q = tokens ? tokensFirst(built.q) : built.q;
    Tensor k = tokens ? tokensFirst(built.k) : built.k;
    Tensor v = tokens ? tokensFirst(built.v) : built.v;
    std::vector<std::string> operands = {b.input("q", c.dtype, q.shape),
                                         b.input("k", c.dtype, k.shape),
                                         b.input("v", c.dtype, v.shape)};
    for (const Tensor &t : {q, k, v})
      built.inputs.push_back(t);
    if (!bias.empty())
      operands.push_back(bias);
    bool causal = c.mask == Mask::Causal || c.mask == Mask::Window;
    b.output(b.op("attention", operands,
                  {{"num_heads", c.heads},
                   {"kv_num_heads", c.kvHeads},
                   {"head_dim", c.headDim},
                   {"value_head_dim", c.valueHeadDim},
                   {"scale", scale},
                   {"causal", int64_t(causal)},
                   {"causal_offset", c.causalOffset},
                   {"window_left", c.mask == Mask::Window ? c.window : -1},
                   {"zero_masked_rows", int64_t(c.zeroMaskedRows)}}));
    built.graph = b.build();
    return built;
  }
  // The chain, as exporters write it.
  REQUIRE(c.heads == c.kvHeads);
  std::string q, kT, v;
  if (c.form == Form::Chain) {
    q = b.input("q", c.dtype, built.q.shape);
    std::string k = b.input("k", c.dtype, built.k.shape);
    v = b.input("v", c.dtype, built.v.shape);
    for (const Tensor &t : {built.q, built.k, built.v})
      built.inputs.push_back(t);
    kT = b.op("transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  } else {
    // One projection [B, T, q | k | v], as GPT-2's c_attn writes it.
    REQUIRE(c.queries == c.keys);
    Tensor qt = tokensFirst(built.q), kt = tokensFirst(built.k),
           vt = tokensFirst(built.v);
    int64_t qWidth = c.heads * c.headDim, vWidth = c.heads * c.valueHeadDim;
    int64_t width = 2 * qWidth + vWidth;
    Tensor projection(c.dtype, {c.batch, c.queries, width});
    for (int64_t row = 0; row < c.batch * c.queries; ++row) {
      for (int64_t col = 0; col < qWidth; ++col) {
        projection.set(row * width + col, qt.at(row * qWidth + col));
        projection.set(row * width + qWidth + col, kt.at(row * qWidth + col));
      }
      for (int64_t col = 0; col < vWidth; ++col)
        projection.set(row * width + 2 * qWidth + col,
                       vt.at(row * vWidth + col));
    }
    std::string x = b.input("qkv", c.dtype, projection.shape);
    built.inputs.push_back(projection);
    auto heads = [&](int64_t start, int64_t size, int64_t dim,
                     std::vector<int64_t> perm) {
      std::string slice = b.op("slice", {x},
                               {{"starts", std::vector<int64_t>{start}},
                                {"ends", std::vector<int64_t>{start + size}},
                                {"axes", std::vector<int64_t>{2}}});
      std::string split = b.op(
          "reshape", {slice},
          {{"shape", std::vector<int64_t>{c.batch, c.queries, c.heads, dim}}});
      return b.op("transpose", {split}, {{"perm", perm}});
    };
    q = heads(0, qWidth, c.headDim, {0, 2, 1, 3});
    kT = heads(qWidth, qWidth, c.headDim, {0, 2, 3, 1});
    v = heads(2 * qWidth, vWidth, c.valueHeadDim, {0, 2, 1, 3});
  }
  std::string scores =
      b.op("mul", {b.op("matmul", {q, kT}), b.scalar(scale, c.dtype)});
  if (c.mask == Mask::Causal || c.mask == Mask::Window) {
    // A constant of where keys are hidden, as torch's masked_fill.
    Tensor hidden(DType::I1, {1, 1, c.queries, c.keys});
    for (int64_t i = 0; i < c.queries; ++i)
      for (int64_t j = 0; j < c.keys; ++j)
        hidden.set(i * c.keys + j, !visible(c, i, j));
    scores = b.op("select", {b.constant("hidden", hidden),
                             b.scalar(-kInf, c.dtype), scores});
  } else if (c.mask == Mask::Additive) {
    scores = b.op("add", {scores, bias});
  } else if (c.mask != Mask::None) {
    scores = b.op("select", {bias, scores, b.scalar(-kInf, c.dtype)});
  }
  std::string probabilities =
      b.op("softmax", {scores}, {{"axis", int64_t(-1)}});
  if (c.zeroNanRows)
    probabilities = b.op("select", {b.op("isnan", {probabilities}),
                                    b.scalar(0.0, c.dtype), probabilities});
  std::string out = b.op("matmul", {probabilities, v});
  if (c.form == Form::ChainFromProjection)
    out = b.op("reshape",
               {b.op("transpose", {out},
                     {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})},
               {{"shape", std::vector<int64_t>{c.batch, c.queries,
                                               c.heads * c.valueHeadDim}}});
  b.output(out);
  built.graph = b.build();
  return built;
}

/// The f64 reference, [B, H, Tq, Dv] (or [B, Tq, H * Dv] for the forms
/// that write tokens first): softmax with its max subtracted, in long
/// double.
Tensor reference(const AttentionCase &c, const Built &built) {
  Tensor out(DType::F64, {c.batch, c.heads, c.queries, c.valueHeadDim});
  const double scale = scaleOf(c);
  const int64_t group = c.heads / c.kvHeads;
  std::vector<long double> scores(c.keys);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.queries; ++i) {
        const int64_t kvh = h / group;
        long double max = -INFINITY;
        bool nan = false;
        for (int64_t j = 0; j < c.keys; ++j) {
          long double dot = 0;
          for (int64_t d = 0; d < c.headDim; ++d)
            dot += static_cast<long double>(built.q.at(
                       ((b * c.heads + h) * c.queries + i) * c.headDim + d)) *
                   built.k.at(((b * c.kvHeads + kvh) * c.keys + j) * c.headDim +
                              d);
          long double s = scale * dot;
          if (c.mask == Mask::Additive)
            s += built.bias.at(i * c.keys + j);
          if ((c.mask == Mask::Keep || c.mask == Mask::MaskedRows) &&
              built.bias.at(i * c.keys + j) == 0)
            s = -INFINITY;
          if (!visible(c, i, j))
            s = -INFINITY;
          scores[j] = s;
          nan |= std::isnan(static_cast<double>(s));
          if (s > max)
            max = s;
        }
        const bool masked = max == -INFINITY;
        long double sum = 0;
        for (int64_t j = 0; j < c.keys; ++j)
          sum += masked ? 0 : std::exp(scores[j] - max);
        for (int64_t d = 0; d < c.valueHeadDim; ++d) {
          long double acc = 0;
          for (int64_t j = 0; j < c.keys && !masked; ++j)
            acc +=
                std::exp(scores[j] - max) *
                built.v.at(
                    ((b * c.kvHeads + kvh) * c.keys + j) * c.valueHeadDim + d);
          double value = c.zeroNanRows && (nan || masked) ? 0.0
                         : nan                            ? kNaN
                         : masked ? (c.zeroMaskedRows ? 0.0 : kNaN)
                                  : static_cast<double>(acc / sum);
          out.set(((b * c.heads + h) * c.queries + i) * c.valueHeadDim + d,
                  value);
        }
      }
  bool tokens =
      c.form == Form::OpTokensFirst || c.form == Form::ChainFromProjection;
  return tokens ? tokensFirst(out) : out;
}

/// Each output is a convex combination of v's entries (|v| <= 1): the
/// bound is a few roundings of the products' inputs (f16/bf16 kernels
/// round the probabilities to the dtype for the second product, as
/// FlashAttention does) plus one ulp-scale rounding of the result.
double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 1e-12;
  case DType::F32:
    return 2e-5;
  case DType::F16:
    return 4e-3;
  case DType::BF16:
    return 3e-2;
  default:
    return 0;
  }
}

void checkOutput(const AttentionCase &c, const Tensor &got,
                 const Tensor &expected) {
  REQUIRE(got.shape == expected.shape);
  const double bound = tolerance(c.dtype);
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    double e = expected.at(i), g = got.at(i);
    bool ok = std::isnan(e) ? std::isnan(g)
                            : std::fabs(g - e) <= bound * (1 + std::fabs(e));
    if (!std::isnan(e) && !std::isnan(g))
      worst = std::max(worst, std::fabs(g - e));
    if (!ok && bad++ == 0)
      first = i;
  }
  INFO("worst abs error " << worst << ", bound " << bound);
  if (bad)
    FAIL_CHECK(bad << " elements out of bounds; first at " << first << ": got "
                   << got.at(first) << ", expected " << expected.at(first));
}

const std::vector<AttentionCase> &cases() {
  using D = DType;
  static const std::vector<AttentionCase> all = {
      {"op, two query tiles and two key tiles, ragged", D::F32, 2, 2, 2, 70,
       150, 64, 64, Form::Op},
      {"op, causal", D::F64, 1, 3, 3, 37, 37, 16, 16, Form::Op, Mask::Causal},
      {"op, causal over a KV cache (bottom-right)", D::BF16, 1, 2, 2, 5, 140,
       128, 128, Form::Op, Mask::Causal, 135},
      {"op, additive bias, value head dim apart", D::F16, 2, 2, 2, 33, 47, 80,
       48, Form::Op, Mask::Additive},
      {"op, grouped-query heads and a bool mask", D::F32, 1, 4, 2, 19, 61, 32,
       32, Form::Op, Mask::Keep},
      {"op, wholly masked rows are zeros", D::F32, 1, 2, 2, 9, 13, 16, 16,
       Form::Op, Mask::MaskedRows, 0, -1, 1.0, true},
      {"op, wholly masked rows are NaN", D::F32, 1, 2, 2, 9, 13, 16, 16,
       Form::Op, Mask::MaskedRows},
      {"op, large logits", D::F32, 1, 2, 2, 17, 130, 64, 64, Form::Op,
       Mask::None, 0, -1, 8.0},
      {"op, sliding window", D::F32, 1, 2, 2, 50, 50, 32, 32, Form::Op,
       Mask::Window, 0, 10},
      {"op, tokens first, one kv head for four", D::F16, 2, 4, 1, 21, 21, 64,
       64, Form::OpTokensFirst, Mask::Causal},
      {"op, more queries than keys (leading rows see none)", D::F32, 1, 2, 2, 8,
       5, 16, 16, Form::Op, Mask::Causal, -3, -1, 1.0, true},
      {"op, head dim 256, few queries", D::F32, 1, 2, 2, 3, 300, 256, 256,
       Form::Op},
      {"op, decode: one query against a long cache", D::BF16, 1, 8, 2, 1, 2000,
       128, 128, Form::Op, Mask::Causal, 1999},
      {"op, NaN in a query row", D::F32, 1, 2, 2, 4, 20, 16, 16, Form::Op,
       Mask::None, 0, -1, 1.0, false, true},
      {"op, head dim 256, ragged blocks", D::BF16, 1, 2, 2, 70, 130, 256, 256,
       Form::Op},
      {"op, causal, offset, ragged blocks", D::BF16, 2, 2, 2, 100, 190, 64, 64,
       Form::Op, Mask::Causal, 90},
      {"op, additive bias on tensor cores", D::F16, 1, 2, 2, 70, 150, 128, 128,
       Form::Op, Mask::Additive},
      {"op, bool mask on tensor cores, grouped heads", D::BF16, 1, 4, 2, 33, 70,
       64, 64, Form::Op, Mask::Keep},
      {"op, wholly masked rows on tensor cores (zeros)", D::F16, 1, 2, 2, 9, 13,
       64, 64, Form::Op, Mask::MaskedRows, 0, -1, 1.0, true},
      {"op, wholly masked rows on tensor cores (NaN)", D::BF16, 1, 2, 2, 9, 13,
       128, 128, Form::Op, Mask::MaskedRows},
      {"op, large logits on tensor cores", D::BF16, 1, 2, 2, 40, 200, 64, 64,
       Form::Op, Mask::None, 0, -1, 8.0},
      {"op, NaN in a query row on tensor cores", D::F16, 1, 2, 2, 4, 20, 64, 64,
       Form::Op, Mask::None, 0, -1, 1.0, false, true},
      {"op, sliding window on tensor cores", D::F16, 1, 2, 2, 150, 150, 64, 64,
       Form::Op, Mask::Window, 0, 40},
      {"op, tensor cores, many heads", D::BF16, 2, 66, 66, 130, 70, 128, 128,
       Form::Op},
      {"op, tensor cores, many heads, head dim 64, causal", D::F16, 1, 140, 140,
       100, 100, 64, 64, Form::Op, Mask::Causal},
      {"op, several query and key blocks, causal with an offset", D::BF16, 1, 2,
       2, 300, 520, 128, 128, Form::Op, Mask::Causal, 220},
      {"op, several query and key blocks, additive bias", D::F16, 1, 2, 2, 260,
       390, 64, 64, Form::Op, Mask::Additive},
      {"op, decode split over the keys, two queries, bool mask", D::F16, 2, 4,
       1, 2, 700, 64, 64, Form::Op, Mask::Keep},
      {"op, decode split over the keys, additive bias", D::BF16, 1, 2, 2, 1,
       1000, 128, 128, Form::Op, Mask::Additive},
      {"op, decode split over the keys, masked rows", D::F32, 1, 2, 2, 3, 400,
       32, 32, Form::Op, Mask::MaskedRows, 0, -1, 1.0, true},
      {"op, decode split over the keys, NaN query", D::BF16, 1, 2, 2, 2, 300,
       64, 64, Form::Op, Mask::None, 0, -1, 1.0, false, true},
      {"op, decode split over the keys, head dim 256, f32, grouped heads",
       D::F32, 1, 8, 2, 1, 1100, 256, 256, Form::Op},
      {"op, decode split over the keys, value rows of 6 chunks", D::F16, 1, 4,
       4, 1, 600, 64, 48, Form::Op, Mask::Causal, 599},
      {"op, decode split over the keys, head dim 256 staged, two queries",
       D::BF16, 1, 4, 1, 2, 900, 256, 256, Form::Op, Mask::Causal, 898},
      {"chain, additive bias", D::F32, 2, 2, 2, 24, 40, 64, 64, Form::Chain,
       Mask::Additive},
      {"chain, causal constant mask", D::BF16, 1, 2, 2, 40, 40, 64, 64,
       Form::Chain, Mask::Causal},
      {"chain, bool mask", D::F32, 1, 2, 2, 12, 30, 16, 16, Form::Chain,
       Mask::Keep},
      {"chain, sliding window constant mask", D::F16, 1, 2, 2, 45, 45, 32, 32,
       Form::Chain, Mask::Window, 0, 7},
      {"chain from one qkv projection, causal (GPT-2)", D::F32, 2, 4, 4, 33, 33,
       16, 16, Form::ChainFromProjection, Mask::Causal},
      {"chain from one qkv projection (BERT)", D::BF16, 1, 2, 2, 65, 65, 64, 64,
       Form::ChainFromProjection},
      {"chain, SDPA's Where(IsNaN): masked rows and a NaN query are zeros",
       D::F32, 1, 2, 2, 8, 13, 16, 16, Form::Chain, Mask::MaskedRows, 0, -1,
       1.0, false, true, true},
      {"chain, SDPA's Where(IsNaN) on tensor cores", D::BF16, 1, 2, 2, 40, 70,
       64, 64, Form::Chain, Mask::MaskedRows, 0, -1, 1.0, false, true, true},
      {"chain, SDPA's Where(IsNaN), decode split over the keys", D::F16, 1, 2,
       2, 3, 400, 64, 64, Form::Chain, Mask::MaskedRows, 0, -1, 1.0, false,
       true, true},
  };
  return all;
}

/// Whether `c` becomes one attention kernel on `target`: on CUDA, f32 and
/// f64 chains of more than 8 query rows stay matmuls and a softmax (faster
/// there than the CUDA-core kernel; fuse-form-attention's
/// max-wide-query-rows). The op forms always do.
bool formsOn(const AttentionCase &c, Target target) {
  bool chain = c.form != Form::Op && c.form != Form::OpTokensFirst;
  bool wide = c.dtype == DType::F32 || c.dtype == DType::F64;
  return !(target == Target::Cuda && chain && wide && c.queries > 8);
}

/// Every case's program (one attention kernel, nothing else, where
/// formsOn) on both targets, then its numbers on `target`, all cases as one
/// graph; on CUDA, compiled for `gpuArch` ("": the GPU's own).
void checkCases(Target target, const std::string &gpuArch = "") {
  std::vector<Built> built;
  Graph merged;
  merged.name = "attention_cases";
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < cases().size(); ++i) {
    const AttentionCase &c = cases()[i];
    INFO("case: " << describe(c));
    built.push_back(build(c, 1000 + i));
    for (Target lowered : {Target::Cpu, Target::Cuda}) {
      Program program =
          lowerGraph(built.back().graph, test::testOptions(true, lowered))
              .program;
      if (!formsOn(c, lowered)) {
        for (const KernelDesc &kernel : program.kernels)
          CHECK(kernel.schedule != "attention");
        continue;
      }
      CHECK(program.matmuls.empty());
      REQUIRE(program.kernels.size() == 1);
      CHECK(program.kernels[0].schedule == "attention");
      CHECK(program.kernels[0].flops > 0);
    }
    test::appendRenamedGraph(merged, built.back().graph,
                             "case" + std::to_string(i) + "_");
    for (const Tensor &t : built.back().inputs)
      inputs.push_back(t);
  }
  if (target == Target::Cpu)
    test::compileForGpus(merged, /*everyVariant=*/false);
  CompileOptions options = test::testOptions(true, target);
  options.gpuArch = gpuArch;
  CompiledModel model = compile(merged, options);
  std::vector<Tensor> outputs = model.run(inputs);
  REQUIRE(outputs.size() == cases().size());
  for (size_t i = 0; i < cases().size(); ++i) {
    const AttentionCase &c = cases()[i];
    INFO("case: " << describe(c));
    checkOutput(c, outputs[i], reference(c, built[i]));
  }
}

/// The GPU's arch without its own instructions ("sm_90a" -> "sm_90"): on
/// sm_90a, f16/bf16 prefill then runs the mma.sync kernel other GPUs get.
std::string portableArch() { return cuda::plainArch(cuda::deviceArch()); }

} // namespace

TEST_CASE("attention in every form matches an f64 reference", "[attention]") {
  checkCases(Target::Cpu);
}

TEST_CASE("attention in every form matches an f64 reference on the GPU",
          "[attention][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkCases(Target::Cuda);
}

TEST_CASE("attention over more (batch, head) pairs than a grid's y holds",
          "[attention][gpu]") {
  // 65920 pairs of two query rows: the tensor-core kernels put the pairs
  // along the grid's x (test/codegen/schedule/attention.test pins the
  // schedule). GPU only: the C++ kernel would walk 65920 whole tiles.
  FUSEC_SKIP_IF(cuda::unavailableReason());
  const AttentionCase c{"op, more (batch, head) pairs than a grid's y holds",
                        DType::F16,
                        1030,
                        64,
                        1,
                        2,
                        9,
                        64,
                        64,
                        Form::Op,
                        Mask::Causal,
                        7};
  INFO("case: " << describe(c));
  Built built = build(c, 77);
  for (const std::string &arch : {std::string(), portableArch()}) {
    INFO("arch: " << (arch.empty() ? "the GPU's own" : arch));
    CompileOptions options = test::testOptions(true, Target::Cuda);
    options.gpuArch = arch;
    CompiledModel model = compile(built.graph, options);
    std::vector<Tensor> outputs = model.run(built.inputs);
    REQUIRE(outputs.size() == 1);
    checkOutput(c, outputs[0], reference(c, built));
  }
}

TEST_CASE("attention matches an f64 reference with the GPU's portable kernels",
          "[attention][gpu]") {
  // On sm_90a the f16/bf16 prefill runs wgmma; the same cases compiled for
  // plain sm_90 run the mma.sync kernel sm_80 GPUs get.
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkCases(Target::Cuda, portableArch());
}

TEST_CASE("attention formation stops with a remark where the chain differs",
          "[attention]") {
  // The scale multiplies the bias too: softmax((s + b) * c) is not
  // softmax(c * s + b), so the chain stays three kernels and a call pair.
  GraphBuilder b("scaled_after_bias");
  std::string q = b.input("q", DType::F32, {1, 2, 8, 16});
  std::string k = b.input("k", DType::F32, {1, 2, 8, 16});
  std::string v = b.input("v", DType::F32, {1, 2, 8, 16});
  std::string bias = b.input("bias", DType::F32, {8, 8});
  std::string kT =
      b.op("transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  std::string scores =
      b.op("mul", {b.op("add", {b.op("matmul", {q, kT}), bias}),
                   b.scalar(0.25, DType::F32)});
  b.output(b.op("matmul", {b.op("softmax", {scores}), v}));
  std::vector<std::string> remarks;
  CompileOptions options = test::testOptions(true, Target::Cpu);
  options.onRemark = [&](const std::string &remark) {
    remarks.push_back(remark);
  };
  Program program = lowerGraph(b.build(), options).program;
  CHECK(program.matmuls.size() == 2);
  bool explained = false;
  for (const std::string &remark : remarks)
    explained |= remark.find("attention not formed: the scale applies after "
                             "the bias") != std::string::npos;
  CHECK(explained);
}

TEST_CASE("a model's identical attention kernels compile once", "[attention]") {
  // Two layers' attention of one shape: their kernels differ only in name,
  // so the compile units define one function both run (the traits struct
  // is shared per dtype, not named after each kernel).
  GraphBuilder b("two_layers");
  std::string x = b.input("x", DType::BF16, {1, 4, 64, 64});
  auto layer = [&](const std::string &in) {
    return b.op("attention", {in, in, in},
                {{"num_heads", int64_t(4)},
                 {"head_dim", int64_t(64)},
                 {"value_head_dim", int64_t(64)},
                 {"scale", 0.125},
                 {"causal", int64_t(1)}});
  };
  b.output(layer(layer(x)));
  for (Target target : {Target::Cpu, Target::Cuda}) {
    INFO("target " << targetName(target));
    Program program =
        lowerGraph(b.build(), test::testOptions(true, target)).program;
    REQUIRE(program.kernels.size() == 2);
    CHECK(program.kernels[0].name != program.kernels[1].name);
    CompileUnits units = splitIntoCompileUnits(program, 4);
    CHECK(units.sources.size() == 1);
    CHECK(units.functionOf[0] == units.functionOf[1]);
  }
}
