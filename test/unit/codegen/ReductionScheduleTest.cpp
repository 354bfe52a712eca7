//===- ReductionScheduleTest.cpp - Every reduction schedule runs ---------===//
//
// Row and column lengths that pick different schedules (warp or block per
// row, one or several passes, column tiles), each run against the f64
// reference (test/unit/support/ReductionCases.h).
//
//===----------------------------------------------------------------------===//

#include "test/unit/support/ReductionCases.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

using namespace fusec;
using namespace fusec::test::reduction;

namespace {

/// One graph per op, so that each op's own schedule runs.
void checkRowLengths(const std::vector<int64_t> &lengths, Target target) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (int64_t length : lengths) {
      int64_t rows = std::clamp<int64_t>((int64_t(1) << 21) / length, 3, 512);
      std::mt19937_64 rng(length);
      Tensor x = random(dtype, {rows, length}, rng, -2.5, 3.5);
      Tensor w = random(dtype, {length}, rng, 0.5, 1.5);
      Tensor bias = random(dtype, {length}, rng, -0.5, 0.5);
      std::string shape = std::to_string(rows) + "x" + std::to_string(length);
      auto single = [&](const std::string &what) {
        return CaseBuilder(what + " over rows of " + shape + ", " +
                           dtypeName(dtype));
      };
      using K = ref::ReduceKind;
      for (K kind : {K::Sum, K::Max, K::Mean, K::LogSumExp}) {
        CaseBuilder cb = single(ref::reduceOpName(kind));
        addReduction(cb, kind, cb.input("x", x), x, A({-1}), kind == K::Max);
        runCase(cb.finish(), target);
      }
      {
        CaseBuilder cb = single("softmax");
        cb.output(cb.b.op("softmax", {cb.input("x", x)}), "softmax",
                  ref::softmax(x, -1), dtype, softmaxBound(dtype, length));
        runCase(cb.finish(), target);
      }
      {
        CaseBuilder cb = single("log_softmax");
        cb.output(cb.b.op("log_softmax", {cb.input("x", x)}), "log_softmax",
                  ref::logSoftmax(x, -1), dtype,
                  logSoftmaxBound(dtype, length));
        runCase(cb.finish(), target);
      }
      {
        CaseBuilder cb = single("layer_norm(x, w, b)");
        std::string vx = cb.input("x", x), vw = cb.input("w", w),
                    vb = cb.input("b", bias);
        cb.output(cb.b.op("layer_norm", {vx, vw, vb}), "layer_norm",
                  ref::layerNorm(x, &w, &bias, -1, 1e-5), dtype,
                  normBound(dtype, length));
        runCase(cb.finish(), target);
      }
      {
        CaseBuilder cb = single("rms_norm(x, w)");
        std::string vx = cb.input("x", x), vw = cb.input("w", w);
        cb.output(cb.b.op("rms_norm", {vx, vw}), "rms_norm",
                  ref::rmsNorm(x, &w, -1, 1e-5), dtype,
                  normBound(dtype, length));
        runCase(cb.finish(), target);
      }
    }
  }
}

void checkColumnLengths(int64_t rows, const std::vector<int64_t> &columns,
                        Target target) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (int64_t width : columns) {
      std::mt19937_64 rng(width);
      Tensor x = random(dtype, {rows, width}, rng, -1, 1);
      std::string shape = std::to_string(rows) + "x" + std::to_string(width);
      using K = ref::ReduceKind;
      for (K kind : {K::Sum, K::Max, K::Mean, K::L2}) {
        CaseBuilder cb(std::string(ref::reduceOpName(kind)) +
                       " over axis 0 of " + shape + ", " + dtypeName(dtype));
        addReduction(cb, kind, cb.input("x", x), x, A({0}), kind != K::Sum);
        runCase(cb.finish(), target);
      }
      CaseBuilder cb("softmax over axis 0 of " + shape + ", " +
                     dtypeName(dtype));
      cb.output(cb.b.op("softmax", {cb.input("x", x)}, {{"axis", int64_t(0)}}),
                "softmax axis 0", ref::softmax(x, 0), dtype,
                softmaxBound(dtype, rows));
      runCase(cb.finish(), target);
    }
  }
}

} // namespace

TEST_CASE("row lengths 1 to 5000 for every row schedule", "[reduction]") {
  checkRowLengths({1, 7, 33, 1000, 5000}, Target::Cpu);
}
TEST_CASE("row lengths 1 to 100000 for every GPU row schedule",
          "[reduction][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkRowLengths({1, 7, 32, 33, 1000, 1024, 4096, 5000, 20000, 100000},
                  Target::Cuda);
}
TEST_CASE("column reductions over axis 0", "[reduction]") {
  checkColumnLengths(16384, {1, 3}, Target::Cpu);
  checkColumnLengths(1000, {257}, Target::Cpu);
}
TEST_CASE("column reductions over axis 0 of 16384 rows on the GPU",
          "[reduction][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkColumnLengths(16384, {1, 3, 4096}, Target::Cuda);
}
