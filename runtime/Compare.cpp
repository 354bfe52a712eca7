#include "runtime/Compare.h"

#include <cmath>

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
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
  case DType::I1:
  // The narrow dtypes hold exact conversions: a cast or a quantization
  // gives one code, not a neighbour.
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F4E2M1:
  case DType::F8E8M0:
  case DType::I4:
  case DType::U4:
  case DType::I2:
  case DType::U2:
    return {0, 0};
  }
  return {0, 0};
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

} // namespace fusec
