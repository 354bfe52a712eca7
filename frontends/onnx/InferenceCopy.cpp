//===- InferenceCopy.cpp - Newer opsets through ONNX 1.12's inference -===//

#include "frontends/onnx/InferenceCopy.h"
#include "frontends/onnx/ShapeFolding.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fusec {

namespace {

using Ints = std::vector<int64_t>;

/// The integer values of a tensor proto (int64 or int32, inline or raw).
std::optional<Ints> integersOfProto(const onnx::TensorProto &tensor) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  Ints values;
  if (tensor.data_type() == onnx::TensorProto::INT64) {
    if (tensor.has_raw_data()) {
      const std::string &raw = tensor.raw_data();
      values.resize(raw.size() / sizeof(int64_t));
      std::memcpy(values.data(), raw.data(), values.size() * sizeof(int64_t));
    } else {
      values.assign(tensor.int64_data().begin(), tensor.int64_data().end());
    }
  } else if (tensor.data_type() == onnx::TensorProto::INT32) {
    if (tensor.has_raw_data()) {
      const std::string &raw = tensor.raw_data();
      std::vector<int32_t> narrow(raw.size() / sizeof(int32_t));
      std::memcpy(narrow.data(), raw.data(), narrow.size() * sizeof(int32_t));
      values.assign(narrow.begin(), narrow.end());
    } else {
      values.assign(tensor.int32_data().begin(), tensor.int32_data().end());
    }
  } else {
    return std::nullopt;
  }
  return values;
}

/// The integer constants of the graph: initializers and Constant nodes.
std::map<std::string, Ints> integerConstants(const onnx::GraphProto &graph) {
  std::map<std::string, Ints> constants;
  for (const onnx::TensorProto &initializer : graph.initializer())
    if (std::optional<Ints> values = integersOfProto(initializer))
      constants[initializer.name()] = *values;
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1 ||
        !(node.domain().empty() || node.domain() == "ai.onnx"))
      continue;
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.name() == "value" && attr.has_t()) {
        if (std::optional<Ints> values = integersOfProto(attr.t()))
          constants[node.output(0)] = *values;
      } else if (attr.name() == "value_ints") {
        constants[node.output(0)] =
            Ints(attr.ints().begin(), attr.ints().end());
      } else if (attr.name() == "value_int") {
        constants[node.output(0)] = Ints{attr.i()};
      }
    }
  }
  return constants;
}

void removeAttribute(onnx::NodeProto &node, const std::string &name) {
  auto &attrs = *node.mutable_attribute();
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                             [&](const onnx::AttributeProto &attr) {
                               return attr.name() == name;
                             }),
              attrs.end());
}

void setInts(onnx::NodeProto &node, const std::string &name,
             const Ints &values) {
  removeAttribute(node, name);
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values)
    attr->add_ints(value);
}

void setString(onnx::NodeProto &node, const std::string &name,
               const std::string &value) {
  removeAttribute(node, name);
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

/// `node` as `opType` of its first `inputs` inputs and first output, no
/// attributes: an opset-17 op with the output shape and type the newer op
/// has.
void standIn(onnx::NodeProto &node, const char *opType, int inputs) {
  node.set_op_type(opType);
  node.clear_attribute();
  while (node.input_size() > inputs)
    node.mutable_input()->RemoveLast();
  while (node.output_size() > 1)
    node.mutable_output()->RemoveLast();
}

/// `node` as a Cast of its input 0 to ONNX type `to`: the shape and type of
/// a quantization with an output_dtype.
void castStandIn(onnx::NodeProto &node, int64_t to) {
  standIn(node, "Cast", 1);
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name("to");
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(to);
}

bool isReductionWithAxesInputFrom18(const std::string &opType) {
  static const std::set<std::string> kReductions = {
      "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};
  return kReductions.count(opType) > 0;
}

/// Rewrites one node of an opset newer than 17 to its opset-17 form; false
/// when there is none (the node is then left out of inference).
bool rewriteNode(onnx::NodeProto &node,
                 const std::map<std::string, Ints> &constants) {
  const std::string op = node.op_type();
  if (isReductionWithAxesInputFrom18(op)) {
    // Opset 18: axes became an optional input (and noop_with_empty_axes
    // came with it), as ReduceSum's did in 13.
    const onnx::AttributeProto *noop =
        findAttribute(node, "noop_with_empty_axes");
    bool noopWithEmptyAxes = noop && noop->i() != 0;
    removeAttribute(node, "noop_with_empty_axes");
    Ints axes;
    if (node.input_size() > 1 && !node.input(1).empty()) {
      auto constant = constants.find(node.input(1));
      if (constant == constants.end())
        return false;
      axes = constant->second;
    }
    if (axes.empty() && noopWithEmptyAxes) {
      standIn(node, "Identity", 1);
      return true;
    }
    while (node.input_size() > 1)
      node.mutable_input()->RemoveLast();
    if (!axes.empty())
      setInts(node, "axes", axes);
    return true;
  }
  if (op == "Split") {
    // Opset 18's num_outputs: as many equal parts as outputs (ONNX 1.12
    // infers those); an uneven last part is not inferred.
    removeAttribute(node, "num_outputs");
    return true;
  }
  if (op == "Pad") {
    // Opset 18's axes input has no opset-17 form; 19's wrap mode pads to
    // the same shape as the others.
    if (node.input_size() > 3 && !node.input(3).empty())
      return false;
    removeAttribute(node, "mode");
    return true;
  }
  if (op == "Resize") {
    // Opset 18: antialias changes the weights, not the shape; axes and
    // keep_aspect_ratio_policy change the shape. Opset 19's
    // half_pixel_symmetric maps coordinates only.
    removeAttribute(node, "antialias");
    const onnx::AttributeProto *policy =
        findAttribute(node, "keep_aspect_ratio_policy");
    if (findAttribute(node, "axes") || (policy && policy->s() != "stretch"))
      return false;
    removeAttribute(node, "keep_aspect_ratio_policy");
    const onnx::AttributeProto *mode =
        findAttribute(node, "coordinate_transformation_mode");
    if (mode && mode->s() == "half_pixel_symmetric")
      setString(node, "coordinate_transformation_mode", "half_pixel");
    return true;
  }
  if (op == "AveragePool") {
    // Opset 19's dilations: the same output shape as a kernel spanning the
    // dilated window.
    const onnx::AttributeProto *dilations = findAttribute(node, "dilations");
    const onnx::AttributeProto *kernel = findAttribute(node, "kernel_shape");
    if (!dilations)
      return true;
    if (!kernel || kernel->ints_size() != dilations->ints_size())
      return false;
    Ints span;
    for (int i = 0; i < kernel->ints_size(); ++i)
      span.push_back((kernel->ints(i) - 1) * dilations->ints(i) + 1);
    removeAttribute(node, "dilations");
    setInts(node, "kernel_shape", span);
    return true;
  }
  if (op == "Cast" || op == "CastLike") {
    // saturate (19) and round_mode (24) apply to float8 targets only.
    removeAttribute(node, "saturate");
    removeAttribute(node, "round_mode");
    return true;
  }
  if (op == "QuantizeLinear") {
    removeAttribute(node, "saturate");
    removeAttribute(node, "block_size");
    removeAttribute(node, "precision");
    // Opset 21's output_dtype gives the type where no zero point does.
    if (const onnx::AttributeProto *dtype = findAttribute(node, "output_dtype");
        dtype && dtype->i() != 0)
      castStandIn(node, dtype->i());
    return true;
  }
  if (op == "DequantizeLinear") {
    // From opset 19 the output has the scale's type (opset 13: float), from
    // 23 output_dtype's where given.
    removeAttribute(node, "block_size");
    const onnx::AttributeProto *dtype = findAttribute(node, "output_dtype");
    if (dtype && dtype->i() != 0) {
      castStandIn(node, dtype->i());
      return true;
    }
    if (node.input_size() < 2)
      return false;
    std::string scale = node.input(1);
    standIn(node, "CastLike", 1);
    node.add_input(scale);
    return true;
  }
  if (op == "ScatterElements" || op == "ScatterND") {
    // Opset 18's max and min reductions: the shape is the data's.
    removeAttribute(node, "reduction");
    return true;
  }
  if (op == "SpaceToDepth") {
    removeAttribute(node, "mode"); // opset 28: the order, not the shape
    return true;
  }
  if (op == "Range") {
    removeAttribute(node, "stash_type"); // opset 27: the precision
    return true;
  }
  // Ops newer than opset 17 whose output has input 0's shape and type.
  static const std::set<std::string> kShapeOfInput0 = {"Gelu",
                                                       "Mish",
                                                       "Swish",
                                                       "BitwiseNot",
                                                       "CumProd",
                                                       "RMSNormalization",
                                                       "GroupNormalization",
                                                       "RotaryEmbedding",
                                                       "TensorScatter"};
  if (kShapeOfInput0.count(op)) {
    standIn(node, "Identity", 1);
    return true;
  }
  // Binary ops newer than 17 that broadcast as Add does.
  static const std::set<std::string> kBroadcastBinary = {
      "BitwiseAnd", "BitwiseOr", "BitwiseXor", "SwiGLU"};
  if (kBroadcastBinary.count(op)) {
    standIn(node, "Add", 2);
    return true;
  }
  return true;
}

/// Ops defined after opset 17 that ONNX 1.12 has no schema for and that
/// rewriteNode does not stand in for: left out of inference.
bool unknownToOnnx112(const std::string &opType) {
  static const std::set<std::string> kNewerOps = {
      "AffineGrid",          "Attention",     "BitCast",
      "CausalConvWithState", "CenterCropPad", "Col2Im",
      "DeformConv",          "ImageDecoder",  "LinearAttention",
      "RegexFullMatch",      "StringConcat",  "StringSplit"};
  return kNewerOps.count(opType) > 0;
}

} // namespace

std::vector<std::string> rewriteForOnnx112Inference(onnx::ModelProto &copy,
                                                    int64_t opset) {
  std::vector<std::string> leftOut;
  if (opset <= kOnnx112Opset)
    return leftOut;
  for (onnx::OperatorSetIdProto &set : *copy.mutable_opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      set.set_version(kOnnx112Opset);
  onnx::GraphProto &graph = *copy.mutable_graph();
  const std::map<std::string, Ints> constants = integerConstants(graph);
  auto &nodes = *graph.mutable_node();
  nodes.erase(
      std::remove_if(nodes.begin(), nodes.end(),
                     [&](onnx::NodeProto &node) {
                       if (!node.domain().empty() && node.domain() != "ai.onnx")
                         return false;
                       if (unknownToOnnx112(node.op_type()) ||
                           !rewriteNode(node, constants)) {
                         leftOut.insert(leftOut.end(), node.output().begin(),
                                        node.output().end());
                         return true;
                       }
                       return false;
                     }),
      nodes.end());
  return leftOut;
}

} // namespace fusec
