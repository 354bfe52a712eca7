//===- ScalarExprPrinter.h - Per-element C statements ----------*- C++ -*-===//
//
// The one printer of scalar expressions, shared by every target: each op of
// a region becomes `const T vN = <expression>;` with the expression taken
// from the op table (ElementwiseOps.def). Values are computed in the dtype's
// compute type (f16/bf16 in f32).
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCALAREXPRPRINTER_H
#define FUSE_CODEGEN_SCALAREXPRPRINTER_H

#include "runtime/DType.h"

#include "mlir/IR/Block.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace fuse {

/// Replacement names for math functions (e.g. sin -> __sinf), applied to
/// the calls of f32-computed expressions.
using MathFunctionMap = llvm::StringMap<std::string>;

class ScalarExprPrinter {
public:
  /// Variables are named `<prefix>0`, `<prefix>1`, ...
  explicit ScalarExprPrinter(const MathFunctionMap *f32Functions = nullptr,
                             std::string prefix = "v")
      : f32Functions(f32Functions), prefix(std::move(prefix)) {}
  /// Gives a value (a block argument) the variable that holds its element.
  void bind(mlir::Value value, std::string variable);
  /// Appends the statements for every op of `body` but its terminator.
  mlir::LogicalResult print(mlir::Block &body,
                            std::vector<std::string> &statements);
  /// Appends the statement computing one op (none for broadcasts and
  /// views, which take their operand's variable).
  mlir::LogicalResult printOp(mlir::Operation &op,
                              std::vector<std::string> &statements);
  /// The variable holding a value's element.
  const std::string &variableOf(mlir::Value value) const;
  bool isBound(mlir::Value value) const { return variables.count(value); }
  /// Divisions by `divisor` multiply by `reciprocal` (a variable holding
  /// 1 / divisor) instead: at most one f32 ulp apart, used only where the
  /// quotient is rounded to f16/bf16 right after.
  void divideByReciprocal(mlir::Value divisor, std::string reciprocal) {
    reciprocals[divisor] = std::move(reciprocal);
  }

  /// A C literal of `value` in the compute type of `dtype`.
  static std::string literal(double value, fusec::DType dtype);

private:
  std::string newVariable();
  const MathFunctionMap *f32Functions;
  std::string prefix;
  llvm::DenseMap<mlir::Value, std::string> variables;
  llvm::DenseMap<mlir::Value, std::string> reciprocals;
  unsigned counter = 0;
};

} // namespace fuse

#endif
