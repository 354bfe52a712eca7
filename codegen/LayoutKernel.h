//===- LayoutKernel.h - Layout regions as kernels --------------*- C++ -*-===//
#ifndef FUSE_CODEGEN_LAYOUTKERNEL_H
#define FUSE_CODEGEN_LAYOUTKERNEL_H

#include "ir/FuseDialect.h"
#include "ir/SymbolicDims.h"
#include "runtime/core/Program.h"

#include <optional>

namespace fuse {

/// The kernel of a region holding one layout op (transpose, slice, concat,
/// gather, pad, argmax/argmin): name, ops, schedule, source for `target`
/// (C++: `extern "C" void NAME(const void *const *, void *const *)`; CUDA:
/// `extern "C" __global__ void NAME(in0.., out0..)`) and launch geometry.
/// Inputs and outputs are filled in by the caller. `params`, when given,
/// receives the schedule's params (LayoutParams::toString()).
/// `symbolic` (given for a region with symbolic dims): the values' dims;
/// the kernel takes the sizes and sizes its grid per run.
mlir::FailureOr<fusec::KernelDesc>
buildLayoutKernel(FusionOp fusion, unsigned index, fusec::Target target,
                  std::string *params = nullptr,
                  const SymbolicDims *symbolic = nullptr);

} // namespace fuse

#endif
