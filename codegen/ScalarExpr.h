//===- ScalarExpr.h - The per-element computation of a kernel --*- C++ -*-===//
//
// The kernel level's expression tree: what a region computes for one element,
// independent of the target. ScalarExprBuilder turns a region's ops into
// nodes; ScalarExprPrinter (one per target) prints them as C. A value used
// more than once is computed once: the builder binds each op's node to a
// variable (`ScalarLet`), and later nodes refer to that variable.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCALAREXPR_H
#define FUSE_CODEGEN_SCALAREXPR_H

#include "runtime/core/DType.h"

#include "mlir/IR/Block.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <deque>
#include <string>
#include <vector>

namespace fuse {

struct ElementwiseOpInfo;

struct ScalarExpr {
  enum class Kind {
    Variable, ///< a named value: a load, an accumulator, or a let's result
    Literal,  ///< a constant element
    Apply,    ///< a row of the elementwise op table over the operands
    Cast,     ///< fusec's conversion of operands[0] to `dtype`
    Bitcast,  ///< operands[0]'s bits read as `dtype`
    Select,   ///< operands[0] ? operands[1] : operands[2]
    /// operands[0] * the variable `name` holding a divisor's reciprocal
    /// (replaces a division where the quotient is rounded to f16/bf16 after)
    ScaleByReciprocal,
  };
  Kind kind;
  fusec::DType dtype;  ///< the result's dtype (computed in its compute type)
  std::string name;    ///< Variable, ScaleByReciprocal
  double literal = 0;  ///< Literal of a float dtype
  int64_t integer = 0; ///< Literal of an integer or bool dtype, exactly
  const ElementwiseOpInfo *op = nullptr; ///< Apply
  bool saturates = true; ///< Cast to a float8 dtype: saturate past its range
  int roundMode = 0;     ///< Cast to f8E8M0FNU: 0 up, 1 down, 2 to nearest
  llvm::SmallVector<const ScalarExpr *, 3> operands;
};

/// `const T variable = value;` in the compute type of `value->dtype`.
struct ScalarLet {
  const ScalarExpr *variable; ///< a Variable node defined by `value`
  const ScalarExpr *value;
};
using ScalarLets = std::vector<ScalarLet>;

/// Builds the nodes of a region's ops. Values are bound to variables: block
/// arguments and reduced values by the kernel's schedule (`bind`), each op's
/// result by the let that computes it.
class ScalarExprBuilder {
public:
  /// Let variables are named `<prefix>0`, `<prefix>1`, ...
  explicit ScalarExprBuilder(std::string prefix = "v")
      : prefix(std::move(prefix)) {}
  ScalarExprBuilder(const ScalarExprBuilder &) = delete;
  ScalarExprBuilder &operator=(const ScalarExprBuilder &) = delete;

  /// Gives a value the variable that holds its element.
  void bind(mlir::Value value, std::string variable);
  /// Appends the lets of every op of `body` but its terminator.
  mlir::LogicalResult build(mlir::Block &body, ScalarLets &lets);
  /// Appends the let computing one op (none for broadcasts and views, whose
  /// result is their operand's element).
  mlir::LogicalResult build(mlir::Operation &op, ScalarLets &lets);
  /// The variable holding a value's element.
  const std::string &variableOf(mlir::Value value) const;
  bool isBound(mlir::Value value) const { return variables.count(value); }
  /// Divisions by `divisor` multiply by `reciprocal` (a variable holding
  /// 1 / divisor) instead: at most one f32 ulp apart, used only where the
  /// quotient is rounded to f16/bf16 right after.
  void divideByReciprocal(mlir::Value divisor, std::string reciprocal) {
    reciprocals[divisor] = std::move(reciprocal);
  }

private:
  ScalarExpr &newNode(ScalarExpr::Kind kind, fusec::DType dtype);
  const ScalarExpr *variableNode(mlir::Value value) const {
    return variables.lookup(value);
  }
  std::string prefix;
  unsigned counter = 0;
  std::deque<ScalarExpr> nodes; ///< owns every node (stable addresses)
  llvm::DenseMap<mlir::Value, const ScalarExpr *> variables;
  llvm::DenseMap<mlir::Value, std::string> reciprocals;
};

} // namespace fuse

#endif
