//===- Passes.h - fusec passes and pipelines -------------------*- C++ -*-===//
#ifndef FUSE_PASSES_PASSES_H
#define FUSE_PASSES_PASSES_H

#include "ir/FuseDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace fuse {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The default pipeline as one textual string: canonicalize (which folds
/// constants), CSE, then fusion-region formation. With `fuse` false, every
/// pointwise op gets a region of its own (the unfused baseline).
std::string defaultPipeline(bool fuse);
/// Adds the default pipeline to a module-level pass manager.
mlir::LogicalResult buildDefaultPipeline(mlir::OpPassManager &pm, bool fuse);

/// Registers the passes and the named pipelines `fuse-default` and
/// `fuse-unfused` (for fusec-opt and lit).
void registerAllFusePasses();

} // namespace fuse

#endif
