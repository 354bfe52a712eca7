//===- AttentionCudaPrinter.h - Fused attention as CUDA --------*- C++ -*-===//
#ifndef FUSE_CODEGEN_CUDA_ATTENTIONCUDAPRINTER_H
#define FUSE_CODEGEN_CUDA_ATTENTIONCUDAPRINTER_H

#include "codegen/AttentionKernel.h"

namespace fuse {

/// The CUDA kernel `name`: `extern "C" __global__ void name(in0.., out0)`
/// calling device/FlashAttention.cuh with the params' kernel.
std::string printCudaAttentionKernel(const std::string &name,
                                     const AttentionShape &shape,
                                     const AttentionParams &params,
                                     const AttentionSignature &signature);

} // namespace fuse

#endif
