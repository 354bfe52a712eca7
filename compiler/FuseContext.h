//===- FuseContext.h - The MLIR context every lowering uses ----*- C++ -*-===//
//
// Internal to compiler/: the dialects a model is lowered in and how the
// context is set up, shared by the lowering and the fusion-graph writer.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_COMPILER_FUSECONTEXT_H
#define FUSEC_COMPILER_FUSECONTEXT_H

#include "mlir/IR/MLIRContext.h"

#include <memory>

namespace fusec {

/// A context with the fuse and func dialects loaded, single-threaded
/// (kernels are generated on one thread; MLIR's pool would only cost
/// startup time for graphs of this size), diagnostics without op dumps.
std::unique_ptr<mlir::MLIRContext> newFuseContext();

} // namespace fusec

#endif
