//===- ConvPool.cpp - ONNX convolution and pooling ops --------------------===//
//
// Convolutions (Conv, ConvTranspose, ConvInteger, QLinearConv) and
// pooling (MaxPool, AveragePool, LpPool, the global pools).
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

/// `count` integers of attribute `name`, `fallback` each when it is absent.
std::vector<int64_t> spatialInts(const GraphNode &node, const char *name,
                                 int64_t fallback, int64_t count) {
  std::vector<int64_t> values(count, fallback);
  if (auto it = node.attrs.find(name); it != node.attrs.end())
    values = std::get<std::vector<int64_t>>(it->second);
  if (static_cast<int64_t>(values.size()) != count)
    throw Unsupported{std::string(name) + " must have " +
                      std::to_string(count) + " values"};
  return values;
}

std::string autoPadOf(const GraphNode &node) {
  auto it = node.attrs.find("auto_pad");
  return it == node.attrs.end() ? "NOTSET" : std::get<std::string>(it->second);
}

/// The sliding windows of a pooling or a convolution over [N, C, d1, ...]:
/// per spatial dim the kernel, strides, dilations, the pads before and
/// after (the explicit ones or auto_pad's) and the output's size.
struct SlidingWindows {
  std::vector<int64_t> kernel, strides, dilations, padBefore, padAfter;
  Shape out;
  /// Kernel positions: the product of `kernel`.
  int64_t taps = 1;
};

/// The taps of a kernel, after checking the bounds that keep the taps,
/// windows and pads countable (far past any real model; every product of
/// them stays in int64): kernel_shape, strides and dilations in [1, 2^20],
/// each of `pads` in [0, 2^20], at most 65536 taps.
int64_t checkedTaps(const std::vector<int64_t> &kernel,
                    const std::vector<int64_t> &strides,
                    const std::vector<int64_t> &dilations,
                    const std::vector<int64_t> &pads) {
  constexpr int64_t kLargest = int64_t(1) << 20;
  for (const std::vector<int64_t> *values : {&kernel, &strides, &dilations})
    for (int64_t v : *values)
      if (v < 1 || v > kLargest)
        throw Unsupported{"kernel_shape, strides and dilations must be in "
                          "[1, 2^20]"};
  for (int64_t p : pads)
    if (p < 0 || p > kLargest)
      throw Unsupported{"pads must be in [0, 2^20]"};
  int64_t taps = 1;
  for (int64_t k : kernel) {
    taps *= k;
    if (taps > 65536)
      throw Unsupported{"the kernel has more than 65536 taps"};
  }
  return taps;
}

/// The windows of `node` over an input of `shape` with `kernel`; auto_pad
/// SAME_UPPER, SAME_LOWER and VALID place the pads as the spec says.
SlidingWindows slidingWindows(const GraphNode &node, const Shape &shape,
                              std::vector<int64_t> kernel, bool ceilMode) {
  const int64_t spatial = static_cast<int64_t>(shape.size()) - 2;
  SlidingWindows w;
  w.kernel = std::move(kernel);
  w.strides = spatialInts(node, "strides", 1, spatial);
  w.dilations = spatialInts(node, "dilations", 1, spatial);
  std::vector<int64_t> pads = spatialInts(node, "pads", 0, 2 * spatial);
  w.taps = checkedTaps(w.kernel, w.strides, w.dilations, pads);
  const std::string autoPad = autoPadOf(node);
  w.out.resize(spatial);
  w.padBefore.resize(spatial);
  w.padAfter.resize(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = shape[i + 2], s = w.strides[i],
                  window = (w.kernel[i] - 1) * w.dilations[i] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      w.out[i] = (in - 1) / s + 1;
      int64_t total = std::max<int64_t>((w.out[i] - 1) * s + window - in, 0);
      w.padBefore[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padAfter[i] = total - w.padBefore[i];
    } else if (autoPad == "VALID") {
      w.out[i] = in >= window ? (in - window) / s + 1 : 0;
      w.padBefore[i] = w.padAfter[i] = 0;
    } else if (autoPad == "NOTSET") {
      w.padBefore[i] = pads[i];
      w.padAfter[i] = pads[i + spatial];
      int64_t span = in + w.padBefore[i] + w.padAfter[i] - window;
      if (span < 0)
        throw Unsupported{"the kernel is larger than the padded input"};
      w.out[i] = (ceilMode ? (span + s - 1) / s : span / s) + 1;
      // A last window that would start in the end padding is dropped.
      if (ceilMode && (w.out[i] - 1) * s >= in + w.padBefore[i])
        --w.out[i];
    } else {
      throw Unsupported{"auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or "
                        "VALID, not " +
                        autoPad};
    }
  }
  return w;
}

/// MaxPool and AveragePool: the input padded (with the dtype's lowest
/// value for max, 0 for average; at the end also as far as ceil_mode's last
/// window reaches), one strided slice per kernel offset, combined by max or
/// by a sum divided by each window's count (the positions inside the input,
/// or inside the explicit pads with count_include_pad).
void poolBySlices(OnnxConverter &converter, const onnx::NodeProto &proto,
                  GraphNode &node) {
  const bool isMax = proto.op_type() == "MaxPool";
  std::vector<std::string> outputs = node.outputs;
  const bool wantsIndices = outputs.size() > 1 && !outputs[1].empty();
  const bool columnMajor = intAttr(node, "storage_order", 0) != 0;
  node.attrs.erase("storage_order");
  node.outputs.resize(1);
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  const int64_t rank = shape.size(), spatial = rank - 2;
  if (spatial < 1)
    throw Unsupported{proto.op_type() + "'s input must be [N, C, d1, ...]"};
  if (!node.attrs.count("kernel_shape"))
    throw Unsupported{proto.op_type() + " needs its kernel_shape"};
  auto flag = [&](const char *name) {
    auto it = node.attrs.find(name);
    return it != node.attrs.end() && std::get<int64_t>(it->second) != 0;
  };
  const bool countPads = flag("count_include_pad");
  const SlidingWindows windows =
      slidingWindows(node, shape, spatialInts(node, "kernel_shape", 1, spatial),
                     flag("ceil_mode"));
  const std::vector<int64_t> &kernel = windows.kernel,
                             &strides = windows.strides,
                             &dilations = windows.dilations,
                             &padBefore = windows.padBefore,
                             &padAfter = windows.padAfter;
  const Shape &out = windows.out;
  const int64_t taps = windows.taps;
  // Padding: the declared pads, and at the end whatever the last window
  // needs beyond them.
  std::vector<int64_t> padTensor(2 * rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t needed = (out[i] - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] + 1 - shape[i + 2] -
                     padBefore[i];
    padTensor[i + 2] = padBefore[i];
    padTensor[rank + i + 2] = std::max(needed, padAfter[i]);
  }
  // LpPool: the windows' sums of |x|^p, to the power 1 / p (zero pads add
  // nothing).
  const bool isLp = proto.op_type() == "LpPool";
  const int64_t lpOrder = isLp ? intAttr(node, "p", 2) : 0;
  std::string pooled = x;
  if (isLp) {
    if (!isFloat(dtype))
      throw Unsupported{"LpPool takes floats"};
    if (lpOrder < 1)
      throw Unsupported{"LpPool's p must be positive"};
    pooled = lpOrder == 2 ? converter.addStep(node, "mul", {x, x}, "squared")
                          : converter.addStep(node, "abs", {x}, "magnitude");
    if (lpOrder > 2)
      pooled = converter.addStep(
          node, "pow",
          {pooled, converter.addStepConstant(
                       node, "order", scalarTensor(dtype, double(lpOrder)))},
          "powered");
  }
  // MaxPool takes floats, i8 and u8 (opset 12 on); the fill never wins.
  double fill = 0.0;
  if (isMax && isFloat(dtype))
    fill = -std::numeric_limits<double>::infinity();
  else if (isMax && dtype == DType::I8)
    fill = -128;
  else if (isMax && dtype != DType::U8)
    throw Unsupported{std::string("MaxPool of ") + dtypeName(dtype) +
                      " is not supported (floats, i8, u8)"};
  if (!isMax && !isFloat(dtype))
    throw Unsupported{"AveragePool takes floats"};
  std::string padded =
      converter.addStep(node, "pad", {pooled}, "pool_padded",
                        {{"pads", padTensor}, {"constant_value", fill}});
  std::string combined;
  std::vector<int64_t> axes(spatial);
  for (int64_t i = 0; i < spatial; ++i)
    axes[i] = i + 2;
  // MaxPool's Indices, as ONNX's reference finds them: the window's
  // positions inside the input in order (the last dim fastest), the first
  // one taken and replaced only by a greater value; each index is the
  // position in the flattened input (storage_order 1: the spatial dims
  // column-major).
  if (wantsIndices && (!isMax || isLp))
    throw Unsupported{proto.op_type() + " has one output"};
  std::string best, bestIndex;
  Shape windowShape(rank, 1);
  for (int64_t i = 0; i < spatial; ++i)
    windowShape[i + 2] = out[i];
  auto trackArgmax = [&](const std::string &tap,
                         const std::vector<int64_t> &starts, int64_t o) {
    const std::string tag = std::to_string(o);
    checkConstantElements(numElements(windowShape), "MaxPool's indices");
    Tensor position(DType::I64, windowShape);
    for (int64_t e = 0; e < position.numElements(); ++e) {
      int64_t rest = e, flat = 0, stride = 1;
      bool inside = true;
      std::vector<int64_t> at(spatial);
      for (int64_t i = spatial; i-- > 0;) {
        at[i] = (rest % out[i]) * strides[i] + starts[i] - padBefore[i];
        rest /= out[i];
        inside &= at[i] >= 0 && at[i] < shape[i + 2];
      }
      for (int64_t k = 0; k < spatial; ++k) {
        int64_t i = columnMajor ? k : spatial - 1 - k;
        flat += at[i] * stride;
        stride *= shape[i + 2];
      }
      position.set(e, inside ? static_cast<double>(flat) : -1.0);
    }
    std::string index =
        converter.addStepConstant(node, "tap_index_" + tag, position);
    if (o == 0) {
      best = tap;
      bestIndex = index;
      return;
    }
    std::string none = converter.addStepConstant(node, "no_index_" + tag,
                                                 scalarTensor(DType::I64, -1));
    std::string take = converter.addStep(
        node, "and",
        {converter.addStep(node, "ne", {index, none}, "tap_inside_" + tag),
         converter.addStep(
             node, "or",
             {converter.addStep(node, "eq", {bestIndex, none},
                                "nothing_yet_" + tag),
              converter.addStep(node, "gt", {tap, best}, "greater_" + tag)},
             "better_" + tag)},
        "take_" + tag);
    best = converter.addStep(node, "select", {take, tap, best}, "best_" + tag);
    bestIndex = converter.addStep(node, "select", {take, index, bestIndex},
                                  "best_index_" + tag);
  };
  for (int64_t o = 0; o < taps; ++o) {
    std::vector<int64_t> starts(spatial), ends(spatial);
    int64_t rest = o;
    for (int64_t i = spatial; i-- > 0;) {
      int64_t j = rest % kernel[i];
      rest /= kernel[i];
      starts[i] = j * dilations[i];
      ends[i] = starts[i] + (out[i] - 1) * strides[i] + 1;
    }
    std::string slice = converter.addStep(
        node, "slice", {padded}, "tap_" + std::to_string(o),
        {{"starts", starts},
         {"ends", ends},
         {"axes", axes},
         {"steps", std::vector<int64_t>(strides.begin(), strides.end())}});
    combined =
        combined.empty()
            ? slice
            : converter.addStep(node, isMax ? "max" : "add", {combined, slice},
                                "taps_" + std::to_string(o));
    if (wantsIndices)
      trackArgmax(slice, starts, o);
  }
  if (wantsIndices) {
    // The flat index of each (n, c) plane's first element, added last; a
    // window wholly in the padding keeps -1, as the reference leaves it.
    if (shape[0] > 0 && shape[1] > (int64_t(1) << 26) / shape[0])
      throw Unsupported{"MaxPool's indices would need more than 2^26 planes"};
    Shape planeShape(rank, 1);
    planeShape[0] = shape[0];
    planeShape[1] = shape[1];
    Tensor planes(DType::I64, planeShape);
    int64_t planeSize = 1;
    for (int64_t i = 0; i < spatial; ++i)
      planeSize *= shape[i + 2];
    for (int64_t p = 0; p < shape[0] * shape[1]; ++p)
      planes.set(p, static_cast<double>(p * planeSize));
    std::string none = converter.addStepConstant(node, "no_index",
                                                 scalarTensor(DType::I64, -1));
    converter.addOutputStep(
        node, "select",
        {converter.addStep(node, "eq", {bestIndex, none}, "window_outside"),
         none,
         converter.addStep(node, "add",
                           {bestIndex, converter.addStepConstant(
                                           node, "plane_offsets", planes)},
                           "flat_index")},
        outputs[1]);
  }
  if (isMax || isLp) {
    Shape result{shape[0], shape[1]};
    result.insert(result.end(), out.begin(), out.end());
    if (isLp && lpOrder > 1)
      combined = lpOrder == 2
                     ? converter.addStep(node, "sqrt", {combined}, "norms")
                     : converter.addStep(
                           node, "pow",
                           {combined, converter.addStepConstant(
                                          node, "root",
                                          scalarTensor(dtype, 1.0 / lpOrder))},
                           "norms");
    becomeView(node, combined, result);
    return;
  }
  // Each window's count: a product over the dims of the positions it covers
  // inside the input (or inside the explicit pads with count_include_pad).
  Shape countShape(rank, 1);
  for (int64_t i = 0; i < spatial; ++i)
    countShape[i + 2] = out[i];
  Tensor counts(dtype, countShape);
  for (int64_t e = 0; e < counts.numElements(); ++e) {
    double count = 1;
    int64_t rest = e;
    for (int64_t i = spatial; i-- > 0;) {
      int64_t position = rest % out[i];
      rest /= out[i];
      int64_t low = countPads ? 0 : padBefore[i];
      int64_t high = countPads ? shape[i + 2] + padBefore[i] + padAfter[i]
                               : padBefore[i] + shape[i + 2];
      int64_t covered = 0;
      for (int64_t j = 0; j < kernel[i]; ++j) {
        int64_t p = position * strides[i] + j * dilations[i];
        covered += p >= low && p < high;
      }
      count *= static_cast<double>(covered);
    }
    counts.set(e, count);
  }
  node.op = "div";
  node.inputs = {combined,
                 converter.addStepConstant(node, "pool_counts", counts)};
  node.attrs.clear();
}

/// GlobalAveragePool and GlobalMaxPool: a mean or max over every spatial
/// dim, kept as 1s.
void globalPool(OnnxConverter &converter, const onnx::NodeProto &proto,
                GraphNode &node) {
  Shape shape = converter.requireShape(node.inputs.at(0), proto.op_type());
  if (shape.size() < 3)
    throw Unsupported{proto.op_type() +
                      "'s input must be [N, C, d1, ...], "
                      "not [" +
                      formatShape(shape) + "]"};
  std::vector<int64_t> spatialAxes(shape.size() - 2);
  std::iota(spatialAxes.begin(), spatialAxes.end(), int64_t(2));
  node.attrs = {{"axes", spatialAxes}, {"keepdims", int64_t(1)}};
}

/// The convolution of `padded` ([N, C, spatial...], padded already) with
/// `weights` ([M, C / group, kernel...]) by `windows` (whose pads are
/// already in `padded`) as one matmul: the weights, as [group, M / group,
/// C / group * taps], times every window's elements side by side (im2col:
/// [N, group, C / group * taps, positions], one gather from the padded
/// input by a table of [taps, positions] offsets; a 1x1 kernel at stride 1
/// takes the input as it is). `node` becomes the result, plus `bias` ([M])
/// if given.
void convolveByWindows(OnnxConverter &converter, GraphNode &node,
                       const std::string &padded, const Shape &paddedShape,
                       const std::string &weights, const Shape &weightShape,
                       int64_t group, const SlidingWindows &windows,
                       const std::string &bias) {
  const int64_t spatial = static_cast<int64_t>(paddedShape.size()) - 2;
  const int64_t batch = paddedShape[0], channels = paddedShape[1],
                outChannels = weightShape[0];
  int64_t positions = 1, area = 1;
  bool pointwise = true;
  for (int64_t i = 0; i < spatial; ++i) {
    positions *= windows.out[i];
    area *= paddedShape[2 + i];
    pointwise &= windows.kernel[i] == 1 && windows.strides[i] == 1 &&
                 windows.out[i] == paddedShape[2 + i];
  }
  std::string columns =
      viewStep(converter, node, padded, {batch, channels, area}, "flat_input");
  if (!pointwise) {
    if (windows.taps * positions > (int64_t(1) << 26))
      throw Unsupported{std::to_string(windows.taps) + " taps over " +
                        std::to_string(positions) +
                        " output positions are more window elements than "
                        "fusec takes (2^26)"};
    // offset[tap][position]: the tap's element of the position's window in
    // the flattened padded input (int32 where that suffices).
    Tensor offsets(area <= INT32_MAX ? DType::I32 : DType::I64,
                   {windows.taps, positions});
    std::vector<int64_t> tap(spatial), at(spatial);
    for (int64_t t = 0; t < windows.taps; ++t) {
      for (int64_t i = spatial, rest = t; i-- > 0; rest /= windows.kernel[i])
        tap[i] = rest % windows.kernel[i];
      for (int64_t p = 0; p < positions; ++p) {
        int64_t offset = 0;
        for (int64_t i = spatial, rest = p; i-- > 0; rest /= windows.out[i])
          at[i] = rest % windows.out[i];
        for (int64_t i = 0; i < spatial; ++i)
          offset = offset * paddedShape[2 + i] + at[i] * windows.strides[i] +
                   tap[i] * windows.dilations[i];
        offsets.set(t * positions + p, static_cast<double>(offset));
      }
    }
    columns = converter.addStep(
        node, "gather",
        {columns, converter.addStepConstant(node, "window_offsets", offsets)},
        "windows", {{"axis", int64_t(2)}});
  }
  // A 2-D lhs is one matmul for the whole batch; a grouped one is a batch
  // of group matmuls per image (its lhs broadcast over the images).
  const int64_t depth = channels / group * windows.taps;
  Shape columnShape = {batch, group, depth, positions},
        weightRows = {group, outChannels / group, depth};
  if (group == 1) {
    columnShape.erase(columnShape.begin() + 1);
    weightRows.erase(weightRows.begin());
  } else if (batch == 1) {
    columnShape.erase(columnShape.begin());
  }
  std::string product = converter.addStep(
      node, "matmul",
      {viewStep(converter, node, weights, weightRows, "weight_rows"),
       viewStep(converter, node, columns, columnShape, "columns")},
      "product");
  Shape result = {batch, outChannels};
  result.insert(result.end(), windows.out.begin(), windows.out.end());
  if (bias.empty()) {
    becomeView(node, product, result);
    return;
  }
  Shape biasShape(paddedShape.size(), 1);
  biasShape[1] = outChannels;
  node.op = "add";
  node.inputs = {viewStep(converter, node, product, result, "unbiased"),
                 viewStep(converter, node, bias, biasShape, "bias_column")};
  node.attrs.clear();
}

/// The operands of Conv and ConvTranspose, checked: X [N, C, d1, ...], W,
/// an optional B [M], and the group.
struct ConvOperands {
  std::string x, w, bias;
  Shape xShape, wShape;
  int64_t group = 1, spatial = 0;
};

ConvOperands convOperands(OnnxConverter &converter,
                          const onnx::NodeProto &proto, const GraphNode &node) {
  ConvOperands c;
  const std::string &op = proto.op_type();
  c.x = node.inputs.at(0);
  c.w = node.inputs.size() > 1 ? node.inputs[1] : "";
  if (c.w.empty())
    throw Unsupported{op + " needs its weights (input 1)"};
  if (node.inputs.size() > 2)
    c.bias = node.inputs[2];
  c.xShape = converter.requireShape(c.x, op);
  c.wShape = converter.requireShape(c.w, op);
  DType dtype = converter.requireDType(c.x, op);
  // ConvInteger and QLinearConv convolve their operands shifted to i32.
  const bool shifted = op == "ConvInteger" || op == "QLinearConv";
  if (shifted ? dtype != DType::I32 : !isFloat(dtype))
    throw Unsupported{op + " takes floats, not " + dtypeName(dtype)};
  c.spatial = static_cast<int64_t>(c.xShape.size()) - 2;
  if (c.spatial < 1)
    throw Unsupported{op + "'s input must be [N, C, d1, ...], not [" +
                      formatShape(c.xShape) + "]"};
  if (c.wShape.size() != c.xShape.size())
    throw Unsupported{op + "'s weights [" + formatShape(c.wShape) +
                      "] must have the input's rank (" +
                      std::to_string(c.xShape.size()) + ")"};
  if (auto it = node.attrs.find("group"); it != node.attrs.end())
    c.group = std::get<int64_t>(it->second);
  const int64_t channels = c.xShape[1];
  if (c.group < 1 || channels % c.group != 0)
    throw Unsupported{"group " + std::to_string(c.group) +
                      " must be positive and divide the input's " +
                      std::to_string(channels) + " channels"};
  if (auto it = node.attrs.find("kernel_shape"); it != node.attrs.end()) {
    auto kernel = std::get<std::vector<int64_t>>(it->second);
    if (kernel != std::vector<int64_t>(c.wShape.begin() + 2, c.wShape.end()))
      throw Unsupported{"kernel_shape disagrees with the weights [" +
                        formatShape(c.wShape) + "]"};
  }
  return c;
}

std::vector<int64_t> kernelOf(const Shape &weightShape) {
  return std::vector<int64_t>(weightShape.begin() + 2, weightShape.end());
}

void checkBias(OnnxConverter &converter, const ConvOperands &c,
               int64_t outChannels) {
  if (c.bias.empty())
    return;
  Shape shape = converter.requireShape(c.bias, "the bias");
  if (shape != Shape{outChannels})
    throw Unsupported{"the bias must be [" + std::to_string(outChannels) +
                      "], not [" + formatShape(shape) + "]"};
}

/// Conv: the input padded with zeros, then convolveByWindows.
void convolution(OnnxConverter &converter, const onnx::NodeProto &proto,
                 GraphNode &node) {
  ConvOperands c = convOperands(converter, proto, node);
  const int64_t outChannels = c.wShape[0];
  if (c.wShape[1] * c.group != c.xShape[1] || outChannels % c.group != 0)
    throw Unsupported{"weights [" + formatShape(c.wShape) + "] do not fit " +
                      std::to_string(c.xShape[1]) + " input channels in " +
                      std::to_string(c.group) + " group(s)"};
  checkBias(converter, c, outChannels);
  SlidingWindows windows =
      slidingWindows(node, c.xShape, kernelOf(c.wShape), false);
  const int64_t rank = c.xShape.size();
  std::vector<int64_t> pads(2 * rank, 0);
  Shape paddedShape = c.xShape;
  bool padding = false;
  for (int64_t i = 0; i < c.spatial; ++i) {
    pads[2 + i] = windows.padBefore[i];
    pads[rank + 2 + i] = windows.padAfter[i];
    paddedShape[2 + i] += windows.padBefore[i] + windows.padAfter[i];
    padding |= windows.padBefore[i] != 0 || windows.padAfter[i] != 0;
  }
  std::string padded =
      padding ? converter.addStep(node, "pad", {c.x}, "padded",
                                  {{"pads", pads}, {"constant_value", 0.0}})
              : c.x;
  convolveByWindows(converter, node, padded, paddedShape, c.w, c.wShape,
                    c.group, windows, c.bias);
}

/// ConvInteger and QLinearConv: x and w minus their zero points in i32 (w's
/// per output channel), convolved as integers (padding with 0 there is
/// padding with x's zero point), plus QLinearConv's i32 bias, and
/// QLinearConv requantizes.
void integerConvolution(OnnxConverter &converter, const onnx::NodeProto &proto,
                        GraphNode &node) {
  const bool requantized = proto.op_type() == "QLinearConv";
  std::vector<std::string> in = node.inputs;
  in.resize(9);
  // ConvInteger: x, w, x_zero, w_zero; QLinearConv: x, x_scale, x_zero, w,
  // w_scale, w_zero, y_scale, y_zero, B.
  const std::string x = in[0], w = requantized ? in[3] : in[1], xZero = in[2],
                    wZero = requantized ? in[5] : in[3];
  if (x.empty() || w.empty() ||
      (requantized && (in[1].empty() || in[4].empty() || in[6].empty())))
    throw Unsupported{proto.op_type() + " is missing a required input"};
  std::string shiftedX = shiftedToInt32(converter, node, x, xZero, 1, "x");
  std::string shiftedW = shiftedToInt32(converter, node, w, wZero, 0, "w");
  node.inputs = {shiftedX, shiftedW};
  if (requantized && !in[8].empty())
    node.inputs.push_back(in[8]);
  const DType outputType = in[7].empty()
                               ? converter.requireDType(x, proto.op_type())
                               : converter.requireDType(in[7], proto.op_type());
  convolution(converter, proto, node);
  if (!requantized)
    return;
  // The convolution's result becomes a step; the node requantizes it.
  Shape xShape = converter.requireShape(x, "x");
  Shape channels(xShape.size() - 1, 1);
  channels[0] = converter.requireShape(w, "w")[0];
  std::string product =
      converter.addStep(node, node.op, node.inputs, "accumulated", node.attrs);
  requantize(converter, node, product, in[1], in[4], channels, in[6], in[7],
             outputType);
}

/// Python's floor division, for pads that may be negative.
int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/// ConvTranspose as the convolution it is the transpose of: the input with
/// stride - 1 zeros between its elements, padded by (kernel - 1) *
/// dilation less the pads (negative pads crop), convolved at stride 1 with
/// the weights flipped in every spatial dim and their channel dims swapped
/// within each group. output_shape, when given, sets the pads (auto_pad
/// SAME_UPPER puts the extra one at the end, otherwise at the start).
void transposedConvolution(OnnxConverter &converter,
                           const onnx::NodeProto &proto, GraphNode &node) {
  ConvOperands c = convOperands(converter, proto, node);
  const int64_t spatial = c.spatial, rank = c.xShape.size(), group = c.group;
  const int64_t channels = c.xShape[1], outChannels = c.wShape[1] * group;
  if (c.wShape[0] != channels)
    throw Unsupported{"weights [" + formatShape(c.wShape) +
                      "] must have the input's " + std::to_string(channels) +
                      " channels first"};
  checkBias(converter, c, outChannels);
  const std::vector<int64_t> kernel = kernelOf(c.wShape);
  std::vector<int64_t> strides = spatialInts(node, "strides", 1, spatial),
                       dilations = spatialInts(node, "dilations", 1, spatial),
                       extra = spatialInts(node, "output_padding", 0, spatial),
                       pads = spatialInts(node, "pads", 0, 2 * spatial);
  std::vector<int64_t> padLike = pads;
  padLike.insert(padLike.end(), extra.begin(), extra.end());
  const int64_t taps = checkedTaps(kernel, strides, dilations, padLike);
  const std::string autoPad = autoPadOf(node);
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER" && autoPad != "VALID")
    throw Unsupported{"auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or "
                      "VALID, not " +
                      autoPad};
  std::vector<int64_t> outputShape;
  if (auto it = node.attrs.find("output_shape"); it != node.attrs.end()) {
    outputShape = std::get<std::vector<int64_t>>(it->second);
    // The full N, C, d1, ... form is accepted too.
    if (static_cast<int64_t>(outputShape.size()) == rank)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    if (static_cast<int64_t>(outputShape.size()) != spatial)
      throw Unsupported{"output_shape must have " + std::to_string(spatial) +
                        " values"};
    for (int64_t d : outputShape)
      if (d < 0 || d > (int64_t(1) << 40))
        throw Unsupported{"output_shape values must be in [0, 2^40]"};
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i)
      outputShape.push_back(c.xShape[2 + i] * strides[i]);
  }
  if (autoPad == "VALID")
    std::fill(pads.begin(), pads.end(), 0);
  const bool upperExtra = autoPad == "SAME_UPPER";
  // The zero-stuffed input, padded: pad begin (kernel - 1) * dilation -
  // pads_begin; its end as far as the output reaches.
  Shape stuffedShape = c.xShape;
  std::vector<int64_t> convPads(2 * rank, 0);
  SlidingWindows windows;
  windows.kernel = kernel;
  windows.dilations = dilations;
  windows.strides.assign(spatial, 1);
  windows.taps = taps;
  windows.padBefore.assign(spatial, 0);
  windows.padAfter.assign(spatial, 0);
  Shape paddedShape = c.xShape;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = c.xShape[2 + i], window = (kernel[i] - 1) * dilations[i];
    const int64_t full = strides[i] * (in - 1) + extra[i] + window + 1;
    int64_t begin = pads[i], end = pads[i + spatial];
    if (!outputShape.empty()) {
      int64_t total = full - outputShape[i];
      begin = upperExtra ? floorDiv(total, 2) : total - floorDiv(total, 2);
      end = total - begin;
    }
    int64_t out = full - begin - end;
    if (out < 0)
      throw Unsupported{"the pads remove more than the whole output"};
    windows.out.push_back(out);
    stuffedShape[2 + i] = in > 0 ? (in - 1) * strides[i] + 1 : 0;
    convPads[2 + i] = window - begin;
    convPads[rank + 2 + i] =
        out + window - convPads[2 + i] - stuffedShape[2 + i];
    paddedShape[2 + i] = out + window;
  }
  // Zero stuffing: [N, C, d1, 1, d2, 1, ...] padded to stride at each unit
  // dim's end, viewed as [N, C, d1 * s1, ...], the last s - 1 zeros cut.
  std::string input = c.x;
  bool stuffing = false;
  for (int64_t s : strides)
    stuffing |= s > 1;
  if (stuffing) {
    Shape interleaved = {c.xShape[0], channels};
    std::vector<int64_t> stuffPads(2 * (2 + 2 * spatial), 0);
    Shape widened = {c.xShape[0], channels};
    for (int64_t i = 0; i < spatial; ++i) {
      interleaved.push_back(c.xShape[2 + i]);
      interleaved.push_back(1);
      stuffPads[(2 + 2 * spatial) + 3 + 2 * i] = strides[i] - 1;
      widened.push_back(c.xShape[2 + i] * strides[i]);
    }
    std::string spread = converter.addStep(
        node, "pad",
        {viewStep(converter, node, c.x, interleaved, "interleaved")},
        "stuffed_wide", {{"pads", stuffPads}, {"constant_value", 0.0}});
    input = viewStep(converter, node, spread, widened, "stuffed_rows");
    // The s - 1 zeros after the last element are cut by the end pad.
    for (int64_t i = 0; i < spatial; ++i)
      if (c.xShape[2 + i] > 0)
        convPads[rank + 2 + i] -= strides[i] - 1;
  }
  bool padding = false;
  for (int64_t p : convPads)
    padding |= p != 0;
  std::string padded =
      padding ? converter.addStep(node, "pad", {input}, "padded",
                                  {{"pads", convPads}, {"constant_value", 0.0}})
              : input;
  // The convolution's weights: [C, M/g, k...] as [g, C/g, M/g, k...],
  // swapped to [g, M/g, C/g, k...] = [M, C/g, k...] and flipped in every
  // spatial dim. Constant weights are rearranged here, once.
  const int64_t inPerGroup = channels / group, outPerGroup = c.wShape[1];
  Shape convWeightShape = {outChannels, inPerGroup};
  convWeightShape.insert(convWeightShape.end(), kernel.begin(), kernel.end());
  std::string weights;
  if (const Tensor *given = converter.constantOrNull(c.w)) {
    Tensor rearranged(given->dtype, convWeightShape);
    const size_t bytes = dtypeBytes(given->dtype);
    for (int64_t from = 0; from < given->numElements(); ++from) {
      // from = ((g * C/g + ci) * M/g + mo) * taps + tap
      int64_t tap = from % taps, rest = from / taps;
      int64_t mo = rest % outPerGroup, ci = (rest / outPerGroup) % inPerGroup,
              g = rest / outPerGroup / inPerGroup;
      int64_t to = ((g * outPerGroup + mo) * inPerGroup + ci) * taps +
                   (taps - 1 - tap); // flipping every dim reverses the taps
      std::memcpy(rearranged.bytes.data() + to * bytes,
                  given->bytes.data() + from * bytes, bytes);
    }
    weights = converter.addStepConstant(node, "conv_weights", rearranged);
  } else {
    Shape grouped = {group, inPerGroup, outPerGroup};
    grouped.insert(grouped.end(), kernel.begin(), kernel.end());
    std::vector<int64_t> swap = {0, 2, 1};
    for (int64_t i = 0; i < spatial; ++i)
      swap.push_back(3 + i);
    std::string swapped = converter.addStep(
        node, "transpose",
        {viewStep(converter, node, c.w, grouped, "weights_grouped")},
        "weights_swapped", {{"perm", swap}});
    std::vector<int64_t> starts(spatial, -1), ends(spatial, INT64_MIN),
        axes(spatial), steps(spatial, -1);
    std::iota(axes.begin(), axes.end(), int64_t(2));
    weights = converter.addStep(
        node, "slice",
        {viewStep(converter, node, swapped, convWeightShape,
                  "weights_as_conv")},
        "conv_weights",
        {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}});
  }
  convolveByWindows(converter, node, padded, paddedShape, weights,
                    convWeightShape, group, windows, c.bias);
}

} // namespace

void registerConvPoolOps(OnnxRegistry &registry) {
  registry.on("MaxPool", "max")
      .attrs({"kernel_shape", "strides", "pads", "dilations", "ceil_mode",
              "auto_pad", "storage_order"})
      .rewrite(poolBySlices);
  registry.on("LpPool", "add", 11)
      .attrs({"kernel_shape", "strides", "pads", "dilations", "ceil_mode",
              "auto_pad", "p"})
      .rewrite(poolBySlices);
  registry.on("AveragePool", "div")
      .attrs({"kernel_shape", "strides", "pads"})
      .attr("dilations", 19)
      .attrs({"ceil_mode", "auto_pad", "count_include_pad"})
      .rewrite(poolBySlices);
  registry.on("GlobalAveragePool", "reduce_mean").rewrite(globalPool);
  registry.on("GlobalMaxPool", "reduce_max").rewrite(globalPool);
  registry.on("Conv", "add")
      .attrs(
          {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
      .rewrite(convolution);
  for (const char *op : {"ConvInteger", "QLinearConv"})
    registry.on(op, "add", 10)
        .attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads",
                "strides"})
        .rewrite(integerConvolution);
  registry.on("ConvTranspose", "add")
      .attrs({"auto_pad", "dilations", "group", "kernel_shape",
              "output_padding", "output_shape", "pads", "strides"})
      .rewrite(transposedConvolution);
}

} // namespace fusec::onnx_import
