//===- Quantization.cpp - ONNX quantization ops ---------------------------===//
//
// Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, QLinearMatMul (and the requantization QLinearConv shares).
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

/// Blocked quantization's scale or zero point (x's shape but ceil(D / B)
/// along `axis`), each block's value replicated over its B positions and
/// cut to D: x's shape, read through a broadcast (never materialized).
std::string replicatedBlocks(OnnxConverter &converter, const GraphNode &node,
                             const std::string &value, const Shape &xShape,
                             int64_t axis, int64_t blockSize,
                             const std::string &suffix, const char *op) {
  const Shape shape = converter.requireShape(value, op);
  const int64_t rank = xShape.size();
  if (axis < -rank || axis >= rank)
    throw Unsupported{std::string(op) + "'s axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank)};
  if (axis < 0)
    axis += rank;
  bool fits = static_cast<int64_t>(shape.size()) == rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == axis || shape[d] == xShape[d];
  const int64_t dim = xShape[axis], blocks = fits ? shape[axis] : 0;
  // ceil(D / B) blocks: B within [ceil(D / S), ceil(D / (S - 1)) - 1].
  if (!fits || blockSize < 1 || blocks < 1 ||
      (blocks > 1 && (blockSize >= dim || (blocks - 1) * blockSize >= dim ||
                      blocks * blockSize < dim)) ||
      (blocks == 1 && blockSize < dim))
    throw Unsupported{
        std::string(op) + "'s " + suffix + " [" + formatShape(shape) +
        "] is not blocks of " + std::to_string(blockSize) + " along axis " +
        std::to_string(axis) + " of x [" + formatShape(xShape) + "]"};
  if (blocks == 1)
    return converter.addStep(node, "broadcast_to", {value},
                             suffix + "_replicated", {{"shape", xShape}});
  Shape split = shape;
  split.insert(split.begin() + axis + 1, 1);
  Shape wide = split;
  wide[axis + 1] = blockSize;
  Shape flat = shape;
  flat[axis] = blocks * blockSize;
  std::string replicated =
      viewStep(converter, node,
               converter.addStep(node, "broadcast_to",
                                 {viewStep(converter, node, value, split,
                                           suffix + "_blocks")},
                                 suffix + "_replicated", {{"shape", wide}}),
               flat, suffix + "_flat");
  if (flat[axis] == dim)
    return replicated;
  return converter.addStep(node, "slice", {replicated}, suffix + "_cut",
                           {{"starts", std::vector<int64_t>{0}},
                            {"ends", std::vector<int64_t>{dim}},
                            {"axes", std::vector<int64_t>{axis}}});
}

/// QuantizeLinear to integers: round(x / scale) half to even, plus the zero
/// point, saturated to the output dtype, as ONNX's reference computes it; a
/// per-axis scale and zero point broadcast along `axis`. int32 inputs
/// divide in f64, as the reference's NumPy promotes them. To float8 and
/// float4: x / scale plus the zero point, converted (rounded to nearest
/// even; float8 saturating unless saturate=0).
void quantizeLinear(OnnxConverter &converter, const onnx::NodeProto &,
                    GraphNode &node) {
  if (node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"QuantizeLinear takes x, y_scale and y_zero_point"};
  const std::string x = node.inputs[0], scale = node.inputs[1];
  const std::string zeroPoint = node.inputs.size() > 2 ? node.inputs[2] : "";
  Shape shape = converter.requireShape(x, "QuantizeLinear");
  DType inputType = converter.requireDType(x, "QuantizeLinear");
  DType scaleType = converter.requireDType(scale, "QuantizeLinear");
  // The output type: the zero point's, else output_dtype's (opset 21), else
  // u8.
  DType outputType = DType::U8;
  if (!zeroPoint.empty()) {
    outputType = converter.requireDType(zeroPoint, "y_zero_point");
  } else if (int64_t given = intAttr(node, "output_dtype", 0); given != 0) {
    std::optional<DType> type = dtypeOfOnnx(static_cast<int32_t>(given));
    if (!type)
      throw Unsupported{"QuantizeLinear to " +
                        onnxTypeName(static_cast<int32_t>(given)) +
                        " is not supported"};
    outputType = *type;
  }
  const bool toFloat = isFloat(outputType);
  if (outputType != DType::U8 && outputType != DType::I8 &&
      outputType != DType::U16 && outputType != DType::I16 &&
      (!isNarrow(outputType) || outputType == DType::F8E8M0))
    throw Unsupported{std::string("QuantizeLinear to ") +
                      dtypeName(outputType) +
                      " is not supported (u8, i8, u16, i16, float8, float4, "
                      "4-bit and 2-bit integers)"};
  const int64_t blockSize = intAttr(node, "block_size", 0);
  if (inputType != DType::I32 && !isFloat(inputType))
    throw Unsupported{std::string("QuantizeLinear of ") + dtypeName(inputType) +
                      " is not supported (floats, i32)"};
  int64_t rank = shape.size();
  int64_t axis = 1;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  // x / scale in NumPy's type for the pair (an i32 x in f64), or in
  // `precision` (opset 23) where given.
  DType compute = inputType == DType::I32 ? DType::F64 : inputType;
  if (isFloat(scaleType) && isFloat(compute) &&
      dtypeBytes(scaleType) > dtypeBytes(compute))
    compute = scaleType;
  if (int64_t precision = intAttr(node, "precision", 0); precision != 0) {
    std::optional<DType> type = dtypeOfOnnx(static_cast<int32_t>(precision));
    if (!type || !isFloat(*type))
      throw Unsupported{"QuantizeLinear's precision must be a float type"};
    compute = *type;
  }
  std::string computeName = dtypeName(compute);
  // A vector of more than one element runs along `axis`; a scalar or one
  // element is the same for every element.
  auto alongAxis = [&](const std::string &value, const std::string &suffix) {
    Shape valueShape = converter.requireShape(value, "QuantizeLinear");
    std::string result = value;
    if (converter.requireDType(value, "QuantizeLinear") != compute)
      result = converter.addStep(node, "cast", {value}, suffix + "_wide",
                                 {{"dtype", computeName}});
    if (blockSize != 0)
      return replicatedBlocks(converter, node, result, shape, axis, blockSize,
                              suffix, "QuantizeLinear");
    if (numElements(valueShape) == 1)
      return valueShape.empty()
                 ? result
                 : viewStep(converter, node, result, {}, suffix + "_scalar");
    if (valueShape.size() != 1 || axis < -rank || axis >= rank)
      throw Unsupported{"QuantizeLinear's " + suffix +
                        " must be a scalar or a vector along axis " +
                        std::to_string(axis)};
    int64_t along = axis < 0 ? axis + rank : axis;
    if (valueShape[0] != shape[along])
      throw Unsupported{"QuantizeLinear's " + suffix + " has " +
                        std::to_string(valueShape[0]) + " elements for " +
                        std::to_string(shape[along]) + " along axis " +
                        std::to_string(axis)};
    Shape view(rank - along, 1);
    view[0] = valueShape[0];
    return viewStep(converter, node, result, view, suffix + "_along");
  };
  std::string value = x;
  if (inputType != compute)
    value =
        converter.addStep(node, "cast", {x}, "wide", {{"dtype", computeName}});
  std::string scaled = converter.addStep(
      node, "div", {value, alongAxis(scale, "scale")}, "scaled");
  if (toFloat) {
    // ONNX's reference leaves float8's zero point out (it must be 0, and
    // adding +0 would turn -0 into +0); float4's is added.
    std::string shifted = scaled;
    bool zeroPointIsZero = false;
    if (const Tensor *given =
            zeroPoint.empty() ? nullptr : converter.constantOrNull(zeroPoint)) {
      zeroPointIsZero = true;
      for (int64_t i = 0; i < given->numElements(); ++i)
        zeroPointIsZero &= given->at(i) == 0;
    }
    if (!zeroPoint.empty() &&
        !(zeroPointIsZero && dtypeInfo(outputType).bits == 8))
      shifted = converter.addStep(
          node, "add", {scaled, alongAxis(zeroPoint, "zero_point")}, "shifted");
    int64_t saturate = intAttr(node, "saturate", 1);
    node.op = "cast";
    node.inputs = {shifted};
    node.attrs = {{"dtype", std::string(dtypeName(outputType))},
                  {"saturate", saturate}};
    return;
  }
  std::string rounded = converter.addStep(node, "round", {scaled}, "rounded");
  // The zero point is added and the sum saturated exactly: in f32 (f64 for
  // i32 inputs), where f16 or bf16 would round 16-bit zero points.
  if (dtypeBytes(compute) < 4) {
    compute = DType::F32;
    computeName = dtypeName(compute);
    rounded = converter.addStep(node, "cast", {rounded}, "rounded_wide",
                                {{"dtype", computeName}});
  }
  if (!zeroPoint.empty())
    rounded = converter.addStep(
        node, "add", {rounded, alongAxis(zeroPoint, "zero_point")}, "shifted");
  std::string clipped = converter.addStep(
      node, "clip",
      {rounded,
       converter.addStepConstant(
           node, "lowest",
           scalarTensor(compute, extremeScalar(outputType, false).at(0))),
       converter.addStepConstant(
           node, "highest",
           scalarTensor(compute, extremeScalar(outputType, true).at(0)))},
      "saturated");
  node.op = "cast";
  node.inputs = {clipped};
  node.attrs = {{"dtype", std::string(dtypeName(outputType))}};
}

/// DequantizeLinear's output_dtype (opset 23): the scale's dtype, or any
/// float for an f32 scale (the f32 result then converts once, as ONNX's
/// reference computes it). Blocked scales and zero points (block_size,
/// opset 21) are replicated over their blocks: the dequantization is then
/// per element.
void dequantizeOutputType(OnnxConverter &converter, const onnx::NodeProto &,
                          GraphNode &node) {
  if (node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"DequantizeLinear takes x and x_scale"};
  const int64_t blockSize = intAttr(node, "block_size", 0);
  node.attrs.erase("block_size");
  if (blockSize != 0) {
    const Shape xShape =
        converter.requireShape(node.inputs[0], "DequantizeLinear");
    const int64_t axis = intAttr(node, "axis", 1);
    for (size_t i = 1; i < std::min<size_t>(node.inputs.size(), 3); ++i)
      if (!node.inputs[i].empty())
        node.inputs[i] = replicatedBlocks(
            converter, node, node.inputs[i], xShape, axis, blockSize,
            i == 1 ? "scale" : "zero_point", "DequantizeLinear");
  } else if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    // A one-element zero point of a scalar scale (or the reverse) is the
    // same per-tensor quantization; ONNX's reference broadcasts them.
    Shape scaleShape =
        converter.requireShape(node.inputs[1], "DequantizeLinear");
    Shape zeroShape =
        converter.requireShape(node.inputs[2], "DequantizeLinear");
    if (scaleShape != zeroShape && numElements(scaleShape) == 1 &&
        numElements(zeroShape) == 1)
      node.inputs[2] = viewStep(converter, node, node.inputs[2], scaleShape,
                                "zero_point_like_scale");
  }
  int64_t given = intAttr(node, "output_dtype", 0);
  node.attrs.erase("output_dtype");
  if (given == 0)
    return;
  std::optional<DType> outputType = dtypeOfOnnx(static_cast<int32_t>(given));
  if (node.inputs.size() < 2)
    throw Unsupported{"DequantizeLinear takes x and x_scale"};
  DType scaleType = converter.requireDType(node.inputs[1], "DequantizeLinear");
  if (outputType == scaleType)
    return;
  if (!outputType || !isFloat(*outputType) || scaleType != DType::F32)
    throw Unsupported{"DequantizeLinear's output_dtype " +
                      onnxTypeName(static_cast<int32_t>(given)) +
                      " must be the scale's dtype (or any float for an f32 "
                      "scale)"};
  std::string dequantized = converter.addStep(node, "dequantize_linear",
                                              node.inputs, "f32", node.attrs);
  node.op = "cast";
  node.inputs = {dequantized};
  node.attrs = {{"dtype", std::string(dtypeName(*outputType))}};
}

/// DynamicQuantizeLinear: u8 quantization with the scale and zero point of
/// x's own range (widened to hold 0; a range of 0 counts as 1), as ONNX's
/// reference computes them; y_scale and y_zero_point are outputs too.
void dynamicQuantizeLinear(OnnxConverter &converter, const onnx::NodeProto &,
                           GraphNode &node) {
  const std::string x = node.inputs.at(0);
  if (converter.requireDType(x, "DynamicQuantizeLinear") != DType::F32)
    throw Unsupported{"DynamicQuantizeLinear takes f32"};
  Shape shape = converter.requireShape(x, "DynamicQuantizeLinear");
  std::vector<int64_t> every(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    every[d] = d;
  std::map<std::string, AttrValue> all = {{"axes", every},
                                          {"keepdims", int64_t(0)}};
  auto constant = [&](const std::string &suffix, double value) {
    return converter.addStepConstant(node, suffix,
                                     scalarTensor(DType::F32, value));
  };
  std::string zero = constant("zero", 0), top = constant("top", 255);
  std::string low = converter.addStep(
      node, "min",
      {converter.addStep(node, "reduce_min", {x}, "min", all), zero}, "low");
  std::string high = converter.addStep(
      node, "max",
      {converter.addStep(node, "reduce_max", {x}, "max", all), zero}, "high");
  std::string range = converter.addStep(node, "sub", {high, low}, "range");
  range =
      converter.addStep(node, "select",
                        {converter.addStep(node, "eq", {range, zero}, "flat"),
                         constant("one", 1), range},
                        "nonzero_range");
  std::string scale =
      converter.addStep(node, "div", {range, top}, "dynamic_scale");
  std::string zeroPoint = converter.addStep(
      node, "round",
      {converter.addStep(
          node, "clip",
          {converter.addStep(
               node, "sub",
               {zero, converter.addStep(node, "div", {low, scale}, "low_q")},
               "zero_point_real"),
           zero, top},
          "zero_point_clipped")},
      "dynamic_zero_point");
  std::string quantized = converter.addStep(
      node, "clip",
      {converter.addStep(
           node, "add",
           {converter.addStep(
                node, "round",
                {converter.addStep(node, "div", {x, scale}, "scaled")},
                "rounded"),
            zeroPoint},
           "shifted"),
       zero, top},
      "saturated");
  std::vector<std::string> outputs = node.outputs;
  node.outputs.resize(1);
  if (outputs.size() > 1 && !outputs[1].empty())
    converter.addOutputStep(node, "reshape", {scale}, outputs[1],
                            {{"shape", std::vector<int64_t>{}}});
  if (outputs.size() > 2 && !outputs[2].empty())
    converter.addOutputStep(node, "cast", {zeroPoint}, outputs[2],
                            {{"dtype", std::string("u8")}});
  node.op = "cast";
  node.inputs = {quantized};
  node.attrs = {{"dtype", std::string("u8")}};
}

/// MatMulInteger and QLinearMatMul: the operands minus their zero points in
/// i32 (a's per row, b's per column), multiplied as integers (wrapping, as
/// NumPy's int32 matmul); QLinearMatMul then requantizes.
void integerMatmul(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  const bool requantized = proto.op_type() == "QLinearMatMul";
  std::vector<std::string> in = node.inputs;
  in.resize(8);
  // MatMulInteger: a, b, a_zero, b_zero; QLinearMatMul: a, a_scale,
  // a_zero, b, b_scale, b_zero, y_scale, y_zero.
  const std::string a = in[0], b = requantized ? in[3] : in[1], aZero = in[2],
                    bZero = requantized ? in[5] : in[3];
  if (a.empty() || b.empty() ||
      (requantized && (in[1].empty() || in[4].empty() || in[6].empty())))
    throw Unsupported{proto.op_type() + " is missing a required input"};
  Shape aShape = converter.requireShape(a, proto.op_type());
  Shape bShape = converter.requireShape(b, proto.op_type());
  std::string lhs = shiftedToInt32(
      converter, node, a, aZero, static_cast<int64_t>(aShape.size()) - 2, "a");
  std::string rhs = shiftedToInt32(
      converter, node, b, bZero, static_cast<int64_t>(bShape.size()) - 1, "b");
  if (!requantized) {
    node.op = "matmul";
    node.inputs = {lhs, rhs};
    node.attrs.clear();
    return;
  }
  std::string product =
      converter.addStep(node, "matmul", {lhs, rhs}, "product");
  DType outputType = in[7].empty() ? converter.requireDType(a, "a")
                                   : converter.requireDType(in[7], "y_zero");
  std::string aScale = in[1];
  if (numElements(converter.requireShape(aScale, "a_scale")) > 1) {
    Shape rows = {aShape.size() >= 2 ? aShape[aShape.size() - 2] : 1, 1};
    aScale = viewStep(converter, node, aScale, rows, "a_scale_rows");
  }
  // b's scale per column broadcasts along the product's last dim as it is.
  requantize(converter, node, product, aScale, in[4],
             converter.requireShape(in[4], "b_scale"), in[6], in[7],
             outputType);
}

} // namespace

/// The requantization of QLinearMatMul and QLinearConv, as ONNX's reference
/// computes it: the i32 product times the multiplier x_scale * w_scale /
/// y_scale (rounded in f32, op by op), plus y's zero point, in f64,
/// rounded half to even and saturated to y's dtype. `scaleShape` lays a
/// per-channel w_scale along the product's channel dim.
void requantize(OnnxConverter &converter, GraphNode &node,
                const std::string &product, const std::string &inputScale,
                const std::string &weightScale, const Shape &weightScaleShape,
                const std::string &outputScale,
                const std::string &outputZeroPoint, DType outputType) {
  std::string scale = weightScale;
  if (numElements(converter.requireShape(weightScale, "w_scale")) > 1)
    scale = viewStep(converter, node, weightScale, weightScaleShape,
                     "w_scale_laid");
  std::string multiplier = converter.addStep(
      node, "div",
      {converter.addStep(node, "mul", {inputScale, scale}, "scales"),
       outputScale},
      "multiplier");
  auto inF64 = [&](const std::string &name, const std::string &step) {
    return converter.addStep(node, "cast", {name}, step,
                             {{"dtype", std::string("f64")}});
  };
  std::string real = converter.addStep(
      node, "mul",
      {inF64(product, "product_f64"), inF64(multiplier, "multiplier_f64")},
      "real");
  if (!outputZeroPoint.empty())
    real = converter.addStep(node, "add",
                             {real, inF64(outputZeroPoint, "y_zero_f64")},
                             "real_shifted");
  node.op = "cast";
  node.inputs = {converter.addStep(node, "round", {real}, "rounded")};
  node.attrs = {{"dtype", std::string(dtypeName(outputType))}};
}

/// The integer ops' operand minus its zero point, in i32 (recorded for the
/// converters after it). A zero point of one value per row (`perRow`: dim
/// rank - 2 of a matmul's lhs) or per output channel (dim 0 of a Conv's
/// weights) is laid along that dim.
std::string shiftedToInt32(OnnxConverter &converter, GraphNode &node,
                           const std::string &value,
                           const std::string &zeroPoint, int64_t alongDim,
                           const std::string &suffix) {
  Shape shape = converter.requireShape(value, "a quantized operand");
  DType dtype = converter.requireDType(value, "a quantized operand");
  if (dtype != DType::I8 && dtype != DType::U8)
    throw Unsupported{"quantized operands must be i8 or u8, not " +
                      std::string(dtypeName(dtype))};
  auto asInt32 = [&](const std::string &name, const std::string &step) {
    return converter.addStep(node, "cast", {name}, step,
                             {{"dtype", std::string("i32")}});
  };
  std::string shifted = asInt32(value, suffix + "_i32");
  if (!zeroPoint.empty()) {
    Shape zeroShape = converter.requireShape(zeroPoint, "a zero point");
    std::string zero = asInt32(zeroPoint, suffix + "_zero_i32");
    int64_t count = numElements(zeroShape);
    // A 1-D zero point of several values is laid along its dim; one of
    // higher rank ([..., M, 1] per row) broadcasts as it is.
    if (count > 1 && zeroShape.size() == 1) {
      if (alongDim < 0 || alongDim >= static_cast<int64_t>(shape.size()) ||
          count != shape[alongDim])
        throw Unsupported{"a 1-D zero point of " + std::to_string(count) +
                          " values must have one per row or channel"};
      Shape laid(shape.size() - alongDim, 1);
      laid[0] = count;
      zero = viewStep(converter, node, zero, laid, suffix + "_zero_laid");
    }
    shifted =
        converter.addStep(node, "sub", {shifted, zero}, suffix + "_shifted");
  }
  converter.recordValue(shifted, shape, DType::I32);
  return shifted;
}

void registerQuantizationOps(OnnxRegistry &registry) {
  registry.on("QuantizeLinear", "cast", 10)
      .attr("axis")
      .attr("saturate", 19)
      .attr("block_size", 21)
      .attr("output_dtype", 21)
      .attr("precision", 23)
      .rewrite(quantizeLinear);
  registry.on("DequantizeLinear", "dequantize_linear")
      .attr("axis")
      .attr("block_size", 21)
      .attr("output_dtype", 23)
      .rewrite(dequantizeOutputType);
  registry.on("DynamicQuantizeLinear", "cast", 11)
      .rewrite(dynamicQuantizeLinear);
  registry.on("MatMulInteger", "matmul", 10).rewrite(integerMatmul);
  registry.on("QLinearMatMul", "matmul", 10).rewrite(integerMatmul);
}

} // namespace fusec::onnx_import
