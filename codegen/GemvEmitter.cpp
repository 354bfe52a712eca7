//===- GemvEmitter.cpp - What the int8-weight GEMV printers share -------===//

#include "codegen/GemvEmitter.h"

#include "codegen/ScalarExprPrinter.h"

#include <sstream>

using fusec::DType;

namespace fuse::gemv {

std::string dequantized(const GemvShape &shape, const std::string &weight) {
  std::string product = "(float)(" + weight + ") * (float)scale";
  if (shape.dtype == DType::F16 || shape.dtype == DType::BF16)
    return fromStorage(shape.dtype, toStorage(shape.dtype, product));
  if (shape.dtype == DType::F64)
    return "(double)(" + product + ")";
  return product;
}

std::string multiplyAdd(bool fusedMultiplyAdd, const std::string &acc,
                        const std::string &w, const std::string &x) {
  if (fusedMultiplyAdd)
    return acc + " = fma(" + w + ", " + x + ", " + acc + ");\n";
  return acc + " += " + w + " * " + x + ";\n";
}

std::string accumulate(const GemvShape &shape, const std::string &accType,
                       const std::string &weight, const std::string &lhs,
                       bool fusedMultiplyAdd) {
  std::ostringstream os;
  os << "const " << accType << " w = " << dequantized(shape, weight) << ";\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << multiplyAdd(
        fusedMultiplyAdd, "acc" + std::to_string(row), "w",
        fromStorage(shape.dtype,
                    lhs + "[" + std::to_string(row * shape.k) + " + column]"));
  return os.str();
}

} // namespace fuse::gemv
