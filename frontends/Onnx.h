//===- Onnx.h - ONNX models as fusec graphs --------------------*- C++ -*-===//
//
// Reads .onnx files (opsets 1-28 of the default domain; older versions op by
// op) with Debian's libonnx protobuf classes into the plain Graph every
// frontend produces, and .onnxtxt files in ONNX's text syntax. Each op is
// registered once (frontends/onnx/OnnxRegistry.h) in the file of its family
// (frontends/onnx/ops/); inputs that fusec takes as attributes (Reshape's
// shape, Slice's bounds, ...) must be initializers or Constant outputs.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTENDS_ONNX_H
#define FUSEC_FRONTENDS_ONNX_H

#include "frontends/Graph.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fusec {

struct OnnxOptions {
  /// Shapes for graph inputs with symbolic dims ("batch", "seq").
  std::map<std::string, Shape> inputShapes;
  /// dim_params left symbolic (`--dim`), unless `inputShapes` fixes the
  /// input: the model then serves every size in the range.
  DimRanges dimRanges;
  /// Values for graph inputs the model uses where fusec needs constants
  /// (Reshape's shape, Slice's bounds, axes, ...): such an input becomes a
  /// constant. Values of other inputs are ignored; they stay inputs.
  std::map<std::string, Tensor> staticInputValues;
};

/// Whether `path` names an ONNX model: binary (.onnx) or in ONNX's text
/// syntax (.onnxtxt, as the frontend's tests write them).
bool isOnnxModelPath(const std::string &path);
bool isOnnxTextPath(const std::string &path);

/// What a test runner needs to know of a model before converting it.
struct OnnxModelSummary {
  /// The graph inputs in order, initializers left out: what input_0.pb,
  /// input_1.pb, ... of the ONNX test suite bind to.
  std::vector<std::string> inputNames;
  /// The dtypes of those inputs and of the graph outputs, where fusec has
  /// them.
  std::vector<std::optional<DType>> inputTypes, outputTypes;
  /// The declared dims of those inputs (-1 where a dim is symbolic), or
  /// nullopt where the model gives no shape.
  std::vector<std::optional<std::vector<int64_t>>> inputDims;
  /// The op types of its nodes, each once, in first-use order.
  std::vector<std::string> opTypes;
  /// How many nodes its graph has.
  int64_t nodeCount = 0;
  /// The opset of the default domain it imports.
  int64_t opset = 0;
  /// Whether fusec reads that opset.
  bool opsetSupported = false;
};
OnnxModelSummary summarizeOnnxModel(const std::string &path);

/// The model as a Graph. Throws fusec::Error listing every node it cannot
/// convert, one per line: "FILE: node 'NAME' (OpType, opset 13): error:
/// REASON".
Graph readOnnxGraph(const std::string &path, const OnnxOptions &options = {});
/// The same for a model held in memory: a serialized ModelProto, or ONNX's
/// text syntax when `text`. `name` stands for the file in messages, and
/// external data is looked up beside it.
Graph parseOnnxGraph(const std::string &contents, const std::string &name,
                     bool text, const OnnxOptions &options = {});

/// A serialized TensorProto (the ONNX test suite's input_N.pb and
/// output_N.pb files) as a tensor; throws fusec::Error naming the file.
/// With `expected` BF16, UINT16 data is read as bf16 bits: ONNX 1.12's test
/// data stores bf16 tensors that way.
Tensor readTensorProtoFile(const std::string &path,
                           std::optional<DType> expected = std::nullopt);

/// "Add 1-28", one line per supported ONNX op, sorted (--list-ops).
std::vector<std::string> supportedOnnxOps();
/// The same ops by family (their ops file) as Markdown tables, with each
/// op's attributes (and the opsets that define them) and the inputs read as
/// constants: docs/onnx-ops.md (--list-ops=markdown).
std::string supportedOnnxOpsMarkdown();

} // namespace fusec

#endif
