//===- ReductionKernel.h - Reduction regions as kernels --------*- C++ -*-===//
#ifndef FUSE_CODEGEN_REDUCTIONKERNEL_H
#define FUSE_CODEGEN_REDUCTIONKERNEL_H

#include "codegen/ScalarExprPrinter.h"
#include "ir/FuseDialect.h"
#include "runtime/core/Program.h"

#include <optional>

namespace fuse {

/// The kernel of a region rooted at reductions: the reductions with their
/// pointwise prologue (ops on the reduced operand's shape) and epilogue
/// (ops on the reduced values, and on the full shape through broadcasts of
/// them). Inputs and outputs are filled in by the caller. `params`, when
/// given, receives the schedule's params (ReductionParams::toString()).
/// `symbolicRows` (symbolic programs): the kernel's row count as a size
/// of the program's `dimCount` symbols.
mlir::FailureOr<fusec::KernelDesc> buildReductionKernel(
    FusionOp fusion, unsigned index, fusec::Target target,
    const MathFunctionMap *f32Functions, std::string *params = nullptr,
    std::optional<fusec::SymbolicSize> symbolicRows = {}, size_t dimCount = 0);

} // namespace fuse

#endif
