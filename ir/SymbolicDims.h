//===- SymbolicDims.h - Which size each dynamic dim has --------*- C++ -*-===//
//
// A model compiled for a range of sizes keeps its varying dims dynamic (`?`)
// in the IR. The function names them: `fuse.symbols` lists the symbols with
// their ranges, `[["batch", 1, 64]]`, and each argument's `fuse.dims` says
// which symbol or size each of its dims is, `["batch", 4096]`. The analysis
// derives every value's dims from the arguments' as SymbolicSizes (a
// reshape may merge dims into `batch*seq`), so that fusion and codegen know
// which `?` equal which, and reports the ops that cannot take symbolic dims
// yet.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_IR_SYMBOLICDIMS_H
#define FUSE_IR_SYMBOLICDIMS_H

#include "runtime/core/SymbolicShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <vector>

namespace fuse {

/// On a function: its symbols, `[[NAME, MIN, MAX], ...]`.
inline constexpr llvm::StringLiteral kSymbolsAttrName = "fuse.symbols";
/// On a function argument: each dim's symbol name or size.
inline constexpr llvm::StringLiteral kDimsAttrName = "fuse.dims";

class SymbolicDims {
public:
  /// The function's symbols and the dims of each of its values, or an error
  /// at the first op whose dims cannot be derived. A function without
  /// symbols yields an empty analysis.
  static mlir::FailureOr<SymbolicDims> analyze(mlir::func::FuncOp function);

  const std::vector<fusec::DimSymbol> &symbols() const { return syms; }
  bool empty() const { return syms.empty(); }
  /// Every ranked tensor value's dims (static ones from its type).
  fusec::SymbolicShape shapeOf(mlir::Value value) const;
  /// The size `factor` times the symbols named in `symbols` (fuse.dim_size,
  /// fuse.iota), or nullopt when one is not a symbol of the function.
  std::optional<fusec::SymbolicSize> sizeNamed(mlir::ArrayAttr symbols,
                                               int64_t factor) const;

private:
  mlir::LogicalResult deriveBlock(mlir::Block &block);
  mlir::LogicalResult derive(mlir::Operation *op);
  /// Sets `result`'s dims, or reports at `op` that they hold more than 2^48
  /// elements at the symbols' maxima.
  mlir::LogicalResult record(mlir::Operation *op, mlir::Value result,
                             fusec::SymbolicShape shape);

  std::vector<fusec::DimSymbol> syms;
  llvm::DenseMap<mlir::Value, fusec::SymbolicShape> shapes;
};

/// The factors of a size written as a product ("batch*(past+seq)*64"): the
/// text between the '*'s outside parentheses.
llvm::SmallVector<llvm::StringRef> splitSizeProduct(llvm::StringRef text);

/// Whether `function`'s `fuse.symbols` declare a symbol named `name`, or
/// every symbol a sum such as "(past+seq)" names.
bool declaresSymbol(mlir::func::FuncOp function, llvm::StringRef name);

/// A value's dims: `dims`' analysis of them, or (no analysis, a static
/// program) its type's.
fusec::SymbolicShape dimsOf(const SymbolicDims *dims, mlir::Value value);

/// Replaces each fuse.dim_of in `function` by the size `dims` derives: a
/// constant, or a fuse.dim_size of its symbols.
mlir::LogicalResult resolveDimSizes(mlir::func::FuncOp function,
                                    const SymbolicDims &dims);

/// Writes the symbols and each argument's dims onto `function`.
void setSymbolicDims(mlir::func::FuncOp function,
                     const std::vector<fusec::DimSymbol> &symbols,
                     const std::vector<std::vector<std::string>> &argDimNames);

} // namespace fuse

#endif
