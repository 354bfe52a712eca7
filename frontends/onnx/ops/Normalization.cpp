//===- Normalization.cpp - ONNX normalization ops -------------------------===//
//
// Normalizations: Layer, RMS, Group, Batch, Instance, Lp, LRN and
// MeanVarianceNormalization.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

namespace fusec::onnx_import {

namespace {

/// LayerNormalization's, RMSNormalization's and GroupNormalization's
/// stash_type: fusec computes their statistics in f32 (f64 for f64 input).
void dropStashType(GraphNode &node, const std::string &opType) {
  auto stash = node.attrs.find("stash_type");
  if (stash == node.attrs.end())
    return;
  if (std::get<int64_t>(stash->second) != onnx::TensorProto::FLOAT)
    throw Unsupported{opType + " stash_type must be 1 (float)"};
  node.attrs.erase(stash);
}

/// LayerNormalization's optional Mean and InvStdDev outputs (f32, the
/// normalized dims kept as 1s), as reductions next to the layer_norm.
void addLayerNormStatistics(OnnxConverter &converter,
                            const onnx::NodeProto &proto,
                            const GraphNode &node) {
  bool wantsMean = proto.output_size() > 1 && !proto.output(1).empty();
  bool wantsInvStdDev = proto.output_size() > 2 && !proto.output(2).empty();
  if (!wantsMean && !wantsInvStdDev)
    return;
  const std::string &x = node.inputs.at(0);
  std::optional<size_t> knownRank = converter.inferredRank(x);
  if (!knownRank)
    throw Unsupported{"the Mean and InvStdDev outputs need the input's rank, "
                      "which shape inference did not give"};
  int64_t rank = *knownRank;
  auto axisAttr = node.attrs.find("axis");
  int64_t axis =
      axisAttr == node.attrs.end() ? -1 : std::get<int64_t>(axisAttr->second);
  axis = resolvedAxis(axis, rank);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  auto epsilonAttr = node.attrs.find("epsilon");
  double epsilon = epsilonAttr == node.attrs.end()
                       ? 1e-5
                       : std::get<double>(epsilonAttr->second);
  std::string prefix = proto.output(0) + "_statistics_";
  auto add = [&](const std::string &op, std::vector<std::string> inputs,
                 const std::string &output,
                 std::map<std::string, AttrValue> attrs = {}) {
    converter.addOutputStep(node, op, std::move(inputs), output,
                            std::move(attrs));
    return output;
  };
  const std::map<std::string, AttrValue> reduce = {{"axes", axes},
                                                   {"keepdims", int64_t(1)}};
  // f32 statistics (stash_type 1), as ONNX's function body computes them.
  std::string xf = add("cast", {x}, prefix + "x", {{"dtype", "f32"}});
  std::string mean = add("reduce_mean", {xf},
                         wantsMean ? proto.output(1) : prefix + "mean", reduce);
  if (!wantsInvStdDev)
    return;
  std::string centered = add("sub", {xf, mean}, prefix + "centered");
  std::string squared = add("mul", {centered, centered}, prefix + "squared");
  std::string variance =
      add("reduce_mean", {squared}, prefix + "variance", reduce);
  Tensor epsilonValue(DType::F32, {});
  epsilonValue.set(0, epsilon);
  converter.addConstant(prefix + "epsilon", epsilonValue);
  std::string shifted =
      add("add", {variance, prefix + "epsilon"}, prefix + "shifted");
  std::string deviation = add("sqrt", {shifted}, prefix + "deviation");
  add("reciprocal", {deviation}, proto.output(2));
}

void layerNormOutputs(OnnxConverter &converter, const onnx::NodeProto &proto,
                      GraphNode &node) {
  node.outputs.resize(1);
  addLayerNormStatistics(converter, proto, node);
  dropStashType(node, proto.op_type());
}

/// BatchNormalization: scale * (x - mean) / sqrt(var + epsilon) + B, each
/// parameter a vector along dim 1, in the order ONNX's reference computes
/// it (and its test data was made with). In training mode (opset 14 on)
/// mean and var are the batch's (over every dim but 1; the variance the
/// population's), and the optional outputs are the running statistics,
/// input * momentum + batch's * (1 - momentum).
void batchNormalization(OnnxConverter &converter, const onnx::NodeProto &,
                        GraphNode &node) {
  const bool training = intAttr(node, "training_mode", 0) != 0;
  const double momentum = node.attrs.count("momentum")
                              ? std::get<double>(node.attrs.at("momentum"))
                              : static_cast<double>(0.9f);
  node.attrs.erase("training_mode");
  node.attrs.erase("momentum");
  // Before opset 7, is_test (default 0) chose the batch's statistics;
  // before opset 9, spatial 0 asked for statistics per activation.
  auto flag = [&](const char *name, int64_t fallback) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? fallback : std::get<int64_t>(it->second);
  };
  if ((node.attrs.count("is_test") && converter.opset >= 7) ||
      (node.attrs.count("spatial") && converter.opset >= 9))
    throw Unsupported{"BatchNormalization of opset " +
                      std::to_string(converter.opset) +
                      " has no attribute is_test or spatial"};
  if (converter.opset < 7 && flag("is_test", 0) == 0)
    throw Unsupported{"is_test is 0: BatchNormalization then uses the "
                      "batch's statistics, and fusec compiles inference only"};
  if (flag("spatial", 1) != 1)
    throw Unsupported{"spatial 0 (statistics per activation) is not "
                      "supported"};
  node.attrs.erase("is_test");
  node.attrs.erase("spatial");
  const std::vector<std::string> outputs = node.outputs;
  if (!training &&
      std::count_if(outputs.begin() + 1, outputs.end(),
                    [](const std::string &o) { return !o.empty(); }))
    throw Unsupported{"BatchNormalization's running mean and variance "
                      "outputs exist in training mode only"};
  if (training && outputs.size() > 3)
    throw Unsupported{"BatchNormalization has 3 outputs in training mode "
                      "(opset 14 on: Y, running_mean, running_var)"};
  node.outputs.resize(1);
  if (node.inputs.size() != 5 ||
      std::count(node.inputs.begin(), node.inputs.end(), std::string()))
    throw Unsupported{"BatchNormalization takes X, scale, B, mean and var"};
  const std::string x = node.inputs[0];
  Shape shape = converter.requireShape(x, "BatchNormalization");
  DType dtype = converter.requireDType(x, "BatchNormalization");
  if (shape.size() < 2)
    throw Unsupported{"BatchNormalization's input must have rank >= 2"};
  Shape along(shape.size() - 1, 1);
  along[0] = shape[1];
  // f16 and bf16 compute in f32 and round once (ONNX's reference mixes:
  // its f32 epsilon and momentum widen part of the arithmetic).
  const DType compute =
      isFloat(dtype) && dtypeBytes(dtype) < 4 ? DType::F32 : dtype;
  const std::string computeName = dtypeName(compute);
  std::string input = x;
  if (compute != dtype)
    input = converter.addStep(node, "cast", {x}, "x_wide",
                              {{"dtype", computeName}});
  const char *names[] = {"scale", "B", "mean", "var"};
  std::string params[4];
  for (int i = 0; i < 4; ++i) {
    std::string value = node.inputs[i + 1];
    Shape paramShape = converter.requireShape(value, names[i]);
    if (paramShape != Shape{shape[1]})
      throw Unsupported{std::string("BatchNormalization's ") + names[i] +
                        " must be a vector of the " + std::to_string(shape[1]) +
                        " channels"};
    if (converter.requireDType(value, names[i]) != compute)
      value = converter.addStep(node, "cast", {value},
                                std::string(names[i]) + "_cast",
                                {{"dtype", computeName}});
    params[i] = viewStep(converter, node, value, along,
                         std::string(names[i]) + "_view");
  }
  auto epsilonAttr = node.attrs.find("epsilon");
  double epsilon = epsilonAttr == node.attrs.end()
                       ? static_cast<double>(1e-5f)
                       : std::get<double>(epsilonAttr->second);
  std::string epsilonValue = converter.addStepConstant(
      node, "epsilon", scalarTensor(compute, epsilon));
  if (training) {
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (d != 1)
        axes.push_back(d);
    std::map<std::string, AttrValue> over = {{"axes", axes},
                                             {"keepdims", int64_t(0)}};
    // The batch's statistics are values of x's dtype (ReduceMean's
    // results), rounded to it as the reference's are.
    auto roundedToInput = [&](const std::string &value) {
      if (compute == dtype)
        return value;
      return converter.addStep(
          node, "cast",
          {converter.addStep(node, "cast", {value}, value + "_narrow",
                             {{"dtype", std::string(dtypeName(dtype))}})},
          value + "_rounded", {{"dtype", computeName}});
    };
    std::string batchMean = roundedToInput(
        converter.addStep(node, "reduce_mean", {input}, "batch_mean", over));
    std::string meanAlong =
        viewStep(converter, node, batchMean, along, "batch_mean_view");
    std::string deviations =
        converter.addStep(node, "sub", {input, meanAlong}, "deviations");
    std::string batchVar = roundedToInput(converter.addStep(
        node, "reduce_mean",
        {converter.addStep(node, "mul", {deviations, deviations}, "squares")},
        "batch_var", over));
    // Running statistics: the input mean and var blended with the batch's
    // (in the compute dtype), in the input's dtype.
    for (int i : {1, 2}) {
      if (static_cast<int>(outputs.size()) <= i || outputs[i].empty())
        continue;
      const std::string name = names[i + 1];
      DType outputType = converter.requireDType(node.inputs[i + 2], name);
      auto scaled = [&](const std::string &value, double factor,
                        const std::string &suffix) {
        return converter.addStep(
            node, "mul",
            {value, converter.addStepConstant(node, name + "_" + suffix,
                                              scalarTensor(compute, factor))},
            name + "_" + suffix + "_part");
      };
      std::string running = viewStep(converter, node, params[i + 1],
                                     Shape{shape[1]}, name + "_vector");
      std::string blend = converter.addStep(
          node, "add",
          {scaled(running, momentum, "momentum"),
           scaled(i == 1 ? batchMean : batchVar, 1.0 - momentum, "rest")},
          name + "_running");
      converter.addOutputStep(node, "cast", {blend}, outputs[i],
                              {{"dtype", std::string(dtypeName(outputType))}});
    }
    params[2] = meanAlong;
    params[3] = viewStep(converter, node, batchVar, along, "batch_var_view");
  }
  // x - mean, and scale times it, are x's dtype where their operands are
  // (ops of T, each rounded; a wider parameter widens them, as NumPy
  // promotes); the rest is the compute dtype (epsilon is an f32 attribute).
  auto ofInput = [&](const std::string &value) {
    return converter.addStep(node, "cast", {value}, value + "_narrow",
                             {{"dtype", std::string(dtypeName(dtype))}});
  };
  auto widened = [&](const std::string &value) {
    return converter.addStep(node, "cast", {value}, value + "_wide",
                             {{"dtype", computeName}});
  };
  const bool narrowCentered =
      compute != dtype &&
      (training || converter.requireDType(node.inputs[3], "mean") == dtype);
  const bool narrowScaled =
      narrowCentered &&
      converter.requireDType(node.inputs[1], "scale") == dtype;
  std::string centered =
      narrowCentered
          ? converter.addStep(node, "sub", {ofInput(input), ofInput(params[2])},
                              "centered")
          : converter.addStep(node, "sub", {input, params[2]}, "centered");
  std::string scaled =
      narrowScaled
          ? widened(converter.addStep(node, "mul",
                                      {ofInput(params[0]), centered}, "scaled"))
          : converter.addStep(
                node, "mul",
                {params[0], narrowCentered ? widened(centered) : centered},
                "scaled");
  std::string shifted =
      converter.addStep(node, "add", {params[3], epsilonValue}, "var_eps");
  std::string deviation =
      converter.addStep(node, "sqrt", {shifted}, "deviation");
  std::string normalized =
      converter.addStep(node, "div", {scaled, deviation}, "normalized");
  if (compute == dtype) {
    node.op = "add";
    node.inputs = {normalized, params[1]};
  } else {
    node.op = "cast";
    node.inputs = {
        converter.addStep(node, "add", {normalized, params[1]}, "shifted")};
  }
  node.attrs = {};
  if (compute != dtype)
    node.attrs["dtype"] = std::string(dtypeName(dtype));
}

/// MeanVarianceNormalization, as its function body: (x - E[x]) /
/// (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default [0, 2, 3]).
void meanVarianceNormalization(OnnxConverter &converter,
                               const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  DType dtype = converter.requireDType(x, "MeanVarianceNormalization");
  std::vector<int64_t> axes = {0, 2, 3};
  if (auto it = node.attrs.find("axes"); it != node.attrs.end())
    axes = std::get<std::vector<int64_t>>(it->second);
  std::map<std::string, AttrValue> over = {{"axes", axes},
                                           {"keepdims", int64_t(1)}};
  std::string mean = converter.addStep(node, "reduce_mean", {x}, "mean", over);
  std::string meanSquared =
      converter.addStep(node, "mul", {mean, mean}, "mean_squared");
  std::string squares = converter.addStep(node, "mul", {x, x}, "squares");
  std::string meanOfSquares = converter.addStep(node, "reduce_mean", {squares},
                                                "mean_of_squares", over);
  std::string variance =
      converter.addStep(node, "sub", {meanOfSquares, meanSquared}, "variance");
  std::string deviation =
      converter.addStep(node, "sqrt", {variance}, "deviation");
  std::string epsilon = converter.addStepConstant(
      node, "epsilon", scalarTensor(dtype, static_cast<double>(1e-9f)));
  std::string denominator =
      converter.addStep(node, "add", {deviation, epsilon}, "denominator");
  std::string centered = converter.addStep(node, "sub", {x, mean}, "centered");
  node.op = "div";
  node.inputs = {centered, denominator};
  node.attrs.clear();
}

/// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
/// the window [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] cut at
/// the ends: the squares padded with zeros along dim 1 and summed over
/// `size` shifted slices.
void localResponseNorm(OnnxConverter &converter, const onnx::NodeProto &,
                       GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "LRN");
  DType dtype = converter.requireDType(x, "LRN");
  int64_t rank = shape.size();
  if (rank < 3)
    throw Unsupported{"LRN's input must be [N, C, d1, ...]"};
  auto attr = [&](const char *name, double fallback) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? fallback : std::get<double>(it->second);
  };
  auto sizeAttr = node.attrs.find("size");
  if (sizeAttr == node.attrs.end())
    throw Unsupported{"LRN needs its size"};
  int64_t size = std::get<int64_t>(sizeAttr->second);
  if (size < 1 || size > 4096)
    throw Unsupported{"LRN's size must be in [1, 4096]"};
  const double alpha = attr("alpha", 1e-4f), beta = attr("beta", 0.75f),
               bias = attr("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const int64_t channels = shape[1];
  std::string squares = converter.addStep(node, "mul", {x, x}, "squares");
  std::vector<int64_t> pads(2 * rank, 0);
  pads[1] = before;
  pads[rank + 1] = after;
  std::string padded =
      converter.addStep(node, "pad", {squares}, "padded_squares",
                        {{"pads", pads}, {"constant_value", 0.0}});
  std::string sum;
  for (int64_t j = 0; j < size; ++j) {
    std::string window = converter.addStep(
        node, "slice", {padded}, "window_" + std::to_string(j),
        {{"starts", std::vector<int64_t>{j}},
         {"ends", std::vector<int64_t>{j + channels}},
         {"axes", std::vector<int64_t>{1}}});
    sum = sum.empty() ? window
                      : converter.addStep(node, "add", {sum, window},
                                          "sum_" + std::to_string(j));
  }
  auto constant = [&](const std::string &suffix, double value) {
    return converter.addStepConstant(node, suffix, scalarTensor(dtype, value));
  };
  std::string scaled = converter.addStep(
      node, "mul", {constant("rate", alpha / static_cast<double>(size)), sum},
      "scaled");
  std::string base =
      converter.addStep(node, "add", {constant("bias", bias), scaled}, "base");
  std::string denominator = converter.addStep(
      node, "pow", {base, constant("beta", beta)}, "denominator");
  node.op = "div";
  node.inputs = {x, denominator};
  node.attrs.clear();
}

/// LpNormalization: x / (sum |x|^p)^(1/p) along `axis` (p 1 or 2), 0 where
/// the norm is 0.
void lpNormalization(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const DType dtype = converter.requireDType(x, "LpNormalization");
  const int64_t rank = converter.requireShape(x, "LpNormalization").size();
  if (!isFloat(dtype))
    throw Unsupported{"LpNormalization takes floats"};
  const int64_t order = intAttr(node, "p", 2);
  if (order != 1 && order != 2)
    throw Unsupported{"LpNormalization's p must be 1 or 2, not " +
                      std::to_string(order)};
  const int64_t axis = resolvedAxis(intAttr(node, "axis", -1), rank);
  std::map<std::string, AttrValue> along = {
      {"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t(1)}};
  std::string norm =
      order == 2 ? converter.addStep(node, "reduce_l2", {x}, "norm", along)
                 : converter.addStep(
                       node, "reduce_sum",
                       {converter.addStep(node, "abs", {x}, "magnitude")},
                       "norm", along);
  std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0.0));
  node.op = "select";
  node.inputs = {converter.addStep(node, "eq", {norm, zero}, "norm_is_zero"),
                 zero, converter.addStep(node, "div", {x, norm}, "normalized")};
  node.attrs.clear();
}

/// InstanceNormalization: each (image, channel) normalized over its
/// spatial dims (a layer norm from axis 2 with a unit scale), then scaled
/// and shifted per channel.
void instanceNormalization(OnnxConverter &converter,
                           const onnx::NodeProto &proto, GraphNode &node) {
  if (node.inputs.size() != 3)
    throw Unsupported{"InstanceNormalization takes input, scale and B"};
  const std::string x = node.inputs[0], scale = node.inputs[1],
                    shift = node.inputs[2];
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  if (shape.size() < 3)
    throw Unsupported{"InstanceNormalization's input must be [N, C, d1, "
                      "...], not [" +
                      formatShape(shape) + "]"};
  for (const std::string &perChannel : {scale, shift})
    if (converter.requireShape(perChannel, proto.op_type()) != Shape{shape[1]})
      throw Unsupported{"scale and B must be [" + std::to_string(shape[1]) +
                        "]"};
  double epsilon = 1e-5f;
  if (auto it = node.attrs.find("epsilon"); it != node.attrs.end())
    epsilon = std::get<double>(it->second);
  checkConstantElements(numElements(Shape(shape.begin() + 2, shape.end())),
                        "InstanceNormalization's unit scale");
  Tensor ones(dtype, Shape(shape.begin() + 2, shape.end()));
  for (int64_t i = 0; i < ones.numElements(); ++i)
    ones.set(i, 1.0);
  std::string normalized = converter.addStep(
      node, "layer_norm",
      {x, converter.addStepConstant(node, "unit_scale", ones)}, "normalized",
      {{"axis", int64_t(2)}, {"epsilon", epsilon}});
  Shape channelShape(shape.size(), 1);
  channelShape[1] = shape[1];
  std::string scaled =
      converter.addStep(node, "mul",
                        {normalized, viewStep(converter, node, scale,
                                              channelShape, "scale_column")},
                        "scaled");
  node.op = "add";
  node.inputs = {scaled,
                 viewStep(converter, node, shift, channelShape, "B_column")};
  node.attrs.clear();
}

/// RMSNormalization (opset 23): fusec's rms_norm, its scale required.
void rmsNormalization(OnnxConverter &, const onnx::NodeProto &proto,
                      GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"RMSNormalization takes X and scale"};
  dropStashType(node, proto.op_type());
}

/// GroupNormalization (opset 18; per-channel scale and bias from 21, per
/// group before): each group of C / num_groups channels normalized over
/// its channels and spatial dims together (a layer_norm of the [N, G, rest]
/// view), then scaled and shifted per channel.
void groupNormalization(OnnxConverter &converter, const onnx::NodeProto &proto,
                        GraphNode &node) {
  if (node.inputs.size() != 3 || node.inputs[1].empty() ||
      node.inputs[2].empty())
    throw Unsupported{"GroupNormalization takes X, scale and bias"};
  dropStashType(node, proto.op_type());
  const std::string x = node.inputs[0], scale = node.inputs[1],
                    bias = node.inputs[2];
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  auto groupsAttr = node.attrs.find("num_groups");
  if (groupsAttr == node.attrs.end())
    throw Unsupported{"GroupNormalization needs num_groups"};
  const int64_t groups = std::get<int64_t>(groupsAttr->second);
  if (shape.size() < 2)
    throw Unsupported{"GroupNormalization's input must be [N, C, ...], not [" +
                      formatShape(shape) + "]"};
  const int64_t channels = shape[1];
  if (groups < 1 || channels % groups != 0)
    throw Unsupported{"num_groups " + std::to_string(groups) +
                      " does not divide the " + std::to_string(channels) +
                      " channels"};
  const bool perGroup = converter.opset < 21;
  const int64_t parameterSize = perGroup ? groups : channels;
  for (const std::string &parameter : {scale, bias})
    if (converter.requireShape(parameter, proto.op_type()) !=
        Shape{parameterSize})
      throw Unsupported{std::string("scale and bias must be [") +
                        std::to_string(parameterSize) + "] (" +
                        (perGroup ? "one per group before opset 21"
                                  : "one per channel from opset 21") +
                        ")"};
  const double epsilon = floatAttr(node, "epsilon", 1e-5f);
  // Each group's channels and spatial positions.
  const int64_t rest =
      channels / groups * numElements(Shape(shape.begin() + 2, shape.end()));
  checkConstantElements(rest, "GroupNormalization's unit scale");
  Tensor ones(dtype, {rest});
  for (int64_t i = 0; i < rest; ++i)
    ones.set(i, 1.0);
  std::string grouped =
      viewStep(converter, node, x, {shape[0], groups, rest}, "grouped");
  std::string normalized = converter.addStep(
      node, "layer_norm",
      {grouped, converter.addStepConstant(node, "unit_scale", ones)},
      "normalized", {{"axis", int64_t(2)}, {"epsilon", epsilon}});
  Shape parameterShape(shape.size(), 1);
  parameterShape[1] = channels;
  auto perChannel = [&](const std::string &parameter,
                        const std::string &suffix) {
    if (!perGroup)
      return viewStep(converter, node, parameter, parameterShape, suffix);
    // One value per group: repeated over the group's channels.
    std::string column =
        viewStep(converter, node, parameter, {groups, 1}, suffix + "_groups");
    std::string repeated = converter.addStep(
        node, "expand", {column}, suffix + "_repeated",
        {{"shape", std::vector<int64_t>{groups, channels / groups}}});
    return viewStep(converter, node, repeated, parameterShape, suffix);
  };
  std::string scaled = converter.addStep(
      node, "mul",
      {viewStep(converter, node, normalized, shape, "normalized_view"),
       perChannel(scale, "scale_column")},
      "scaled");
  node.op = "add";
  node.inputs = {scaled, perChannel(bias, "bias_column")};
  node.attrs.clear();
}

} // namespace

void registerNormalizationOps(OnnxRegistry &registry) {
  registry.on("LayerNormalization", "layer_norm", 17)
      .attrs({"axis", "epsilon", "stash_type"})
      .minInputs(2)
      .rewrite(layerNormOutputs);
  registry.on("RMSNormalization", "rms_norm", 23)
      .attrs({"axis", "epsilon", "stash_type"})
      .rewrite(rmsNormalization);
  registry.on("GroupNormalization", "add", 18)
      .attrs({"epsilon", "num_groups", "stash_type"})
      .rewrite(groupNormalization);
  registry.on("BatchNormalization", "add")
      .attrs({"epsilon", "momentum", "training_mode", "is_test", "spatial"})
      .olderVersionsDiffer(6, "it requires consumed_inputs")
      .rewrite(batchNormalization);
  registry.on("InstanceNormalization", "add")
      .attr("epsilon")
      .rewrite(instanceNormalization);
  registry.on("MeanVarianceNormalization", "div")
      .attr("axes")
      .rewrite(meanVarianceNormalization);
  registry.on("LpNormalization", "div")
      .attrs({"axis", "p"})
      .rewrite(lpNormalization);
  registry.on("LRN", "div")
      .attrs({"alpha", "beta", "bias", "size"})
      .rewrite(localResponseNorm);
}

} // namespace fusec::onnx_import
