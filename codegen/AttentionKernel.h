//===- AttentionKernel.h - The fused attention kernel ----------*- C++ -*-===//
#ifndef FUSE_CODEGEN_ATTENTIONKERNEL_H
#define FUSE_CODEGEN_ATTENTIONKERNEL_H

#include "codegen/schedule/AttentionSchedule.h"
#include "ir/FuseDialect.h"
#include "ir/SymbolicDims.h"
#include "runtime/core/Program.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fuse {

/// AttentionOperandLayout with sizes that may be symbolic.
struct AttentionOperandSizes {
  fusec::SymbolicSize offset, batch, head, row;
  /// At `values` of the symbols.
  AttentionOperandLayout evaluate(const std::vector<int64_t> &values) const;
};
/// AttentionBiasLayout with sizes that may be symbolic.
struct AttentionBiasSizes {
  fusec::SymbolicSize offset, batch, head, row, column;
  AttentionBiasLayout evaluate(const std::vector<int64_t> &values) const;
};

/// The sizes and strides the kernel's arguments hold, as sizes of the
/// program's symbols (all fixed in a static program): a symbolic program's
/// batch and sequence lengths, and the strides that follow from them.
struct AttentionSizes {
  fusec::SymbolicSize batch, queryLen, keyLen;
  AttentionOperandSizes query, key, value, output;
  AttentionBiasSizes bias;
};

/// The kernel's parameters: `inputs[i]` is the dtype of `in<i>` (the
/// region's inputs in order), and which input each operand is; one input
/// may serve several operands (q, k and v slices of one projection).
struct AttentionSignature {
  std::vector<fusec::DType> inputs;
  int query = 0, key = 1, value = 2;
  int bias = -1; ///< -1: no bias
  AttentionSizes sizes;
  /// Symbolic programs: the kernel takes the program's `dimCount` symbols
  /// after its buffers (0: its sizes are fixed).
  size_t dimCount = 0;
  bool readsDimSizes() const { return dimCount > 0; }
};

/// A region holding one fuse.attention, read as what the kernel needs.
struct AttentionRegion {
  AttentionShape shape;
  AttentionSignature signature;
};

/// `symbolic`: a symbolic program's dims (null: static). The shape then
/// holds the lengths at their maxima (what the schedule sizes grids and
/// scratch for) and the strides' fixed factors (what alignment is decided
/// on: a multiple of 8 times any size stays one); the signature's sizes
/// hold the symbolic ones, which the kernel's arguments are printed from.
mlir::FailureOr<AttentionRegion>
analyzeAttentionRegion(FusionOp fusion, const SymbolicDims *symbolic = nullptr);

/// The kernel of a region holding one fuse.attention (inputs and outputs
/// are filled in by the caller), for `gpuArch` on CUDA (scheduleAttention).
/// `params`, when given, receives the schedule's params
/// (AttentionParams::toString()).
mlir::FailureOr<fusec::KernelDesc>
buildAttentionKernel(FusionOp fusion, unsigned index, fusec::Target target,
                     const std::string &gpuArch, std::string *params = nullptr,
                     const SymbolicDims *symbolic = nullptr);

/// `  args.FIELD = VALUE;` lines filling device/AttentionCpu.h's and
/// device/FlashAttention.cuh's fusec_attention_args (the same fields) with
/// the shape's literals and the signature's sizes (expressions of
/// `fusec_dims` where symbolic); `input(i)` is the expression of input i.
void printAttentionArguments(std::ostream &os, const AttentionShape &shape,
                             const AttentionSignature &signature,
                             llvm::function_ref<std::string(int)> input,
                             const std::string &output);

/// A comment naming the kernel and its params, then the traits struct for
/// the templates of both targets: the storage and accumulation types,
/// load/store conversions and exp (`f32Exp` for f32, ::exp for f64), each
/// declared `static QUALIFIERS`. Returns the struct's name, one per dtype
/// and defined once per program (an include guard), so that the kernels of
/// a model's layers instantiate each template once: their compile time is
/// one layer's, not one per layer.
std::string printAttentionTraits(std::ostream &os, const std::string &name,
                                 const AttentionShape &shape,
                                 const AttentionParams &params,
                                 const std::string &qualifiers,
                                 const std::string &f32Exp);

/// The C++ kernel: `extern "C" void name(const void *const *fusec_inputs,
/// void *const *fusec_outputs)` calling device/AttentionCpu.h with the
/// params' tiles.
std::string printCppAttentionKernel(const std::string &name,
                                    const AttentionShape &shape,
                                    const AttentionParams &params,
                                    const AttentionSignature &signature);

} // namespace fuse

#endif
