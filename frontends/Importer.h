//===- Importer.h - Models into fuse IR ------------------------*- C++ -*-===//
#ifndef FUSE_FRONTENDS_IMPORTER_H
#define FUSE_FRONTENDS_IMPORTER_H

#include "frontends/Graph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace fuse {

/// Imports a graph into a module holding one function of fuse ops. Every op
/// is located at NameLoc(node name, file): errors (unknown op, arity,
/// shapes, dtypes, undefined or doubly defined names, cycles) are emitted as
/// MLIR diagnostics there. Returns null after an error.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(const fusec::Graph &graph,
                                              mlir::MLIRContext *context);

/// Parses a .mlir file in the fuse dialect; null after an error.
mlir::OwningOpRef<mlir::ModuleOp> parseMlirFile(const std::string &path,
                                                mlir::MLIRContext *context);

} // namespace fuse

#endif
