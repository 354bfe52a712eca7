//===- Elementwise.cpp - ONNX elementwise ops -----------------------------===//
//
// Elementwise ops: the ops that map one to one onto fuse's elementwise ops,
// casts, Clip, Mod, BitShift, activations with attributes, Pow, Mean, PRelu.
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

/// Cast's and CastLike's saturate (opset 19) applies to float8 targets, and
/// round_mode (24) to float8e8m0: the cast keeps them (fuse.cast's
/// non_saturating and round_mode).
void keepSaturate(GraphNode &node) {
  if (auto mode = node.attrs.find("round_mode"); mode != node.attrs.end()) {
    const std::string &name = std::get<std::string>(mode->second);
    if (name != "up" && name != "down" && name != "nearest")
      throw Unsupported{"round_mode must be up, down or nearest, not '" + name +
                        "'"};
  }
  auto it = node.attrs.find("saturate");
  if (it == node.attrs.end())
    return;
  int64_t saturate = std::get<int64_t>(it->second);
  if (saturate != 0 && saturate != 1)
    throw Unsupported{"saturate must be 0 or 1, not " +
                      std::to_string(saturate)};
}

/// Cast's and BitCast's attribute `to`, as the graph op's "dtype".
void targetDType(GraphNode &node, const std::string &opType) {
  auto it = node.attrs.find("to");
  if (it == node.attrs.end())
    throw Unsupported{opType + " needs attribute 'to'"};
  int32_t to = static_cast<int32_t>(std::get<int64_t>(it->second));
  std::optional<DType> dtype = dtypeOfOnnx(to);
  if (!dtype)
    throw Unsupported{opType + " to " + onnxTypeName(to) + " is not supported"};
  node.attrs.erase(it);
  node.attrs["dtype"] = std::string(dtypeName(*dtype));
}

void castTarget(OnnxConverter &, const onnx::NodeProto &, GraphNode &node) {
  keepSaturate(node);
  targetDType(node, "Cast");
}

/// BitCast (opset 26): the bits read as `to`, of the same width (checked by
/// the op's verifier, which names both dtypes).
void bitcastTarget(OnnxConverter &, const onnx::NodeProto &, GraphNode &node) {
  targetDType(node, "BitCast");
}

void modKind(OnnxConverter &, const onnx::NodeProto &, GraphNode &node) {
  auto it = node.attrs.find("fmod");
  if (it == node.attrs.end())
    return;
  const int64_t *fmod = std::get_if<int64_t>(&it->second);
  if (!fmod || (*fmod != 0 && *fmod != 1))
    throw Unsupported{"Mod's fmod must be the integer 0 or 1"};
  node.op = *fmod ? "fmod" : "mod";
  node.attrs.erase(it);
}

void bitShiftDirection(OnnxConverter &, const onnx::NodeProto &,
                       GraphNode &node) {
  auto it = node.attrs.find("direction");
  const std::string *direction =
      it == node.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (!direction || (*direction != "LEFT" && *direction != "RIGHT"))
    throw Unsupported{"BitShift's direction must be \"LEFT\" or \"RIGHT\""};
  node.op = *direction == "LEFT" ? "shift_left" : "shift_right";
  node.attrs.erase(it);
}

void castLikeTarget(OnnxConverter &converter, const onnx::NodeProto &,
                    GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"CastLike takes an input and a target_type tensor"};
  keepSaturate(node);
  DType dtype = converter.requireDType(node.inputs[1], "CastLike");
  node.inputs.resize(1);
  node.attrs["dtype"] = std::string(dtypeName(dtype));
}

/// Mean: the inputs added left to right, divided by their count (in their
/// dtype, as ONNX's reference computes it); f16 and bf16 inputs in f32,
/// rounded once, as one op (the mean of 100.5 and 65504 is 32800 in f16,
/// not the inf of an f16 sum).
void meanOfInputs(OnnxConverter &converter, const onnx::NodeProto &,
                  GraphNode &node) {
  if (node.inputs.empty() ||
      std::count(node.inputs.begin(), node.inputs.end(), std::string()))
    throw Unsupported{"Mean needs one or more inputs"};
  DType dtype = converter.requireDType(node.inputs[0], "Mean");
  bool widened = dtype == DType::F16 || dtype == DType::BF16;
  DType compute = widened ? DType::F32 : dtype;
  auto operand = [&](size_t i) {
    return widened
               ? converter.addStep(node, "cast", {node.inputs[i]},
                                   "wide_" + std::to_string(i),
                                   {{"dtype", std::string(dtypeName(compute))}})
               : node.inputs[i];
  };
  std::string sum = operand(0);
  for (size_t i = 1; i < node.inputs.size(); ++i)
    sum = converter.addStep(node, "add", {sum, operand(i)},
                            "sum_" + std::to_string(i));
  std::string count = converter.addStepConstant(
      node, "count",
      scalarTensor(compute, static_cast<double>(node.inputs.size())));
  if (!widened) {
    node.op = "div";
    node.inputs = {sum, count};
    return;
  }
  node.op = "cast";
  node.inputs = {converter.addStep(node, "div", {sum, count}, "wide")};
  node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
}

/// PRelu: x < 0 ? slope * x : x (slope broadcast to x; NaN stays NaN).
void preluSelect(OnnxConverter &converter, const onnx::NodeProto &,
                 GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"PRelu takes an input and a slope"};
  const std::string x = node.inputs[0];
  std::string slope = node.inputs[1];
  DType dtype = converter.requireDType(x, "PRelu");
  // Before opset 7 PRelu did not broadcast as NumPy does: its producers
  // (Caffe2, PyTorch) give a slope of [C] per channel, dim 1 of the input.
  if (converter.opset < 7) {
    Shape shape = converter.requireShape(x, "PRelu");
    Shape slopeShape = converter.requireShape(slope, "PRelu");
    if (shape.size() > 2 && slopeShape == Shape{shape[1]}) {
      Shape perChannel(shape.size() - 1, 1);
      perChannel[0] = shape[1];
      slope = viewStep(converter, node, slope, perChannel, "slope_column");
    }
  }
  std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0));
  std::string negative = converter.addStep(node, "lt", {x, zero}, "negative");
  std::string scaled = converter.addStep(node, "mul", {slope, x}, "scaled");
  node.op = "select";
  node.inputs = {negative, scaled, x};
}

/// Clip of opsets 6-10: min and max are float attributes (defaults: the
/// float range), as inputs of x's dtype.
void clipBounds(OnnxConverter &converter, const onnx::NodeProto &,
                GraphNode &node) {
  if (converter.opset >= 11)
    return;
  const DType dtype = converter.requireDType(node.inputs.at(0), "Clip");
  if (!isFloat(dtype))
    throw Unsupported{std::string("Clip of opsets 6-10 takes floats, not ") +
                      dtypeName(dtype)};
  const double limit = std::numeric_limits<float>::max();
  double low = floatAttr(node, "min", -std::numeric_limits<float>::max());
  double high = floatAttr(node, "max", std::numeric_limits<float>::max());
  node.attrs.clear();
  node.inputs.resize(1);
  node.inputs.push_back(converter.addStepConstant(
      node, "min", scalarTensor(dtype, std::max(low, -limit))));
  node.inputs.push_back(converter.addStepConstant(
      node, "max", scalarTensor(dtype, std::min(high, limit))));
}

/// ThresholdedRelu: x where x > alpha (default 1), else 0.
void thresholdedRelu(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  const std::string x = node.inputs.at(0);
  DType dtype = converter.requireDType(x, proto.op_type());
  double alpha = 1.0;
  if (auto it = node.attrs.find("alpha"); it != node.attrs.end())
    alpha = std::get<double>(it->second);
  std::string above = converter.addStep(
      node, "gt",
      {x, converter.addStepConstant(node, "alpha", scalarTensor(dtype, alpha))},
      "above");
  node.op = "select";
  node.inputs = {
      above, x,
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0.0))};
  node.attrs.clear();
}

/// sigmoid(alpha * x), Swish's gate (Swish is x times it; SiLU for alpha =
/// 1), in x's dtype op by op as ONNX's function computes it.
std::string swishGate(OnnxConverter &converter, const GraphNode &node,
                      const std::string &x, double alpha,
                      const std::string &suffix) {
  DType dtype = converter.requireDType(x, "Swish");
  if (!isFloat(dtype))
    throw Unsupported{std::string("Swish of ") + dtypeName(dtype) +
                      " is not supported (floats)"};
  std::string gate = x;
  if (alpha != 1.0)
    gate = converter.addStep(
        node, "mul",
        {converter.addStepConstant(node, suffix + "_alpha",
                                   scalarTensor(dtype, alpha)),
         x},
        suffix + "_scaled");
  return converter.addStep(node, "sigmoid", {gate}, suffix + "_sigmoid");
}

/// Swish (opset 24): x * sigmoid(alpha * x).
void swish(OnnxConverter &converter, const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  node.inputs = {x, swishGate(converter, node, x,
                              floatAttr(node, "alpha", 1.0f), "swish")};
  node.op = "mul";
  node.attrs.clear();
}

/// SwiGLU (opset 28): Swish_alpha(A) * B, A and B of one shape.
void swiGlu(OnnxConverter &converter, const onnx::NodeProto &,
            GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"SwiGLU takes A and B"};
  const std::string a = node.inputs[0], b = node.inputs[1];
  if (converter.requireShape(a, "SwiGLU") !=
      converter.requireShape(b, "SwiGLU"))
    throw Unsupported{"SwiGLU's A and B must have one shape (it does not "
                      "broadcast)"};
  std::string swished =
      converter.addStep(node, "mul",
                        {a, swishGate(converter, node, a,
                                      floatAttr(node, "alpha", 1.0f), "gate")},
                        "gate");
  node.inputs = {swished, b};
  node.op = "mul";
  node.attrs.clear();
}

/// Pow with ONNX's operand types: the exponent may have another dtype than
/// the base, and the result has the base's. A float base takes the
/// exponent cast to its dtype (exact for the integer exponents ONNX
/// allows); an integer base with an integer exponent is raised exactly in
/// i64 (the integer pow row: wrapping, as NumPy's) and wrapped back to the
/// base's dtype; with a float exponent it is raised in f64, as NumPy
/// computes it, and the result converted back (truncated).
void convertPow(OnnxConverter &converter, const onnx::NodeProto &node) {
  if (node.input_size() != 2)
    throw Unsupported{"Pow takes a base and an exponent"};
  // Before opset 7 the exponent broadcasts only with broadcast = 1, to the
  // base's trailing dims or to its dims from `axis` on.
  std::optional<int64_t> legacyAxis;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (converter.opset < 7 && attr.name() == "axis")
      legacyAxis = attr.i();
    else if (converter.opset >= 7 || attr.name() != "broadcast")
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  }
  std::string base = converter.resolve(node.input(0)),
              exponent = converter.resolve(node.input(1));
  std::optional<DType> baseType = converter.dtypeOf(base),
                       exponentType = converter.dtypeOf(exponent);
  if (!baseType || !exponentType)
    throw Unsupported{"Pow needs its operands' dtypes, which shape inference "
                      "did not give"};
  std::string name = node.name().empty() ? node.output(0) : node.name();
  auto add = [&](const std::string &op, std::vector<std::string> inputs,
                 const std::string &output,
                 std::map<std::string, AttrValue> attrs = {}) {
    GraphNode step;
    step.name = output == node.output(0) ? name : name + "_" + output;
    step.op = op;
    step.inputs = std::move(inputs);
    step.outputs = {output};
    step.attrs = std::move(attrs);
    converter.addNode(std::move(step));
    return output;
  };
  if (legacyAxis) {
    GraphNode owner;
    owner.name = name;
    owner.inputs = {base, exponent};
    owner.outputs = {node.output(0)};
    converter.broadcastFromAxis(owner, *legacyAxis);
    exponent = owner.inputs[1];
  }
  bool floatBase = isFloat(*baseType);
  DType computeType = floatBase                ? *baseType
                      : isFloat(*exponentType) ? DType::F64
                                               : DType::I64;
  auto asCompute = [&](const std::string &value, DType dtype,
                       const std::string &suffix) {
    return dtype == computeType
               ? value
               : add("cast", {value}, node.output(0) + suffix,
                     {{"dtype", std::string(dtypeName(computeType))}});
  };
  std::string x = asCompute(base, *baseType, "_base");
  std::string y = asCompute(exponent, *exponentType, "_exponent");
  if (computeType == *baseType) {
    add("pow", {x, y}, node.output(0));
    return;
  }
  std::string power =
      add("pow", {x, y}, node.output(0) + "_" + dtypeName(computeType));
  add("cast", {power}, node.output(0),
      {{"dtype", std::string(dtypeName(*baseType))}});
}

} // namespace

void registerElementwiseOps(OnnxRegistry &registry) {
  // Elementwise ops with the same meaning and no attributes; the first
  // opset that defines each, where later than 11 (ONNX's registry says
  // which older opsets define the others).
  struct Elementwise {
    const char *onnxName, *graphOp;
    int64_t sinceOpset = kOldestOpset;
  };
  const Elementwise elementwise[] = {{"Add", "add"},
                                     {"Sub", "sub"},
                                     {"Mul", "mul"},
                                     {"Div", "div"},
                                     {"Neg", "neg"},
                                     {"Abs", "abs"},
                                     {"Exp", "exp"},
                                     {"Log", "log"},
                                     {"Sin", "sin"},
                                     {"Cos", "cos"},
                                     {"Tanh", "tanh"},
                                     {"Sigmoid", "sigmoid"},
                                     {"Relu", "relu"},
                                     {"Sqrt", "sqrt"},
                                     {"Reciprocal", "reciprocal"},
                                     {"Erf", "erf"},
                                     {"Floor", "floor"},
                                     {"Ceil", "ceil"},
                                     {"Not", "not"},
                                     {"And", "and"},
                                     {"Or", "or"},
                                     {"Equal", "eq"},
                                     {"Less", "lt"},
                                     {"LessOrEqual", "le", 12},
                                     {"Greater", "gt"},
                                     {"GreaterOrEqual", "ge", 12},
                                     {"Where", "select"},
                                     {"Tan", "tan"},
                                     {"Asin", "asin"},
                                     {"Acos", "acos"},
                                     {"Atan", "atan"},
                                     {"Sinh", "sinh"},
                                     {"Cosh", "cosh"},
                                     {"Asinh", "asinh"},
                                     {"Acosh", "acosh"},
                                     {"Atanh", "atanh"},
                                     {"Round", "round"},
                                     {"Sign", "sign"},
                                     {"IsNaN", "isnan"},
                                     {"Softplus", "softplus"},
                                     {"Softsign", "softsign"},
                                     {"Mish", "mish", 18},
                                     {"HardSwish", "hard_swish", 14},
                                     {"Xor", "xor"},
                                     {"BitwiseAnd", "bitwise_and", 18},
                                     {"BitwiseOr", "bitwise_or", 18},
                                     {"BitwiseXor", "bitwise_xor", 18},
                                     {"BitwiseNot", "bitwise_not", 18}};
  for (const Elementwise &op : elementwise)
    registry.on(op.onnxName, op.graphOp, op.sinceOpset);
  // Clip: min and max are optional inputs (opset 11 on) or attributes
  // (opsets 6-10).
  registry.on("Clip", "clip")
      .attr("min", 6, 10)
      .attr("max", 6, 10)
      .olderVersionsDiffer(6, "it takes consumed_inputs")
      .rewrite(clipBounds);
  // Max, Min and Sum take one or more inputs, chained.
  registry.on("Max", "max").variadic();
  registry.on("Min", "min").variadic();
  registry.on("Sum", "add").variadic();
  registry.on("Cast", "cast")
      .attr("to")
      .attr("saturate", 19)
      .attr("round_mode", 24)
      .olderVersionsDiffer(6, "its 'to' is a string")
      .rewrite(castTarget);
  registry.on("CastLike", "cast", 15)
      .attr("saturate", 19)
      .attr("round_mode", 24)
      .rewrite(castLikeTarget);
  registry.on("BitCast", "bitcast", 26).attr("to").rewrite(bitcastTarget);
  // Mod: fmod=0 takes the divisor's sign (mod), fmod=1 the dividend's.
  registry.on("Mod", "mod").attr("fmod").rewrite(modKind);
  registry.on("BitShift", "shift_left")
      .attr("direction")
      .rewrite(bitShiftDirection);
  registry.on("Pow", convertPow).minInputs(2);
  registry.on("Mean", "div").rewrite(meanOfInputs);
  registry.on("PRelu", "select").rewrite(preluSelect);
  // Activations with float attributes (composite ops) and IsInf.
  registry.on("LeakyRelu", "leaky_relu").attr("alpha");
  registry.on("Elu", "elu").attr("alpha");
  registry.on("Selu", "selu").attrs({"alpha", "gamma"});
  registry.on("Celu", "celu", 12).attr("alpha");
  registry.on("HardSigmoid", "hard_sigmoid").attrs({"alpha", "beta"});
  registry.on("Shrink", "shrink").attrs({"bias", "lambd"});
  registry.on("IsInf", "isinf").attrs({"detect_positive", "detect_negative"});
  registry.on("ThresholdedRelu", "select", 10)
      .attr("alpha")
      .rewrite(thresholdedRelu);
  registry.on("Gelu", "gelu", 20).attr("approximate");
  registry.on("Swish", "mul", 24).attr("alpha").rewrite(swish);
  registry.on("SwiGLU", "mul", 28).attr("alpha").rewrite(swiGlu);
}

} // namespace fusec::onnx_import
