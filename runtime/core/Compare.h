//===- Compare.h - Numerical comparison and test inputs --------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CORE_COMPARE_H
#define FUSEC_RUNTIME_CORE_COMPARE_H

#include "runtime/core/Program.h"
#include "runtime/core/Tensor.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace fusec {

/// The tolerance fusec accepts between two computations of the same graph
/// (fused vs unfused, kernel vs reference): |a - b| <= atol + rtol * |b|.
/// 16-bit floats are computed in f32 inside a kernel but rounded between
/// unfused kernels, hence their wider bounds. Ints and bools are exact.
struct Tolerance {
  double atol, rtol;
};
Tolerance toleranceFor(DType dtype);

struct Comparison {
  double maxAbsError = 0, maxRelError = 0;
  int64_t mismatches = 0;
  int64_t firstMismatch = -1;
  bool ok() const { return mismatches == 0; }
};

/// Compares element by element (NaN matches NaN, infinities match by sign;
/// with both tolerances 0, a zero matches only a zero of its sign).
Comparison compareTensors(const Tensor &actual, const Tensor &expected,
                          Tolerance tolerance);
inline Comparison compareTensors(const Tensor &actual, const Tensor &expected) {
  return compareTensors(actual, expected, toleranceFor(expected.dtype));
}

/// ||actual - expected||_2 / ||expected||_2 over every element: how far a
/// run in reduced precision is from a reference (infinite when a NaN or
/// infinity of one is not the other's; 0 for two empty or two zero tensors).
double relativeL2Error(const Tensor &actual, const Tensor &expected);

/// The fraction of rows (along the last dim) whose largest element is at
/// the same position in both (the first of equal largest ones): how often
/// logits pick the same token. 1 for a tensor with no rows.
double topOneAgreement(const Tensor &actual, const Tensor &expected);

/// Uniform random elements in [low, high] (ints: integers in that range,
/// bools: 0/1).
Tensor randomTensor(DType dtype, const Shape &shape, std::mt19937_64 &rng,
                    double low = -1.0, double high = 1.0);

/// Sum of the elements as doubles: the checksum `fusec --run` prints.
double checksum(const Tensor &tensor);

/// The line `fusec --run` (and fusec-run) prints for an output: "output
/// NAME: f32[2x3] checksum=1.5 values=[0.1, 0.2, ...]" (the first six).
std::string describeOutput(const std::string &name, const Tensor &tensor);

/// The inputs of a run of `program` (`fusec --run`, `fusec-run`): seeded
/// random ones without `files`, else each read from its file by `read`
/// (given the dtype the input expects) and checked against the input's
/// dtype and shape. Errors name `model` (a wrong count) or the file.
std::vector<Tensor>
programInputs(const Program &program, const std::vector<std::string> &files,
              uint64_t seed, const std::string &model,
              const std::function<Tensor(const std::string &, DType)> &read);

} // namespace fusec

#endif
