//===- QuantizedMatmulTest.cpp - int8-weight matmuls against f64 ---------===//
//
// matmul(x, dequantize_linear(w int8, per-channel scale)): few rows become
// the generated quantized GEMV kernel, more rows a dequantizing kernel and a
// library call. Both are checked against a reference that dequantizes each
// weight as ONNX defines it ((float)w * scale, rounded to the scale's
// dtype) and sums the products in f64.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>

using namespace fusec;

namespace {

struct QuantizedCase {
  DType dtype;
  int64_t rows, k, n;
  /// The weight stored [n, k] (a Linear layer's layout, transposed before
  /// the matmul) rather than [k, n].
  bool channelMajor;
  /// The weight is a constant (transposed at compile time when [k, n]).
  bool constantWeight;
  /// Leading batch dims of x; their product times `rows` is the row count.
  Shape batch;
  /// One scale for every channel, given as a constant (a splat).
  bool uniformScale = false;
  /// Channels 1-3 get the scales 0, 2^110 and 2^-120, which the bf16
  /// tensor-core kernel dequantizes the exact slow way (their block only).
  bool extremeScales = false;
  /// Every other channel's scale negated.
  bool negativeScales = false;
};

struct Built {
  Graph graph;
  std::vector<Tensor> inputs;
  Tensor weight, scale; ///< int8 and the scale's dtype
};

Built build(const QuantizedCase &c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::uniform_int_distribution<int> byte(-128, 127);
  Shape xShape = c.batch;
  xShape.push_back(c.rows);
  xShape.push_back(c.k);
  Tensor x(c.dtype, xShape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, uniform(rng));
  Shape wShape = c.channelMajor ? Shape{c.n, c.k} : Shape{c.k, c.n};
  Tensor weight(DType::I8, wShape);
  for (int64_t i = 0; i < weight.numElements(); ++i)
    weight.set(i, byte(rng));
  // Scales around 1/128, so dequantized weights are in [-1, 1].
  Tensor scale(c.dtype, {c.n});
  for (int64_t i = 0; i < c.n; ++i)
    scale.set(i, c.uniformScale ? 0.75 / 128
                                : (0.5 + 0.5 * (uniform(rng) + 1)) / 128);
  if (c.negativeScales)
    for (int64_t i = 1; i < c.n; i += 2)
      scale.set(i, -scale.at(i));
  if (c.extremeScales) {
    scale.set(1, 0.0);
    scale.set(2, std::ldexp(1.0, 110));
    scale.set(3, std::ldexp(1.0, -120));
  }

  GraphBuilder b("quantized");
  std::string xValue = b.input("x", c.dtype, xShape);
  std::string s = c.uniformScale ? b.constant("scale", scale)
                                 : b.input("scale", c.dtype, {c.n});
  std::string w = c.constantWeight ? b.constant("w", weight)
                                   : b.input("w", DType::I8, wShape);
  std::string dequantized = b.op("dequantize_linear", {w, s},
                                 {{"axis", int64_t(c.channelMajor ? 0 : 1)}});
  if (c.channelMajor)
    dequantized = b.op("transpose", {dequantized},
                       {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(b.op("matmul", {xValue, dequantized}));
  Built built{b.build(), {x}, weight, scale};
  if (!c.uniformScale)
    built.inputs.push_back(scale);
  if (!c.constantWeight)
    built.inputs.push_back(weight);
  return built;
}

/// The f64 reference: weights dequantized as ONNX's DequantizeLinear (f32
/// product rounded to the scale's dtype), products summed in f64.
std::vector<double> reference(const QuantizedCase &c, const Built &built) {
  const Tensor &x = built.inputs[0];
  int64_t rows = x.numElements() / c.k; // every case has k > 0
  std::vector<double> dequantized(c.k * c.n);
  Tensor rounding(c.dtype, {1});
  for (int64_t i = 0; i < c.k; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t index = c.channelMajor ? j * c.k + i : i * c.n + j;
      float product = static_cast<float>(built.weight.at(index)) *
                      static_cast<float>(built.scale.at(j));
      rounding.set(0, product);
      dequantized[i * c.n + j] = rounding.at(0);
    }
  std::vector<double> y(rows * c.n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < c.k; ++i)
        sum += x.at(r * c.k + i) * dequantized[i * c.n + j];
      y[r * c.n + j] = sum;
    }
  return y;
}

/// f32 accumulation of k products of magnitude <= 1: a few f32 roundings
/// times sqrt(k); plus one ulp of the output dtype, which the result
/// rounds to once (twice on the library path: weights, then the product).
double tolerance(DType dtype, int64_t k, double expected) {
  double accumulation = dtype == DType::F64 ? 1e-13 : 4e-6;
  double ulp = dtype == DType::BF16  ? std::ldexp(1.0, -7)
               : dtype == DType::F16 ? std::ldexp(1.0, -10)
               : dtype == DType::F32 ? std::ldexp(1.0, -23)
                                     : std::ldexp(1.0, -52);
  return accumulation * std::sqrt(double(k) + 1) * (1 + std::fabs(expected)) +
         2 * ulp * std::max(1.0, std::fabs(expected));
}

void check(const QuantizedCase &c, Target target) {
  INFO("dtype " << dtypeName(c.dtype) << " rows " << c.rows << " k " << c.k
                << " n " << c.n << " channel-major " << c.channelMajor
                << " constant " << c.constantWeight << " on "
                << targetName(target));
  Built built = build(c, 7 + c.k + c.n);
  CompiledModel model = compile(built.graph, test::testOptions(true, target));
  int64_t totalRows = c.rows * numElements(c.batch);
  const Program &program = model.program();
  if (totalRows <= 8) {
    // One generated kernel, no library call, no dequantized weights.
    REQUIRE(program.matmuls.empty());
    bool hasGemv = false;
    for (const KernelDesc &kernel : program.kernels)
      hasGemv |= kernel.schedule == "quantized-gemv";
    CHECK(hasGemv);
    // A [k, n] weight given as an input is transposed by a layout kernel.
    CHECK(program.kernels.size() ==
          (!c.channelMajor && !c.constantWeight ? 2u : 1u));
  } else {
    CHECK(program.matmuls.size() == 1);
  }
  std::vector<Tensor> outputs = model.run(built.inputs);
  std::vector<double> expected = reference(c, built);
  REQUIRE(outputs[0].numElements() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    double got = outputs[0].at(i);
    if (std::fabs(got - expected[i]) > tolerance(c.dtype, c.k, expected[i]))
      FAIL("element " << i << ": got " << got << ", expected " << expected[i]);
  }
}

std::vector<QuantizedCase> cases() {
  std::vector<QuantizedCase> all;
  for (DType dtype : {DType::BF16, DType::F16, DType::F32, DType::F64}) {
    // The 16-byte path (k % 16 == 0) and the scalar one, 1 to 8 rows.
    all.push_back({dtype, 1, 512, 40, true, false, {}});
    all.push_back({dtype, 3, 37, 19, true, true, {}});
    all.push_back({dtype, 8, 96, 33, false, true, {}});
    all.push_back({dtype, 2, 64, 24, false, false, {}});
    // Batch dims stack into rows: 2 x 1 x 1 rows.
    all.push_back({dtype, 1, 48, 16, true, false, {2, 1}});
    // k % 64 == 0: f16/bf16 take the tensor-core kernel on the GPU; 8 rows
    // fill the mma's N, 37 channels leave a partial group of 16.
    all.push_back({dtype, 8, 128, 37, true, true, {}});
    all.push_back({dtype, 1, 64, 21, false, false, {3, 1}});
  }
  // More than 8 rows: dequantize, then the library.
  all.push_back({DType::BF16, 9, 64, 24, true, false, {}});
  all.push_back({DType::F32, 12, 33, 5, false, true, {}});
  // A decode-sized layer.
  all.push_back({DType::BF16, 1, 4096, 256, true, false, {}});
  // The tensor-core kernel's ring of loads, unrolled: 17 steps per warp
  // with guards (the last warp's chunk runs past k), 32 without; past 64
  // steps per warp, the rolled loop (65 steps, the last warp's 62).
  all.push_back({DType::BF16, 2, 4160, 40, true, false, {}});
  all.push_back({DType::F16, 1, 8192, 24, true, true, {}});
  all.push_back({DType::BF16, 3, 16448, 20, true, false, {}});
  // Layers of 300 and 400 blocks of 16 channels: the tensor-core kernel's
  // schedules of 3 blocks per SM, 8 steps ahead, and 6 blocks, 4 steps
  // ahead (those above take 2 blocks, 12 steps ahead), 8 steps per warp.
  all.push_back({DType::BF16, 1, 2048, 4800, true, false, {}});
  all.push_back({DType::BF16, 2, 2048, 6400, true, true, {}});
  // The 6-per-SM schedule keeps its weights' ring in shared memory: f16
  // with fewer steps per warp (4) than the ring's copies in flight (5), and
  // bf16 past 64 steps per warp (the rolled loop; the last warp's 62).
  all.push_back({DType::F16, 3, 1024, 6400, true, true, {}});
  all.push_back({DType::BF16, 1, 16448, 6400, true, false, {}});
  // Uniform scales fold to a splat constant, which the GEMV kernel reads
  // as a buffer like any scale (scalar, tensor-core and library paths).
  all.push_back({DType::F32, 3, 37, 19, true, true, {}, true});
  all.push_back({DType::BF16, 2, 128, 40, true, true, {}, true});
  all.push_back({DType::BF16, 9, 64, 24, false, true, {}, true});
  // Scales the fast bf16 dequantization leaves to the exact one: the first
  // block's warps take it, the second block's do not; the lhs staged in
  // shared memory (1 row) and reordered in registers (8 rows of 4160).
  for (int64_t rows : {1, 8})
    all.push_back({DType::BF16,
                   rows,
                   rows == 1 ? 256 : 4160,
                   40,
                   true,
                   false,
                   {},
                   false,
                   true});
  // Negative scales (both exponent parities), on every path.
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    all.push_back({dtype, 2, 512, 40, true, false, {}, false, false, true});
  return all;
}

} // namespace

TEST_CASE("int8 weights with few rows run as one quantized GEMV kernel",
          "[quantized]") {
  for (const QuantizedCase &c : cases())
    check(c, Target::Cpu);
}

TEST_CASE("int8 weights on the GPU match the dequantized reference",
          "[quantized][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  for (const QuantizedCase &c : cases())
    check(c, Target::Cuda);
}

namespace {

/// y = 2^120 * 100 * 2 (2.66e38, finite in bf16 and f32): the bf16 kernel
/// must not scale the channel's sum of a scale with an even exponent (2) by
/// 2 on its way, which would overflow f32.
void checkSumNearTheTop(Target target) {
  INFO("on " << targetName(target));
  const int64_t k = 64, n = 16;
  GraphBuilder b("near_top");
  std::string x = b.input("x", DType::BF16, {1, k});
  std::string w =
      b.op("dequantize_linear",
           {b.input("w", DType::I8, {n, k}), b.input("s", DType::BF16, {n})},
           {{"axis", int64_t(0)}});
  b.output(b.op("matmul", {x, b.op("transpose", {w},
                                   {{"perm", std::vector<int64_t>{1, 0}}})}));
  Tensor lhs(DType::BF16, {1, k}), weights(DType::I8, {n, k}),
      scales(DType::BF16, {n});
  lhs.set(0, std::ldexp(1.0, 120));
  for (int64_t c = 0; c < n; ++c) {
    weights.set(c * k, 100);
    scales.set(c, 2.0);
  }
  CompiledModel model = compile(b.build(), test::testOptions(true, target));
  std::vector<Tensor> outputs = model.run({lhs, weights, scales});
  for (int64_t c = 0; c < n; ++c)
    CHECK(outputs[0].at(c) == std::ldexp(200.0, 120));
}

} // namespace

TEST_CASE("an int8 GEMV result near the top of bf16 stays finite",
          "[quantized]") {
  checkSumNearTheTop(Target::Cpu);
}

TEST_CASE("an int8 GEMV result near the top of bf16 stays finite on the GPU",
          "[quantized][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkSumNearTheTop(Target::Cuda);
}

TEST_CASE("the quantized GEMV kernel compiles for the GPU", "[quantized]") {
  // 24 channels: the tensor-core kernel's ring in registers; 6400: in
  // shared memory (cp.async), for f16 and bf16.
  for (DType dtype : {DType::BF16, DType::F16})
    for (int64_t n : {24, 6400}) {
      INFO(dtypeName(dtype) << " n " << n);
      GraphBuilder b("gemv");
      std::string x = b.input("x", dtype, {2, 64});
      std::string w =
          b.op("dequantize_linear",
               {b.input("w", DType::I8, {n, 64}), b.input("s", dtype, {n})},
               {{"axis", int64_t(0)}});
      b.output(b.op(
          "matmul",
          {x, b.op("transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}})}));
      test::compileForGpus(b.build(), /*everyVariant=*/false);
    }
}

TEST_CASE("the tensor-core GEMV unrolls a warp's steps up to 64 of them",
          "[quantized]") {
  // k = 4096: 16 steps per warp, one unrolled loop over them; k = 16448:
  // 65 steps, rounds of 4 in a rolled loop (no GPU needed: lowered only).
  for (int64_t k : {4096, 16448}) {
    INFO("k " << k);
    GraphBuilder b("gemv");
    std::string x = b.input("x", DType::BF16, {1, k});
    std::string w = b.op(
        "dequantize_linear",
        {b.input("w", DType::I8, {32, k}), b.input("s", DType::BF16, {32})},
        {{"axis", int64_t(0)}});
    b.output(b.op("matmul", {x, b.op("transpose", {w},
                                     {{"perm", std::vector<int64_t>{1, 0}}})}));
    Program program =
        lowerGraph(b.build(), test::testOptions(true, Target::Cuda)).program;
    REQUIRE(program.kernels.size() == 1);
    const std::string &source = program.kernels[0].source;
    bool unrolled = source.find("for (int step = 0; step < 16; ++step)") !=
                    std::string::npos;
    bool rolled = source.find("for (int first = 0; first < stepCount;") !=
                  std::string::npos;
    CHECK(unrolled == (k == 4096));
    CHECK(rolled == (k == 16448));
    // bf16: the logic-op dequantization, with the exact one for the scales
    // it does not cover; the lhs staged in shared memory while it is small.
    CHECK(source.find("_prepare(") != std::string::npos);
    CHECK(source.find("_dequantize_exact(") != std::string::npos);
    CHECK((source.find("lhsStaged") != std::string::npos) == (k == 4096));
  }
}

TEST_CASE("a GEMV of many channels keeps its weights in flight in shared "
          "memory",
          "[quantized]") {
  // 6400 channels: 400 blocks, 6 per SM, whose registers hold 4 steps of
  // loads but whose shared memory holds a ring of 6; 32 channels: 2
  // blocks, 12 steps in registers. Lowered only (no GPU needed).
  for (int64_t n : {32, 6400})
    for (int64_t k : {4096, 16448}) {
      INFO("n " << n << " k " << k);
      GraphBuilder b("gemv");
      std::string x = b.input("x", DType::BF16, {1, k});
      std::string w = b.op(
          "dequantize_linear",
          {b.input("w", DType::I8, {n, k}), b.input("s", DType::BF16, {n})},
          {{"axis", int64_t(0)}});
      b.output(b.op(
          "matmul",
          {x, b.op("transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}})}));
      Program program =
          lowerGraph(b.build(), test::testOptions(true, Target::Cuda)).program;
      REQUIRE(program.kernels.size() == 1);
      const std::string &source = program.kernels[0].source;
      bool sharedRing =
          source.find("int4 weightRing[4][6][2][32]") != std::string::npos;
      CHECK(sharedRing == (n == 6400));
      CHECK((source.find("int4 ring0[") != std::string::npos) == (n == 32));
      if (sharedRing) {
        // Each step waits for its own copy, 5 later ones still in flight;
        // the exact dequantization's path first lets every copy land.
        CHECK(source.find("cp.async.wait_group 5;") != std::string::npos);
        CHECK(source.find("cp.async.wait_all;") != std::string::npos);
        CHECK((source.find("#pragma unroll 1\n    for (int step = 0; step < "
                           "65; ++step)") != std::string::npos) ==
              (k == 16448));
      }
    }
}

TEST_CASE("uint8 weights are dequantized as unsigned, never as int8",
          "[quantized]") {
  // The quantized GEMV reads int8; a u8 weight (ONNX's usual uint8
  // quantization) must take the dequantize-then-matmul path, with 200 and
  // 255 as themselves.
  GraphBuilder b("u8_weights");
  std::string x = b.input("x", DType::F32, {1, 4});
  std::string w = b.input("w", DType::U8, {4, 2});
  std::string s = b.input("scale", DType::F32, {2});
  b.output(b.op("matmul", {x, b.op("dequantize_linear", {w, s},
                                   {{"axis", int64_t(1)}})}));
  Tensor xs(DType::F32, {1, 4}), ws(DType::U8, {4, 2}), scale(DType::F32, {2});
  const double xValues[] = {1, -2, 0.5, 3},
               wValues[] = {200, 255, 0, 1, 128, 7, 255, 3};
  for (int i = 0; i < 4; ++i)
    xs.set(i, xValues[i]);
  for (int i = 0; i < 8; ++i)
    ws.set(i, wValues[i]);
  scale.set(0, 0.5);
  scale.set(1, 0.25);
  CompiledModel model = compile(b.build(), test::testOptions());
  for (const KernelDesc &kernel : model.program().kernels)
    CHECK(kernel.schedule != "quantized-gemv");
  std::vector<Tensor> outputs = model.run({xs, ws, scale});
  for (int j = 0; j < 2; ++j) {
    double expected = 0;
    for (int i = 0; i < 4; ++i)
      expected += xValues[i] * wValues[i * 2 + j] * (j == 0 ? 0.5 : 0.25);
    CHECK(outputs[0].at(j) == Approx(expected).epsilon(1e-6));
  }
}

namespace {

/// Every int8 weight times every 16-bit scale pattern (the 65536 channels'
/// scales), read out one weight per output: lhs row r is 3 at one k and 0
/// elsewhere, so y[r][c] is 3 * w[c][k] (exact in f32, then rounded to the
/// output dtype) unless another weight of the channel is inf or NaN (0 *
/// inf is NaN). Compared bitwise, this pins the kernel's dequantization to
/// DequantizeLinear's for every byte and scale, subnormal and huge ones
/// included: the weight must be rounded to the dtype before the product
/// (3 * w rounded once more differs from 3 * q * scale rounded once).
/// k = 256 gives each warp of the tensor-core kernel one step; the cases
/// above with k = 4160 and 8192 run its ring of loads over many.
void checkEveryWeightAndScale(DType dtype, Target target) {
  INFO("dtype " << dtypeName(dtype) << " on " << targetName(target));
  const int64_t rows = 8, k = 256, n = 65536;
  GraphBuilder b("every_weight");
  std::string x = b.input("x", dtype, {rows, k});
  std::string scale = b.input("scale", dtype, {n});
  std::string w = b.input("w", DType::I8, {n, k});
  std::string dequantized =
      b.op("dequantize_linear", {w, scale}, {{"axis", int64_t(0)}});
  b.output(b.op("matmul", {x, b.op("transpose", {dequantized},
                                   {{"perm", std::vector<int64_t>{1, 0}}})}));
  CompiledModel model = compile(b.build(), test::testOptions(true, target));

  Tensor scales(dtype, {n}), weights(DType::I8, {n, k});
  for (int64_t c = 0; c < n; ++c)
    scales.as<uint16_t>()[c] = static_cast<uint16_t>(c);
  // Weight k of every channel is k - 128, in a channel-dependent rotation
  // so that each byte meets each position of the kernel's words.
  for (int64_t c = 0; c < n; ++c)
    for (int64_t i = 0; i < k; ++i)
      weights.set(c * k + i, double((i + c) % k) - 128);
  // The reference: DequantizeLinear's f32 product rounded to the dtype.
  Tensor dequantizedReference(dtype, {n, k});
  std::vector<int> nonFinite(n, 0); // weights of the channel
  for (int64_t c = 0; c < n; ++c)
    for (int64_t i = 0; i < k; ++i) {
      float product = static_cast<float>(weights.at(c * k + i)) *
                      static_cast<float>(scales.at(c));
      dequantizedReference.set(c * k + i, product);
      nonFinite[c] += !std::isfinite(dequantizedReference.at(c * k + i));
    }
  int64_t mismatches = 0;
  Tensor rounded(dtype, {1});
  for (int64_t first = 0; first < k; first += rows) {
    Tensor lhs(dtype, {rows, k});
    for (int64_t r = 0; r < rows; ++r)
      lhs.set(r * k + first + r, 3.0);
    std::vector<Tensor> outputs = model.run({lhs, scales, weights});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double got = outputs[0].at(r * n + c);
        double weight = dequantizedReference.at(c * k + first + r);
        bool othersFinite = nonFinite[c] == (std::isfinite(weight) ? 0 : 1);
        rounded.set(0, 3.0 * weight);
        double expected = othersFinite ? rounded.at(0) : std::nan("");
        bool same = std::isnan(expected) ? std::isnan(got) : got == expected;
        if (!same && mismatches++ < 5)
          UNSCOPED_INFO("channel "
                        << c << " (scale " << scales.at(c) << ") weight "
                        << weights.at(c * k + first + r) << ": got " << got
                        << ", expected " << expected);
      }
  }
  CHECK(mismatches == 0);
}

} // namespace

TEST_CASE("every int8 weight times every 16-bit scale dequantizes exactly",
          "[quantized]") {
  for (DType dtype : {DType::BF16, DType::F16})
    checkEveryWeightAndScale(dtype, Target::Cpu);
}

TEST_CASE("every int8 weight times every 16-bit scale dequantizes exactly on "
          "the GPU",
          "[quantized][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  for (DType dtype : {DType::BF16, DType::F16})
    checkEveryWeightAndScale(dtype, Target::Cuda);
}

namespace {

/// y = x @ dequantize(w)^T with w [n, k] and its scales constants (a
/// model's initializers) or inputs, whose values are appended to `inputs`.
std::string gemvOf(GraphBuilder &b, const std::string &layer,
                   const std::string &x, int64_t k, int64_t n,
                   bool constantWeights, std::mt19937_64 &rng,
                   std::vector<Tensor> &inputs, DType dtype) {
  Tensor weight = randomTensor(DType::I8, {n, k}, rng, -127, 127);
  // Weights of RMS ~73 s: s ~ 1 / (73 sqrt(k)) keeps the outputs of an
  // lhs of magnitude ~1 near 1, layer after layer.
  double typical = 1.0 / (73.0 * std::sqrt(double(k)));
  Tensor scale = randomTensor(dtype, {n}, rng, 0.5 * typical, 1.5 * typical);
  std::string w, s;
  if (constantWeights) {
    w = b.constant(layer + "_w", weight);
    s = b.constant(layer + "_s", scale);
  } else {
    w = b.input(layer + "_w", DType::I8, {n, k});
    s = b.input(layer + "_s", dtype, {n});
    inputs.push_back(weight);
    inputs.push_back(scale);
  }
  std::string dequantized =
      b.op("dequantize_linear", {w, s}, {{"axis", int64_t(0)}});
  return b.op("matmul", {x, b.op("transpose", {dequantized},
                                 {{"perm", std::vector<int64_t>{1, 0}}})});
}

} // namespace

TEST_CASE("a GEMV reads constant weights before it waits for the kernel "
          "before it",
          "[quantized]") {
  enum class Weights { Constant, Input, Computed };
  // 40 channels: the ring in registers; 6400: in shared memory. bf16 with
  // one row stages the lhs in shared memory; f16 and 8 rows read it at
  // every step. Weights computed by a kernel (a negation) are no
  // constant.
  for (DType dtype : {DType::BF16, DType::F16})
    for (int64_t rows : {1, 8})
      for (int64_t n : {40, 6400})
        for (Weights weights :
             {Weights::Constant, Weights::Input, Weights::Computed}) {
          INFO(dtypeName(dtype) << " rows " << rows << " n " << n << " weights "
                                << int(weights));
          const int64_t k = 4096;
          GraphBuilder b("gemv");
          std::string x = b.input("x", dtype, {rows, k});
          std::string w, s;
          if (weights == Weights::Constant) {
            std::mt19937_64 rng(3);
            w = b.constant("w", randomTensor(DType::I8, {n, k}, rng));
            s = b.constant("s", randomTensor(dtype, {n}, rng, 1e-3, 2e-2));
          } else {
            w = b.input("w", DType::I8, {n, k});
            s = b.input("s", dtype, {n});
            if (weights == Weights::Computed)
              w = b.op("neg", {w});
          }
          std::string dequantized =
              b.op("dequantize_linear", {w, s}, {{"axis", int64_t(0)}});
          b.output(b.op("matmul",
                        {x, b.op("transpose", {dequantized},
                                 {{"perm", std::vector<int64_t>{1, 0}}})}));
          Graph graph = b.build();
          // NVRTC compiles every form (no GPU needed).
          test::compileForGpus(graph, /*everyVariant=*/false);
          Program program =
              lowerGraph(graph, test::testOptions(true, Target::Cuda)).program;
          REQUIRE(program.kernels.size() ==
                  (weights == Weights::Computed ? 2u : 1u));
          const KernelDesc &kernel = program.kernels.back();
          REQUIRE(kernel.schedule == "quantized-gemv");
          CHECK(kernel.launch.waitsForPredecessor);
          const std::string &source = kernel.source;
          size_t wait = source.find("griddepcontrol.wait;");
          size_t firstWeights = std::min(source.find("cp.async.cg.shared"),
                                         source.find("_load_weights(row0 + ("));
          size_t scale = source.find("in2[channel0]");
          size_t lhs = std::min(source.find("in0 + r * 4096LL"),
                                source.find("(const int4 *)(lhs + ("));
          size_t store = source.find("out0[");
          REQUIRE(wait != std::string::npos);
          REQUIRE(firstWeights != std::string::npos);
          REQUIRE(scale != std::string::npos);
          REQUIRE(lhs != std::string::npos);
          // The lhs and the stores come after the wait, whatever the
          // weights; the weights and scales before it only if constant.
          CHECK(wait < lhs);
          CHECK(wait < store);
          bool constant = weights == Weights::Constant;
          CHECK((firstWeights < wait) == constant);
          CHECK((scale < wait) == constant);
          // The next kernel may launch at the start of a layer that fills
          // its SMs (6400 channels: 6 blocks per SM), after the main loop
          // otherwise.
          size_t trigger = source.find("griddepcontrol.launch_dependents;");
          REQUIRE(trigger != std::string::npos);
          if (n == 6400) {
            CHECK(trigger < wait);
          } else {
            CHECK(trigger > source.rfind("mma.sync"));
            CHECK(trigger < source.find("__shared__ float partial["));
          }
        }
}

TEST_CASE("GEMVs in a chain read each lhs after the kernel that wrote it on "
          "the GPU",
          "[quantized][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  // x -> square -> A -> B -> C -> tanh -> D: each GEMV's lhs is the output
  // of the kernel launched just before it, which it may overlap
  // (programmatic launch on sm_90): reading that lhs before the wait would
  // read the previous run's values or garbage. A and B fill their SMs (6400
  // channels) and let the next kernel launch at their start, so B (a shared
  // ring) and C (a register ring) start while the GEMV before them runs;
  // the others follow kernels that do not let them start early. Constant
  // and input weights, bf16 and f16.
  for (DType dtype : {DType::BF16, DType::F16})
    for (bool constantWeights : {true, false}) {
      INFO(dtypeName(dtype) << " constant weights " << constantWeights);
      std::mt19937_64 rng(11);
      std::vector<Tensor> inputs(1);
      GraphBuilder b("gemv_chain");
      std::string x = b.input("x", dtype, {1, 1024});
      std::string h = b.op("mul", {x, x});
      std::string a =
          gemvOf(b, "a", h, 1024, 6400, constantWeights, rng, inputs, dtype);
      std::string bOut =
          gemvOf(b, "b", a, 6400, 6400, constantWeights, rng, inputs, dtype);
      std::string c =
          gemvOf(b, "c", bOut, 6400, 4096, constantWeights, rng, inputs, dtype);
      b.output(gemvOf(b, "d", b.op("tanh", {c}), 4096, 64, constantWeights, rng,
                      inputs, dtype));
      Graph graph = b.build();
      CompiledModel gpu = compile(graph, test::testOptions(true, Target::Cuda));
      CompiledModel cpu = compile(graph, test::testOptions(true, Target::Cpu));
      int gemvs = 0;
      for (const KernelDesc &kernel : gpu.program().kernels)
        gemvs += kernel.schedule == "quantized-gemv" &&
                 kernel.launch.waitsForPredecessor;
      REQUIRE(gemvs == 4);
      for (int run = 0; run < 4; ++run) {
        INFO("run " << run);
        // A new x each run: a stale lhs would be the previous run's.
        inputs[0] = randomTensor(dtype, {1, 1024}, rng);
        std::vector<Tensor> got = gpu.run(inputs);
        std::vector<Tensor> expected = cpu.run(inputs);
        // The two targets sum in other orders; each layer rounds to its
        // dtype.
        Comparison comparison =
            compareTensors(got[0], expected[0], Tolerance{2e-2, 2e-2});
        INFO("max abs error " << comparison.maxAbsError << ", mismatches "
                              << comparison.mismatches);
        CHECK(comparison.ok());
      }
    }
}
