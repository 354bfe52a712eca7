//===- NodeImport.h - One graph node into fuse ops -------------*- C++ -*-===//
//
// What an op family's importer sees of a node: its operands (null where an
// optional input was left empty, "" in the graph), its attrs read with
// ONNX's names and defaults, and a builder at the node's location. Every
// reader emits its error at the node ("node 'n3': error: ...").
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_FRONTENDS_NODEIMPORT_H
#define FUSE_FRONTENDS_NODEIMPORT_H

#include "frontends/Graph.h"

#include "mlir/IR/Builders.h"

#include <optional>
#include <string>
#include <vector>

namespace fuse {

struct NodeImport {
  const fusec::GraphNode &node;
  mlir::OpBuilder &builder;
  mlir::Location loc;
  llvm::SmallVector<mlir::Value> operands;

  /// Errors name the op: "'softmax' attr \"axis\" must be an integer".
  mlir::InFlightDiagnostic error();

  bool has(const std::string &attr) const { return node.attrs.count(attr); }
  /// An integer attr (JSON integers; whole doubles are accepted too), or
  /// `fallback` when absent; failure (with an error) otherwise.
  mlir::FailureOr<int64_t> getInt(const std::string &attr,
                                  std::optional<int64_t> fallback);
  mlir::FailureOr<double> getFloat(const std::string &attr,
                                   std::optional<double> fallback);
  mlir::FailureOr<std::string> getString(const std::string &attr,
                                         std::optional<std::string> fallback);
  mlir::FailureOr<std::vector<int64_t>>
  getInts(const std::string &attr,
          std::optional<std::vector<int64_t>> fallback);

  /// Optional operand `index`, or a null value when absent.
  mlir::Value operandOrNull(unsigned index) const {
    return index < operands.size() ? operands[index] : mlir::Value();
  }

  /// Checks the operand count: between `min` and `max` (inclusive), and
  /// that the first `min` are present.
  mlir::LogicalResult expectOperands(unsigned min, unsigned max);
};

/// Reductions (reduce_*), normalizations and activations defined by other
/// ops (softmax, layer_norm, gelu, ...). `std::nullopt` when `node.op` is
/// none of them.
std::optional<mlir::FailureOr<mlir::Value>>
importReductionOrComposite(NodeImport &node);

/// Layout ops (transpose, slice, concat, gather, squeeze, unsqueeze,
/// flatten, pad, expand) and argmax/argmin. `std::nullopt` when `node.op`
/// is none of them.
std::optional<mlir::FailureOr<mlir::Value>> importLayout(NodeImport &node);

/// Library ops: matmul (NumPy semantics) and gemm (ONNX's `alpha`, `beta`,
/// `transA`, `transB`, optional C). `std::nullopt` for any other op.
std::optional<mlir::FailureOr<mlir::Value>> importLibrary(NodeImport &node);

} // namespace fuse

#endif
