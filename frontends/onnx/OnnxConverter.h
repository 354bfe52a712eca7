//===- OnnxConverter.h - the state of one ONNX model's import ---*- C++ -*-===//
//
// Internal to frontends/onnx/: the converter every op handler works on (the
// graph being built, the model's constants, inferred shapes and dtypes), the
// error a handler throws, and the helpers several op families share.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTENDS_ONNX_ONNXCONVERTER_H
#define FUSEC_FRONTENDS_ONNX_ONNXCONVERTER_H

#include "frontends/Graph.h"
#include "frontends/Importer.h"
#include "frontends/Onnx.h"
#include "frontends/onnx/OnnxRegistry.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fusec::onnx_import {

/// Why a node cannot be converted; collected, not thrown out of the model.
struct Unsupported {
  std::string reason;
};

//===-- ONNX types (OnnxTypes.cpp) ---------------------------------------===//

std::optional<DType> dtypeOfOnnx(int32_t elemType);
int32_t onnxTypeOf(DType dtype);
/// The element type's name, also for types newer than ONNX 1.12's enum.
std::string onnxTypeName(int32_t elemType);
/// A TensorProto's value (external data read relative to `modelDir`).
Tensor tensorFromProto(const onnx::TensorProto &proto,
                       const std::filesystem::path &modelDir);

//===-- Helpers several op families share (OnnxHelpers.cpp) --------------===//

/// `axis` counted from 0, or an Unsupported when it is outside
/// [-rank, rank) (negative axes count from the end).
int64_t resolvedAxis(int64_t axis, int64_t rank);
/// Integers of a constant tensor (shapes, axes, bounds), exact.
std::vector<int64_t> integersOf(const Tensor &tensor, const std::string &what);
/// An attribute as a graph attribute value.
AttrValue attrValueOf(const onnx::AttributeProto &attr);
/// An INT attribute named `name`.
onnx::AttributeProto intAttribute(const std::string &name, int64_t value);
/// How errors name a node: "node 'NAME' (OP, opset N)", or for a node
/// without a name, by its place in its graph and its first output:
/// "node #INDEX (OP, opset N, output 'Y')". `opset` < 0 leaves it out.
std::string describeOnnxNode(const onnx::NodeProto &node, int index,
                             int64_t opset);
double floatAttr(const GraphNode &node, const char *name, float fallback);
int64_t intAttr(const GraphNode &node, const char *name, int64_t fallback);
/// names[i], or "" past the end.
std::string nameOrEmpty(const std::vector<std::string> &names, size_t i);
/// The one integer of an attribute that may be a scalar or a 1-element list.
int64_t singleInteger(const AttrValue &value, const std::string &what);
Tensor scalarTensor(DType dtype, double value);
/// The dtype's highest (or lowest) value: +-inf for floats.
Tensor extremeScalar(DType dtype, bool highest);
/// An Unsupported when a constant of `elements` would be too large.
void checkConstantElements(int64_t elements, const std::string &what);
/// The positions 0..count-1 along `axis` of a rank-`rank` tensor (1s in
/// every other dim).
Tensor indicesAlong(int64_t rank, int64_t axis, int64_t count);
/// A reshape step of `value` to `shape` (a 0 is a dim of 0).
std::string viewStep(OnnxConverter &converter, const GraphNode &node,
                     const std::string &value, const Shape &shape,
                     const std::string &suffix);
/// `node` itself becomes a reshape of its (rewritten) input to `shape`.
void becomeView(GraphNode &node, const std::string &value, const Shape &shape);
/// The 2-D view ONNX's ops before opset 13 coerce their input to around
/// `axis`: [prod(dims before axis), prod(dims from axis on)].
Shape viewAs2D(const Shape &shape, int64_t axis);
/// Softmax, LogSoftmax and Hardmax before opset 13: on the 2-D view.
void coerceTo2DBeforeOpset13(OnnxConverter &converter,
                             const onnx::NodeProto &proto, GraphNode &node);

//===-- Shared by op families (defined in the ops file named) ------------===//

/// (ops/Quantization.cpp) The integer ops' operand minus its zero point, in i32
/// (recorded for the converters after it). A zero point of one value per row
/// (`perRow`: dim rank - 2 of a matmul's lhs) or per output channel (dim 0 of a
/// Conv's weights) is laid along that dim.
std::string shiftedToInt32(OnnxConverter &converter, GraphNode &node,
                           const std::string &value,
                           const std::string &zeroPoint, int64_t alongDim,
                           const std::string &suffix);

/// (ops/Quantization.cpp) The requantization of QLinearMatMul and QLinearConv,
/// as ONNX's reference computes it: the i32 product times the multiplier
/// x_scale * w_scale / y_scale (rounded in f32, op by op), plus y's zero point,
/// in f64, rounded half to even and saturated to y's dtype. `scaleShape` lays a
/// per-channel w_scale along the product's channel dim.
void requantize(OnnxConverter &converter, GraphNode &node,
                const std::string &product, const std::string &inputScale,
                const std::string &weightScale, const Shape &weightScaleShape,
                const std::string &outputScale,
                const std::string &outputZeroPoint, DType outputType);

/// (ops/GatherScatter.cpp) The operands of GatherElements' flat gather: the
/// data viewed as 1-D and each position's linear index into it.
struct FlatGather {
  std::string flatData, linearIndices;
};

FlatGather flatGatherOperands(OnnxConverter &converter, const GraphNode &node,
                              const std::string &data,
                              const std::string &indices, DType indexType,
                              const Shape &shape, const Shape &indexShape,
                              int64_t axis);

/// (ops/GatherScatter.cpp) The identity of a scatter's `reduction` in `dtype`
/// ("none" and "add": -0.0 for floats, which leaves every float as it is, 0 for
/// integers; "mul": 1; "max" and "min": the dtype's lowest and highest values).
Tensor scatterIdentity(DType dtype, const std::string &reduction);

/// Unrolled control flow is bounded: a Loop of a million iterations would
/// be a graph of millions of nodes (iterations count apart from the body's
/// nodes: each also adds steps of its own).
constexpr size_t kMaxUnrolledNodes = 1 << 16;
constexpr int64_t kMaxLoopIterations = 1 << 14;
/// Initializers past this many bytes are inputs, not values, of the model
/// ONNX's shape inference sees: no shape computation reads one.
constexpr size_t kInferenceInitializerBytes = 4096;

//===-- The converter (OnnxImporter.cpp, OnnxControlFlow.cpp) -------------===//

class OnnxConverter {
public:
  OnnxConverter(std::string path, const OnnxOptions &options)
      : path(std::move(path)), options(options),
        modelDir(std::filesystem::path(this->path).parent_path()) {
    if (modelDir.empty())
      modelDir = ".";
  }

  /// Reads `model`, releasing its large initializers' bytes as it takes
  /// them.
  Graph convert(onnx::ModelProto &model);

  int64_t opset = 0;

  /// The constant value of `name`, or null when it is computed at run time.
  const Tensor *constantOrNull(const std::string &name) const {
    auto it = constants.find(name);
    return it == constants.end() ? nullptr : &it->second;
  }

  /// The constant value of `name`, or an Unsupported naming what needed it.
  const Tensor &constantValue(const std::string &name,
                              const std::string &what) const {
    auto it = constants.find(name);
    if (it == constants.end())
      throw Unsupported{what + " ('" + name +
                        "') must be a constant (an initializer or a Constant "
                        "node's output)"};
    return it->second;
  }

  /// A value's dims, with the symbols where they are symbolic.
  std::optional<SymbolicShape> symbolicShapeOf(const std::string &name) const;
  /// "1,seq,12,64": the dims attr of reshape and broadcast_to.
  std::string dimsText(const SymbolicShape &shape) const;
  /// Whether ScatterND `indices` name every point of a tensor of `data`'s
  /// dims, each its own ([..., k] counting along dim k: transformers'
  /// `mask[:, :, :, :length] = ...` over the whole mask).
  bool namesEveryElement(const std::string &indices,
                         const SymbolicShape &data) const;
  /// The main graph's node computing `value`; null for inputs,
  /// initializers and values of subgraphs.
  const onnx::NodeProto *producerOf(const std::string &value) const {
    auto it = producers.find(value);
    return it == producers.end() ? nullptr : it->second;
  }
  /// A small integer value's elements (a shape value), constant or symbolic
  /// (SymbolicShapes.cpp and ONNX's data propagation).
  std::optional<std::vector<SymbolicSize>>
  symbolicValueOf(const std::string &name) const;
  /// Index tensors that count up along one axis from a scalar start
  /// (`start + Range(0, n)`, unsqueezed and expanded: the exporters'
  /// index_copy into a cache): value -> {start ("" for 0), axis}.
  struct CountingIndices {
    std::string start;
    size_t axis = 0;
  };
  std::map<std::string, CountingIndices> countingIndices;
  const CountingIndices *countingIndicesOrNull(const std::string &name) const {
    auto it = countingIndices.find(name);
    if (it == countingIndices.end())
      it = countingIndices.find(resolve(name));
    return it == countingIndices.end() ? nullptr : &it->second;
  }
  /// A size as the graph's dim_size and iota ops name it: "seq",
  /// "2*batch*seq".
  std::string sizeText(const SymbolicSize &size) const {
    return size.format(graph.symbols);
  }

  /// The static shape of `name` (graph input, inferred or constant).
  std::optional<Shape> shapeOf(const std::string &name) const;
  /// The dtype of `name` (graph input, constant or inferred).
  std::optional<DType> dtypeOf(const std::string &name) const;
  /// Records the shape and dtype of a value converted here that ONNX's
  /// inference left unknown, for the converters after it that need them.
  void recordValue(const std::string &name, const Shape &shape, DType dtype) {
    // A symbolic dim (negative here) leaves the shape to the converted
    // types (convertedTypeOf), which know it is dynamic.
    if (std::all_of(shape.begin(), shape.end(),
                    [](int64_t dim) { return dim >= 0; }))
      inferredShapes.emplace(name, shape);
    inferredTypes.emplace(name, dtype);
  }
  /// The rank of a graph input or of a value ONNX's inference shaped.
  std::optional<size_t> inferredRank(const std::string &name) const {
    std::optional<size_t> rank;
    if (auto it = inferredShapes.find(name); it != inferredShapes.end())
      rank = it->second.size();
    for (const GraphInput &input : graph.inputs)
      if (input.name == name)
        rank = input.shape.size();
    return rank;
  }
  /// Both, or an Unsupported naming the value and what needed it.
  Shape requireShape(const std::string &name, const std::string &what) const;
  DType requireDType(const std::string &name, const std::string &what) const;

  /// A step of a conversion that becomes several graph nodes: a node named
  /// after `owner`, whose output is owner's first output + "_" + suffix
  /// (returned). Steps precede the owner node in the graph.
  std::string addStep(const GraphNode &owner, const std::string &op,
                      std::vector<std::string> inputs,
                      const std::string &suffix,
                      std::map<std::string, AttrValue> attrs = {});
  /// A step whose output is `output` itself: one of owner's own outputs
  /// other than the first.
  void addOutputStep(const GraphNode &owner, const std::string &op,
                     std::vector<std::string> inputs, const std::string &output,
                     std::map<std::string, AttrValue> attrs = {});
  /// A constant named after `owner`'s first output + "_" + suffix.
  std::string addStepConstant(const GraphNode &owner, const std::string &suffix,
                              Tensor value);
  /// A graph node as it is, for whole-node converters.
  void addNode(GraphNode node) { graph.nodes.push_back(std::move(node)); }
  void addConstant(const std::string &name, Tensor value) {
    constants[name] = value;
    graph.constants.push_back({name, std::move(value)});
  }
  /// `output` stands for `value` (Identity, a one-input Sum, ...).
  void addAlias(const std::string &output, const std::string &value) {
    aliases[output] = resolve(value);
  }
  std::string resolve(const std::string &name) const {
    auto it = aliases.find(name);
    return it == aliases.end() ? name : it->second;
  }

  /// Broadcasting before opset 7 with `axis`: the second operand's dims
  /// match the first's from `axis` on (a view with 1s around them).
  void broadcastFromAxis(GraphNode &node, int64_t axis);

  /// An op defined as a composition of other ONNX ops (as ONNX defines its
  /// functions): one node of it, converted at once; its output is `output`
  /// or a fresh name under the owner's.
  std::string expand(const onnx::NodeProto &owner, const std::string &op,
                     const std::vector<std::string> &inputs,
                     std::vector<onnx::AttributeProto> attrs = {},
                     const std::string &output = "");
  std::string expandConstant(const onnx::NodeProto &owner, Tensor value);

  /// Charges `units` of unrolling (subgraph nodes, iterations, initializer
  /// bytes) against kMaxUnrolledNodes; throws past it.
  void chargeUnrolling(size_t units);

  /// The directory external data and relative paths are read from.
  const std::filesystem::path &modelDirectory() const { return modelDir; }

  // The importer's own ops (registerImporterOps).
  void convertConstant(const onnx::NodeProto &node);
  void convertIdentity(const onnx::NodeProto &node);
  void convertShapeOrSize(const onnx::NodeProto &node);
  /// Control flow, unrolled: fusec's shapes are static, so If's taken
  /// branch, Loop's trip count and Scan's length must be known here (a
  /// runtime If condition selects between both branches' outputs).
  void convertIf(const onnx::NodeProto &node);
  void convertLoop(const onnx::NodeProto &node);
  void convertScan(const onnx::NodeProto &node);

private:
  void inferShapes(const onnx::ModelProto &model);
  /// Initializers whose bytes convert released (inputs of inference's
  /// copy).
  std::set<std::string> releasedInitializers;
  /// Outputs of nodes ONNX 1.12's inference left out (newer opsets' ops it
  /// has no opset-17 form for); inference runs again once the converter has
  /// learned one of them.
  std::set<std::string> uninferredOutputs;
  bool foldToConstants(const onnx::NodeProto &node);
  bool foldShapeNode(const onnx::NodeProto &node);
  bool foldToSymbolicSizes(const onnx::NodeProto &node);

  // Dims and shape values over the graph's symbols (SymbolicShapes.cpp).
  /// Records the dims of `node`'s outputs, and the elements of a small
  /// integer output, where its inputs' are known.
  void propagateSymbolicShapes(const onnx::NodeProto &node);
  void recordSymbolicShapes(const onnx::NodeProto &node);
  void recordCountingIndices(const onnx::NodeProto &node);
  /// Values not known because of a size a symbolic dim cannot be (a sum):
  /// the reason, for the op that needs one.
  std::map<std::string, std::string> symbolicGaps;
  /// Reshape, Expand, ConstantOfShape and Slice whose shape or bounds are
  /// computed at run time from the symbols' sizes: converted with the
  /// result's symbolic dims (false when they read constants).
  bool convertSymbolicShapeReader(const onnx::NodeProto &node);
  /// The main graph's node computing each value (producerOf).
  std::unordered_map<std::string, const onnx::NodeProto *> producers;
  std::optional<int> symbolIndex(const std::string &name) const;
  /// One axis of a Slice, its bounds as sizes.
  struct SymbolicSlice {
    size_t axis = 0;
    SymbolicSize start, end, step;
  };
  std::optional<std::vector<SymbolicSlice>>
  symbolicSlices(const onnx::NodeProto &node) const;
  /// The length of `slice` of a dim of size `dim`, where the ranges decide
  /// it (a difference of sizes may add a derived symbol to `symbols`).
  static std::optional<SymbolicSize>
  slicedSize(const SymbolicSize &dim, const SymbolicSlice &slice,
             std::vector<DimSymbol> &symbols);
  /// Each value's dims, where they have symbols (propagateSymbolicShapes and
  /// ONNX's inference).
  std::map<std::string, SymbolicShape> symbolicShapes;
  void convertNode(const onnx::NodeProto &node);
  /// A node of the model or of a subgraph: folded to constants where its
  /// inputs allow, converted otherwise.
  void convertOrFold(const onnx::NodeProto &node);
  /// Converts a subgraph's nodes in place, its own values renamed under
  /// `scope` (sibling branches and unrolled iterations reuse names), its
  /// inputs standing for `inputs`; returns the values of its outputs.
  std::vector<std::string>
  convertSubgraph(const onnx::GraphProto &body, const std::string &scope,
                  const std::vector<std::string> &inputs,
                  const std::string &what);
  /// A scope of its own for each control-flow node converted (a node inside
  /// a loop body is converted once per iteration, under one name).
  size_t scopes = 0;
  std::string newScope(const onnx::NodeProto &node) {
    const std::string &base =
        !node.name().empty()                                ? node.name()
        : node.output_size() > 0 && !node.output(0).empty() ? node.output(0)
                                                            : node.op_type();
    return base + "#" + std::to_string(scopes++);
  }
  /// A subgraph's initializers by their own name: the constants made of
  /// them, reused by later iterations that hold the same value.
  std::map<std::string, std::vector<std::string>> subgraphConstants;
  size_t expandedNodes = 0;
  size_t unrolled = 0; ///< chargeUnrolling's count
  /// One input is the value itself; more are combined left to right.
  void convertVariadic(const onnx::NodeProto &node, const GraphNode &pattern);

  std::string path;
  const OnnxOptions &options;
  std::filesystem::path modelDir;
  Graph graph;
  std::map<std::string, Tensor> constants;
  /// Identity outputs: the value they stand for.
  std::map<std::string, std::string> aliases;
  /// From ONNX's shape inference with data propagation: static shapes of
  /// values, and the values of shape computations (Shape -> Gather ->
  /// Concat -> ...), which become constants.
  std::map<std::string, Shape> inferredShapes;
  std::map<std::string, std::vector<int64_t>> shapeValues;
  /// Shape values with symbolic elements (symbolicValueOf).
  std::map<std::string, std::vector<SymbolicSize>> symbolicShapeValues;
  std::map<std::string, DType> inferredTypes;
  /// The types of converted values ONNX's inference left unknown, from the
  /// fuse ops they became (made on the first such value).
  mutable std::unique_ptr<fuse::GraphValueTypes> convertedTypes;
  std::optional<std::pair<DType, Shape>>
  convertedTypeOf(const std::string &name) const {
    if (!convertedTypes)
      convertedTypes = std::make_unique<fuse::GraphValueTypes>(graph);
    return convertedTypes->typeOf(resolve(name));
  }
  /// namesUsedAsConstants: the values that must be constants.
  std::set<std::string> boundNames;
  std::vector<std::string> errors;
};

} // namespace fusec::onnx_import

#endif
