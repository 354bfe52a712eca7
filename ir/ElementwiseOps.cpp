#include "ir/ElementwiseOps.h"

#include <cmath>
#include <functional>

using fusec::DType;
using fusec::DTypeKind;

namespace fuse {

namespace {

// The references of rows whose semantics take more than an expression,
// in double and int64_t, written apart from the kernels' helpers in
// codegen/device/ScalarMath.h (the tests compare the two).

int64_t negateWrapping(int64_t a) {
  return static_cast<int64_t>(uint64_t(0) - static_cast<uint64_t>(a));
}

/// a op b in 64-bit two's complement (wrapping, no undefined overflow).
template <typename Op> int64_t wrapping(int64_t a, int64_t b, Op op) {
  return static_cast<int64_t>(
      op(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}

/// Truncating division; x / 0 is 0, x / -1 is -x (wrapping).
int64_t divTruncating(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return negateWrapping(a);
  return a / b;
}

/// The remainder of truncating division (the dividend's sign); 0 for a
/// divisor of 0 or -1.
int64_t remTruncating(int64_t a, int64_t b) {
  if (b == 0 || b == -1)
    return 0;
  return a - (a / b) * b;
}

/// The remainder of floor division (the divisor's sign).
int64_t modFloor(int64_t a, int64_t b) {
  int64_t r = remTruncating(a, b);
  if (r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

/// NumPy's float mod: the divisor's sign, also on a zero result.
double modFloor(double a, double b) {
  double r = std::fmod(a, b);
  if (r == 0)
    return std::copysign(0.0, b);
  return std::signbit(r) != std::signbit(b) ? r + b : r;
}

/// x^n in wrapping 64-bit arithmetic (left-to-right binary powering); a
/// negative n gives 1 / x^-n truncated toward zero (0 for x = 0).
int64_t powWrapping(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1)
      return 1;
    if (a == -1)
      return (b % 2 == 0) ? 1 : -1;
    return 0;
  }
  uint64_t base = static_cast<uint64_t>(a), result = 1;
  for (int bit = 62; bit >= 0; --bit) {
    result *= result;
    if ((static_cast<uint64_t>(b) >> bit) & 1)
      result *= base;
  }
  return static_cast<int64_t>(result);
}

/// Shifts in 64 bits, then wrapped to the dtype: an amount outside
/// [0, 64) shifts everything out (0; a negative signed value's right shift
/// fills with its sign, -1), as does one at or past the dtype's width.
int64_t shiftLeft(int64_t a, int64_t b) {
  return b < 0 || b >= 64 ? 0
                          : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
}
int64_t shiftRight(int64_t a, int64_t b) {
  if (b < 0 || b >= 64)
    return a < 0 ? -1 : 0;
  return a >> b;
}

/// Half to even, by hand: ties go to the even neighbour; the sign of zero
/// is kept (round(-0.4) is -0).
double roundHalfToEven(double a) {
  if (!std::isfinite(a))
    return a;
  double floor = std::floor(a), fraction = a - floor;
  double rounded = fraction > 0.5               ? floor + 1
                   : fraction < 0.5             ? floor
                   : std::fmod(floor, 2.0) == 0 ? floor
                                                : floor + 1;
  return std::copysign(rounded, a);
}

/// NumPy's sign: +0.0 for either zero, NaN for NaN.
double signOf(double a) {
  if (std::isnan(a))
    return a;
  return a == 0 ? 0.0 : std::copysign(1.0, a);
}

/// log(1 + exp(x)), branching where the kernels do not.
double softplus(double a) {
  return a > 0 ? a + std::log1p(std::exp(-a)) : std::log1p(std::exp(a));
}

} // namespace

const std::vector<ElementwiseOpInfo> &elementwiseOps() {
  static const std::vector<ElementwiseOpInfo> table = {
#define FUSE_ELEMENTWISE_ROW(arity, mnemonic, Operands, Result, Traits,        \
                             Domain, cFloat, cInt, refFloat, refInt)           \
  {#mnemonic,                                                                  \
   arity,                                                                      \
   OperandClass::Operands,                                                     \
   ResultClass::Result,                                                        \
   InputDomain::Domain,                                                        \
   cFloat,                                                                     \
   cInt,                                                                       \
   [](double a, double b) -> double { return (refFloat); },                    \
   [](int64_t a, int64_t b) -> int64_t { return (refInt); }},
#define FUSE_UNARY_OP(Name, ...) FUSE_ELEMENTWISE_ROW(1, __VA_ARGS__)
#define FUSE_BINARY_OP(Name, ...) FUSE_ELEMENTWISE_ROW(2, __VA_ARGS__)
#include "ir/ElementwiseOps.def"
#undef FUSE_ELEMENTWISE_ROW
  };
  return table;
}

const ElementwiseOpInfo *lookupElementwiseOp(std::string_view mnemonic) {
  for (const ElementwiseOpInfo &info : elementwiseOps())
    if (mnemonic == info.mnemonic)
      return &info;
  return nullptr;
}

bool ElementwiseOpInfo::accepts(DType dtype) const {
  DTypeKind kind = fusec::dtypeInfo(dtype).kind;
  // The narrow dtypes (storage only) are in Any alone (ir/FuseDialect.td).
  if (fusec::isNarrow(dtype) && operands != OperandClass::Any)
    return false;
  switch (operands) {
  case OperandClass::Float:
    return kind == DTypeKind::Float;
  case OperandClass::Numeric:
    return kind != DTypeKind::Bool;
  case OperandClass::Int:
    return fusec::isInteger(dtype);
  case OperandClass::Bool:
    return kind == DTypeKind::Bool;
  case OperandClass::Any:
    return true;
  }
  return false;
}

DType ElementwiseOpInfo::resultDType(DType operandDType) const {
  return result == ResultClass::Bool ? DType::I1 : operandDType;
}

const char *ElementwiseOpInfo::cExpression(DType dtype) const {
  return fusec::isFloat(dtype) ? cFloat : cInt;
}

double ElementwiseOpInfo::reference(DType dtype, double a, double b) const {
  if (fusec::isFloat(dtype))
    return refFloat(a, b);
  return static_cast<double>(
      refInt(static_cast<int64_t>(a), static_cast<int64_t>(b)));
}

} // namespace fuse
