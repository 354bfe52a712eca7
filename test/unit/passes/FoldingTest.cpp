//===- FoldingTest.cpp - Canonicalization computes what kernels do ------===//
//
// pow with a constant exponent of 2 (the canonicalizer makes it x * x) is
// the exact square rounded once, and constant folding computes what the
// kernels compute on the same values.
//
//===----------------------------------------------------------------------===//

#include "test/unit/ReferenceOps.h"
#include "test/unit/TestUtil.h"

#include "ir/ElementwiseOps.h"
#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>

using namespace fusec;
using test::kSpecialFloats;
using test::specialInts;

namespace {

/// pow(x, 2) with a constant exponent (the canonicalizer makes it x * x)
/// against the exact square (in f64, exact for every dtype but f64 itself,
/// where it is the correctly rounded one) rounded once to the dtype: the
/// special values, subnormals, squares that overflow or underflow, and
/// random values, fused and unfused.
void checkSquareByPowerOfTwo(Target target) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-300, 300);
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    std::vector<double> values(std::begin(kSpecialFloats),
                               std::end(kSpecialFloats));
    for (double value : {1e-40, -3e-42, 1e-20, 6e-8, -6e-8, 1e19, -2e19, 255.5,
                         65504.0, 3e38, 1e-160, 1e160, -1e200})
      values.push_back(value);
    for (int i = 0; i < 64; ++i)
      values.push_back(uniform(rng));
    const int64_t count = static_cast<int64_t>(values.size());
    Tensor x(dtype, {count});
    for (int64_t i = 0; i < count; ++i)
      x.set(i, values[i]);
    Tensor expected(dtype, {count});
    for (int64_t i = 0; i < count; ++i)
      expected.set(i, x.at(i) * x.at(i));
    for (bool fuse : {true, false}) {
      INFO(dtypeName(dtype) << (fuse ? " fused" : " unfused"));
      GraphBuilder b("square");
      std::string input = b.input("x", dtype, {count});
      b.output(b.op("pow", {input, b.scalar(2.0, dtype)}));
      CompiledModel model = compile(b.build(), test::testOptions(fuse, target));
      for (const KernelInfo &kernel : model.kernels())
        CHECK(kernel.source.find("pow(") == std::string::npos);
      Tensor result = model.run({x})[0];
      for (int64_t i = 0; i < count; ++i) {
        INFO("x = " << x.at(i));
        if (std::isnan(expected.at(i))) {
          CHECK(std::isnan(result.at(i)));
        } else {
          CHECK(result.at(i) == expected.at(i));
          CHECK(std::signbit(result.at(i)) == std::signbit(expected.at(i)));
        }
      }
    }
  }
}

} // namespace

TEST_CASE("pow with a constant exponent of 2 is the exact square rounded once",
          "[ops]") {
  checkSquareByPowerOfTwo(Target::Cpu);
}

TEST_CASE("pow with a constant exponent of 2 is the exact square on the GPU",
          "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkSquareByPowerOfTwo(Target::Cuda);
}

namespace {

/// Whether two results are the same numbers: equal, or both NaN, and zeros
/// of the same sign.
bool sameNumbers(const Tensor &a, const Tensor &b, int64_t &first) {
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double x = a.at(i), y = b.at(i);
    bool same = (std::isnan(x) && std::isnan(y)) ||
                (x == y && std::signbit(x) == std::signbit(y));
    if (!same) {
      first = i;
      return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("constant folding computes what the kernels compute", "[ops]") {
  // The same graph twice: on constants (canonicalization folds it through
  // the op table and the cast folder) and on inputs (kernels compute it).
  // Casts must agree exactly; other ops within the dtype's tolerance (the
  // folder's libm and the kernels' vector math may differ in the last
  // bit), zeros in sign too.
  for (const DType *dtype = allDTypesBegin(); dtype != allDTypesEnd();
       ++dtype) {
    INFO("dtype " << dtypeName(*dtype));
    bool isFloatType = isFloat(*dtype);
    std::vector<double> floats(std::begin(kSpecialFloats),
                               std::end(kSpecialFloats));
    for (double value : {0.3, -1e-8, 65504.0, 70000.5, 3.4e38, -1e300})
      floats.push_back(value);
    std::vector<int64_t> ints;
    if (*dtype == DType::I1)
      ints = {0, 1};
    else if (!isFloatType)
      ints = specialInts(*dtype);
    int64_t n = isFloatType ? floats.size() : ints.size();
    Tensor a(*dtype, {n, 1}), b(*dtype, {1, n});
    for (int64_t i = 0; i < n; ++i) {
      if (isFloatType) {
        a.set(i, floats[i]);
        b.set(i, floats[n - 1 - i]);
      } else {
        ref::setInt(a, i, ints[i]);
        ref::setInt(b, i, ints[n - 1 - i]);
      }
    }
    std::vector<std::string> names;
    auto build = [&](bool folded) {
      GraphBuilder builder(folded ? "folded" : "computed");
      std::string x = folded ? builder.constant("a", a)
                             : builder.input("a", *dtype, {n, 1});
      std::string y = folded ? builder.constant("b", b)
                             : builder.input("b", *dtype, {1, n});
      names.clear();
      for (const fuse::ElementwiseOpInfo &info : fuse::elementwiseOps()) {
        if (!info.accepts(*dtype))
          continue;
        builder.output(info.arity == 1 ? builder.op(info.mnemonic, {x})
                                       : builder.op(info.mnemonic, {x, y}));
        names.push_back(info.mnemonic);
      }
      for (const DType *to = allDTypesBegin(); to != allDTypesEnd(); ++to) {
        builder.output(
            builder.op("cast", {x}, {{"dtype", std::string(dtypeName(*to))}}));
        names.push_back(std::string("cast to ") + dtypeName(*to));
      }
      return builder.build();
    };
    std::vector<Tensor> folded =
        compile(build(true), test::testOptions()).run({});
    std::vector<Tensor> computed =
        compile(build(false), test::testOptions()).run({a, b});
    REQUIRE(folded.size() == names.size());
    REQUIRE(computed.size() == names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      INFO(names[i]);
      REQUIRE(folded[i].dtype == computed[i].dtype);
      int64_t first = -1;
      if (sameNumbers(folded[i], computed[i], first))
        continue;
      INFO("element " << first << ": folded " << folded[i].at(first)
                      << ", computed " << computed[i].at(first));
      if (names[i].rfind("cast", 0) == 0) {
        FAIL_CHECK("a cast folds to another value than it computes");
        continue;
      }
      Comparison comparison = compareTensors(folded[i], computed[i]);
      INFO(test::describeMismatch(folded[i], computed[i], comparison));
      CHECK(comparison.ok());
      for (int64_t e = 0; e < folded[i].numElements(); ++e)
        if (folded[i].at(e) == 0 && computed[i].at(e) == 0 &&
            std::signbit(folded[i].at(e)) != std::signbit(computed[i].at(e)))
          FAIL_CHECK("element " << e << ": a zero of another sign");
    }
  }
}
