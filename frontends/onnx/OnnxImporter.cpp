//===- OnnxImporter.cpp - .onnx files into fusec graphs -------------------===//

#include "frontends/onnx/InferenceCopy.h"
#include "frontends/onnx/OnnxConverter.h"
#include "frontends/onnx/ShapeFolding.h"

#include "runtime/core/Error.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <variant>

namespace fusec::onnx_import {

/// The version of the default domain a model imports (0 if none).
int64_t defaultOpset(const onnx::ModelProto &model) {
  int64_t version = 0;
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      version = set.version();
  return version;
}

/// A node's inputs and outputs for namesUsedAsConstants, with the nodes of
/// its subgraphs (If's branches, Loop's and Scan's bodies) before it: the
/// node then reads, besides its inputs, its subgraphs' outputs (which read
/// outer values by name), and a Loop or Scan reads its trip count and
/// condition as constants (they fix the number of iterations, and so the
/// shapes).
struct BindingNode {
  const onnx::NodeProto *node; ///< null for a node with subgraphs
  std::vector<std::string> inputs, outputs;
};

void flattenForBinding(const onnx::GraphProto &graph,
                       std::vector<BindingNode> &flat,
                       std::set<std::string> &names) {
  for (const onnx::NodeProto &node : graph.node()) {
    BindingNode entry{&node,
                      {node.input().begin(), node.input().end()},
                      {node.output().begin(), node.output().end()}};
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::vector<const onnx::GraphProto *> bodies;
      if (attr.has_g())
        bodies.push_back(&attr.g());
      for (const onnx::GraphProto &body : attr.graphs())
        bodies.push_back(&body);
      for (const onnx::GraphProto *body : bodies) {
        flattenForBinding(*body, flat, names);
        for (const onnx::ValueInfoProto &output : body->output())
          entry.inputs.push_back(output.name());
        entry.node = nullptr;
      }
    }
    if (node.op_type() == "Loop")
      for (int i = 0; i < std::min(node.input_size(), 2); ++i)
        names.insert(node.input(i));
    flat.push_back(std::move(entry));
  }
}

/// Values ops read as constants (OnnxOpDef::bindsInput), and the values
/// they are computed from (a Range's limit from a window size input); Shape
/// and Size read only their input's shape.
std::set<std::string> namesUsedAsConstants(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  std::vector<BindingNode> flat;
  flattenForBinding(graph, flat, names);
  for (const BindingNode &entry : flat) {
    if (!entry.node)
      continue;
    const onnx::NodeProto &node = *entry.node;
    if (const OnnxOpDef *def = OnnxRegistry::instance().find(node.op_type()))
      for (int i = 0; i < node.input_size(); ++i)
        if (def->bindsInput(i))
          names.insert(node.input(i));
  }
  // Nodes come in topological order (a subgraph's before the node that
  // holds it): one backward pass closes the set.
  for (size_t i = flat.size(); i-- > 0;) {
    const BindingNode &entry = flat[i];
    if (entry.node &&
        (entry.node->op_type() == "Shape" || entry.node->op_type() == "Size"))
      continue;
    if (std::any_of(
            entry.outputs.begin(), entry.outputs.end(),
            [&](const std::string &output) { return names.count(output); }))
      names.insert(entry.inputs.begin(), entry.inputs.end());
  }
  names.erase("");
  return names;
}

/// Runs ONNX's shape inference with data propagation on a copy of the
/// model whose inputs have the shapes fusec will use. A model it cannot
/// infer is still converted; only its shape subgraphs stay unfolded.
/// External integer tensors up to this many elements are read for shape
/// inference (the shape computations data propagation follows).
constexpr int64_t kInlinedExternalElements = 1024;

void OnnxConverter::inferShapes(const onnx::ModelProto &model) {
  // The large initializers' bytes are gone from the model (convert released
  // them), so the copy is the graph's structure: inference needs their
  // dtypes and dims, which they keep as inputs of the copy, and the values
  // of small tensors only (the shape computations it propagates).
  onnx::ModelProto copy = model;
  onnx::GraphProto &graph = *copy.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> &initializers =
      *graph.mutable_initializer();
  // External data is read from the model's directory, which ONNX's checker
  // is not told (it would look in the working directory, fail, and leave
  // the whole model uninferred): small integer tensors (the shape values
  // data propagation reads) are inlined into the copy, larger ones kept as
  // inputs, as released ones are.
  std::unordered_set<std::string> asInputs(releasedInitializers.begin(),
                                           releasedInitializers.end());
  for (onnx::TensorProto &initializer : initializers) {
    if (initializer.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    bool integers = initializer.data_type() == onnx::TensorProto::INT64 ||
                    initializer.data_type() == onnx::TensorProto::INT32;
    int64_t elements = 1;
    for (int64_t dim : initializer.dims())
      elements = dim < 0 || dim > kInlinedExternalElements
                     ? kInlinedExternalElements + 1
                     : std::min(elements * std::max<int64_t>(dim, 1),
                                kInlinedExternalElements + 1);
    if (integers && elements <= kInlinedExternalElements) {
      try {
        Tensor values = tensorFromProto(initializer, modelDir);
        initializer.clear_external_data();
        initializer.set_data_location(onnx::TensorProto::DEFAULT);
        initializer.set_raw_data(
            std::string(values.bytes.begin(), values.bytes.end()));
        continue;
      } catch (const Unsupported &) {
        // (Unreadable: conversion reports it; inference takes its type.)
      }
    }
    asInputs.insert(initializer.name());
  }
  if (!asInputs.empty()) {
    std::unordered_set<std::string> inputs;
    for (const onnx::ValueInfoProto &input : graph.input())
      inputs.insert(input.name());
    auto isReleased = [&](const onnx::TensorProto &initializer) {
      return asInputs.count(initializer.name()) > 0;
    };
    for (const onnx::TensorProto &initializer : initializers) {
      if (!isReleased(initializer) || inputs.count(initializer.name()))
        continue;
      onnx::ValueInfoProto *input = graph.add_input();
      input->set_name(initializer.name());
      auto *type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(initializer.data_type());
      for (int64_t dim : initializer.dims())
        type->mutable_shape()->add_dim()->set_dim_value(dim);
    }
    initializers.erase(
        std::remove_if(initializers.begin(), initializers.end(), isReleased),
        initializers.end());
  }
  // The inputs as fusec reads them: given shapes, dims fixed by `--dim
  // NAME=SIZE` and symbolic ones under their symbols' names.
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    auto converted = std::find_if(
        this->graph.inputs.begin(), this->graph.inputs.end(),
        [&](const GraphInput &g) { return g.name == input.name(); });
    if (converted == this->graph.inputs.end() ||
        (!input.type().tensor_type().has_shape() &&
         !options.inputShapes.count(input.name())))
      continue; // (an input of unknown rank stays so for inference)
    onnx::TensorShapeProto *shape =
        input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (!options.inputShapes.count(input.name()) &&
        static_cast<size_t>(shape->dim_size()) != converted->shape.size())
      continue; // an input in error (reported) keeps its declared dims
    shape->clear_dim();
    for (size_t d = 0; d < converted->shape.size(); ++d) {
      if (converted->shape[d] >= 0)
        shape->add_dim()->set_dim_value(converted->shape[d]);
      else
        shape->add_dim()->set_dim_param(converted->dimNames.at(d));
    }
  }
  // Nodes of newer opsets ONNX 1.12 cannot infer are left out of the copy;
  // those converted already declare their outputs' shapes as inputs.
  uninferredOutputs.clear();
  for (const std::string &output : rewriteForOnnx112Inference(copy, opset)) {
    std::optional<Shape> shape = shapeOf(output);
    std::optional<DType> dtype = dtypeOf(output);
    if (output.empty() || !shape || !dtype) {
      uninferredOutputs.insert(output);
      continue;
    }
    onnx::ValueInfoProto *declared = graph.add_input();
    declared->set_name(output);
    auto *tensorType = declared->mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(onnxTypeOf(*dtype));
    for (int64_t dim : *shape) {
      auto *declaredDim = tensorType->mutable_shape()->add_dim();
      if (dim >= 0) // a symbolic dim stays unknown
        declaredDim->set_dim_value(dim);
    }
  }
  // ONNX 1.12's shape inference reads out of bounds on some malformed
  // nodes (a Conv whose input has the wrong rank: fuzz-onnx). A node fusec
  // neither converts nor can fold (its op has no ONNX data propagation)
  // fails conversion whatever its shapes, so it is left out of inference.
  auto inferable = [&](const onnx::NodeProto &node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return false;
    if (OnnxRegistry::instance().find(node.op_type()))
      return true;
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
    return schema && schema->has_data_propagation_function();
  };
  // It also dereferences null for an input defined nowhere, and for a
  // LayerNormalization of a rank-0 input (fuzz-onnx): nodes that read a
  // value no kept node, graph input or initializer defines are left out too
  // (conversion reports them), and so are such normalizations.
  std::unordered_set<std::string> defined = {""}; // "" is an absent input
  std::unordered_map<std::string, int> declaredRank;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    defined.insert(input.name());
    if (input.type().tensor_type().has_shape())
      declaredRank[input.name()] =
          input.type().tensor_type().shape().dim_size();
  }
  for (const onnx::TensorProto &initializer : graph.initializer()) {
    defined.insert(initializer.name());
    declaredRank[initializer.name()] = initializer.dims_size();
  }
  // ONNX 1.12's convolutions' inference takes the kernel's rank
  // from the weights and reads the input's dilations and strides that far,
  // out of bounds when the ranks differ (fuzz-onnx); given kernel_shape, it
  // checks that rank against the input's instead. The copy gets the
  // weights' kernel_shape where they are an initializer or a graph input of
  // known shape; a node whose weights' shape is not known here is left out
  // of inference.
  std::unordered_map<std::string, std::vector<int64_t>> knownDims;
  for (const onnx::TensorProto &initializer : graph.initializer())
    knownDims[initializer.name()] = {initializer.dims().begin(),
                                     initializer.dims().end()};
  for (const onnx::ValueInfoProto &input : graph.input()) {
    const auto &type = input.type().tensor_type();
    if (!type.has_shape() || knownDims.count(input.name()))
      continue;
    std::vector<int64_t> dims;
    for (const auto &dim : type.shape().dim())
      if (dim.has_dim_value())
        dims.push_back(dim.dim_value());
    if (static_cast<int>(dims.size()) == type.shape().dim_size())
      knownDims[input.name()] = dims;
  }
  std::unordered_set<std::string> uninferredConvolutions;
  // The input holding each convolution's weights.
  static const std::map<std::string, int> kWeightInput = {{"Conv", 1},
                                                          {"ConvTranspose", 1},
                                                          {"ConvInteger", 1},
                                                          {"QLinearConv", 3}};
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    auto weightInput = kWeightInput.find(node.op_type());
    if (weightInput == kWeightInput.end() ||
        !(node.domain().empty() || node.domain() == "ai.onnx") ||
        std::any_of(node.attribute().begin(), node.attribute().end(),
                    [](const onnx::AttributeProto &attr) {
                      return attr.name() == "kernel_shape";
                    }))
      continue;
    auto weights = node.input_size() > weightInput->second
                       ? knownDims.find(node.input(weightInput->second))
                       : knownDims.end();
    if (weights == knownDims.end() || weights->second.size() < 2) {
      for (const std::string &output : node.output())
        uninferredConvolutions.insert(output);
      continue;
    }
    onnx::AttributeProto *kernel = node.add_attribute();
    kernel->set_name("kernel_shape");
    kernel->set_type(onnx::AttributeProto::INTS);
    for (size_t d = 2; d < weights->second.size(); ++d)
      kernel->add_ints(weights->second[d]);
  }
  auto keep = [&](const onnx::NodeProto &node) {
    if (!inferable(node))
      return false;
    for (const std::string &output : node.output())
      if (uninferredConvolutions.count(output))
        return false;
    for (const std::string &input : node.input())
      if (!defined.count(input))
        return false;
    if (node.op_type() == "LayerNormalization" && node.input_size() > 0) {
      auto rank = declaredRank.find(node.input(0));
      if (rank != declaredRank.end() && rank->second == 0)
        return false;
    }
    // Its STFT's inference reads the signal's dims [batch, length, 1 or 2]
    // without checking the rank (fuzz-onnx: a rank-0 signal, SIGSEGV).
    if (node.op_type() == "STFT" && node.input_size() > 0) {
      auto rank = declaredRank.find(node.input(0));
      if (rank != declaredRank.end() && rank->second != 3)
        return false;
    }
    // Its convolutions' and pools' inference divides by the strides and
    // dilations (fuzz-onnx: a stride of 0 raised SIGFPE): a window not
    // positive in every dim is left out (conversion reports it).
    static const std::set<std::string> kWindowed = {
        "Conv",    "ConvTranspose", "ConvInteger", "QLinearConv",
        "MaxPool", "AveragePool",   "LpPool"};
    if (kWindowed.count(node.op_type()))
      for (const onnx::AttributeProto &attr : node.attribute())
        if (attr.name() == "strides" || attr.name() == "dilations" ||
            attr.name() == "kernel_shape")
          for (int64_t value : attr.ints())
            if (value < 1)
              return false;
    for (const std::string &output : node.output())
      defined.insert(output);
    return true;
  };
  google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes =
      *graph.mutable_node();
  nodes.erase(
      std::remove_if(nodes.begin(), nodes.end(),
                     [&](const onnx::NodeProto &node) { return !keep(node); }),
      nodes.end());
  std::unordered_map<std::string, onnx::TensorShapeProto> data;
  try {
    // ONNX's inference trusts what its checker guarantees (fuzz-onnx found
    // further null dereferences in it on models the checker rejects): a
    // model the checker rejects is converted without inferred shapes, and
    // conversion reports what is wrong with it.
    // The checker refuses IR versions newer than its own, a limit that says
    // nothing about the graph: the copy claims at most the one it knows.
    if (copy.ir_version() > onnx::IR_VERSION)
      copy.set_ir_version(onnx::IR_VERSION);
    // It also refuses a graph output declared without a shape, which
    // onnxruntime accepts and inference does not need (it types every
    // node's outputs): the copy leaves such outputs out.
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> &outputs =
        *graph.mutable_output();
    outputs.erase(
        std::remove_if(outputs.begin(), outputs.end(),
                       [](const onnx::ValueInfoProto &output) {
                         return !output.type().has_tensor_type() ||
                                !output.type().tensor_type().has_shape();
                       }),
        outputs.end());
    onnx::checker::check_model(copy);
    // Data propagation dereferences an input's type without checking it
    // (ONNX 1.12's Shape of a Pad whose pads do not fit its rank, whose own
    // inference failed: fuzz-onnx). A first pass without it types what it
    // can; nodes that read a value it left untyped are left out of the
    // second (nothing can be inferred for them anyway).
    onnx::ModelProto typed = copy;
    onnx::shape_inference::InferShapes(
        typed, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(false, 0, /*data propagation=*/false));
    std::unordered_set<std::string> typedValues = {""};
    for (const onnx::ValueInfoProto &info : typed.graph().input())
      typedValues.insert(info.name());
    for (const onnx::TensorProto &initializer : typed.graph().initializer())
      typedValues.insert(initializer.name());
    for (const auto *infos :
         {&typed.graph().value_info(), &typed.graph().output()})
      for (const onnx::ValueInfoProto &info : *infos)
        if (info.type().has_tensor_type() &&
            info.type().tensor_type().elem_type() != 0)
          typedValues.insert(info.name());
    auto readsUntyped = [&](const onnx::NodeProto &node) {
      return std::any_of(
          node.input().begin(), node.input().end(),
          [&](const std::string &input) { return !typedValues.count(input); });
    };
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(), readsUntyped),
                nodes.end());
    onnx::shape_inference::InferShapes(
        copy, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(false, 0, /*data propagation=*/true),
        &data);
  } catch (const std::exception &) {
    return;
  }
  auto record = [&](const onnx::ValueInfoProto &info) {
    if (!info.type().has_tensor_type())
      return;
    if (std::optional<DType> dtype =
            dtypeOfOnnx(info.type().tensor_type().elem_type()))
      inferredTypes[info.name()] = *dtype;
    if (!info.type().tensor_type().has_shape())
      return;
    Shape shape;
    SymbolicShape symbolic;
    for (const auto &dim : info.type().tensor_type().shape().dim()) {
      std::optional<int> symbol =
          dim.has_dim_param() ? symbolIndex(dim.dim_param()) : std::nullopt;
      if (symbol)
        symbolic.push_back(SymbolicSize::symbol(*symbol));
      else if (dim.has_dim_value())
        symbolic.push_back(SymbolicSize::constant(dim.dim_value()));
      else
        return;
      if (dim.has_dim_value())
        shape.push_back(dim.dim_value());
    }
    if (shape.size() == symbolic.size())
      inferredShapes[info.name()] = shape;
    else
      symbolicShapes[info.name()] = symbolic;
  };
  for (const onnx::ValueInfoProto &info : graph.value_info())
    record(info);
  for (const onnx::ValueInfoProto &info : graph.output())
    record(info);
  for (const auto &[name, shape] : data) {
    std::vector<int64_t> values;
    std::vector<SymbolicSize> sizes;
    for (const auto &dim : shape.dim()) {
      if (dim.has_dim_value()) {
        values.push_back(dim.dim_value());
        sizes.push_back(SymbolicSize::constant(dim.dim_value()));
      } else if (std::optional<int> symbol = dim.has_dim_param()
                                                 ? symbolIndex(dim.dim_param())
                                                 : std::nullopt) {
        sizes.push_back(SymbolicSize::symbol(*symbol));
      } else {
        break;
      }
    }
    if (values.size() == static_cast<size_t>(shape.dim_size()))
      shapeValues[name] = values;
    else if (sizes.size() == static_cast<size_t>(shape.dim_size()))
      symbolicShapeValues[name] = sizes;
  }
}

/// A node whose every output is a known shape value (Shape of a static
/// tensor and the integer math on it) becomes constants, so Reshape,
/// Expand and Slice read static operands.
bool OnnxConverter::foldToConstants(const onnx::NodeProto &node) {
  if (node.output_size() == 0)
    return false;
  // Propagated values are trusted only where they are shapes: over
  // constants alone fusec computes the node itself, exactly (ONNX 1.12's
  // data propagation reads int64 initializers through 32 bits), and a
  // value that went through another dtype (a Cast to float and back) is
  // passed on unchanged by the propagation, not converted.
  bool overConstantsOnly = true, overShapesOnly = true;
  for (const std::string &input : node.input()) {
    if (input.empty())
      continue;
    std::string name = resolve(input);
    auto constant = constants.find(name);
    auto type = inferredTypes.find(name);
    overConstantsOnly &= constant != constants.end();
    overShapesOnly &=
        constant != constants.end()
            ? constant->second.dtype == DType::I64 ||
                  constant->second.dtype == DType::I32
            : type != inferredTypes.end() && type->second == DType::I64;
  }
  bool shapeOfTensor = node.op_type() == "Shape" || node.op_type() == "Size";
  if (overConstantsOnly || (!overShapesOnly && !shapeOfTensor))
    return false;
  for (const std::string &output : node.output()) {
    auto value = shapeValues.find(output);
    auto shape = inferredShapes.find(output);
    // Data propagation also carries values through a Cast to another
    // dtype (a float, an i32): only i64 values are shapes; the rest convert
    // as their ops define.
    auto type = inferredTypes.find(output);
    if (type == inferredTypes.end() || type->second != DType::I64)
      return false;
    if (value == shapeValues.end() || shape == inferredShapes.end() ||
        shape->second.size() > 1 ||
        numElements(shape->second) !=
            static_cast<int64_t>(value->second.size()))
      return false;
  }
  for (const std::string &output : node.output()) {
    const std::vector<int64_t> &values = shapeValues[output];
    Tensor tensor(DType::I64, inferredShapes[output]);
    std::copy(values.begin(), values.end(), tensor.as<int64_t>());
    addConstant(output, std::move(tensor));
  }
  return true;
}

/// Shape computations over constants that ONNX's data propagation leaves
/// (Size, Neg, an integer ConstantOfShape, arithmetic on shapes, Concat of
/// constants, ...): evaluated exactly (ShapeFolding.cpp), so Reshape,
/// Expand, Slice and ConstantOfShape get constant operands.
bool OnnxConverter::foldShapeNode(const onnx::NodeProto &node) {
  if (node.output_size() != 1)
    return false; // convertNode reports a node without outputs
  std::vector<const Tensor *> inputs;
  for (const std::string &input : node.input()) {
    auto it = input.empty() ? constants.end() : constants.find(resolve(input));
    inputs.push_back(it == constants.end() ? nullptr : &it->second);
  }
  std::optional<Shape> inputShape;
  if (node.input_size() > 0 && !node.input(0).empty())
    inputShape = shapeOf(resolve(node.input(0)));
  bool isBound = boundNames.count(node.output(0));
  std::optional<Tensor> value =
      foldShapeComputation(node, opset, inputs, inputShape, isBound);
  if (!value)
    return false;
  addConstant(node.output(0), std::move(*value));
  return true;
}

/// Shape and Size of a value whose static shape is not known here (they
/// fold to constants otherwise).
void OnnxConverter::convertShapeOrSize(const onnx::NodeProto &node) {
  if (graph.symbols.empty())
    throw Unsupported{node.op_type() + " needs the static shape of '" +
                      node.input(0) +
                      "', which shape inference did not give (the node "
                      "that makes it may not fit its inputs)"};
  throw Unsupported{node.op_type() + " needs the static shape of '" +
                    node.input(0) +
                    "': its symbolic dims are not ones fusec can follow "
                    "(fix the dims with --input-shape or --dim NAME=SIZE)"};
}

std::optional<Shape> OnnxConverter::shapeOf(const std::string &name) const {
  for (const GraphInput &input : graph.inputs)
    if (input.name == name)
      return input.shape;
  if (auto it = constants.find(name); it != constants.end())
    return it->second.shape;
  if (auto it = inferredShapes.find(name); it != inferredShapes.end())
    return it->second;
  if (auto type = convertedTypeOf(name))
    return type->second;
  return std::nullopt;
}

std::optional<DType> OnnxConverter::dtypeOf(const std::string &name) const {
  for (const GraphInput &input : graph.inputs)
    if (input.name == name)
      return input.dtype;
  if (auto it = constants.find(name); it != constants.end())
    return it->second.dtype;
  if (auto it = inferredTypes.find(name); it != inferredTypes.end())
    return it->second;
  if (auto type = convertedTypeOf(name))
    return type->first;
  return std::nullopt;
}

Shape OnnxConverter::requireShape(const std::string &name,
                                  const std::string &what) const {
  std::optional<Shape> shape = shapeOf(name);
  if (!shape)
    throw Unsupported{what + " needs the static shape of '" + name +
                      "', which shape inference did not give"};
  return *shape;
}

DType OnnxConverter::requireDType(const std::string &name,
                                  const std::string &what) const {
  std::optional<DType> dtype = dtypeOf(name);
  if (!dtype)
    throw Unsupported{what + " needs the dtype of '" + name +
                      "', which shape inference did not give"};
  return *dtype;
}

std::string OnnxConverter::addStep(const GraphNode &owner,
                                   const std::string &op,
                                   std::vector<std::string> inputs,
                                   const std::string &suffix,
                                   std::map<std::string, AttrValue> attrs) {
  std::string output = owner.outputs.at(0) + "_" + suffix;
  addOutputStep(owner, op, std::move(inputs), output, std::move(attrs));
  return output;
}

void OnnxConverter::addOutputStep(const GraphNode &owner, const std::string &op,
                                  std::vector<std::string> inputs,
                                  const std::string &output,
                                  std::map<std::string, AttrValue> attrs) {
  GraphNode step;
  step.name = owner.name + "_" + output;
  step.op = op;
  step.inputs = std::move(inputs);
  step.outputs = {output};
  step.attrs = std::move(attrs);
  graph.nodes.push_back(std::move(step));
}

std::string OnnxConverter::addStepConstant(const GraphNode &owner,
                                           const std::string &suffix,
                                           Tensor value) {
  std::string name = owner.outputs.at(0) + "_" + suffix;
  addConstant(name, std::move(value));
  return name;
}

/// Constant: its `value` tensor, or a float or int (list) attribute.
void OnnxConverter::convertConstant(const onnx::NodeProto &node) {
  if (node.attribute_size() != 1)
    throw Unsupported{"Constant needs exactly one value attribute"};
  const onnx::AttributeProto &attr = node.attribute(0);
  Tensor value;
  if (attr.name() == "value") {
    value = tensorFromProto(attr.t(), modelDir);
  } else if (attr.name() == "value_float" || attr.name() == "value_int") {
    bool isFloat = attr.name() == "value_float";
    value = Tensor(isFloat ? DType::F32 : DType::I64, {});
    if (isFloat)
      value.set(0, attr.f());
    else
      value.as<int64_t>()[0] = attr.i();
  } else if (attr.name() == "value_floats" || attr.name() == "value_ints") {
    bool isFloat = attr.name() == "value_floats";
    int64_t count = isFloat ? attr.floats_size() : attr.ints_size();
    value = Tensor(isFloat ? DType::F32 : DType::I64, {count});
    for (int64_t i = 0; i < count; ++i) {
      if (isFloat)
        value.set(i, attr.floats(i));
      else
        value.as<int64_t>()[i] = attr.ints(i);
    }
  } else {
    throw Unsupported{"Constant attribute '" + attr.name() +
                      "' is not supported"};
  }
  addConstant(node.output(0), std::move(value));
}

void OnnxConverter::convertIdentity(const onnx::NodeProto &node) {
  aliases[node.output(0)] = resolve(node.input(0));
}

void OnnxConverter::convertOrFold(const onnx::NodeProto &node) {
  if (!foldShapeNode(node) && !foldToConstants(node) &&
      !foldToSymbolicSizes(node))
    convertNode(node);
}

/// A shape computation whose value is known from the symbols' sizes (Shape
/// of [1, seq], then Gather, Concat, arithmetic, Where, ...:
/// propagateSymbolicShapes and ONNX's data propagation): a constant where
/// every element is fixed, else computed from the run's sizes (dim_size
/// ops); its elements are kept for the ops that read it as a shape
/// (symbolicValueOf).
bool OnnxConverter::foldToSymbolicSizes(const onnx::NodeProto &node) {
  if (node.output_size() != 1 || node.op_type() == "Constant")
    return false;
  const std::string &output = node.output(0);
  auto value = symbolicShapeValues.find(output);
  std::optional<SymbolicShape> shape = symbolicShapeOf(output);
  auto type = inferredTypes.find(output);
  if (value == symbolicShapeValues.end() || !shape || shape->size() > 1 ||
      !isStaticShape(*shape) || type == inferredTypes.end() ||
      symbolicElements(*shape).factor !=
          static_cast<int64_t>(value->second.size()))
    return false;
  const std::vector<SymbolicSize> &sizes = value->second;
  // A negated size (-seq) is no size: the node computes it as it is.
  if (std::any_of(sizes.begin(), sizes.end(),
                  [](const SymbolicSize &size) { return size.isNegated(); }))
    return false;
  Shape staticShape = evaluateShape(*shape, {});
  if (std::all_of(sizes.begin(), sizes.end(),
                  [](const SymbolicSize &size) { return size.isStatic(); })) {
    if (type->second != DType::I1 && !isInteger(type->second))
      return false;
    Tensor constant(type->second, staticShape);
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (type->second == DType::I64)
        constant.as<int64_t>()[k] = sizes[k].factor;
      else
        constant.set(k, static_cast<double>(sizes[k].factor));
    }
    addConstant(output, std::move(constant));
    return true;
  }
  if (type->second != DType::I64)
    return false;
  GraphNode owner;
  owner.name = node.name();
  owner.outputs = {output};
  auto element = [&](size_t k, const std::string &name) {
    if (sizes[k].isStatic()) {
      Tensor constant(DType::I64, staticShape.empty() ? Shape{} : Shape{1});
      constant.as<int64_t>()[0] = sizes[k].factor;
      addConstant(name, std::move(constant));
      return;
    }
    if (staticShape.empty()) {
      addOutputStep(owner, "dim_size", {}, name,
                    {{"size", sizeText(sizes[k])}});
      return;
    }
    std::string scalar = name + "_size";
    addOutputStep(owner, "dim_size", {}, scalar,
                  {{"size", sizeText(sizes[k])}});
    addOutputStep(owner, "reshape", {scalar}, name,
                  {{"shape", std::vector<int64_t>{1}}});
  };
  if (sizes.size() == 1) {
    element(0, output);
  } else {
    std::vector<std::string> parts;
    for (size_t k = 0; k < sizes.size(); ++k) {
      parts.push_back(output + "_" + std::to_string(k));
      element(k, parts.back());
    }
    addOutputStep(owner, "concat", parts, output, {{"axis", int64_t(0)}});
  }
  return true;
}

std::string OnnxConverter::expand(const onnx::NodeProto &owner,
                                  const std::string &op,
                                  const std::vector<std::string> &inputs,
                                  std::vector<onnx::AttributeProto> attrs,
                                  const std::string &output) {
  onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(owner.name());
  for (const std::string &input : inputs)
    node.add_input(input);
  node.add_output(!output.empty() ? output
                                  : owner.output(0) + "_" + op + "_" +
                                        std::to_string(expandedNodes++));
  for (onnx::AttributeProto &attr : attrs)
    *node.add_attribute() = std::move(attr);
  convertOrFold(node);
  return node.output(0);
}

std::string OnnxConverter::expandConstant(const onnx::NodeProto &owner,
                                          Tensor value) {
  std::string name =
      owner.output(0) + "_constant_" + std::to_string(expandedNodes++);
  addConstant(name, std::move(value));
  return name;
}

/// One input is the value itself; more are combined left to right, the
/// intermediate results named after the node's output.
void OnnxConverter::convertVariadic(const onnx::NodeProto &node,
                                    const GraphNode &pattern) {
  if (node.input_size() == 0 || node.attribute_size() != 0)
    throw Unsupported{node.op_type() + " needs one or more inputs and no "
                                       "attributes"};
  if (node.input_size() == 1) {
    aliases[node.output(0)] = resolve(node.input(0));
    return;
  }
  std::string partial = resolve(node.input(0));
  for (int i = 1; i < node.input_size(); ++i) {
    GraphNode step = pattern;
    step.name =
        pattern.name +
        (i + 1 < node.input_size() ? "_" + std::to_string(i) : std::string());
    step.inputs = {partial, resolve(node.input(i))};
    step.outputs = {i + 1 < node.input_size()
                        ? node.output(0) + "_partial_" + std::to_string(i)
                        : node.output(0)};
    partial = step.outputs[0];
    graph.nodes.push_back(std::move(step));
  }
}

Graph OnnxConverter::convert(onnx::ModelProto &model) {
  opset = defaultOpset(model);
  if (opset < kOldestOpset || opset > kMaxOpset)
    throw Error(path + ": error: the model uses opset " +
                std::to_string(opset) + " of the default domain; fusec reads " +
                std::to_string(kOldestOpset) + " to " +
                std::to_string(kMaxOpset));
  const onnx::GraphProto &proto = model.graph();
  graph.name = proto.name().empty() ? "main" : proto.name();
  graph.sourcePath = path;
  for (onnx::TensorProto &initializer :
       *model.mutable_graph()->mutable_initializer()) {
    try {
      addConstant(initializer.name(), tensorFromProto(initializer, modelDir));
    } catch (const Unsupported &unsupported) {
      errors.push_back(path + ": initializer '" + initializer.name() +
                       "': error: " + unsupported.reason);
    }
    // The converter holds the value now: a large initializer's bytes leave
    // the model at once (GPT-2 small's 650 MB were held to the end, and
    // copied by every inference).
    if (initializer.raw_data().size() > kInferenceInitializerBytes) {
      std::string().swap(*initializer.mutable_raw_data());
      releasedInitializers.insert(initializer.name());
    }
  }
  boundNames = namesUsedAsConstants(proto);
  for (const onnx::ValueInfoProto &input : proto.input()) {
    if (constants.count(input.name()))
      continue; // old IRs list initializers as inputs too
    auto value = options.staticInputValues.find(input.name());
    if (value != options.staticInputValues.end() &&
        boundNames.count(input.name())) {
      addConstant(input.name(), value->second);
      continue;
    }
    const onnx::TypeProto &type = input.type();
    std::optional<DType> dtype =
        type.has_tensor_type() ? dtypeOfOnnx(type.tensor_type().elem_type())
                               : std::nullopt;
    if (!dtype) {
      std::string what =
          type.has_tensor_type()
              ? "is a tensor of " +
                    onnxTypeName(type.tensor_type().elem_type()) +
                    ", a dtype fusec does not have"
          : type.has_sequence_type() ? "is a sequence, not a tensor"
          : type.has_optional_type() ? "is an optional, not a tensor"
          : type.has_map_type()      ? "is a map, not a tensor"
                                     : "is not a tensor";
      errors.push_back(path + ": input '" + input.name() + "': error: " + what);
      continue;
    }
    Shape shape;
    std::vector<std::string> dimNames;
    auto given = options.inputShapes.find(input.name());
    if (given != options.inputShapes.end()) {
      shape = given->second;
    } else {
      for (const onnx::TensorShapeProto::Dimension &dim :
           type.tensor_type().shape().dim()) {
        // A dim with no name (`?`) is named after its input and place,
        // so that --dim can give it a range: "ids_dim1".
        std::string param =
            dim.dim_param().empty()
                ? input.name() + "_dim" + std::to_string(shape.size())
                : dim.dim_param();
        auto range = options.dimRanges.find(param);
        if (!dim.has_dim_value() && range != options.dimRanges.end() &&
            range->second.min == range->second.max) {
          shape.push_back(range->second.min); // `--dim NAME=SIZE`: fixed
          continue;
        }
        if (!dim.has_dim_value() && range != options.dimRanges.end()) {
          // Left symbolic: the model serves the range.
          dimNames.resize(type.tensor_type().shape().dim_size());
          dimNames[shape.size()] = param;
          shape.push_back(-1);
          if (std::none_of(graph.symbols.begin(), graph.symbols.end(),
                           [&](const DimSymbol &symbol) {
                             return symbol.name == param;
                           }))
            graph.symbols.push_back(range->second);
          continue;
        }
        if (!dim.has_dim_value()) {
          errors.push_back(
              path + ": input '" + input.name() + "': error: dim '" + param +
              "' is symbolic; fix the shape with " + "--input-shape " +
              input.name() + "=D0,D1,... or give its range with --dim " +
              param + "=MIN..MAX");
          break;
        }
        shape.push_back(dim.dim_value());
      }
    }
    graph.inputs.push_back({input.name(), *dtype, shape, dimNames});
  }
  inferShapes(model);
  for (const onnx::NodeProto &node : proto.node())
    for (const std::string &output : node.output())
      producers[output] = &node;
  for (int index = 0; index < proto.node_size(); ++index) {
    const onnx::NodeProto &node = proto.node(index);
    auto fail = [&](const std::string &reason) {
      errors.push_back(path + ": " + describeOnnxNode(node, index, opset) +
                       ": error: " + reason);
    };
    try {
      propagateSymbolicShapes(node);
      if (foldShapeNode(node) || foldToConstants(node) ||
          foldToSymbolicSizes(node) || convertSymbolicShapeReader(node))
        continue;
      convertNode(node);
      if (std::any_of(node.output().begin(), node.output().end(),
                      [&](const std::string &output) {
                        return uninferredOutputs.count(output) &&
                               shapeOf(output) && dtypeOf(output);
                      }))
        inferShapes(model);
    } catch (const Unsupported &unsupported) {
      fail(unsupported.reason);
    } catch (const std::bad_variant_access &) {
      // An attribute read as another type than the model gave it (a float
      // `axis`, a string `to`, ...): fuzz-onnx.
      fail("an attribute has the wrong type");
    } catch (const std::length_error &) {
      // A constant sized by dims declared far past any data (fuzz-onnx).
      fail("a constant it needs would be too large");
    } catch (const std::out_of_range &) {
      // A converter reading an input, output or dim the node lacks.
      fail("the node lacks an input or output its op needs");
    }
  }
  if (!errors.empty()) {
    std::string message;
    for (const std::string &error : errors)
      message += (message.empty() ? "" : "\n") + error;
    throw Error(message);
  }
  for (const onnx::ValueInfoProto &output : proto.output()) {
    graph.outputs.push_back(resolve(output.name()));
    graph.outputNames.push_back(output.name());
  }
  return std::move(graph);
}

void OnnxConverter::broadcastFromAxis(GraphNode &node, int64_t axis) {
  if (node.inputs.size() < 2 || node.inputs[1].empty())
    throw Unsupported{"broadcasting from an axis needs a second operand"};
  const Shape first = requireShape(node.inputs[0], node.name),
              second = requireShape(node.inputs[1], node.name);
  const int64_t rank = first.size(), count = second.size();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis + count > rank)
    throw Unsupported{"broadcast axis " + std::to_string(axis) +
                      " leaves no room for the second operand's " +
                      std::to_string(count) + " dims in rank " +
                      std::to_string(rank)};
  Shape aligned(rank, 1);
  for (int64_t i = 0; i < count; ++i) {
    if (second[i] != first[axis + i] && second[i] != 1)
      throw Unsupported{"the second operand's dims [" + formatShape(second) +
                        "] do not match the first's [" + formatShape(first) +
                        "] from axis " + std::to_string(axis)};
    aligned[axis + i] = second[i];
  }
  node.inputs[1] = viewStep(*this, node, node.inputs[1], aligned, "aligned");
}

void OnnxConverter::convertNode(const onnx::NodeProto &node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    throw Unsupported{"ops of domain '" + node.domain() +
                      "' are not supported"};
  const OnnxOpDef *def = OnnxRegistry::instance().find(node.op_type());
  // The converters index output 0 and some ops' fixed inputs: arity is
  // checked before any of them does (protobuf does not).
  if (node.output_size() < 1 || (def && node.input_size() < def->minInputs))
    throw Unsupported{node.op_type() + " has " +
                      std::to_string(node.input_size()) + " inputs and " +
                      std::to_string(node.output_size()) + " outputs: too few"};
  if (std::string problem = opsetVersionProblem(def, node.op_type(), opset);
      !problem.empty())
    throw Unsupported{problem};
  if (def)
    for (const onnx::AttributeProto &attr : node.attribute())
      if (std::string problem = def->attributeOpsetProblem(attr.name(), opset);
          !problem.empty())
        throw Unsupported{problem};
  if (!def)
    throw Unsupported{"op " + node.op_type() + " is not supported"};
  if (def->convert) {
    def->convert(*this, node);
    return;
  }
  // Every generically converted op reads its first input.
  if (node.input_size() < 1 || node.input(0).empty())
    throw Unsupported{node.op_type() + "'s input 0 is missing"};
  if (opset < def->sinceOpset)
    throw Unsupported{node.op_type() + " is defined from opset " +
                      std::to_string(def->sinceOpset) + " on"};
  GraphNode graphNode;
  graphNode.name = node.name().empty() ? node.output(0) : node.name();
  graphNode.op = def->graphOp;
  if (def->variadic && node.input_size() != 2) {
    convertVariadic(node, graphNode);
    return;
  }
  // Before opset 7 the binary ops and Gemm broadcast only with broadcast =
  // 1: the second operand (Gemm's C) matched to the first's trailing dims,
  // which NumPy's broadcasting does too, or to the dims from `axis` on,
  // which it does not.
  const onnx::OpSchema *legacy =
      opset < 7 ? onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "")
                : nullptr;
  bool legacyBroadcast = legacy && legacy->attributes().count("broadcast");
  std::optional<int64_t> legacyAxis;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (legacyBroadcast && attr.name() == "axis") {
      legacyAxis = attr.i();
      continue;
    }
    if (legacyBroadcast && attr.name() == "broadcast")
      continue;
    if (!def->readsAttribute(attr.name()))
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    // Lists of floats and strings (Upsample-7's scales, the recurrent ops'
    // activations) are read by the op's converter from the node itself.
    if (attr.type() == onnx::AttributeProto::FLOATS ||
        attr.type() == onnx::AttributeProto::STRINGS)
      continue;
    graphNode.attrs[attr.name()] = attrValueOf(attr);
  }
  // A float attribute left out takes the spec's default, which is a float:
  // LeakyRelu's alpha is 0.01f (0.0099999997764825821), not the double
  // 0.01 the graph op would assume, where the op computes in f64.
  if (const onnx::OpSchema *schema =
          onnx::OpSchemaRegistry::Schema(node.op_type(), opset, ""))
    for (const OnnxOpDef::Attribute &read : def->attrs) {
      const std::string &name = read.name;
      auto attr = schema->attributes().find(name);
      if (!graphNode.attrs.count(name) && attr != schema->attributes().end() &&
          attr->second.default_value.type() == onnx::AttributeProto::FLOAT)
        graphNode.attrs[name] = attrValueOf(attr->second.default_value);
    }
  for (int i = 0; i < node.input_size(); ++i) {
    auto constantInput =
        std::find_if(def->constantInputs.begin(), def->constantInputs.end(),
                     [&](const OnnxOpDef::ConstantInput &input) {
                       return input.index == static_cast<size_t>(i) &&
                              opset >= input.sinceOpset;
                     });
    if (constantInput == def->constantInputs.end()) {
      graphNode.inputs.push_back(
          node.input(i).empty() ? std::string() : resolve(node.input(i)));
      continue;
    }
    if (node.input(i).empty())
      continue; // an optional bound left out
    if (std::string(constantInput->attr) == "constant_value" &&
        !constants.count(resolve(node.input(i)))) {
      // A pad value computed at run time: padValue selects it.
      graphNode.inputs.push_back(resolve(node.input(i)));
      continue;
    }
    std::string what =
        "input " + std::to_string(i) + " (" + constantInput->attr + ")";
    const Tensor &value = constantValue(resolve(node.input(i)), what);
    if (std::string(constantInput->attr) == "constant_value" &&
        (value.dtype == DType::F32 || value.dtype == DType::F64 ||
         value.dtype == DType::F16 || value.dtype == DType::BF16))
      graphNode.attrs[constantInput->attr] =
          value.numElements() ? value.at(0) : 0.0;
    else
      graphNode.attrs[constantInput->attr] = integersOf(value, what);
  }
  for (const std::string &output : node.output())
    graphNode.outputs.push_back(output);
  if (legacyAxis)
    broadcastFromAxis(graphNode, *legacyAxis);
  if (def->rewrite)
    def->rewrite(*this, node, graphNode);
  if (graphNode.outputs.size() != 1)
    throw Unsupported{"only one output is supported"};
  graph.nodes.push_back(std::move(graphNode));
}

void registerImporterOps(OnnxRegistry &registry) {
  registry.on("Constant",
              [](OnnxConverter &converter, const onnx::NodeProto &node) {
                converter.convertConstant(node);
              });
  registry
      .on("Identity",
          [](OnnxConverter &converter, const onnx::NodeProto &node) {
            converter.convertIdentity(node);
          })
      .minInputs(1);
  for (const char *op : {"Shape", "Size"})
    registry
        .on(op,
            [](OnnxConverter &converter, const onnx::NodeProto &node) {
              converter.convertShapeOrSize(node);
            })
        .minInputs(1);
  registry.on("If", [](OnnxConverter &converter, const onnx::NodeProto &node) {
    converter.convertIf(node);
  });
  registry.on("Loop",
              [](OnnxConverter &converter, const onnx::NodeProto &node) {
                converter.convertLoop(node);
              });
  registry.on("Scan",
              [](OnnxConverter &converter, const onnx::NodeProto &node) {
                converter.convertScan(node);
              });
}

} // namespace fusec::onnx_import

namespace fusec {

using namespace onnx_import;

namespace {

/// The model `contents` named `path`: binary protobuf, or ONNX's text
/// syntax (onnx/defs/parser.h) when `text`.
onnx::ModelProto parseModel(const std::string &path, llvm::StringRef contents,
                            bool text) {
  onnx::ModelProto model;
  if (text) {
    onnx::Common::Status status =
        onnx::OnnxParser::Parse(model, contents.str().c_str());
    if (!status.IsOK())
      throw Error(path + ": error: not a valid ONNX text model: " +
                  status.ErrorMessage());
    return model;
  }
  if (contents.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(contents.data(), static_cast<int>(contents.size())))
    throw Error(path + ": error: not a valid ONNX model (protobuf parse "
                       "failed)");
  return model;
}

/// The file at `path`, mapped where it is large (the protobuf parse then
/// copies a model's weights once, from the page cache), or null when it
/// cannot be opened.
std::unique_ptr<llvm::MemoryBuffer> mapFile(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  return buffer ? std::move(*buffer) : nullptr;
}

} // namespace

bool isOnnxTextPath(const std::string &path) {
  return llvm::StringRef(path).ends_with(".onnxtxt");
}

bool isOnnxModelPath(const std::string &path) {
  return llvm::StringRef(path).ends_with(".onnx") || isOnnxTextPath(path);
}

Graph readOnnxGraph(const std::string &path, const OnnxOptions &options) {
  std::unique_ptr<llvm::MemoryBuffer> contents = mapFile(path);
  if (!contents)
    throw Error(path + ": error: cannot open the model file");
  onnx::ModelProto model =
      parseModel(path, contents->getBuffer(), isOnnxTextPath(path));
  contents.reset();
  OnnxConverter converter(path, options);
  return converter.convert(model);
}

Graph parseOnnxGraph(const std::string &contents, const std::string &name,
                     bool text, const OnnxOptions &options) {
  onnx::ModelProto model = parseModel(name, contents, text);
  OnnxConverter converter(name, options);
  return converter.convert(model);
}

OnnxModelSummary summarizeOnnxModel(const std::string &path) {
  std::unique_ptr<llvm::MemoryBuffer> contents = mapFile(path);
  if (!contents)
    throw Error(path + ": error: not a valid ONNX model (protobuf parse "
                       "failed)");
  onnx::ModelProto model =
      parseModel(path, contents->getBuffer(), isOnnxTextPath(path));
  std::set<std::string> initializers;
  for (const onnx::TensorProto &initializer : model.graph().initializer())
    initializers.insert(initializer.name());
  OnnxModelSummary summary;
  summary.opset = defaultOpset(model);
  summary.nodeCount = model.graph().node_size();
  summary.opsetSupported =
      summary.opset >= kOldestOpset && summary.opset <= kMaxOpset;
  auto dtypeOfValue = [](const onnx::ValueInfoProto &value) {
    return value.type().has_tensor_type()
               ? dtypeOfOnnx(value.type().tensor_type().elem_type())
               : std::nullopt;
  };
  for (const onnx::ValueInfoProto &input : model.graph().input())
    if (!initializers.count(input.name())) {
      summary.inputNames.push_back(input.name());
      summary.inputTypes.push_back(dtypeOfValue(input));
      std::optional<std::vector<int64_t>> dims;
      if (input.type().tensor_type().has_shape()) {
        dims.emplace();
        for (const auto &dim : input.type().tensor_type().shape().dim())
          dims->push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      }
      summary.inputDims.push_back(dims);
    }
  for (const onnx::ValueInfoProto &output : model.graph().output())
    summary.outputTypes.push_back(dtypeOfValue(output));
  for (const onnx::NodeProto &node : model.graph().node())
    if (std::find(summary.opTypes.begin(), summary.opTypes.end(),
                  node.op_type()) == summary.opTypes.end())
      summary.opTypes.push_back(node.op_type());
  return summary;
}

namespace {

/// The opsets fusec reads `def` in: from the first that defines it in a
/// version fusec reads (not before its sinceOpset; a whole-node converter
/// checks its own) to the last that does not deprecate it. nullopt when
/// there is none.
std::optional<std::pair<int64_t, int64_t>> readOpsets(const OnnxOpDef &def) {
  auto readable = [&](int64_t opset) {
    return opsetVersionProblem(&def, def.name, opset).empty();
  };
  int64_t oldest = def.convert ? kOldestOpset
                               : std::max(def.sinceOpset, kOldestOpset),
          newest = kMaxOpset;
  while (oldest <= kMaxOpset && !readable(oldest))
    ++oldest;
  while (newest > oldest && !readable(newest))
    --newest;
  if (oldest > kMaxOpset)
    return std::nullopt;
  return std::make_pair(oldest, newest);
}

std::string opsetRange(int64_t first, int64_t last) {
  return std::to_string(first) + "-" + std::to_string(last);
}

} // namespace

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> lines;
  for (const OnnxOpDef &def : OnnxRegistry::instance().ops())
    if (auto opsets = readOpsets(def))
      lines.push_back(def.name + " " +
                      opsetRange(opsets->first, opsets->second));
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string supportedOnnxOpsMarkdown() {
  std::map<std::string, std::vector<const OnnxOpDef *>> byFamily;
  for (const OnnxOpDef &def : OnnxRegistry::instance().ops())
    byFamily[def.family].push_back(&def);
  std::ostringstream out;
  for (auto &[family, defs] : byFamily) {
    std::sort(defs.begin(), defs.end(),
              [](const OnnxOpDef *a, const OnnxOpDef *b) {
                return a->name < b->name;
              });
    out << "\n## " << family << "\n\n"
        << (family == "Importer" ? "frontends/onnx/OnnxImporter.cpp"
                                 : "frontends/onnx/ops/" + family + ".cpp")
        << "\n\n| op | opsets | attributes | inputs read as constants |\n"
        << "|---|---|---|---|\n";
    for (const OnnxOpDef *def : defs) {
      auto opsets = readOpsets(*def);
      if (!opsets)
        continue;
      std::string attrs, constants;
      for (const OnnxOpDef::Attribute &attr : def->attrs) {
        attrs += (attrs.empty() ? "" : ", ") + attr.name;
        if (attr.first != kOldestOpset || attr.last != kMaxOpset)
          attrs += " (" + opsetRange(attr.first, attr.last) + ")";
      }
      if (def->convert && attrs.empty())
        attrs = "read by its converter";
      for (size_t i = 0; i < def->readsConstantsFrom; ++i)
        if (def->bindsInput(i))
          constants += (constants.empty() ? "" : ", ") + std::to_string(i);
        else if (i > 8) // past every op's inputs
          break;
      if (def->readsConstantsFrom != SIZE_MAX)
        constants += (constants.empty() ? "" : ", ") +
                     std::to_string(def->readsConstantsFrom) + " on";
      out << "| " << def->name << " | "
          << opsetRange(opsets->first, opsets->second) << " | " << attrs
          << " | " << constants << " |\n";
    }
  }
  return out.str();
}

} // namespace fusec
