//===- ElementwiseOps.h - The elementwise op table -------------*- C++ -*-===//
//
// C++ view of ElementwiseOps.def: what every stage (type inference, folding,
// the kernel printers, the frontends and the tests) reads about an op.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_IR_ELEMENTWISEOPS_H
#define FUSE_IR_ELEMENTWISEOPS_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace fuse {

enum class OperandClass { Float, Numeric, Int, Bool, Any };
enum class ResultClass { Same, Bool };
/// Where test inputs are drawn from so that the op is defined there:
/// Real (any), Positive (> 0), Unit ((-1, 1): asin, acos, atanh) and
/// AboveOne (> 1: acosh).
enum class InputDomain { Real, Positive, Unit, AboveOne };

struct ElementwiseOpInfo {
  const char *mnemonic;
  unsigned arity;
  OperandClass operands;
  ResultClass result;
  InputDomain domain;
  /// C expression templates over `{0}` and `{1}`; "" when the class of dtype
  /// is refused.
  const char *cFloat;
  const char *cInt;
  double (*refFloat)(double a, double b);
  int64_t (*refInt)(int64_t a, int64_t b);

  /// Whether the op accepts operands of this dtype.
  bool accepts(fusec::DType dtype) const;
  /// The dtype of the result for operands of `operandDType`.
  fusec::DType resultDType(fusec::DType operandDType) const;
  /// The expression template for operands of `dtype`.
  const char *cExpression(fusec::DType dtype) const;
  /// The reference result for operands of `dtype` (ints are evaluated in
  /// int64 and returned as double; the caller wraps them to the dtype).
  double reference(fusec::DType dtype, double a, double b) const;
};

/// Every row of the table, in table order.
const std::vector<ElementwiseOpInfo> &elementwiseOps();

/// The row for an op mnemonic ("sin"), or nullptr.
const ElementwiseOpInfo *lookupElementwiseOp(std::string_view mnemonic);

} // namespace fuse

#endif
