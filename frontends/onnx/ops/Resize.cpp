//===- Resize.cpp - ONNX resampling ops -----------------------------------===//
//
// Resampling: Resize, Upsample, GridSample, AffineGrid.
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

/// AffineGrid: theta [N, 2, 3] (or [N, 3, 4]) applied to the normalized
/// positions of an output of `size` [N, C, (D,) H, W], homogeneous (x, y,
/// (z,) 1), as ONNX's reference computes it: the positions in f64 (NumPy's
/// arange), theta widened to f64, one matmul, the result rounded to theta's
/// dtype.
void affineGrid(OnnxConverter &converter, const onnx::NodeProto &,
                GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"AffineGrid takes theta and size"};
  const std::string theta = node.inputs[0];
  std::vector<int64_t> size = integersOf(
      converter.constantValue(node.inputs[1], "input 1 (size)"), "size");
  const bool alignCorners = intAttr(node, "align_corners", 0) != 0;
  if (size.size() != 4 && size.size() != 5)
    throw Unsupported{"AffineGrid's size must be [N, C, H, W] or [N, C, D, "
                      "H, W]"};
  const int64_t spatial = size.size() - 2;
  Shape thetaShape = converter.requireShape(theta, "AffineGrid");
  DType dtype = converter.requireDType(theta, "AffineGrid");
  if (thetaShape != Shape{size[0], spatial, spatial + 1})
    throw Unsupported{"AffineGrid's theta must be [" + std::to_string(size[0]) +
                      ", " + std::to_string(spatial) + ", " +
                      std::to_string(spatial + 1) + "] for that size"};
  // The positions: their count is bounded before it is multiplied out
  // (2^26, as every tensor a converter sizes).
  int64_t positions = 1;
  for (int64_t d = 2; d < static_cast<int64_t>(size.size()); ++d) {
    if (size[d] <= 0 || size[d] > (int64_t(1) << 26) / positions)
      throw Unsupported{"AffineGrid's size dims must be positive, with at "
                        "most 2^26 positions in all"};
    positions *= size[d];
  }
  // Row k of the transposed grid, [spatial + 1, positions]: coordinate k
  // (x runs along the last dim) of every position, or 1; each row is one
  // dim's coordinates broadcast over the others, so the constants hold a
  // dim's worth each, not the grid (which only the kernels write).
  Shape spatialShape(size.begin() + 2, size.end());
  std::vector<std::string> rows;
  for (int64_t k = 0; k < spatial; ++k) {
    const int64_t axis = spatial - 1 - k, dim = spatialShape[axis];
    Shape along(spatial, 1);
    along[axis] = dim;
    Tensor coordinates(DType::F64, along);
    // NumPy's arange: start + i * ((start + step) - start).
    const double step = alignCorners ? 2.0 / (dim - 1) : 2.0 / dim;
    const double start = alignCorners ? -1.0 : -1.0 + step / 2;
    for (int64_t i = 0; i < dim; ++i)
      coordinates.set(i, alignCorners && dim == 1
                             ? -1.0
                             : start + i * ((start + step) - start));
    std::string suffix = "axis" + std::to_string(k);
    std::string spread = converter.addStep(
        node, "expand",
        {converter.addStepConstant(node, "coordinates_" + suffix, coordinates)},
        "positions_" + suffix, {{"shape", spatialShape}});
    rows.push_back(
        viewStep(converter, node, spread, {1, positions}, "row_" + suffix));
  }
  Tensor one(DType::F64, {1, 1});
  one.set(0, 1.0);
  rows.push_back(converter.addStep(
      node, "expand", {converter.addStepConstant(node, "one", one)}, "ones",
      {{"shape", std::vector<int64_t>{1, positions}}}));
  std::string grid =
      converter.addStep(node, "concat", rows, "grid", {{"axis", int64_t(0)}});
  std::string wide = theta;
  if (dtype != DType::F64)
    wide = converter.addStep(node, "cast", {theta}, "theta_f64",
                             {{"dtype", std::string("f64")}});
  std::string product =
      converter.addStep(node, "matmul", {wide, grid}, "product");
  std::string moved =
      converter.addStep(node, "transpose", {product}, "moved",
                        {{"perm", std::vector<int64_t>{0, 2, 1}}});
  if (dtype != DType::F64)
    moved = converter.addStep(node, "cast", {moved}, "rounded",
                              {{"dtype", std::string(dtypeName(dtype))}});
  Shape result = {size[0]};
  for (int64_t d = 2; d < static_cast<int64_t>(size.size()); ++d)
    result.push_back(size[d]);
  result.push_back(spatial);
  becomeView(node, moved, result);
}

/// Resize's source position of output position `y` along one axis, in
/// input coordinates, as ONNX's reference evaluator computes it (in f64;
/// `outputWidth` is scale x input width, not rounded; `outputDim` is the
/// output's dim).
double resizeSource(const std::string &mode, double y, double scale,
                    int64_t inputWidth, double outputWidth, int64_t outputDim,
                    const std::array<double, 2> &roi) {
  if (mode == "align_corners")
    return outputWidth == 1 ? 0.0 : y * (inputWidth - 1) / (outputWidth - 1);
  if (mode == "asymmetric")
    return y / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (y + 0.5) / scale;
  if (mode == "tf_crop_and_resize")
    return (outputWidth == 1 ? (roi[1] - roi[0]) * (inputWidth - 1) / 2
                             : y * (roi[1] - roi[0]) * (inputWidth - 1) /
                                   (outputWidth - 1)) +
           roi[0] * (inputWidth - 1);
  if (mode == "pytorch_half_pixel")
    return outputWidth == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel")
    return (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    // Opset 19: the output's center maps to the input's where rounding the
    // output dim changed the scale.
    double adjustment = static_cast<double>(outputDim) / outputWidth;
    double center = static_cast<double>(inputWidth) / 2;
    return center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  throw Unsupported{"coordinate_transformation_mode " + mode +
                    " is not supported"};
}

/// Resize's interpolation weights for a source position `ratio` of the
/// way past the input position below it (1 at an input position). With
/// `antialias` (opset 18) a downscaling linear or cubic filter is widened
/// by 1 / scale and normalized, as ONNX's reference computes it.
std::vector<double> resizeCoefficients(const std::string &mode,
                                       const std::string &nearestMode,
                                       double ratio, double cubicA,
                                       bool antialias, double scale) {
  if (antialias && mode != "nearest") {
    scale = std::min(scale, 1.0);
    const bool linear = mode == "linear";
    const int64_t start =
        static_cast<int64_t>(std::floor((linear ? -1 : -2) / scale) + 1);
    std::vector<double> coefficients;
    double sum = 0;
    for (int64_t i = start; i < 2 - start; ++i) {
      double x = std::abs((static_cast<double>(i) - ratio) * scale);
      double c;
      if (linear)
        c = std::clamp(1 - x, 0.0, 1.0);
      else if (x <= 1)
        c = (cubicA + 2) * x * x * x - (cubicA + 3) * x * x + 1;
      else if (x < 2)
        c = cubicA * x * x * x - 5 * cubicA * x * x + 8 * cubicA * x -
            4 * cubicA;
      else
        c = 0;
      coefficients.push_back(c);
      sum += c;
    }
    for (double &c : coefficients)
      c /= sum;
    return coefficients;
  }
  if (mode == "nearest") {
    if (ratio == 1.0)
      return {0, 1};
    if (nearestMode == "round_prefer_floor")
      return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (nearestMode == "round_prefer_ceil")
      return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (nearestMode == "floor")
      return {1, 0};
    if (nearestMode == "ceil")
      return {0, 1};
    throw Unsupported{"nearest_mode " + nearestMode + " is not supported"};
  }
  if (mode == "linear")
    return {1 - ratio, ratio};
  const double a = cubicA, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

/// Resize (opset 11 on; antialias, axes and keep_aspect_ratio_policy from
/// 18): one axis at a time, as ONNX's reference evaluator does it. Per output
/// position a table gives the input positions it reads (clamped to the input,
/// as edge padding would) and their weights: nearest is one gather; linear and
/// cubic gather 2 or 4 positions, weight them in f64 and sum, and the
/// result is rounded back to the input's dtype (integers half to even,
/// saturated). tf_crop_and_resize's positions outside the input take
/// extrapolation_value. scales, sizes and roi must be constants.
void resizeBySeparableTables(OnnxConverter &converter,
                             const onnx::NodeProto &proto, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  const int64_t rank = shape.size();
  auto text = [&](const char *name, const char *fallback) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? std::string(fallback)
                                  : std::get<std::string>(it->second);
  };
  auto number = [&](const char *name, double fallback) {
    auto it = node.attrs.find(name);
    if (it == node.attrs.end())
      return fallback;
    if (const int64_t *integer = std::get_if<int64_t>(&it->second))
      return static_cast<double>(*integer);
    return std::get<double>(it->second);
  };
  const std::string mode = text("mode", "nearest"),
                    coordinate =
                        text("coordinate_transformation_mode", "half_pixel"),
                    nearestMode = text("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    throw Unsupported{"mode must be nearest, linear or cubic, not " + mode};
  const double cubicA = number("cubic_coeff_a", -0.75f),
               extrapolation = number("extrapolation_value", 0.0);
  const bool excludeOutside = number("exclude_outside", 0) != 0;
  if (coordinate == "half_pixel_symmetric" && converter.opset < 19)
    throw Unsupported{"coordinate_transformation_mode half_pixel_symmetric "
                      "is defined from opset 19 on"};
  const bool antialias = number("antialias", 0) != 0;
  if (antialias && mode == "nearest")
    throw Unsupported{"antialias applies to linear and cubic modes only"};
  const std::string policy = text("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    throw Unsupported{"keep_aspect_ratio_policy must be stretch, not_larger "
                      "or not_smaller, not " +
                      policy};
  // The axes scales, sizes and roi are given for (all by default).
  std::vector<int64_t> axes;
  if (auto it = node.attrs.find("axes"); it != node.attrs.end()) {
    std::vector<bool> seen(rank, false);
    for (int64_t axis : std::get<std::vector<int64_t>>(it->second)) {
      axis = resolvedAxis(axis, rank);
      if (seen[axis])
        throw Unsupported{"Resize's axes name axis " + std::to_string(axis) +
                          " twice"};
      seen[axis] = true;
      axes.push_back(axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  const int64_t givenCount = static_cast<int64_t>(axes.size());
  auto input = [&](size_t index) -> const Tensor * {
    if (node.inputs.size() <= index || node.inputs[index].empty())
      return nullptr;
    const Tensor &value = converter.constantValue(
        node.inputs[index], "Resize's input " + std::to_string(index));
    return value.numElements() == 0 ? nullptr : &value;
  };
  const Tensor *roiTensor = input(1), *scalesTensor = input(2),
               *sizesTensor = input(3);
  if (!scalesTensor == !sizesTensor)
    throw Unsupported{"Resize takes scales or sizes, one of them"};
  const Tensor &given = scalesTensor ? *scalesTensor : *sizesTensor;
  if (given.numElements() != givenCount)
    throw Unsupported{std::string(scalesTensor ? "scales" : "sizes") +
                      " must have one value per resized axis (" +
                      std::to_string(givenCount) + ")"};
  std::vector<double> roi;
  if (coordinate == "tf_crop_and_resize") {
    if (!roiTensor || roiTensor->numElements() != 2 * givenCount)
      throw Unsupported{"tf_crop_and_resize needs a roi of " +
                        std::to_string(2 * givenCount) + " values"};
    roi.assign(rank, 0.0);
    roi.resize(2 * rank, 1.0);
    for (int64_t i = 0; i < givenCount; ++i) {
      roi[axes[i]] = roiTensor->at(i);
      roi[rank + axes[i]] = roiTensor->at(givenCount + i);
    }
  }
  std::vector<double> scales(rank, 1.0);
  Shape out = shape;
  for (int64_t i = 0; i < givenCount; ++i) {
    const int64_t d = axes[i];
    double value = given.at(i);
    if (sizesTensor) {
      if (!(value >= 0 && value <= double(int64_t(1) << 40)))
        throw Unsupported{"sizes must be in [0, 2^40]"};
      out[d] = static_cast<int64_t>(value);
      scales[d] = shape[d] ? static_cast<double>(out[d]) / shape[d] : 1.0;
    } else {
      scales[d] = value;
      if (!(value > 0) || value * shape[d] > double(int64_t(1) << 40))
        throw Unsupported{"scales must be positive and keep each dim under "
                          "2^40"};
      out[d] = static_cast<int64_t>(value * shape[d]);
    }
  }
  if (sizesTensor && policy != "stretch") {
    // One scale for every resized axis, the smallest or the largest, and
    // each dim that scale times the input's, rounded half up.
    double scale = scales[axes[0]];
    for (int64_t d : axes)
      scale = policy == "not_larger" ? std::min(scale, scales[d])
                                     : std::max(scale, scales[d]);
    for (int64_t d : axes) {
      scales[d] = scale;
      out[d] = static_cast<int64_t>(scale * shape[d] + 0.5);
    }
  }
  for (int64_t d = 0; d < rank; ++d)
    if (out[d] < 0 || out[d] > (int64_t(1) << 40) || (shape[d] == 0 && out[d]))
      throw Unsupported{"output dim " + std::to_string(d) + " (" +
                        std::to_string(out[d]) + ") is out of range"};
  const bool nearest = mode == "nearest";
  const bool integer = !isFloat(dtype);
  std::string value = x;
  if (!nearest && dtype != DType::F64)
    value = converter.addStep(node, "cast", {x}, "in_f64",
                              {{"dtype", std::string("f64")}});
  const DType computeType = nearest ? dtype : DType::F64;
  Shape current = shape;
  auto isClose = [](double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
  };
  for (int64_t axis : axes) {
    std::array<double, 2> axisRoi = {0.0, 1.0};
    if (!roi.empty())
      axisRoi = {roi[axis], roi[axis + rank]};
    if (isClose(scales[axis], 1.0) && out[axis] == shape[axis] &&
        (roi.empty() ||
         (std::abs(axisRoi[0]) <= 0.0 && isClose(axisRoi[1], 1.0))))
      continue;
    const int64_t inWidth = shape[axis], outWidth = out[axis];
    const double scaledWidth = scales[axis] * inWidth;
    // Antialias widens the filter by the downscale; its width is the same
    // for every output position.
    const int64_t taps =
        nearest ? 1
                : static_cast<int64_t>(
                      resizeCoefficients(mode, nearestMode, 0.5, cubicA,
                                         antialias, scales[axis])
                          .size());
    if (outWidth * taps > (int64_t(1) << 26))
      throw Unsupported{"an output dim of " + std::to_string(outWidth) +
                        " is more than fusec's tables take (2^26 taps)"};
    Tensor indices(DType::I64, {outWidth, taps});
    Tensor weights(DType::F64, {outWidth, taps});
    Tensor outside(DType::I1, {outWidth});
    bool extrapolates = false;
    for (int64_t y = 0; y < outWidth; ++y) {
      double source =
          resizeSource(coordinate, static_cast<double>(y), scales[axis],
                       inWidth, scaledWidth, outWidth, axisRoi);
      bool beyond = coordinate == "tf_crop_and_resize" &&
                    (source < 0 || source > inWidth - 1);
      outside.set(y, beyond);
      extrapolates |= beyond;
      double below = std::floor(source);
      double ratio = source == below ? 1.0 : source - below;
      std::vector<double> coefficients = resizeCoefficients(
          mode, nearestMode, ratio, cubicA, antialias, scales[axis]);
      const int64_t n = coefficients.size(), pad = (n + 1) / 2;
      double padded = source + pad, floorPadded = std::floor(padded);
      double fraction = padded - floorPadded;
      int64_t offset = n % 2 == 0 ? (fraction == 0 ? -(n / 2) : -(n / 2) + 1)
                       : fraction <= 0.5 ? -((n - 1) / 2)
                                         : -((n - 1) / 2) + 1;
      int64_t start = static_cast<int64_t>(floorPadded) + offset - pad;
      if (excludeOutside) {
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          if (start + k < 0 || start + k >= inWidth)
            coefficients[k] = 0;
          sum += coefficients[k];
        }
        for (double &c : coefficients)
          c /= sum == 0 ? 1.0 : sum;
      }
      auto clamped = [&](int64_t i) {
        return std::clamp<int64_t>(i, 0, inWidth - 1);
      };
      if (nearest) {
        indices.set(y, static_cast<double>(
                           clamped(start + (coefficients[0] != 0 ? 0 : 1))));
        continue;
      }
      for (int64_t k = 0; k < n; ++k) {
        indices.set(y * n + k, static_cast<double>(clamped(start + k)));
        weights.set(y * n + k, coefficients[k]);
      }
    }
    const std::string name = std::to_string(axis);
    current[axis] = outWidth;
    Shape trailing(rank - axis - 1, 1);
    if (nearest) {
      indices.shape = {outWidth};
      value = converter.addStep(
          node, "gather",
          {value,
           converter.addStepConstant(node, "resize_index_" + name, indices)},
          "resized_" + name, {{"axis", axis}});
    } else {
      std::string gathered = converter.addStep(
          node, "gather",
          {value,
           converter.addStepConstant(node, "resize_index_" + name, indices)},
          "taps_" + name, {{"axis", axis}});
      weights.shape = {outWidth, taps};
      weights.shape.insert(weights.shape.end(), trailing.begin(),
                           trailing.end());
      std::string weighted = converter.addStep(
          node, "mul",
          {gathered,
           converter.addStepConstant(node, "resize_weight_" + name, weights)},
          "weighted_" + name);
      value = converter.addStep(
          node, "reduce_sum", {weighted}, "resized_" + name,
          {{"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t(0)}});
    }
    if (extrapolates) {
      outside.shape = {outWidth};
      outside.shape.insert(outside.shape.end(), trailing.begin(),
                           trailing.end());
      // The value in the computation's dtype as the reference's final
      // cast gives it: rounded half to even and saturated for integers.
      std::string fill =
          converter.addStepConstant(node, "extrapolation_" + name,
                                    scalarTensor(DType::F64, extrapolation));
      if (computeType != DType::F64) {
        if (integer)
          fill = converter.addStep(node, "round", {fill},
                                   "extrapolation_rounded_" + name);
        fill = converter.addStep(
            node, "cast", {fill}, "extrapolation_cast_" + name,
            {{"dtype", std::string(dtypeName(computeType))}});
      }
      value = converter.addStep(
          node, "select",
          {converter.addStepConstant(node, "outside_" + name, outside), fill,
           value},
          "cropped_" + name);
    }
  }
  if (value == x) { // every axis kept: the input itself
    becomeView(node, x, shape);
    return;
  }
  if (!nearest && dtype != DType::F64) {
    if (integer)
      value = converter.addStep(node, "round", {value}, "rounded");
    node.op = "cast";
    node.inputs = {value};
    node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
    return;
  }
  becomeView(node, value, current);
}

/// Upsample (opsets 7-9, deprecated from 10): Resize by its scales (an
/// attribute in opset 7, input 1 from 9) with asymmetric coordinates, the
/// nearest input position rounded down, as ONNX's spec and onnxruntime
/// compute it.
void upsampleAsResize(OnnxConverter &converter, const onnx::NodeProto &proto,
                      GraphNode &node) {
  std::string scales;
  const onnx::AttributeProto *scalesAttr = nullptr;
  for (const onnx::AttributeProto &attr : proto.attribute())
    if (attr.name() == "scales")
      scalesAttr = &attr;
  if (scalesAttr) {
    Tensor tensor(DType::F32, {scalesAttr->floats_size()});
    for (int i = 0; i < scalesAttr->floats_size(); ++i)
      tensor.set(i, scalesAttr->floats(i));
    scales = converter.addStepConstant(node, "scales", std::move(tensor));
  } else if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    scales = node.inputs[1];
  } else {
    throw Unsupported{"Upsample needs its scales"};
  }
  std::string mode = "nearest";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (mode == "bilinear")
    mode = "linear";
  if (mode != "nearest" && mode != "linear")
    throw Unsupported{"Upsample's mode must be nearest or linear, not " + mode};
  node.inputs = {node.inputs.at(0), "", scales};
  node.attrs = {{"mode", mode},
                {"coordinate_transformation_mode", std::string("asymmetric")},
                {"nearest_mode", std::string("floor")}};
  resizeBySeparableTables(converter, proto, node);
}

/// GridSample (opset 16 on; any spatial rank from 20): each output point
/// samples the input at the grid's normalized coordinates, as ONNX's
/// reference evaluator computes it: the coordinates denormalized (in f32),
/// those outside the border clamped (border) or reflected (reflection, in
/// f64), then the nearest pixel, or 2 (linear) or 4 (cubic, A = -0.75)
/// taps per dim weighted and summed from the last dim out; taps outside the
/// input are 0 (zeros), clamped (border) or reflected (reflection).
/// Every tap is a gather from the flattened input.
void gridSample(OnnxConverter &converter, const onnx::NodeProto &proto,
                GraphNode &node) {
  const std::string &opType = proto.op_type();
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"GridSample takes X and grid"};
  const std::string x = node.inputs[0], grid = node.inputs[1];
  const Shape shape = converter.requireShape(x, opType),
              gridShape = converter.requireShape(grid, opType);
  const DType dtype = converter.requireDType(x, opType),
              gridType = converter.requireDType(grid, opType);
  if (!isFloat(dtype) || !isFloat(gridType))
    throw Unsupported{"GridSample takes floats"};
  const int64_t rank = shape.size(), spatial = rank - 2;
  if (spatial < 1 || static_cast<int64_t>(gridShape.size()) != rank ||
      gridShape.back() != spatial || gridShape[0] != shape[0])
    throw Unsupported{"GridSample's grid must be [N, out..., " +
                      std::to_string(spatial) + "] for X [" +
                      formatShape(shape) + "]"};
  if (converter.opset < 20 && spatial != 2)
    throw Unsupported{"GridSample takes 4-D inputs before opset 20"};
  for (int64_t d = 2; d < rank; ++d)
    if (shape[d] < 1)
      throw Unsupported{"GridSample's input [" + formatShape(shape) +
                        "] has an empty spatial dim to sample"};
  std::string mode = "linear", padding = "zeros";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (auto it = node.attrs.find("padding_mode"); it != node.attrs.end())
    padding = std::get<std::string>(it->second);
  // Opset 16's names of the modes.
  if (mode == "bilinear")
    mode = "linear";
  else if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    throw Unsupported{"GridSample's mode must be linear, nearest or cubic, "
                      "not " +
                      mode};
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    throw Unsupported{"GridSample's padding_mode must be zeros, border or "
                      "reflection, not " +
                      padding};
  const bool alignCorners = intAttr(node, "align_corners", 0) != 0;
  const int64_t batch = shape[0], channels = shape[1];
  Shape outPoints(gridShape.begin() + 1, gridShape.end() - 1);
  int64_t points = numElements(outPoints), area = 1;
  for (int64_t d = 2; d < rank; ++d)
    area *= shape[d];
  checkConstantElements(batch * channels, "GridSample's batch offsets");
  // Per point: [N, 1, points] values; the grid's last dim lists x (the
  // last spatial dim) first.
  const Shape pointShape = {batch, 1, points};
  auto constant = [&](DType type, double value, const std::string &suffix) {
    return converter.addStepConstant(node, suffix, scalarTensor(type, value));
  };
  auto step = [&](const char *op, std::vector<std::string> inputs,
                  const std::string &suffix,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), suffix,
                             std::move(attrs));
  };
  const DType f32 = DType::F32, f64 = DType::F64, i64 = DType::I64;
  auto castTo = [&](const std::string &value, DType type,
                    const std::string &suffix) {
    return step("cast", {value}, suffix,
                {{"dtype", std::string(dtypeName(type))}});
  };
  // The border of dim d's coordinates, and the reflection into it (f64, as
  // the reference's Python floats).
  auto bounds = [&](int64_t d) {
    double length = static_cast<double>(shape[d + 2]);
    return alignCorners ? std::pair{0.0, length - 1}
                        : std::pair{-0.5, length - 0.5};
  };
  auto reflect = [&](const std::string &value, int64_t d,
                     const std::string &suffix) {
    auto [low, high] = bounds(d);
    std::string v = value, lowC = constant(f64, low, suffix + "_low"),
                highC = constant(f64, high, suffix + "_high"),
                range = constant(f64, high - low, suffix + "_range"),
                two = constant(f64, 2, suffix + "_two"),
                zero = constant(f64, 0, suffix + "_zero");
    auto folded = [&](const std::string &distance, const std::string &near,
                      const std::string &far, const std::string &tag) {
      std::string turns =
          step("floor", {step("div", {distance, range}, tag + "_ratio")},
               tag + "_turns");
      std::string rest =
          step("sub", {distance, step("mul", {turns, range}, tag + "_span")},
               tag + "_rest");
      std::string even =
          step("eq", {step("mod", {turns, two}, tag + "_parity"), zero},
               tag + "_even");
      // An even number of turns leaves it the near border's distance in.
      return step(
          "select",
          {even,
           step(near == lowC ? "add" : "sub", {near, rest}, tag + "_from_near"),
           step(near == lowC ? "sub" : "add", {far, rest}, tag + "_from_far")},
          tag + "_folded");
    };
    std::string below = folded(step("sub", {lowC, v}, suffix + "_below_by"),
                               lowC, highC, suffix + "_below");
    std::string above = folded(step("sub", {v, highC}, suffix + "_above_by"),
                               highC, lowC, suffix + "_above");
    return step("select",
                {step("lt", {v, lowC}, suffix + "_is_below"), below,
                 step("select",
                      {step("gt", {v, highC}, suffix + "_is_above"), above, v},
                      suffix + "_upper")},
                suffix + "_reflected");
  };
  // The coordinate along each spatial dim, in f32.
  std::vector<std::string> coordinates(spatial);
  for (int64_t d = 0; d < spatial; ++d) {
    const std::string tag = "dim" + std::to_string(d);
    int64_t component = spatial - 1 - d;
    std::string normalized =
        viewStep(converter, node,
                 step("slice", {grid}, tag + "_normalized",
                      {{"starts", std::vector<int64_t>{component}},
                       {"ends", std::vector<int64_t>{component + 1}},
                       {"axes", std::vector<int64_t>{spatial + 1}},
                       {"steps", std::vector<int64_t>{1}}}),
                 pointShape, tag + "_points");
    const double length = static_cast<double>(shape[d + 2]);
    std::string one = constant(gridType, 1, tag + "_one");
    std::string shifted = step("add", {normalized, one}, tag + "_shifted");
    std::string denormalized =
        alignCorners
            ? step("mul",
                   {step("div", {shifted, constant(gridType, 2, tag + "_two")},
                         tag + "_half"),
                    constant(gridType, length - 1, tag + "_span")},
                   tag + "_position")
            : step("div",
                   {step("sub",
                         {step("mul",
                               {shifted,
                                constant(gridType, length, tag + "_length")},
                               tag + "_scaled"),
                          one},
                         tag + "_offset"),
                    constant(gridType, 2, tag + "_two")},
                   tag + "_position");
    std::string value = gridType == f32
                            ? denormalized
                            : castTo(denormalized, f32, tag + "_f32");
    if (mode == "nearest")
      value = step("round", {value}, tag + "_nearest");
    if (padding != "zeros") {
      auto [low, high] = bounds(d);
      std::string outside =
          step("or",
               {step("lt", {value, constant(f32, low, tag + "_border_low")},
                     tag + "_below_border"),
                step("gt", {value, constant(f32, high, tag + "_border_high")},
                     tag + "_above_border")},
               tag + "_outside");
      std::string moved = padding == "border"
                              ? step("clip",
                                     {value, constant(f32, 0, tag + "_first"),
                                      constant(f32, length - 1, tag + "_last")},
                                     tag + "_clamped")
                              : castTo(reflect(castTo(value, f64, tag + "_f64"),
                                               d, tag + "_reflect"),
                                       f32, tag + "_reflected_f32");
      value = step("select", {outside, moved, value}, tag + "_inside");
    }
    coordinates[d] = value;
  }
  // Offsets of each (n, c) row of the flattened input.
  Tensor rowStarts(i64, {batch, channels, 1});
  for (int64_t r = 0; r < batch * channels; ++r)
    rowStarts.set(r, static_cast<double>(r * area));
  const std::string rows =
      converter.addStepConstant(node, "row_starts", std::move(rowStarts));
  const std::string flat =
      viewStep(converter, node, x, {batch * channels * area}, "flat");
  const std::string zeroValue = constant(dtype, 0, "zero_value");
  // The input at integer taps (one i64 [N, 1, points] index per dim),
  // padded as padding_mode says.
  int64_t fetches = 0;
  auto fetch = [&](const std::vector<std::string> &taps) {
    const std::string tag = "tap" + std::to_string(fetches++);
    std::string index, valid;
    int64_t stride = area;
    for (int64_t d = 0; d < spatial; ++d) {
      const std::string dimTag = tag + "_dim" + std::to_string(d);
      const int64_t length = shape[d + 2];
      stride /= length;
      std::string t = taps[d];
      if (padding == "reflection") {
        t = castTo(
            reflect(castTo(t, f64, dimTag + "_f64"), d, dimTag + "_reflect"),
            i64, dimTag + "_reflected");
      } else if (padding == "zeros") {
        std::string inside = step(
            "and",
            {step("ge", {t, constant(i64, 0, dimTag + "_zero")},
                  dimTag + "_from_start"),
             step("lt", {t, constant(i64, double(length), dimTag + "_end")},
                  dimTag + "_before_end")},
            dimTag + "_in_range");
        valid = valid.empty() ? inside
                              : step("and", {valid, inside}, dimTag + "_valid");
      }
      t = step("clip",
               {t, constant(i64, 0, dimTag + "_low"),
                constant(i64, double(length - 1), dimTag + "_high")},
               dimTag + "_clamped");
      std::string term =
          stride == 1
              ? t
              : step("mul",
                     {t, constant(i64, double(stride), dimTag + "_stride")},
                     dimTag + "_term");
      index =
          index.empty() ? term : step("add", {index, term}, dimTag + "_index");
    }
    std::string value =
        step("gather", {flat, step("add", {rows, index}, tag + "_flat_index")},
             tag + "_value", {{"axis", int64_t(0)}});
    if (!valid.empty())
      value = step("select", {valid, value, zeroValue}, tag + "_padded");
    return value;
  };
  std::string result;
  if (mode == "nearest") {
    std::vector<std::string> taps;
    for (int64_t d = 0; d < spatial; ++d)
      taps.push_back(
          castTo(coordinates[d], i64, "nearest" + std::to_string(d)));
    result = fetch(taps);
  } else {
    // Per dim: the tap below, the fraction past it and the taps' weights
    // (in X's dtype, computed in f32 as the reference does).
    const bool cubic = mode == "cubic";
    const int64_t count = cubic ? 4 : 2, first = cubic ? -1 : 0;
    std::vector<std::string> below(spatial);
    std::vector<std::vector<std::string>> weights(spatial);
    for (int64_t d = 0; d < spatial; ++d) {
      const std::string tag = "weights" + std::to_string(d);
      std::string floor = step("floor", {coordinates[d]}, tag + "_floor");
      below[d] = castTo(floor, i64, tag + "_below");
      std::string t = step("sub", {coordinates[d], floor}, tag + "_fraction");
      auto c = [&](double value, const std::string &suffix) {
        return constant(f32, value, tag + "_" + suffix);
      };
      std::vector<std::string> w;
      if (!cubic) {
        w = {step("sub", {c(1, "one"), t}, tag + "_w0"), t};
      } else {
        // Keys' cubic convolution with A = -0.75, term by term as the
        // reference writes it.
        const double a = -0.75;
        auto outer = [&](const std::string &s, const std::string &suffix) {
          // ((a * s - 5a) * s + 8a) * s - 4a
          std::string p = step("mul", {c(a, suffix + "_a"), s}, suffix + "_as");
          p = step("sub", {p, c(5 * a, suffix + "_5a")}, suffix + "_p1");
          p = step("mul", {p, s}, suffix + "_p2");
          p = step("add", {p, c(8 * a, suffix + "_8a")}, suffix + "_p3");
          p = step("mul", {p, s}, suffix + "_p4");
          return step("sub", {p, c(4 * a, suffix + "_4a")}, suffix + "_w");
        };
        auto inner = [&](const std::string &s, const std::string &suffix) {
          // ((a + 2) * s - (a + 3)) * s * s + 1
          std::string p =
              step("mul", {c(a + 2, suffix + "_a2"), s}, suffix + "_p1");
          p = step("sub", {p, c(a + 3, suffix + "_a3")}, suffix + "_p2");
          p = step("mul", {p, s}, suffix + "_p3");
          p = step("mul", {p, s}, suffix + "_p4");
          return step("add", {p, c(1, suffix + "_one")}, suffix + "_w");
        };
        std::string oneMinus = step("sub", {c(1, "one"), t}, tag + "_rest");
        w = {outer(step("add", {t, c(1, "one_b")}, tag + "_t1"), tag + "_c0"),
             inner(t, tag + "_c1"), inner(oneMinus, tag + "_c2"),
             outer(step("add", {oneMinus, c(1, "one_c")}, tag + "_t2"),
                   tag + "_c3")};
      }
      for (std::string &weight : w)
        if (dtype != f32)
          weight = castTo(weight, dtype, weight + "_cast");
      weights[d] = w;
    }
    // Sum over the taps from the last dim out, as the reference nests it.
    std::vector<std::string> taps(spatial);
    std::function<std::string(int64_t)> interpolate = [&](int64_t d) {
      std::string sum;
      for (int64_t k = 0; k < count; ++k) {
        taps[d] =
            k + first == 0
                ? below[d]
                : step("add",
                       {below[d], constant(i64, double(k + first),
                                           "dim" + std::to_string(d) + "_k" +
                                               std::to_string(k) + "_" +
                                               std::to_string(fetches))},
                       "dim" + std::to_string(d) + "_tap" + std::to_string(k) +
                           "_" + std::to_string(fetches));
        std::string value = d + 1 == spatial ? fetch(taps) : interpolate(d + 1);
        std::string term =
            step("mul", {weights[d][k], value},
                 "term" + std::to_string(d) + "_" + std::to_string(fetches) +
                     "_" + std::to_string(k));
        sum = sum.empty()
                  ? term
                  : step("add", {sum, term},
                         "sum" + std::to_string(d) + "_" +
                             std::to_string(fetches) + "_" + std::to_string(k));
      }
      return sum;
    };
    result = interpolate(0);
  }
  Shape resultShape = {batch, channels};
  resultShape.insert(resultShape.end(), outPoints.begin(), outPoints.end());
  becomeView(node, result, resultShape);
}

} // namespace

void registerResizeOps(OnnxRegistry &registry) {
  registry.on("Resize", "cast")
      .attr("antialias", 18)
      .attr("axes", 18)
      .attrs({"coordinate_transformation_mode", "cubic_coeff_a",
              "exclude_outside", "extrapolation_value"})
      .attr("keep_aspect_ratio_policy", 18)
      .attrs({"mode", "nearest_mode"})
      .olderVersionsDiffer(11, "its coordinate transformation is not given")
      .readsConstantsFrom(1) // roi, scales and sizes shape its tables
      .rewrite(resizeBySeparableTables);
  registry.on("Upsample", "cast", 7)
      .attr("mode")
      .attr("scales", 7, 8)
      .readsConstantsFrom(1)
      .rewrite(upsampleAsResize);
  registry.on("GridSample", "reshape", 16)
      .attrs({"align_corners", "mode", "padding_mode"})
      .rewrite(gridSample);
  registry.on("AffineGrid", "reshape", 20)
      .attr("align_corners")
      .readsConstant(1) // size is the output's shape
      .rewrite(affineGrid);
}

} // namespace fusec::onnx_import
