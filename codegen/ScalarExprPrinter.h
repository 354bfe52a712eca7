//===- ScalarExprPrinter.h - Scalar expressions as C -----------*- C++ -*-===//
//
// Prints the kernel level's expression tree (ScalarExpr.h) as C for one
// target: an op-table row becomes its C template (ElementwiseOps.def), a
// let becomes `const T vN = <expression>;`. Values are computed in the
// dtype's compute type (f16/bf16 in f32).
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCALAREXPRPRINTER_H
#define FUSE_CODEGEN_SCALAREXPRPRINTER_H

#include "codegen/ScalarExpr.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace fuse {

/// The name of a narrow dtype in runtime/core/NarrowTypes.h's functions
/// (fusec_f32_to_<stem>, fusec_<stem>_to_f32, fusec_round_to_<stem>).
std::string narrowFunctionStem(fusec::DType dtype);

/// An element as stored converted to its compute type (f16/bf16 -> f32),
/// and a computed value converted back for storing.
std::string fromStorage(fusec::DType dtype, const std::string &element);
std::string toStorage(fusec::DType dtype, const std::string &value);

/// Replacement names for math functions (e.g. sin -> __sinf), applied to
/// the calls of f32-computed expressions.
using MathFunctionMap = llvm::StringMap<std::string>;

class ScalarExprPrinter {
public:
  /// `f32Functions`: the target's replacements for f32 math calls (CUDA's
  /// fast-math intrinsics, the C++ target's own exp), or none.
  /// `roundsEachOp`: whether an op on f16/bf16 tensors rounds its result to
  /// the tensor's dtype (ONNX's semantics), or keeps it in f32 to the next
  /// explicit cast or store (--fast-math).
  explicit ScalarExprPrinter(const MathFunctionMap *f32Functions = nullptr,
                             bool roundsEachOp = true)
      : f32Functions(f32Functions), roundsEachOp(roundsEachOp) {}

  /// The C expression of a node (a Variable prints as its name).
  std::string print(const ScalarExpr &expr) const;
  /// One statement per let, one per line.
  void print(llvm::ArrayRef<ScalarLet> lets, llvm::raw_ostream &os) const;

  /// A C literal of `value` in the compute type of a float `dtype`.
  static std::string literal(double value, fusec::DType dtype);
  /// A C literal of `value` in an integer or bool `dtype`, exactly.
  static std::string integerLiteral(int64_t value, fusec::DType dtype);

private:
  const MathFunctionMap *f32Functions;
  bool roundsEachOp;
};

} // namespace fuse

#endif
