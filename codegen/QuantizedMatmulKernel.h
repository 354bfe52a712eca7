//===- QuantizedMatmulKernel.h - The int8-weight GEMV kernel ---*- C++ -*-===//
#ifndef FUSE_CODEGEN_QUANTIZEDMATMULKERNEL_H
#define FUSE_CODEGEN_QUANTIZEDMATMULKERNEL_H

#include "ir/FuseDialect.h"
#include "runtime/core/Program.h"

namespace fuse {

/// The kernel of a region holding one fuse.quantized_matmul. CUDA: a few
/// warps per output channel read its int8 weight row once, 16 bytes per
/// lane and step, accumulate every lhs row at once and add their partial
/// sums in shared memory; C++: one loop over the
/// channels, split among OpenMP threads. Inputs and outputs are filled in
/// by the caller. `params`, when given, receives the schedule's params
/// (GemvParams::toString()).
mlir::FailureOr<fusec::KernelDesc>
buildQuantizedMatmulKernel(FusionOp fusion, unsigned index,
                           fusec::Target target, std::string *params = nullptr);

} // namespace fuse

#endif
