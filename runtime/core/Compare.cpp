#include "runtime/core/Compare.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fusec {

Tolerance toleranceFor(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return {1e-12, 1e-12};
  case DType::F32:
    return {1e-5, 1e-5};
  case DType::F16:
    return {1e-2, 1e-2};
  case DType::BF16:
    return {5e-2, 5e-2};
  default:
    // Integers, bools and the narrow dtypes (exact conversions: a cast or
    // a quantization gives one code, not a neighbour) compare exactly.
    return {0, 0};
  }
}

Comparison compareTensors(const Tensor &actual, const Tensor &expected,
                          Tolerance tolerance) {
  Comparison result;
  // A zero tolerance asks for identical numbers: -0.0 is not +0.0 there.
  const bool exact = tolerance.atol == 0 && tolerance.rtol == 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    double a = actual.at(i), e = expected.at(i);
    if (std::isnan(a) && std::isnan(e))
      continue;
    if (a == e) {
      if (exact && std::signbit(a) != std::signbit(e) &&
          result.mismatches++ == 0)
        result.firstMismatch = i;
      continue;
    }
    double abs = std::fabs(a - e);
    if (std::isnan(abs))
      abs = INFINITY;
    double rel = e != 0 ? abs / std::fabs(e) : abs;
    result.maxAbsError = std::max(result.maxAbsError, abs);
    result.maxRelError = std::max(result.maxRelError, rel);
    if (!(abs <= tolerance.atol + tolerance.rtol * std::fabs(e))) {
      if (result.mismatches++ == 0)
        result.firstMismatch = i;
    }
  }
  return result;
}

double relativeL2Error(const Tensor &actual, const Tensor &expected) {
  double errorSquares = 0, expectedSquares = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    double a = actual.at(i), e = expected.at(i);
    if ((std::isnan(a) && std::isnan(e)) || (std::isinf(e) && a == e))
      continue;
    if (!std::isfinite(a) || !std::isfinite(e))
      return INFINITY;
    errorSquares += (a - e) * (a - e);
    expectedSquares += e * e;
  }
  if (errorSquares == 0)
    return 0;
  return std::sqrt(errorSquares / expectedSquares);
}

double topOneAgreement(const Tensor &actual, const Tensor &expected) {
  int64_t rowLength = expected.shape.empty() ? 1 : expected.shape.back();
  int64_t rows = rowLength == 0 ? 0 : expected.numElements() / rowLength;
  if (rows == 0)
    return 1;
  auto argmax = [&](const Tensor &tensor, int64_t row) {
    int64_t best = row * rowLength;
    for (int64_t i = best + 1; i < (row + 1) * rowLength; ++i)
      if (tensor.at(i) > tensor.at(best))
        best = i;
    return best;
  };
  int64_t agreeing = 0;
  for (int64_t row = 0; row < rows; ++row)
    agreeing += argmax(actual, row) == argmax(expected, row);
  return static_cast<double>(agreeing) / rows;
}

Tensor randomTensor(DType dtype, const Shape &shape, std::mt19937_64 &rng,
                    double low, double high) {
  Tensor tensor(dtype, shape);
  std::uniform_real_distribution<double> real(low, high);
  std::uniform_int_distribution<int64_t> integer(
      static_cast<int64_t>(std::ceil(low)),
      static_cast<int64_t>(std::floor(high)));
  std::uniform_int_distribution<int> coin(0, 1);
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    switch (dtypeInfo(dtype).kind) {
    case DTypeKind::Float:
      tensor.set(i, real(rng));
      break;
    case DTypeKind::Int:
    case DTypeKind::UInt: // a negative range wraps, as a cast would
      tensor.set(i, static_cast<double>(integer(rng)));
      break;
    case DTypeKind::Bool:
      tensor.set(i, coin(rng));
      break;
    }
  }
  return tensor;
}

double checksum(const Tensor &tensor) {
  double sum = 0;
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    sum += tensor.at(i);
  return sum;
}

std::string describeOutput(const std::string &name, const Tensor &tensor) {
  std::ostringstream os;
  os.precision(9);
  os << "output " << name << ": " << tensor.typeString()
     << " checksum=" << checksum(tensor);
  os.precision(6);
  os << " values=[";
  int64_t shown = std::min<int64_t>(tensor.numElements(), 6);
  for (int64_t i = 0; i < shown; ++i)
    os << (i ? ", " : "") << tensor.at(i);
  if (shown < tensor.numElements())
    os << ", ...";
  os << "]";
  return os.str();
}

std::vector<Tensor>
programInputs(const Program &program, const std::vector<std::string> &files,
              uint64_t seed, const std::string &model,
              const std::function<Tensor(const std::string &, DType)> &read) {
  std::vector<Tensor> inputs;
  if (files.empty()) {
    std::mt19937_64 rng(seed);
    for (int id : program.inputs)
      inputs.push_back(randomTensor(program.buffers[id].dtype,
                                    program.buffers[id].shape, rng));
    return inputs;
  }
  if (files.size() != program.inputs.size())
    throw Error(model + ": error: the model takes " +
                std::to_string(program.inputs.size()) + " inputs but " +
                std::to_string(files.size()) + " .npy files were given");
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const BufferDesc &expected = program.buffers[program.inputs[i]];
    Tensor tensor = read(files[i], expected.dtype);
    if (tensor.dtype != expected.dtype)
      throw Error(files[i] + ": error: input '" + expected.name + "' expects " +
                  dtypeName(expected.dtype) + " but the file holds " +
                  dtypeName(tensor.dtype));
    // A symbolic input's dims are checked when the run binds them.
    if (expected.symbolicShape.empty() && tensor.shape != expected.shape)
      throw Error(files[i] + ": error: input '" + expected.name +
                  "' expects shape " + formatShape(expected.shape) +
                  " but the file holds " + formatShape(tensor.shape));
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

} // namespace fusec
