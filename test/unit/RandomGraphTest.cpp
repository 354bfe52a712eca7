//===- RandomGraphTest.cpp - Random pointwise DAGs, fused vs unfused -----===//
//
// Seeded random graphs over the op table: chains, shared producers (values
// with several consumers), broadcast inputs and constants, reshapes, and
// intermediates returned as outputs. Each is compiled fused and unfused and
// run on the same inputs; the outputs must agree within the dtype tolerance.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "ir/ElementwiseOps.h"

#include <catch2/catch.hpp>

#include <set>

using namespace fusec;

namespace {

struct RandomGraph {
  Graph graph;
  std::vector<Tensor> inputs;
};

class RandomGraphGenerator {
public:
  RandomGraphGenerator(uint64_t seed, DType dtype)
      : rng(seed), dtype(dtype), builder("random_" + std::to_string(seed)) {}

  RandomGraph generate() {
    Shape full = {int64_t(2 + pick(4)), int64_t(1 + pick(40))};
    // Inputs of the full shape and of shapes that broadcast to it.
    std::vector<Shape> inputShapes = {full, {full[1]}, {full[0], 1}, {}};
    int inputCount = 1 + pick(3);
    for (int i = 0; i < inputCount; ++i) {
      Shape shape = i == 0 ? full : inputShapes[pick(inputShapes.size())];
      addValue(builder.input("in" + std::to_string(i), dtype, shape), shape);
      inputs.push_back(randomTensor(dtype, shape, rng, -2, 2));
    }
    if (pick(2))
      addValue(
          builder.constant("k", randomTensor(dtype, {full[1]}, rng, -2, 2)),
          {full[1]});
    int nodeCount = 3 + pick(22);
    for (int n = 0; n < nodeCount; ++n)
      addNode();
    // The last value, and a few intermediates, are outputs.
    builder.output(values.back().first);
    for (size_t i = 0; i + 1 < values.size(); ++i)
      if (pick(6) == 0)
        builder.output(values[i].first);
    return {builder.build(), inputs};
  }

private:
  size_t pick(size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  }

  void addValue(const std::string &name, const Shape &shape) {
    values.emplace_back(name, shape);
  }

  /// Recent values are more likely operands, so chains grow long.
  const std::pair<std::string, Shape> &operand() {
    size_t window = std::min<size_t>(values.size(), 4);
    return pick(3) ? values[values.size() - 1 - pick(window)]
                   : values[pick(values.size())];
  }

  /// Keeps positive-domain ops defined: |x| + 0.25.
  std::string positive(const std::string &value) {
    return builder.op(
        "add", {builder.op("abs", {value}), builder.scalar(0.25, dtype)});
  }

  /// Keeps a float operand inside the op's domain, away from its edges
  /// (where rounding decides between a number and NaN): |x| + 0.25 for
  /// Positive, 0.9 tanh(x) for Unit, |x| + 1.25 for AboveOne.
  std::string guard(const fuse::ElementwiseOpInfo &info,
                    const std::string &value) {
    if (!isFloat(dtype))
      return value;
    switch (info.domain) {
    case fuse::InputDomain::Real:
      return value;
    case fuse::InputDomain::Positive:
      return positive(value);
    case fuse::InputDomain::Unit:
      return builder.op(
          "mul", {builder.op("tanh", {value}), builder.scalar(0.9, dtype)});
    case fuse::InputDomain::AboveOne:
      return builder.op(
          "add", {builder.op("abs", {value}), builder.scalar(1.25, dtype)});
    }
    return value;
  }

  void addNode() {
    if (pick(12) == 0) {
      // reshape to 1-D and back: the alias path between kernels.
      auto [value, shape] = operand();
      Shape flat = {numElements(shape)};
      std::string r = builder.op("reshape", {value}, {{"shape", flat}});
      addValue(
          builder.op("reshape", {builder.op("neg", {r})}, {{"shape", shape}}),
          shape);
      return;
    }
    if (pick(10) == 0) {
      // select on a comparison: bool values inside a region.
      auto a = operand(), b = operand();
      std::optional<Shape> shape = broadcastShapes(a.second, b.second);
      std::string cond = builder.op("lt", {a.first, b.first});
      addValue(builder.op("select", {cond, b.first, a.first}), *shape);
      return;
    }
    std::vector<const fuse::ElementwiseOpInfo *> candidates;
    // Fused kernels keep f16/bf16 intermediates in f32 where unfused ones
    // round them between kernels; discontinuous or ill-conditioned ops
    // amplify that difference past any tolerance.
    static const std::set<std::string> kIllConditioned = {
        "floor", "ceil", "round", "sign", "mod", "fmod", "tan"};
    bool halfFloat = dtype == DType::F16 || dtype == DType::BF16;
    for (const fuse::ElementwiseOpInfo &info : fuse::elementwiseOps())
      if (info.accepts(dtype) && info.result == fuse::ResultClass::Same &&
          !(halfFloat && kIllConditioned.count(info.mnemonic)))
        candidates.push_back(&info);
    const fuse::ElementwiseOpInfo &info = *candidates[pick(candidates.size())];
    auto a = operand();
    std::string lhs = guard(info, a.first);
    if (info.arity == 1) {
      addValue(builder.op(info.mnemonic, {lhs}), a.second);
      return;
    }
    auto b = operand();
    std::string rhs = guard(info, b.first);
    addValue(builder.op(info.mnemonic, {lhs, rhs}),
             *broadcastShapes(a.second, b.second));
  }

  std::mt19937_64 rng;
  DType dtype;
  GraphBuilder builder;
  std::vector<Tensor> inputs;
  std::vector<std::pair<std::string, Shape>> values;
};

} // namespace

void test::checkRandomGraphs(DType dtype, uint64_t firstSeed, int count,
                             Target target) {
  for (uint64_t seed = firstSeed; seed < firstSeed + count; ++seed) {
    INFO("dtype " << dtypeName(dtype) << ", seed " << seed << ", on "
                  << targetName(target));
    RandomGraph random = RandomGraphGenerator(seed, dtype).generate();
    if (target == Target::Cpu)
      test::compileForGpus(random.graph);
    CompiledModel fused =
        compile(random.graph, test::testOptions(true, target));
    CompiledModel unfused =
        compile(random.graph, test::testOptions(false, Target::Cpu));
    CHECK(fused.kernels().size() <= unfused.kernels().size());
    std::vector<Tensor> expected = unfused.run(random.inputs);
    std::vector<Tensor> actual = fused.run(random.inputs);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      INFO("output " << fused.program().outputNames[i]);
      Comparison comparison = compareTensors(actual[i], expected[i]);
      INFO(test::describeMismatch(actual[i], expected[i], comparison));
      CHECK(comparison.ok());
    }
  }
}

TEST_CASE("random f32 graphs: fused matches unfused", "[random]") {
  test::checkRandomGraphs(DType::F32, 1, 24, Target::Cpu);
}

TEST_CASE("random f16 graphs: fused matches unfused", "[random]") {
  test::checkRandomGraphs(DType::F16, 101, 8, Target::Cpu);
}

TEST_CASE("random bf16 graphs: fused matches unfused", "[random]") {
  test::checkRandomGraphs(DType::BF16, 301, 8, Target::Cpu);
}

TEST_CASE("random i32 graphs: fused matches unfused", "[random]") {
  test::checkRandomGraphs(DType::I32, 201, 8, Target::Cpu);
}
