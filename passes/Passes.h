//===- Passes.h - fusec passes and pipelines -------------------*- C++ -*-===//
#ifndef FUSE_PASSES_PASSES_H
#define FUSE_PASSES_PASSES_H

#include "ir/FuseDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <string>
#include <vector>

namespace fuse {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Rewrites one composite op into the primitives that define it, at its
/// position, and erases it (fails with an error on an op it does not know).
mlir::LogicalResult decomposeComposite(mlir::Operation *op);

struct PipelineOptions {
  /// False: every op gets a region of its own (the unfused baseline).
  bool fuse = true;
  /// Fold bias adds and activations into matmul calls (cuBLASLt's
  /// epilogues: the CUDA target).
  bool libraryEpilogues = true;
  /// Pad large matmuls' unaligned columns (the CUDA target: cuBLASLt).
  bool padLibraryColumns = true;
  /// Replace attention chains with fuse.attention (only when fusing).
  bool attention = true;
  /// f32/f64 attention is formed only up to this many query rows (-1: any;
  /// the CUDA target's CUDA-core kernel loses past it).
  int64_t maxWideAttentionQueryRows = -1;
  /// "bf16" or "f16": the model's f32 tensors run in that dtype
  /// (fuse-lower-precision, first); "": as the model gives them.
  std::string precision;
  /// With `precision`: names of nodes whose f32 tensors stay f32.
  std::vector<std::string> keepF32Nodes;
};

/// Adds the default pipeline to a module-level pass manager: with a
/// precision, the f32 tensors lowered first; then per function attention
/// formed, library calls prepared, composites decomposed, broadcasts made
/// explicit, canonicalize (which folds constants), CSE, and fusion-region
/// formation.
mlir::LogicalResult buildDefaultPipeline(mlir::OpPassManager &pm,
                                         const PipelineOptions &options);

/// Registers the passes and the named pipelines `fuse-default` and
/// `fuse-unfused` (for fusec-opt and lit).
void registerAllFusePasses();

} // namespace fuse

#endif
