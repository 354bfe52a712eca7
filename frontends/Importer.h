//===- Importer.h - Models into fuse IR ------------------------*- C++ -*-===//
#ifndef FUSE_FRONTENDS_IMPORTER_H
#define FUSE_FRONTENDS_IMPORTER_H

#include "frontends/Graph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <optional>
#include <utility>

namespace fuse {

/// A context with the fuse and func dialects loaded, single-threaded
/// (kernels are generated on one thread; MLIR's pool would only cost
/// startup time for graphs of this size), diagnostics without op dumps.
std::unique_ptr<mlir::MLIRContext> newFuseContext();

/// Imports a graph into a module holding one function of fuse ops. Every op
/// is located at NameLoc(node name, file): errors (unknown op, arity,
/// shapes, dtypes, undefined or doubly defined names, cycles) are emitted as
/// MLIR diagnostics there. Returns null after an error. `dimRanges`
/// replaces the ranges of the graph's symbols it names, and fixes those it
/// gives one size (`--dim NAME=SIZE`).
mlir::OwningOpRef<mlir::ModuleOp>
importGraph(const fusec::Graph &graph, mlir::MLIRContext *context,
            const fusec::DimRanges &dimRanges = {});

/// The types of the values of a graph under construction, for a frontend
/// whose own inference leaves some unknown (ONNX's does for ops newer than
/// its library): the nodes added since the last query are imported as the
/// final import will import them, so each fuse op's own definition gives
/// its result type. Diagnostics are dropped here; the final import reports
/// them. `graph` must outlive this, and only gain inputs, constants and
/// nodes (appended) between queries.
class GraphValueTypes {
public:
  explicit GraphValueTypes(const fusec::Graph &graph);
  ~GraphValueTypes();
  /// The dtype and shape of value `name`; nullopt where no input, constant
  /// or node defines it, or its node (or one it depends on) does not import.
  std::optional<std::pair<fusec::DType, fusec::Shape>>
  typeOf(const std::string &name);

private:
  struct State;
  std::unique_ptr<State> state;
};

/// Parses a .mlir file in the fuse dialect; null after an error.
mlir::OwningOpRef<mlir::ModuleOp> parseMlirFile(const std::string &path,
                                                mlir::MLIRContext *context);
/// The same for .mlir text held in memory; `name` stands for the file in
/// locations and messages.
mlir::OwningOpRef<mlir::ModuleOp> parseMlirText(const std::string &text,
                                                const std::string &name,
                                                mlir::MLIRContext *context);

} // namespace fuse

#endif
