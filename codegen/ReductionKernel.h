//===- ReductionKernel.h - Reduction regions as kernels --------*- C++ -*-===//
#ifndef FUSE_CODEGEN_REDUCTIONKERNEL_H
#define FUSE_CODEGEN_REDUCTIONKERNEL_H

#include "codegen/ScalarExprPrinter.h"
#include "ir/FuseDialect.h"
#include "runtime/core/Program.h"

#include <optional>

#include "ir/SymbolicDims.h"

namespace fuse {

/// The kernel of a region rooted at reductions: the reductions with their
/// pointwise prologue (ops on the reduced operand's shape) and epilogue
/// (ops on the reduced values, and on the full shape through broadcasts of
/// them). Inputs and outputs are filled in by the caller. `params`, when
/// given, receives the schedule's params (ReductionParams::toString()).
/// `symbolic` (symbolic programs): the dims of the region's values, over
/// the program's `dimCount` symbols; the kernel's rows vary with them (its
/// reduced dims are fixed).
mlir::FailureOr<fusec::KernelDesc> buildReductionKernel(
    FusionOp fusion, unsigned index, fusec::Target target,
    const MathFunctionMap *f32Functions, std::string *params = nullptr,
    const SymbolicDims *symbolic = nullptr, size_t dimCount = 0);

} // namespace fuse

#endif
