//===- Tensor.cpp - ONNX layout and shape ops -----------------------------===//
//
// Layout and shape ops: Reshape, Transpose, Slice, Pad, Split, Tile, Trilu,
// DepthToSpace, CenterCropPad, ConstantOfShape, Range, Dropout, ...
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

/// Pad's pads (its input 1, read as an attribute): two per dim.
std::vector<int64_t> padsOf(const GraphNode &node, int64_t rank) {
  auto it = node.attrs.find("pads");
  if (it == node.attrs.end())
    throw Unsupported{"Pad needs its pads input"};
  std::vector<int64_t> pads = std::get<std::vector<int64_t>>(it->second);
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    throw Unsupported{
        "Pad needs two pads per dim: " + std::to_string(pads.size()) +
        " for an input of rank " + std::to_string(rank)};
  return pads;
}

/// Pad modes edge, reflect and wrap: a gather along each padded axis, by a
/// constant index per output position (clamped to the ends, reflected
/// about them with period 2 * (dim - 1), as NumPy's pad repeats it, or
/// wrapped around with period dim).
void padByGather(OnnxConverter &converter, GraphNode &node,
                 const std::string &mode) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Pad");
  int64_t rank = shape.size();
  std::vector<int64_t> pads = padsOf(node, rank);
  std::string value = x;
  std::vector<std::pair<int64_t, Tensor>> gathers;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[d + rank], dim = shape[d];
    if (before == 0 && after == 0)
      continue;
    auto outOfRange = [](int64_t pad) {
      return pad < -INT32_MAX || pad > INT32_MAX;
    };
    if (outOfRange(before) || outOfRange(after) || dim + before + after < 0)
      throw Unsupported{"Pad's pads on axis " + std::to_string(d) +
                        " are out of range"};
    int64_t length = dim + before + after;
    if (dim == 0 && length > 0)
      throw Unsupported{"Pad mode '" + mode + "' has nothing to repeat on " +
                        "the empty axis " + std::to_string(d)};
    Tensor index(DType::I64, {length});
    int64_t period = 2 * (dim - 1);
    for (int64_t j = 0; j < length; ++j) {
      int64_t source = j - before;
      if (mode == "wrap") {
        source = ((source % dim) + dim) % dim;
      } else if (mode == "edge" || dim == 1) {
        source = std::clamp<int64_t>(source, 0, dim - 1);
      } else {
        source = ((source % period) + period) % period;
        if (source >= dim)
          source = period - source;
      }
      index.as<int64_t>()[j] = source;
    }
    gathers.emplace_back(d, std::move(index));
  }
  node.attrs.clear();
  if (gathers.empty()) { // nothing to pad: the input's elements, as they are
    node.op = "reshape";
    node.attrs = {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                  {"allowzero", int64_t(1)}};
    return;
  }
  for (size_t i = 0; i < gathers.size(); ++i) {
    auto &[axis, index] = gathers[i];
    std::string suffix = "axis" + std::to_string(axis);
    std::string indices =
        converter.addStepConstant(node, suffix + "_index", std::move(index));
    if (i + 1 == gathers.size()) {
      node.op = "gather";
      node.inputs = {value, indices};
      node.attrs = {{"axis", axis}};
    } else {
      value = converter.addStep(node, "gather", {value, indices}, suffix,
                                {{"axis", axis}});
    }
  }
}

/// Trilu: x where the diagonal offset (column - row) is >= k (upper) or
/// <= k (lower), else 0; over the last two dims. The offsets are an i64
/// row and column of indices, so the mask is computed in the kernel, not
/// stored; k may be a runtime value.
void triluMask(OnnxConverter &converter, const onnx::NodeProto &,
               GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Trilu");
  DType dtype = converter.requireDType(x, "Trilu");
  int64_t rank = shape.size();
  if (rank < 2)
    throw Unsupported{"Trilu's input must have rank >= 2, not " +
                      std::to_string(rank)};
  bool upper = true;
  if (auto it = node.attrs.find("upper"); it != node.attrs.end()) {
    int64_t value = std::get<int64_t>(it->second);
    if (value != 0 && value != 1)
      throw Unsupported{"Trilu's upper must be 0 or 1"};
    upper = value == 1;
  }
  std::string k;
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    k = node.inputs[1];
    std::optional<Shape> kShape = converter.shapeOf(k);
    if (converter.requireDType(k, "Trilu's k") != DType::I64 ||
        (kShape && numElements(*kShape) != 1))
      throw Unsupported{"Trilu's k must be a single int64"};
  } else {
    k = converter.addStepConstant(node, "k", scalarTensor(DType::I64, 0));
  }
  // A symbolic dim's indices are an iota of its size (a causal mask of
  // [seq, past + seq]).
  std::optional<SymbolicShape> symbolic = converter.symbolicShapeOf(x);
  auto indices = [&](int64_t axis, const char *name) {
    bool asColumn = axis == rank - 2;
    if (shape[axis] >= 0 || !symbolic || (*symbolic)[axis].isStatic())
      return converter.addStepConstant(
          node, name, indicesAlong(asColumn ? 2 : 1, 0, shape[axis]));
    std::string size = converter.sizeText((*symbolic)[axis]);
    std::string positions = converter.addStep(
        node, "iota", {}, std::string(name) + "_iota", {{"size", size}});
    if (!asColumn)
      return positions;
    return converter.addStep(node, "reshape", {positions}, name,
                             {{"dims", size + ",1"}});
  };
  std::string rows = indices(rank - 2, "rows");
  std::string columns = indices(rank - 1, "columns");
  std::string offset =
      converter.addStep(node, "sub", {columns, rows}, "diagonal_offset");
  std::string keep =
      converter.addStep(node, upper ? "ge" : "le", {offset, k}, "keep");
  std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0));
  node.op = "select";
  node.inputs = {keep, x, zero};
  node.attrs.clear();
}

/// Tile: x viewed as [1, d0, 1, d1, ...], broadcast to [r0, d0, r1, d1,
/// ...] and viewed as [r0 * d0, r1 * d1, ...]; nothing is copied until the
/// kernel reads it.
void tileByBroadcast(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Tile");
  auto it = node.attrs.find("repeats");
  if (it == node.attrs.end())
    throw Unsupported{"Tile needs its repeats input"};
  std::vector<int64_t> repeats = std::get<std::vector<int64_t>>(it->second);
  if (repeats.size() != shape.size())
    throw Unsupported{
        "Tile needs one repeat per dim: " + std::to_string(repeats.size()) +
        " for an input of rank " + std::to_string(shape.size())};
  std::vector<int64_t> spread, broadcast, tiled;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (repeats[d] < 0)
      throw Unsupported{"Tile's repeats must not be negative"};
    if (shape[d] > 0 && repeats[d] > INT64_MAX / shape[d])
      throw Unsupported{"Tile's result has too many elements"};
    spread.insert(spread.end(), {1, shape[d]});
    broadcast.insert(broadcast.end(), {repeats[d], shape[d]});
    tiled.push_back(repeats[d] * shape[d]);
  }
  // allowzero: a 0 in these shapes is a dim of 0, not "copy the input's".
  std::string spreadOut =
      converter.addStep(node, "reshape", {x}, "spread",
                        {{"shape", spread}, {"allowzero", int64_t(1)}});
  std::string broadcastOut = converter.addStep(
      node, "expand", {spreadOut}, "repeated", {{"shape", broadcast}});
  node.op = "reshape";
  node.inputs = {broadcastOut};
  node.attrs = {{"shape", tiled}, {"allowzero", int64_t(1)}};
}

/// DepthToSpace and SpaceToDepth: a reshape, a transpose and a reshape, as
/// the spec writes them (DepthToSpace's DCR and CRD modes).
void depthToSpace(OnnxConverter &converter, const onnx::NodeProto &proto,
                  GraphNode &node) {
  const bool toSpace = proto.op_type() == "DepthToSpace";
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  if (shape.size() != 4)
    throw Unsupported{proto.op_type() + " takes a 4-D input [N, C, H, W]"};
  auto blockAttr = node.attrs.find("blocksize");
  if (blockAttr == node.attrs.end())
    throw Unsupported{proto.op_type() + " needs its blocksize"};
  int64_t block = std::get<int64_t>(blockAttr->second);
  std::string mode = "DCR";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (mode != "DCR" && mode != "CRD")
    throw Unsupported{proto.op_type() + "'s mode must be DCR or CRD, not " +
                      mode};
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (block < 1)
    throw Unsupported{"blocksize must be positive"};
  Shape split, result;
  std::vector<int64_t> perm;
  if (toSpace) {
    if (c % (block * block))
      throw Unsupported{"DepthToSpace's channels (" + std::to_string(c) +
                        ") are not a multiple of blocksize^2"};
    int64_t depth = c / (block * block);
    split = mode == "DCR" ? Shape{n, block, block, depth, h, w}
                          : Shape{n, depth, block, block, h, w};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 4, 1, 5, 2}
                         : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    result = {n, depth, h * block, w * block};
  } else {
    if (h % block || w % block)
      throw Unsupported{"SpaceToDepth's height and width (" +
                        std::to_string(h) + ", " + std::to_string(w) +
                        ") are not multiples of blocksize"};
    split = {n, c, h / block, block, w / block, block};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                         : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
    result = {n, c * block * block, h / block, w / block};
  }
  std::string blocks = viewStep(converter, node, x, split, "blocks");
  std::string moved =
      converter.addStep(node, "transpose", {blocks}, "moved", {{"perm", perm}});
  becomeView(node, moved, result);
}

/// Reshape: ONNX's inference does not take a shape computed by Shape and
/// data propagation; the result's shape is worked out here (0 copies the
/// input's dim unless allowzero, one -1 takes the rest) for the converters
/// after it that need it. A shape that does not fit is left to the import,
/// which reports it.
void recordReshapeResult(OnnxConverter &converter, const onnx::NodeProto &,
                         GraphNode &node) {
  auto target = node.attrs.find("shape");
  std::optional<Shape> input = converter.shapeOf(node.inputs.at(0));
  std::optional<DType> dtype = converter.dtypeOf(node.inputs.at(0));
  // (A symbolic input's result is typed by the import: it is dynamic.)
  if (target == node.attrs.end() || !input || !dtype ||
      converter.shapeOf(node.outputs.at(0)) ||
      std::any_of(input->begin(), input->end(),
                  [](int64_t dim) { return dim < 0; }))
    return;
  const auto *dims = std::get_if<std::vector<int64_t>>(&target->second);
  if (!dims)
    return;
  auto allowZero = node.attrs.find("allowzero");
  bool zeroIsDim = allowZero != node.attrs.end() &&
                   std::get<int64_t>(allowZero->second) != 0;
  Shape result;
  int64_t known = 1, inferred = -1;
  for (size_t d = 0; d < dims->size(); ++d) {
    int64_t dim = (*dims)[d];
    if (dim == 0 && !zeroIsDim) {
      if (d >= input->size())
        return;
      dim = (*input)[d];
    }
    if (dim == -1) {
      if (inferred >= 0)
        return;
      inferred = d;
    } else if (dim < 0 || __builtin_mul_overflow(known, dim, &known)) {
      return; // the import reports what is wrong
    }
    result.push_back(dim);
  }
  int64_t total = numElements(*input);
  if (inferred >= 0) {
    if (known == 0 || total % known)
      return;
    result[inferred] = total / known;
  } else if (known != total) {
    return;
  }
  converter.recordValue(node.outputs.at(0), result, *dtype);
}

/// Pad with a constant_value known only at run time: the input padded with
/// 0, then the value selected wherever an output position lies outside
/// the input (an index test per padded dim, which fuses).
void padWithRuntimeValue(OnnxConverter &converter, GraphNode &node) {
  const std::string x = node.inputs.at(0), value = node.inputs.at(1);
  Shape shape = converter.requireShape(x, "Pad");
  Shape valueShape = converter.requireShape(value, "Pad's constant_value");
  if (numElements(valueShape) != 1 || valueShape.size() > 1)
    throw Unsupported{"Pad's constant_value must be a scalar or one element"};
  if (converter.requireDType(value, "Pad's constant_value") !=
      converter.requireDType(x, "Pad"))
    throw Unsupported{"Pad's constant_value must have the input's dtype"};
  int64_t rank = shape.size();
  std::vector<int64_t> pads = padsOf(node, rank);
  std::string padded =
      converter.addStep(node, "pad", {x}, "zero_padded",
                        {{"pads", pads}, {"constant_value", 0.0}});
  std::string inside;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[d + rank];
    if (before <= 0 && after <= 0)
      continue; // only cropped: every position of this dim is the input's
    int64_t extent = shape[d] + before + after;
    if (extent <= 0)
      continue;
    int64_t first = std::max<int64_t>(before, 0);
    int64_t last = extent - std::max<int64_t>(after, 0); // exclusive
    std::string index = converter.addStepConstant(
        node, "index_" + std::to_string(d), indicesAlong(rank, d, extent));
    std::string test = converter.addStep(
        node, "and",
        {converter.addStep(
             node, "ge",
             {index, converter.addStepConstant(
                         node, "first_" + std::to_string(d),
                         scalarTensor(DType::I64, static_cast<double>(first)))},
             "from_" + std::to_string(d)),
         converter.addStep(
             node, "lt",
             {index, converter.addStepConstant(
                         node, "last_" + std::to_string(d),
                         scalarTensor(DType::I64, static_cast<double>(last)))},
             "to_" + std::to_string(d))},
        "inside_" + std::to_string(d));
    inside = inside.empty()
                 ? test
                 : converter.addStep(node, "and", {inside, test},
                                     "inside_to_" + std::to_string(d));
  }
  if (inside.empty()) { // nothing padded: the input, cropped
    node.inputs = {x};
    node.attrs = {{"pads", pads}, {"constant_value", 0.0}};
    return;
  }
  std::string scalar = valueShape.empty()
                           ? value
                           : viewStep(converter, node, value, {}, "value");
  node.op = "select";
  node.inputs = {inside, padded, scalar};
  node.attrs.clear();
}

/// Pad's axes input (opset 18): the pads given for those axes only
/// become pads for every axis.
void padsForEveryAxis(OnnxConverter &converter, GraphNode &node) {
  auto axesAttr = node.attrs.find("axes");
  if (axesAttr == node.attrs.end())
    return;
  const int64_t rank = converter.requireShape(node.inputs.at(0), "Pad").size();
  std::vector<int64_t> axes = std::get<std::vector<int64_t>>(axesAttr->second);
  node.attrs.erase(axesAttr);
  std::vector<int64_t> given = padsOf(node, axes.size());
  std::vector<int64_t> pads(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = resolvedAxis(axes[i], rank);
    if (seen[axis])
      throw Unsupported{"Pad's axes name axis " + std::to_string(axis) +
                        " twice"};
    seen[axis] = true;
    pads[axis] = given[i];
    pads[rank + axis] = given[axes.size() + i];
  }
  node.attrs["pads"] = pads;
}

void padValue(OnnxConverter &converter, const onnx::NodeProto &,
              GraphNode &node) {
  // Before opset 11 the value is the float attribute `value`.
  if (auto value = node.attrs.find("value"); value != node.attrs.end()) {
    node.attrs["constant_value"] = value->second;
    node.attrs.erase(value);
  }
  padsForEveryAxis(converter, node);
  auto mode = node.attrs.find("mode");
  if (mode != node.attrs.end() &&
      std::get<std::string>(mode->second) != "constant") {
    std::string name = std::get<std::string>(mode->second);
    bool wrap = name == "wrap" && converter.opset >= 19;
    if (name != "edge" && name != "reflect" && !wrap)
      throw Unsupported{"Pad mode '" + name +
                        "' is not supported (constant, edge, reflect; wrap "
                        "from opset 19)"};
    padByGather(converter, node, name);
    return;
  }
  if (node.inputs.size() > 1) {
    padWithRuntimeValue(converter, node);
    return;
  }
  // constant_value came in as a one-element integer list: make it a scalar.
  auto it = node.attrs.find("constant_value");
  if (it != node.attrs.end())
    if (auto *list = std::get_if<std::vector<int64_t>>(&it->second))
      it->second = list->empty() ? 0.0 : static_cast<double>((*list)[0]);
}

/// EyeLike: a constant of the input's 2-D shape (only its shape is read)
/// with ones on diagonal k, in `dtype` (default the input's).
void eyeLike(OnnxConverter &converter, const onnx::NodeProto &proto,
             GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  if (shape.size() != 2)
    throw Unsupported{"EyeLike's input must be 2-D, not [" +
                      formatShape(shape) + "]"};
  DType dtype = converter.requireDType(x, proto.op_type());
  if (auto it = node.attrs.find("dtype"); it != node.attrs.end()) {
    int64_t onnxType = std::get<int64_t>(it->second);
    std::optional<DType> chosen = dtypeOfOnnx(static_cast<int32_t>(onnxType));
    if (!chosen)
      throw Unsupported{"EyeLike's dtype " + std::to_string(onnxType) +
                        " is not a dtype fusec has"};
    dtype = *chosen;
  }
  int64_t k = 0;
  if (auto it = node.attrs.find("k"); it != node.attrs.end())
    k = std::get<int64_t>(it->second);
  checkConstantElements(numElements(shape), "EyeLike's output");
  Tensor eye(dtype, shape);
  for (int64_t row = 0; row < shape[0]; ++row)
    if (row + k >= 0 && row + k < shape[1])
      eye.set(row * shape[1] + row + k, 1.0);
  becomeView(node, converter.addStepConstant(node, "eye", eye), shape);
}

/// CenterCropPad (opset 18): each listed axis cropped or zero-padded to its
/// target size about its center (the odd element off the end).
void centerCropPad(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const Shape shape = converter.requireShape(x, proto.op_type());
  const int64_t rank = shape.size();
  auto targetAttr = node.attrs.find("target_shape");
  if (targetAttr == node.attrs.end())
    throw Unsupported{"CenterCropPad needs its shape input"};
  const std::vector<int64_t> target =
      std::get<std::vector<int64_t>>(targetAttr->second);
  std::vector<int64_t> axes;
  if (auto it = node.attrs.find("axes"); it != node.attrs.end())
    for (int64_t axis : std::get<std::vector<int64_t>>(it->second))
      axes.push_back(resolvedAxis(axis, rank));
  else
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (target.size() != axes.size())
    throw Unsupported{"CenterCropPad's shape has " +
                      std::to_string(target.size()) + " sizes for " +
                      std::to_string(axes.size()) + " axes"};
  std::vector<int64_t> starts, ends, sliced, pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i], dim = shape[axis], size = target[i];
    if (size < 0)
      throw Unsupported{"CenterCropPad's sizes must not be negative"};
    if (size < dim) {
      starts.push_back((dim - size) / 2);
      ends.push_back((dim - size) / 2 + size);
      sliced.push_back(axis);
    } else {
      pads[axis] = (size - dim) / 2;
      pads[rank + axis] = size - dim - (size - dim) / 2;
    }
  }
  Shape result = shape;
  for (size_t i = 0; i < axes.size(); ++i)
    result[axes[i]] = target[i];
  converter.recordValue(node.outputs.at(0), result,
                        converter.requireDType(x, proto.op_type()));
  std::string value = x;
  if (!sliced.empty())
    value =
        converter.addStep(node, "slice", {x}, "cropped",
                          {{"starts", starts},
                           {"ends", ends},
                           {"axes", sliced},
                           {"steps", std::vector<int64_t>(sliced.size(), 1)}});
  node.op = "pad";
  node.inputs = {value};
  node.attrs = {{"pads", pads}, {"constant_value", 0.0}};
}

/// Split: one slice per output along `axis`, sized by the constant
/// `split` input or, without it, equal parts of the (static) dim.
void convertSplit(OnnxConverter &converter, const onnx::NodeProto &node) {
  int64_t axis = 0;
  // Before opset 13 the sizes are the attribute `split`; from 13, input 1.
  // From opset 18 num_outputs may say how many parts there are.
  std::optional<std::vector<int64_t>> splitAttribute;
  std::optional<int64_t> numOutputs;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "axis")
      axis = attr.i();
    else if (attr.name() == "split")
      splitAttribute.emplace(attr.ints().begin(), attr.ints().end());
    else if (attr.name() == "num_outputs")
      numOutputs = attr.i();
    else
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  }
  bool splitInput = node.input_size() > 1 && !node.input(1).empty();
  if (numOutputs && (splitInput || *numOutputs != node.output_size()))
    throw Unsupported{
        splitInput ? "Split takes num_outputs or the split input, not both"
                   : "Split's num_outputs is " + std::to_string(*numOutputs) +
                         " but it has " + std::to_string(node.output_size()) +
                         " outputs"};
  std::string input = converter.resolve(node.input(0));
  std::optional<Shape> shape = converter.shapeOf(input);
  if (!shape)
    throw Unsupported{"Split needs its input's static shape"};
  int64_t rank = shape->size();
  axis = resolvedAxis(axis, rank);
  std::vector<int64_t> sizes;
  if (splitAttribute) {
    sizes = *splitAttribute;
  } else if (splitInput) {
    sizes = integersOf(converter.constantValue(converter.resolve(node.input(1)),
                                               "input 1 (split)"),
                       "input 1 (split)");
  } else if (numOutputs) {
    // Parts of ceil(dim / num_outputs), the last one what is left.
    int64_t parts = *numOutputs, dim = (*shape)[axis];
    int64_t part = parts > 0 ? (dim + parts - 1) / parts : 0;
    if (parts < 1 || dim - (parts - 1) * part < 0)
      throw Unsupported{"Split of a dim of " + std::to_string(dim) + " into " +
                        std::to_string(parts) + " parts of " +
                        std::to_string(part) + " leaves too little"};
    sizes.assign(parts, part);
    sizes.back() = dim - (parts - 1) * part;
  } else {
    int64_t parts = node.output_size(), dim = (*shape)[axis];
    if (parts == 0 || dim % parts != 0)
      throw Unsupported{"Split of a dim of " + std::to_string(dim) + " into " +
                        std::to_string(parts) + " equal parts"};
    sizes.assign(parts, dim / parts);
  }
  if (static_cast<int>(sizes.size()) != node.output_size())
    throw Unsupported{"Split has " + std::to_string(node.output_size()) +
                      " outputs but " + std::to_string(sizes.size()) +
                      " sizes"};
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0 || size > (*shape)[axis])
      throw Unsupported{"Split's size " + std::to_string(size) +
                        " is not within the dim of " +
                        std::to_string((*shape)[axis])};
    total += size;
  }
  if (total != (*shape)[axis])
    throw Unsupported{"Split's sizes add up to " + std::to_string(total) +
                      ", not the dim of " + std::to_string((*shape)[axis])};
  // A small constant (a shape being taken apart) splits into constants,
  // which Reshape, Expand and ConstantOfShape can read.
  if (const Tensor *value = converter.constantOrNull(input);
      value && value->numElements() <= 4096) {
    size_t width = dtypeBytes(value->dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= (*shape)[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= (*shape)[d];
    int64_t offset = 0;
    for (int i = 0; i < node.output_size(); ++i) {
      Shape part = *shape;
      part[axis] = sizes[i];
      Tensor piece(value->dtype, part);
      size_t row = sizes[i] * inner * width;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(piece.bytes.data() + o * row,
                    value->bytes.data() +
                        ((o * (*shape)[axis] + offset) * inner) * width,
                    row);
      if (!node.output(i).empty())
        converter.addConstant(node.output(i), std::move(piece));
      offset += sizes[i];
    }
    return;
  }
  int64_t offset = 0;
  for (int i = 0; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) {
      GraphNode slice;
      slice.name = (node.name().empty() ? node.output(i) : node.name()) + "_" +
                   std::to_string(i);
      slice.op = "slice";
      slice.inputs = {input};
      slice.outputs = {node.output(i)};
      slice.attrs["starts"] = std::vector<int64_t>{offset};
      slice.attrs["ends"] = std::vector<int64_t>{offset + sizes[i]};
      slice.attrs["axes"] = std::vector<int64_t>{axis};
      converter.addNode(std::move(slice));
      // ONNX 1.12 infers no parts of a split whose sizes are computed.
      if (std::optional<DType> dtype = converter.dtypeOf(input)) {
        Shape part = *shape;
        part[axis] = sizes[i];
        converter.recordValue(node.output(i), part, *dtype);
      }
    }
    offset += sizes[i];
  }
}

/// ConstantOfShape: its value (a one-element tensor, 0.0f by default)
/// broadcast to the constant shape; the broadcast is read through strides,
/// never materialized.
void convertConstantOfShape(OnnxConverter &converter,
                            const onnx::NodeProto &node) {
  Tensor value(DType::F32, {});
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() != "value")
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    value = tensorFromProto(attr.t(), converter.modelDirectory());
    if (value.numElements() != 1)
      throw Unsupported{"ConstantOfShape's value must have one element"};
    value.shape = {};
  }
  std::vector<int64_t> shape =
      integersOf(converter.constantValue(converter.resolve(node.input(0)),
                                         "input 0 (shape)"),
                 "input 0 (shape)");
  std::string scalar = node.output(0) + "_value";
  converter.addConstant(scalar, std::move(value));
  GraphNode expand;
  expand.name = node.name().empty() ? node.output(0) : node.name();
  expand.op = "expand";
  expand.inputs = {scalar};
  expand.outputs = {node.output(0)};
  expand.attrs["shape"] = shape;
  converter.addNode(std::move(expand));
}

/// Range over constant start, limit and delta: a constant, as ONNX
/// defines it (max(ceil((limit - start) / delta), 0) elements).
/// Range(start, limit, 1) where start or limit is a symbolic size (a shape
/// value: OnnxConverter::symbolicValueOf): an iota of limit - start
/// elements (a size over the symbols' ranges: `Range(past, past + seq)` is
/// seq long), plus the start where it is not 0, in the start's dtype.
bool convertSymbolicRange(OnnxConverter &converter,
                          const onnx::NodeProto &node) {
  std::optional<std::vector<SymbolicSize>> start =
      converter.symbolicValueOf(node.input(0));
  std::optional<std::vector<SymbolicSize>> limit =
      converter.symbolicValueOf(node.input(1));
  if (!start || !limit || start->size() != 1 || limit->size() != 1 ||
      (start->front().isStatic() && limit->front().isStatic()))
    return false;
  const Tensor *delta =
      converter.constantOrNull(converter.resolve(node.input(2)));
  std::optional<DType> dtype = converter.dtypeOf(node.input(0));
  std::optional<SymbolicShape> shape =
      converter.symbolicShapeOf(node.output(0));
  if (!delta || delta->numElements() != 1 || delta->at(0) != 1 || !dtype ||
      (*dtype != DType::I64 && *dtype != DType::I32))
    throw Unsupported{"Range over a symbolic start or limit takes delta 1 "
                      "(integers)"};
  if (!shape || shape->size() != 1)
    throw Unsupported{"Range's length, " + converter.sizeText(limit->front()) +
                      " - " + converter.sizeText(start->front()) +
                      ", is not a size at every size in the symbols' ranges"};
  GraphNode owner;
  owner.name = node.name();
  owner.outputs = {node.output(0)};
  std::map<std::string, AttrValue> size = {
      {"size", converter.sizeText(shape->front())}};
  bool fromZero = start->front() == SymbolicSize::constant(0);
  if (fromZero && *dtype == DType::I64) {
    converter.addOutputStep(owner, "iota", {}, node.output(0), size);
    return true;
  }
  std::string positions =
      converter.addStep(owner, "iota", {}, "positions", size);
  std::map<std::string, AttrValue> cast = {
      {"dtype", std::string(dtypeName(*dtype))}};
  if (fromZero) {
    converter.addOutputStep(owner, "cast", {positions}, node.output(0), cast);
    return true;
  }
  if (*dtype != DType::I64)
    positions = converter.addStep(owner, "cast", {positions}, "counted", cast);
  converter.addOutputStep(owner, "add",
                          {positions, converter.resolve(node.input(0))},
                          node.output(0));
  return true;
}

void convertRange(OnnxConverter &converter, const onnx::NodeProto &node) {
  if (node.input_size() != 3)
    throw Unsupported{"Range takes start, limit and delta"};
  if (convertSymbolicRange(converter, node))
    return;
  const Tensor &start =
      converter.constantValue(converter.resolve(node.input(0)), "start");
  const Tensor &limit =
      converter.constantValue(converter.resolve(node.input(1)), "limit");
  const Tensor &delta =
      converter.constantValue(converter.resolve(node.input(2)), "delta");
  if (start.numElements() != 1 || limit.numElements() != 1 ||
      delta.numElements() != 1 || start.dtype != limit.dtype ||
      start.dtype != delta.dtype)
    throw Unsupported{"Range's operands must be scalars of one dtype"};
  bool isInt = start.dtype == DType::I64 || start.dtype == DType::I32;
  if (isInt) {
    int64_t first = integersOf(start, "start")[0];
    int64_t last = integersOf(limit, "limit")[0];
    int64_t step = integersOf(delta, "delta")[0];
    if (step == 0)
      throw Unsupported{"Range's delta is 0"};
    int64_t count = std::max<int64_t>(
        0, (last - first + step + (step > 0 ? -1 : 1)) / step);
    Tensor result(start.dtype, {count});
    for (int64_t i = 0; i < count; ++i)
      result.set(i, static_cast<double>(first + i * step));
    converter.addConstant(node.output(0), std::move(result));
    return;
  }
  double first = start.at(0), last = limit.at(0), step = delta.at(0);
  if (step == 0 || !std::isfinite(first) || !std::isfinite(last))
    throw Unsupported{"Range needs finite bounds and a non-zero delta"};
  int64_t count = std::max<int64_t>(
      0, static_cast<int64_t>(std::ceil((last - first) / step)));
  Tensor result(start.dtype, {count});
  for (int64_t i = 0; i < count; ++i)
    result.set(i, first + i * step);
  converter.addConstant(node.output(0), std::move(result));
}

/// Dropout at inference (training_mode absent or false, or a ratio of 0):
/// the identity, and a mask of all true. Training mode drops random
/// elements, which fusec does not compile.
void convertDropout(OnnxConverter &converter, const onnx::NodeProto &node) {
  // Opset 10's Dropout (read up to opset 11) has a ratio attribute; from
  // opset 12, ratio and training_mode are inputs and seed an attribute.
  const char *attrName = converter.opset < 12 ? "ratio" : "seed";
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() != attrName)
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  bool training = false;
  if (converter.opset >= 12 && node.input_size() > 2 &&
      !node.input(2).empty()) {
    const Tensor &mode = converter.constantValue(
        converter.resolve(node.input(2)), "input 2 (training_mode)");
    if (mode.numElements() != 1)
      throw Unsupported{"training_mode must be a single bool"};
    training = mode.at(0) != 0;
  }
  if (training) {
    double ratio = 0.5;
    if (node.input_size() > 1 && !node.input(1).empty()) {
      const Tensor &value = converter.constantValue(
          converter.resolve(node.input(1)), "input 1 (ratio)");
      if (value.numElements() != 1 || !isFloat(value.dtype))
        throw Unsupported{"ratio must be a single float"};
      ratio = value.at(0);
    }
    if (ratio != 0) {
      std::ostringstream message;
      message << "training_mode is true with ratio " << ratio
              << ": Dropout then zeroes random elements, and fusec compiles "
                 "inference only";
      throw Unsupported{message.str()};
    }
  }
  std::string input = converter.resolve(node.input(0));
  converter.addAlias(node.output(0), input);
  if (node.output_size() < 2 || node.output(1).empty())
    return;
  Shape shape = converter.requireShape(input, "Dropout's mask");
  std::string value = node.output(1) + "_value";
  converter.addConstant(value, scalarTensor(DType::I1, 1));
  GraphNode mask;
  mask.name = (node.name().empty() ? node.output(0) : node.name()) + "_mask";
  mask.op = "expand";
  mask.inputs = {value};
  mask.outputs = {node.output(1)};
  mask.attrs["shape"] = std::vector<int64_t>(shape.begin(), shape.end());
  converter.addNode(std::move(mask));
}

} // namespace

void registerTensorOps(OnnxRegistry &registry) {
  registry.on("Transpose", "transpose").attr("perm");
  registry.on("Reshape", "reshape")
      .attr("allowzero")
      .constantInput(1, "shape")
      .olderVersionsDiffer(5, "the shape is an attribute")
      .rewrite(recordReshapeResult);
  registry.on("Flatten", "flatten").attr("axis");
  registry.on("Squeeze", "squeeze").attr("axes").constantInput(1, "axes", 13);
  registry.on("Unsqueeze", "unsqueeze")
      .attr("axes")
      .constantInput(1, "axes", 13);
  registry.on("Concat", "concat")
      .attr("axis")
      .olderVersionsDiffer(4, "its axis is optional");
  // Slice: starts, ends and axes are attributes before opset 10.
  registry.on("Slice", "slice")
      .attr("starts", kOldestOpset, 9)
      .attr("ends", kOldestOpset, 9)
      .attr("axes", kOldestOpset, 9)
      .constantInput(1, "starts")
      .constantInput(2, "ends")
      .constantInput(3, "axes")
      .constantInput(4, "steps");
  // Pad: pads and value are attributes before opset 11.
  registry.on("Pad", "pad")
      .attr("mode")
      .attr("pads", 2, 10)
      .attr("value", 2, 10)
      .constantInput(1, "pads")
      .constantInput(2, "constant_value")
      .constantInput(3, "axes", 18)
      .olderVersionsDiffer(2, "its pads are 'paddings'")
      .rewrite(padValue);
  registry.on("Expand", "expand").constantInput(1, "shape");
  registry.on("Tile", "reshape")
      .constantInput(1, "repeats")
      .olderVersionsDiffer(6, "it takes tiles and axis inputs")
      .rewrite(tileByBroadcast);
  registry.on("Trilu", "select", 14).attr("upper").rewrite(triluMask);
  registry.on("EyeLike", "reshape").attrs({"dtype", "k"}).rewrite(eyeLike);
  registry.on("DepthToSpace", "reshape")
      .attrs({"blocksize", "mode"})
      .rewrite(depthToSpace);
  registry.on("SpaceToDepth", "reshape")
      .attr("blocksize")
      .attr("mode", 28)
      .rewrite(depthToSpace);
  registry.on("CenterCropPad", "pad", 18)
      .attr("axes")
      .constantInput(1, "target_shape")
      .rewrite(centerCropPad);
  // Before opset 13 the sizes are the attribute `split`; from 13, input 1.
  registry.on("Split", convertSplit)
      .minInputs(1)
      .readsConstant(1)
      .attr("axis")
      .attr("split", kOldestOpset, 12)
      .attr("num_outputs", 18)
      .olderVersionsDiffer(2, "split is an input");
  registry.on("ConstantOfShape", convertConstantOfShape)
      .minInputs(1)
      .readsConstantsFrom(0);
  registry.on("Range", convertRange)
      .minInputs(3)
      .readsConstantsFrom(0)
      .attr("stash_type", 27);
  // Its ratio and training_mode decide whether it is the identity.
  registry.on("Dropout", convertDropout).minInputs(1).readsConstantsFrom(1);
}

} // namespace fusec::onnx_import
