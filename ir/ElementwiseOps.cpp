#include "ir/ElementwiseOps.h"

#include <cmath>

using fusec::DType;
using fusec::DTypeKind;

namespace fuse {

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
  switch (operands) {
  case OperandClass::Float:
    return kind == DTypeKind::Float;
  case OperandClass::Numeric:
    return kind != DTypeKind::Bool;
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
