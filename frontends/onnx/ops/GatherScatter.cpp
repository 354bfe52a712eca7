//===- GatherScatter.cpp - ONNX gather and scatter ops --------------------===//
//
// Indexing: Gather, GatherElements, GatherND, the scatters, OneHot,
// ReverseSequence.
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

/// GatherElements: out[c] = data[c with c[axis] = indices[c]], as a gather
/// from the flattened data at each position's linear index. A negative
/// index counts from the end; one out of range selects 0, as Gather's do
/// (it is pointed past the end rather than at another element).
void gatherElementsFlat(OnnxConverter &converter, const onnx::NodeProto &,
                        GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"GatherElements takes data and indices"};
  const std::string data = node.inputs[0], indices = node.inputs[1];
  int64_t axis = 0;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  FlatGather operands = flatGatherOperands(
      converter, node, data, indices,
      converter.requireDType(indices, "GatherElements"),
      converter.requireShape(data, "GatherElements"),
      converter.requireShape(indices, "GatherElements"), axis);
  node.op = "gather";
  node.inputs = {operands.flatData, operands.linearIndices};
  node.attrs = {{"axis", int64_t(0)}};
}

/// ReverseSequence: along time_axis, each batch entry's first
/// sequence_lens[b] elements reversed and the rest kept, as a GatherElements
/// of x by index = t < len ? len - 1 - t : t (len clamped as ONNX's
/// reference slices it).
void reverseSequence(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"ReverseSequence takes input and sequence_lens"};
  const std::string x = node.inputs[0], lens = node.inputs[1];
  Shape shape = converter.requireShape(x, "ReverseSequence");
  const int64_t rank = shape.size();
  const int64_t batchAxis = intAttr(node, "batch_axis", 1);
  const int64_t timeAxis = intAttr(node, "time_axis", 0);
  if (rank < 2 ||
      !((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    throw Unsupported{"ReverseSequence needs rank >= 2 and batch_axis, "
                      "time_axis of 0 and 1 (in either order)"};
  if (converter.requireShape(lens, "ReverseSequence") !=
      Shape{shape[batchAxis]})
    throw Unsupported{"ReverseSequence's sequence_lens must hold one length "
                      "per batch entry (" +
                      std::to_string(shape[batchAxis]) + ")"};
  std::string length = lens;
  if (converter.requireDType(lens, "ReverseSequence") != DType::I64)
    length = converter.addStep(node, "cast", {lens}, "lens_i64",
                               {{"dtype", std::string("i64")}});
  // A length past the time dim reverses all of it; a negative one counts
  // from the end (the reference's NumPy slices: [0, len) and [len - 1, 0]).
  auto i64 = [&](const std::string &suffix, int64_t value) {
    return converter.addStepConstant(node, suffix,
                                     scalarTensor(DType::I64, value));
  };
  const int64_t steps = shape[timeAxis];
  std::string fromEnd = converter.addStep(
      node, "max",
      {converter.addStep(node, "add", {length, i64("steps", steps)},
                         "lens_from_end"),
       i64("lens_floor", 0)},
      "lens_from_end_clamped");
  length = converter.addStep(
      node, "select",
      {converter.addStep(node, "lt", {length, i64("zero_lens", 0)},
                         "lens_negative"),
       fromEnd,
       converter.addStep(node, "min", {length, i64("steps_cap", steps)},
                         "lens_capped")},
      "lens_effective");
  Shape alongBatch(rank, 1);
  alongBatch[batchAxis] = shape[batchAxis];
  length = viewStep(converter, node, length, alongBatch, "lens_along_batch");
  std::string time = converter.addStepConstant(
      node, "time", indicesAlong(rank, timeAxis, shape[timeAxis]));
  std::string last = converter.addStep(
      node, "sub",
      {length,
       converter.addStepConstant(node, "one", scalarTensor(DType::I64, 1))},
      "last");
  std::string reversed =
      converter.addStep(node, "sub", {last, time}, "reversed");
  std::string inSequence =
      converter.addStep(node, "lt", {time, length}, "in_sequence");
  std::string index = converter.addStep(
      node, "select", {inSequence, reversed, time}, "index_2d");
  index = converter.addStep(
      node, "broadcast_to", {index}, "index",
      {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}});
  FlatGather operands = flatGatherOperands(converter, node, x, index,
                                           DType::I64, shape, shape, timeAxis);
  node.op = "gather";
  node.inputs = {operands.flatData, operands.linearIndices};
  node.attrs = {{"axis", int64_t(0)}};
}

/// OneHot: `on` where a position along the new `axis` equals its index
/// (a negative index counts back from `depth`; one out of range matches
/// nothing), `off` elsewhere, selected rather than computed, so any values
/// come through exactly. `depth` must be a constant.
void oneHotSelect(OnnxConverter &converter, const onnx::NodeProto &,
                  GraphNode &node) {
  if (node.inputs.size() != 3 ||
      std::count(node.inputs.begin(), node.inputs.end(), std::string()))
    throw Unsupported{"OneHot takes indices, depth and values"};
  const std::string indices = node.inputs[0], values = node.inputs[2];
  Shape shape = converter.requireShape(indices, "OneHot");
  DType indexType = converter.requireDType(indices, "OneHot");
  const Tensor &depthValue =
      converter.constantValue(node.inputs[1], "input 1 (depth)");
  if (depthValue.numElements() != 1)
    throw Unsupported{"OneHot's depth must be one value"};
  double depthReal = depthValue.at(0);
  if (!(depthReal >= 1) || depthReal != std::floor(depthReal) ||
      depthReal > (1 << 24))
    throw Unsupported{"OneHot's depth must be a positive integer, not " +
                      std::to_string(depthReal)};
  const int64_t depth = static_cast<int64_t>(depthReal);
  Shape valuesShape = converter.requireShape(values, "OneHot's values");
  if (numElements(valuesShape) != 2 || valuesShape.size() != 1)
    throw Unsupported{"OneHot's values must be [off_value, on_value]"};
  int64_t rank = shape.size();
  int64_t axis = -1;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  axis = resolvedAxis(axis, rank + 1);
  Shape spread = shape;
  spread.insert(spread.begin() + axis, 1);
  std::string index = viewStep(converter, node, indices, spread, "spread");
  Tensor depthScalar = scalarTensor(indexType, static_cast<double>(depth));
  std::string wrapped = converter.addStep(
      node, "add",
      {index, converter.addStepConstant(node, "depth", depthScalar)},
      "wrapped");
  std::string negative = converter.addStep(
      node, "lt",
      {index,
       converter.addStepConstant(node, "zero", scalarTensor(indexType, 0))},
      "negative");
  index =
      converter.addStep(node, "select", {negative, wrapped, index}, "index");
  Shape positionsShape(rank + 1, 1);
  positionsShape[axis] = depth;
  Tensor positions(indexType, positionsShape);
  for (int64_t i = 0; i < depth; ++i)
    positions.set(i, static_cast<double>(i));
  std::string hot = converter.addStep(
      node, "eq",
      {converter.addStepConstant(node, "positions", std::move(positions)),
       index},
      "hot");
  auto pick = [&](int64_t which, const std::string &suffix) {
    return viewStep(
        converter, node,
        converter.addStep(node, "slice", {values}, suffix + "_slice",
                          {{"starts", std::vector<int64_t>{which}},
                           {"ends", std::vector<int64_t>{which + 1}}}),
        {}, suffix);
  };
  node.op = "select";
  node.inputs = {hot, pick(1, "on"), pick(0, "off")};
  node.attrs.clear();
}

/// GatherND: each index tuple (the last dim of indices, m values) names a
/// slice data[b..., i0, ..., i(m-1), :...] within its batch (the first
/// batch_dims dims, shared by data and indices): a gather from data viewed
/// as [batches x prod(the m indexed dims), rest...] at each tuple's linear
/// position. A negative index counts from the end; a tuple out of range
/// selects 0, as Gather's do.
void gatherNDFlat(OnnxConverter &converter, const onnx::NodeProto &proto,
                  GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"GatherND takes data and indices"};
  const std::string data = node.inputs[0], indices = node.inputs[1];
  Shape shape = converter.requireShape(data, proto.op_type());
  Shape indexShape = converter.requireShape(indices, proto.op_type());
  int64_t batchDims = 0;
  if (auto it = node.attrs.find("batch_dims"); it != node.attrs.end())
    batchDims = std::get<int64_t>(it->second);
  const int64_t rank = shape.size(), indexRank = indexShape.size();
  if (indexRank < 1 || batchDims < 0 || batchDims >= std::min(rank, indexRank))
    throw Unsupported{"batch_dims must be in [0, min(data rank, indices "
                      "rank)) and indices must have rank >= 1"};
  const int64_t m = indexShape.back();
  if (m < 1 || m > rank - batchDims)
    throw Unsupported{"the indices' last dim (" + std::to_string(m) +
                      ") must be in [1, data rank - batch_dims]"};
  int64_t batches = 1, positions = 1;
  for (int64_t d = 0; d < batchDims; ++d) {
    if (shape[d] != indexShape[d])
      throw Unsupported{"batch dim " + std::to_string(d) +
                        " differs between data and indices"};
    batches *= shape[d];
  }
  std::vector<int64_t> strides(m, 1);
  for (int64_t j = m; j-- > 0;) {
    positions *= shape[batchDims + j];
    if (j > 0)
      strides[j - 1] = strides[j] * shape[batchDims + j];
  }
  auto constant = [&](const std::string &suffix, Tensor value) {
    return converter.addStepConstant(node, suffix, std::move(value));
  };
  auto along = [&](const std::vector<int64_t> &values) {
    Tensor tensor(DType::I64, {m});
    for (int64_t j = 0; j < m; ++j)
      tensor.set(j, static_cast<double>(values[j]));
    return tensor;
  };
  std::vector<int64_t> dims(shape.begin() + batchDims,
                            shape.begin() + batchDims + m);
  std::string index = indices;
  if (converter.requireDType(indices, proto.op_type()) != DType::I64)
    index = converter.addStep(node, "cast", {indices}, "index",
                              {{"dtype", std::string("i64")}});
  std::string zero = constant("zero", scalarTensor(DType::I64, 0));
  std::string wrapped = converter.addStep(
      node, "select",
      {converter.addStep(node, "lt", {index, zero}, "negative"),
       converter.addStep(node, "add", {index, constant("dims", along(dims))},
                         "from_end"),
       index},
      "wrapped");
  std::string outside = converter.addStep(
      node, "or",
      {converter.addStep(node, "lt", {wrapped, zero}, "below"),
       converter.addStep(node, "ge", {wrapped, constant("ends", along(dims))},
                         "beyond")},
      "outside");
  std::map<std::string, AttrValue> lastAxis = {
      {"axes", std::vector<int64_t>{indexRank - 1}}, {"keepdims", int64_t(0)}};
  std::string anyOutside = converter.addStep(
      node, "reduce_max",
      {converter.addStep(node, "cast", {outside}, "outside_count",
                         {{"dtype", std::string("i64")}})},
      "any_outside", lastAxis);
  std::string linear = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(node, "mul",
                         {wrapped, constant("strides", along(strides))},
                         "terms")},
      "linear", lastAxis);
  if (batches > 1) { // each batch's offset: its flat number x positions
    Shape offsetShape(indexShape.begin(), indexShape.end() - 1);
    for (int64_t d = batchDims; d < indexRank - 1; ++d)
      offsetShape[d] = 1;
    checkConstantElements(batches, "GatherND's batch offsets");
    Tensor offsets(DType::I64, offsetShape);
    for (int64_t b = 0; b < batches; ++b)
      offsets.set(b, static_cast<double>(b * positions));
    linear = converter.addStep(node, "add",
                               {linear, constant("batch_offsets", offsets)},
                               "batch_linear");
  }
  std::string safe = converter.addStep(
      node, "select",
      {converter.addStep(node, "gt", {anyOutside, zero}, "invalid"),
       constant("past_end", scalarTensor(DType::I64, batches * positions)),
       linear},
      "safe");
  Shape flat = {batches * positions};
  flat.insert(flat.end(), shape.begin() + batchDims + m, shape.end());
  node.op = "gather";
  node.inputs = {viewStep(converter, node, data, flat, "flat"), safe};
  node.attrs = {{"axis", int64_t(0)}};
}

/// A scatter's `reduction`: none, add, mul, or (opset 18 on) max and min.
std::string scatterReduction(const GraphNode &node, int64_t opset) {
  auto it = node.attrs.find("reduction");
  std::string reduction =
      it == node.attrs.end() ? "none" : std::get<std::string>(it->second);
  bool known = reduction == "none" || reduction == "add" || reduction == "mul";
  if (opset >= 18)
    known |= reduction == "max" || reduction == "min";
  if (!known)
    throw Unsupported{"reduction must be none, add, mul" +
                      std::string(opset >= 18 ? ", max or min"
                                              : " or (opset "
                                                "18 on) max or "
                                                "min") +
                      ", not " + reduction};
  return reduction;
}

/// The graph op that combines the updates of a scatter's `reduction`, and
/// the one that combines their result with the data.
std::pair<const char *, const char *>
scatterCombiners(const std::string &reduction) {
  if (reduction == "add")
    return {"reduce_sum", "add"};
  if (reduction == "mul")
    return {"reduce_prod", "mul"};
  if (reduction == "max")
    return {"reduce_max", "max"};
  return {"reduce_min", "min"};
}

/// `index` (any integer dtype) as i64 with negative values counted from
/// `dims` (broadcast).
std::string wrappedIndices(OnnxConverter &converter, GraphNode &node,
                           const std::string &index, DType indexType,
                           const std::string &dims) {
  std::string wide = index;
  if (indexType != DType::I64)
    wide = converter.addStep(node, "cast", {index}, "index_i64",
                             {{"dtype", std::string("i64")}});
  std::string zero = converter.addStepConstant(node, "index_zero",
                                               scalarTensor(DType::I64, 0));
  return converter.addStep(
      node, "select",
      {converter.addStep(node, "lt", {wide, zero}, "index_negative"),
       converter.addStep(node, "add", {wide, dims}, "index_from_end"), wide},
      "index_wrapped");
}

void symbolicTensorScatter(OnnxConverter &converter, GraphNode &node,
                           const std::string &mode, int64_t axis);

/// ScatterElements (and Scatter, its name before opset 11): each output
/// position searches the updates along `axis` at its own other coordinates
/// for those whose index names it (work: output size x the updates' extent
/// along the axis). "none" takes the last such update (duplicates are
/// undefined in ONNX), "add" and "mul" combine them all with the data.
void scatterElements(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  if (node.inputs.size() != 3)
    throw Unsupported{proto.op_type() + " takes data, indices and updates"};
  const std::string data = node.inputs[0], indices = node.inputs[1],
                    updates = node.inputs[2];
  Shape shape = converter.requireShape(data, proto.op_type());
  Shape indexShape = converter.requireShape(indices, proto.op_type());
  DType dtype = converter.requireDType(data, proto.op_type());
  auto isSymbolic = [](const Shape &dims) {
    return std::any_of(dims.begin(), dims.end(),
                       [](int64_t dim) { return dim < 0; });
  };
  if (isSymbolic(shape) || isSymbolic(indexShape)) {
    if (converter.symbolicShapeOf(updates) !=
        converter.symbolicShapeOf(indices))
      throw Unsupported{"updates must have the indices' shape"};
    // The exporters' index_copy into a cache: indices counting up along the
    // axis from one start (`start + Range(0, seq)`, expanded). That is a
    // TensorScatter of the updates at `start` in every batch.
    const OnnxConverter::CountingIndices *counting =
        converter.countingIndicesOrNull(indices);
    int64_t axis = resolvedAxis(intAttr(node, "axis", 0),
                                static_cast<int64_t>(shape.size()));
    if (isSymbolic(shape) || !counting || counting->axis != size_t(axis) ||
        axis == 0 || scatterReduction(node, converter.opset) != "none")
      throw Unsupported{proto.op_type() +
                        " with symbolic dims is supported as a cache write "
                        "only: indices start + Range(0, n) along a non-batch "
                        "axis of a fixed-size tensor, reduction none"};
    node.inputs = {data, updates};
    if (!counting->start.empty()) {
      std::string start =
          viewStep(converter, node, counting->start, {1}, "write_start_scalar");
      node.inputs.push_back(
          converter.addStep(node, "broadcast_to", {start}, "write_starts",
                            {{"shape", std::vector<int64_t>{shape[0]}}}));
    }
    symbolicTensorScatter(converter, node, "linear", axis);
    return;
  }
  if (converter.requireShape(updates, proto.op_type()) != indexShape)
    throw Unsupported{"updates must have the indices' shape"};
  const int64_t rank = shape.size();
  if (rank == 0 || static_cast<int64_t>(indexShape.size()) != rank)
    throw Unsupported{"indices must have the data's rank (" +
                      std::to_string(rank) + ")"};
  int64_t axis = 0;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  axis = resolvedAxis(axis, rank);
  const std::string reduction = scatterReduction(node, converter.opset);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indexShape[d] > shape[d])
      throw Unsupported{"indices dim " + std::to_string(d) +
                        " exceeds the data's"};
  const int64_t extent = indexShape[axis];
  // Indices and updates with the axis moved last and a 1 in its place,
  // padded (index -1, matching nothing) to the data's other dims.
  std::vector<int64_t> perm;
  Shape laid;
  std::vector<int64_t> pads(2 * (rank + 1), 0);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  for (int64_t d = 0; d < rank; ++d) {
    laid.push_back(d == axis ? 1 : indexShape[d]);
    if (d != axis)
      pads[rank + 1 + d] = shape[d] - indexShape[d];
  }
  laid.push_back(extent);
  auto layAlongLast = [&](const std::string &value, double fill,
                          const std::string &suffix) {
    std::string moved = converter.addStep(node, "transpose", {value},
                                          suffix + "_moved", {{"perm", perm}});
    return converter.addStep(
        node, "pad", {viewStep(converter, node, moved, laid, suffix + "_laid")},
        suffix + "_padded", {{"pads", pads}, {"constant_value", fill}});
  };
  checkConstantElements(shape[axis], "the positions along the axis");
  checkConstantElements(extent, "the updates along the axis");
  std::string position = converter.addStepConstant(
      node, "positions", indicesAlong(rank + 1, axis, shape[axis]));
  std::string index = layAlongLast(
      wrappedIndices(
          converter, node, indices,
          converter.requireDType(indices, proto.op_type()),
          converter.addStepConstant(node, "axis_dim",
                                    scalarTensor(DType::I64, shape[axis]))),
      -1.0, "index");
  std::string update = layAlongLast(updates, 0.0, "update");
  std::string match = converter.addStep(node, "eq", {index, position}, "match");
  std::string identity = converter.addStepConstant(
      node, "identity", scatterIdentity(dtype, reduction));
  std::map<std::string, AttrValue> overUpdates = {
      {"axes", std::vector<int64_t>{rank}}, {"keepdims", int64_t(0)}};
  if (reduction != "none") {
    auto [reduce, combine] = scatterCombiners(reduction);
    std::string combined = converter.addStep(
        node, reduce,
        {converter.addStep(node, "select", {match, update, identity},
                           "contributions")},
        "combined", overUpdates);
    node.op = combine;
    node.inputs = {data, combined};
    node.attrs.clear();
    return;
  }
  std::string counter = converter.addStepConstant(
      node, "update_numbers", indicesAlong(rank + 1, rank, extent));
  std::string chosen = converter.addStep(
      node, "reduce_max",
      {converter.addStep(node, "select",
                         {match, counter,
                          converter.addStepConstant(
                              node, "no_update", scalarTensor(DType::I64, -1))},
                         "candidates")},
      "chosen",
      {{"axes", std::vector<int64_t>{rank}}, {"keepdims", int64_t(1)}});
  std::string picked = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(
          node, "select",
          {converter.addStep(node, "eq", {counter, chosen}, "is_chosen"),
           update, identity},
          "chosen_only")},
      "picked", overUpdates);
  std::string updated = converter.addStep(
      node, "ge",
      {viewStep(converter, node, chosen, shape, "chosen_flat"),
       converter.addStepConstant(node, "zero", scalarTensor(DType::I64, 0))},
      "updated");
  node.op = "select";
  node.inputs = {updated, picked, data};
  node.attrs.clear();
}

/// ScatterND: each index tuple names a slice data[i0, ..., i(m-1), :...].
/// Each of the data's prod(first m dims) slices finds the last tuple naming
/// it (work: slices x tuples) and takes that update, gathered ("none";
/// duplicates are undefined in ONNX), or combines every update naming it
/// with the data ("add", "mul"; work: output size x tuples).
void scatterND(OnnxConverter &converter, const onnx::NodeProto &proto,
               GraphNode &node) {
  if (node.inputs.size() != 3)
    throw Unsupported{"ScatterND takes data, indices and updates"};
  const std::string data = node.inputs[0], indices = node.inputs[1],
                    updates = node.inputs[2];
  // With symbolic dims: an assignment to every element (transformers'
  // padding mask merged into the causal one) is the updates.
  std::optional<SymbolicShape> symbolic = converter.symbolicShapeOf(data);
  if (symbolic && !isStaticShape(*symbolic)) {
    if (scatterReduction(node, converter.opset) != "none" ||
        converter.symbolicShapeOf(updates) != symbolic ||
        !converter.namesEveryElement(indices, *symbolic))
      throw Unsupported{"ScatterND with symbolic dims is supported only as "
                        "an assignment to every element (indices counting "
                        "along each dim, reduction none)"};
    node.op = "reshape";
    node.inputs = {updates};
    node.attrs = {{"dims", converter.dimsText(*symbolic)}};
    return;
  }
  Shape shape = converter.requireShape(data, proto.op_type());
  Shape indexShape = converter.requireShape(indices, proto.op_type());
  DType dtype = converter.requireDType(data, proto.op_type());
  const int64_t rank = shape.size(), indexRank = indexShape.size();
  if (indexRank < 1 || indexShape.back() < 1 || indexShape.back() > rank)
    throw Unsupported{"the indices' last dim must be in [1, data rank]"};
  const int64_t m = indexShape.back();
  Shape updateShape(indexShape.begin(), indexShape.end() - 1);
  updateShape.insert(updateShape.end(), shape.begin() + m, shape.end());
  if (converter.requireShape(updates, proto.op_type()) != updateShape)
    throw Unsupported{"updates must be [" + formatShape(updateShape) + "]"};
  const std::string reduction = scatterReduction(node, converter.opset);
  int64_t slices = 1, tuples = 1;
  std::vector<int64_t> strides(m, 1);
  for (int64_t j = m; j-- > 0;) {
    slices *= shape[j];
    if (j > 0)
      strides[j - 1] = strides[j] * shape[j];
  }
  for (int64_t d = 0; d + 1 < indexRank; ++d)
    tuples *= indexShape[d];
  Shape rest(shape.begin() + m, shape.end());
  auto along = [&](const std::vector<int64_t> &values) {
    Tensor tensor(DType::I64, {m});
    for (int64_t j = 0; j < m; ++j)
      tensor.set(j, static_cast<double>(values[j]));
    return tensor;
  };
  std::string index = wrappedIndices(
      converter, node, indices, converter.requireDType(indices, "ScatterND"),
      converter.addStepConstant(
          node, "dims",
          along(std::vector<int64_t>(shape.begin(), shape.begin() + m))));
  std::string linear = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(
          node, "mul",
          {index, converter.addStepConstant(node, "strides", along(strides))},
          "terms")},
      "linear",
      {{"axes", std::vector<int64_t>{indexRank - 1}},
       {"keepdims", int64_t(0)}});
  checkConstantElements(slices, "ScatterND's slices");
  checkConstantElements(tuples, "ScatterND's index tuples");
  Tensor sliceNumbers(DType::I64, {slices, 1});
  for (int64_t q = 0; q < slices; ++q)
    sliceNumbers.set(q, static_cast<double>(q));
  std::string match = converter.addStep(
      node, "eq",
      {converter.addStepConstant(node, "slice_numbers", sliceNumbers),
       viewStep(converter, node, linear, {1, tuples}, "linear_row")},
      "match");
  Shape flatData = {slices};
  flatData.insert(flatData.end(), rest.begin(), rest.end());
  Shape flatUpdates = {tuples};
  flatUpdates.insert(flatUpdates.end(), rest.begin(), rest.end());
  std::string slicesOfData =
      viewStep(converter, node, data, flatData, "slices");
  std::string result;
  if (reduction != "none") {
    Shape matchShape = {slices, tuples}, updateRows = {1, tuples};
    matchShape.insert(matchShape.end(), rest.size(), 1);
    updateRows.insert(updateRows.end(), rest.begin(), rest.end());
    auto [reduce, combine] = scatterCombiners(reduction);
    std::string combined = converter.addStep(
        node, reduce,
        {converter.addStep(
            node, "select",
            {viewStep(converter, node, match, matchShape, "match_laid"),
             viewStep(converter, node, updates, updateRows, "update_rows"),
             converter.addStepConstant(node, "identity",
                                       scatterIdentity(dtype, reduction))},
            "contributions")},
        "combined",
        {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}});
    result =
        converter.addStep(node, combine, {slicesOfData, combined}, "scattered");
  } else {
    Tensor tupleNumbers(DType::I64, {1, tuples});
    for (int64_t u = 0; u < tuples; ++u)
      tupleNumbers.set(u, static_cast<double>(u));
    std::string chosen = converter.addStep(
        node, "reduce_max",
        {converter.addStep(
            node, "select",
            {match,
             converter.addStepConstant(node, "tuple_numbers", tupleNumbers),
             converter.addStepConstant(node, "no_tuple",
                                       scalarTensor(DType::I64, -1))},
            "candidates")},
        "chosen",
        {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}});
    std::string zero =
        converter.addStepConstant(node, "zero", scalarTensor(DType::I64, 0));
    std::string picked = converter.addStep(
        node, "gather",
        {viewStep(converter, node, updates, flatUpdates, "update_slices"),
         converter.addStep(node, "max", {chosen, zero}, "chosen_or_first")},
        "picked", {{"axis", int64_t(0)}});
    Shape column = {slices};
    column.insert(column.end(), rest.size(), 1);
    result = converter.addStep(
        node, "select",
        {viewStep(converter, node,
                  converter.addStep(node, "ge", {chosen, zero}, "updated"),
                  column, "updated_column"),
         picked, slicesOfData},
        "scattered");
  }
  becomeView(node, result, shape);
}

/// TensorScatter's write_indices ([batch], i32 or i64) as i64 of shape
/// [batch, 1, ..., 1] (`rank` dims), to broadcast over each row's positions.
std::string writeStarts(OnnxConverter &converter, GraphNode &node,
                        const std::string &writeIndices, int64_t batch,
                        int64_t rank) {
  if (converter.requireShape(writeIndices, "TensorScatter") != Shape{batch})
    throw Unsupported{"write_indices must be [" + std::to_string(batch) + "]"};
  Shape perBatch(rank, 1);
  perBatch[0] = batch;
  std::string start =
      viewStep(converter, node, writeIndices, perBatch, "write_start");
  if (converter.requireDType(writeIndices, "TensorScatter") != DType::I64)
    start = converter.addStep(node, "cast", {start}, "write_start_i64",
                              {{"dtype", std::string("i64")}});
  return start;
}

/// TensorScatter whose update length W is symbolic (a prefill of any
/// length): cache position p of row r reads update position p - start_r
/// where that lies in [0, W), through one gather from the update's rows
/// ([prefix * W, suffix], index (prefix index) * W + clamped position), and
/// keeps the cache elsewhere. Linear mode only.
void symbolicTensorScatter(OnnxConverter &converter, GraphNode &node,
                           const std::string &mode, int64_t axis) {
  if (mode != "linear")
    throw Unsupported{"TensorScatter with a symbolic update length is "
                      "supported in linear mode only"};
  const std::string cache = node.inputs[0], update = node.inputs[1];
  const std::string writeIndices = node.inputs.size() > 2 ? node.inputs[2] : "";
  const Shape shape = converter.requireShape(cache, "TensorScatter");
  const int64_t rank = shape.size(), length = shape[axis];
  int64_t prefix = 1, suffix = 1;
  for (int64_t d = 0; d < axis; ++d)
    prefix *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    suffix *= shape[d];
  auto constant = [&](const std::string &name, Tensor value) {
    return converter.addStepConstant(node, name, std::move(value));
  };
  auto step = [&](const std::string &op, std::vector<std::string> inputs,
                  const std::string &name,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), name,
                             std::move(attrs));
  };
  std::string rows = step("reshape", {update}, "update_rows",
                          {{"shape", std::vector<int64_t>{-1, suffix}}});
  std::string written = step("dim_of", {update}, "written", {{"dim", axis}});
  // Positions [1, .., 1, L] relative to each row's start [B, 1, .., 1].
  std::string relative =
      constant("cache_positions", indicesAlong(axis + 1, axis, length));
  if (!writeIndices.empty())
    relative = step("sub",
                    {relative, writeStarts(converter, node, writeIndices,
                                           shape[0], axis + 1)},
                    "relative");
  std::string zero = constant("zero", scalarTensor(DType::I64, 0));
  std::string inRange = step("and",
                             {step("ge", {relative, zero}, "after_start"),
                              step("lt", {relative, written}, "before_end")},
                             "in_range");
  std::string last = step(
      "sub", {written, constant("one", scalarTensor(DType::I64, 1))}, "last");
  std::string clamped = step(
      "max", {step("min", {relative, last}, "below_end"), zero}, "clamped");
  // Each prefix point's first update row: its linear index times W.
  Shape prefixShape(shape.begin(), shape.begin() + axis);
  prefixShape.push_back(1);
  Tensor firstRows(DType::I64, prefixShape);
  for (int64_t i = 0; i < prefix; ++i)
    firstRows.as<int64_t>()[i] = i;
  std::string index = step(
      "add",
      {step("mul", {constant("prefix_rows", std::move(firstRows)), written},
            "first_rows"),
       clamped},
      "update_index");
  std::string gathered =
      step("gather", {rows, index}, "gathered", {{"axis", int64_t(0)}});
  Shape keep(axis + 1, 1);
  keep[0] = writeIndices.empty() ? 1 : shape[0];
  keep[axis] = length;
  keep.resize(rank, 1);
  node.op = "select";
  node.inputs = {viewStep(converter, node, inRange, keep, "in_range_view"),
                 viewStep(converter, node, gathered, shape, "gathered_view"),
                 cache};
  node.attrs.clear();
}

/// TensorScatter (opset 24): the update's sequence written into the cache
/// along `axis` from each batch's write index (wrapping around the cache
/// in circular mode). Each cache position searches the update positions
/// for the one written to it (work: cache length x update length per
/// row, as the scatters).
void tensorScatter(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  if (node.inputs.size() < 2 || node.inputs[1].empty())
    throw Unsupported{"TensorScatter takes past_cache and update"};
  const std::string cache = node.inputs[0], update = node.inputs[1];
  const std::string writeIndices = node.inputs.size() > 2 ? node.inputs[2] : "";
  const std::string &opType = proto.op_type();
  const Shape shape = converter.requireShape(cache, opType),
              updateShape = converter.requireShape(update, opType);
  const DType dtype = converter.requireDType(cache, opType);
  const int64_t rank = shape.size();
  if (rank < 2 || static_cast<int64_t>(updateShape.size()) != rank)
    throw Unsupported{"past_cache and update must have one rank, 2 or more"};
  const int64_t axis = resolvedAxis(intAttr(node, "axis", -2), rank);
  if (axis == 0)
    throw Unsupported{"TensorScatter's axis cannot be the batch axis"};
  std::string mode = "linear";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (mode != "linear" && mode != "circular")
    throw Unsupported{"TensorScatter's mode must be linear or circular, not " +
                      mode};
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? updateShape[d] > shape[d] : updateShape[d] != shape[d])
      throw Unsupported{"update [" + formatShape(updateShape) +
                        "] does not fit past_cache [" + formatShape(shape) +
                        "] along axis " + std::to_string(axis)};
  if (updateShape[axis] < 0) {
    symbolicTensorScatter(converter, node, mode, axis);
    return;
  }
  const int64_t length = shape[axis], written = updateShape[axis];
  if (length == 0 || written == 0) { // nothing is written
    becomeView(node, cache, shape);
    return;
  }
  // Positions: the cache's along `axis`, the update's along a dim after it.
  Shape spread = updateShape;
  spread[axis] = 1;
  spread.insert(spread.begin() + axis + 1, written);
  std::string updates = viewStep(converter, node, update, spread, "spread");
  std::string target = converter.addStepConstant(
      node, "update_positions", indicesAlong(rank + 1, axis + 1, written));
  if (!writeIndices.empty()) {
    std::string start =
        writeStarts(converter, node, writeIndices, shape[0], rank + 1);
    target = converter.addStep(node, "add", {start, target}, "targets");
  }
  if (mode == "circular")
    target = converter.addStep(
        node, "mod",
        {target, converter.addStepConstant(node, "cache_length",
                                           scalarTensor(DType::I64, length))},
        "targets_wrapped");
  std::string match = converter.addStep(
      node, "eq",
      {converter.addStepConstant(node, "cache_positions",
                                 indicesAlong(rank + 1, axis, length)),
       target},
      "match");
  std::map<std::string, AttrValue> overUpdates = {
      {"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t(0)}};
  std::string picked = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(node, "select",
                         {match, updates,
                          converter.addStepConstant(
                              node, "nothing", scatterIdentity(dtype, "none"))},
                         "written_values")},
      "picked", overUpdates);
  std::string writes = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(
          node, "select",
          {match,
           converter.addStepConstant(node, "one", scalarTensor(DType::I64, 1)),
           converter.addStepConstant(node, "none",
                                     scalarTensor(DType::I64, 0))},
          "write_marks")},
      "writes", overUpdates);
  node.op = "select";
  node.inputs = {converter.addStep(node, "gt",
                                   {writes, converter.addStepConstant(
                                                node, "no_writes",
                                                scalarTensor(DType::I64, 0))},
                                   "written"),
                 picked, cache};
  node.attrs.clear();
}

} // namespace

/// The identity of a scatter's `reduction` in `dtype` ("none" and "add":
/// -0.0 for floats, which leaves every float as it is, 0 for integers;
/// "mul": 1; "max" and "min": the dtype's lowest and highest values).
Tensor scatterIdentity(DType dtype, const std::string &reduction) {
  if (reduction == "mul")
    return scalarTensor(dtype, 1.0);
  if (reduction == "max" || reduction == "min")
    return extremeScalar(dtype, /*highest=*/reduction == "min");
  return scalarTensor(dtype, isFloat(dtype) ? -0.0 : 0.0);
}

FlatGather flatGatherOperands(OnnxConverter &converter, const GraphNode &node,
                              const std::string &data,
                              const std::string &indices, DType indexType,
                              const Shape &shape, const Shape &indexShape,
                              int64_t axis) {
  int64_t rank = shape.size();
  if (rank == 0 || static_cast<int64_t>(indexShape.size()) != rank)
    throw Unsupported{"GatherElements' indices must have the data's rank (" +
                      std::to_string(rank) + ", not " +
                      std::to_string(indexShape.size()) + ")"};
  axis = resolvedAxis(axis, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indexShape[d] > shape[d])
      throw Unsupported{"GatherElements' indices dim " + std::to_string(d) +
                        " (" + std::to_string(indexShape[d]) +
                        ") exceeds the data's (" + std::to_string(shape[d]) +
                        ")"};
  auto i64Constant = [&](const std::string &suffix, int64_t value) {
    return converter.addStepConstant(node, suffix,
                                     scalarTensor(DType::I64, value));
  };
  std::string index = indices;
  if (indexType != DType::I64)
    index = converter.addStep(node, "cast", {indices}, "index",
                              {{"dtype", std::string("i64")}});
  const int64_t dim = shape[axis];
  std::string zero = i64Constant("zero", 0);
  std::string wrapped = converter.addStep(
      node, "add", {index, i64Constant("dim", dim)}, "wrapped");
  std::string negative = converter.addStep(node, "lt", {index, zero}, "neg");
  std::string along =
      converter.addStep(node, "select", {negative, wrapped, index}, "along");
  std::string inRange = converter.addStep(
      node, "and",
      {converter.addStep(node, "ge", {along, zero}, "above"),
       converter.addStep(node, "lt", {along, i64Constant("end", dim)},
                         "below")},
      "in_range");
  // linear = sum over d of c[d] * stride[d], with c[axis] = along.
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * shape[d];
  std::string linear = converter.addStep(
      node, "mul", {along, i64Constant("axis_stride", strides[axis])},
      "offset");
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || indexShape[d] == 1)
      continue;
    Tensor offsets = indicesAlong(rank, d, indexShape[d]);
    for (int64_t i = 0; i < indexShape[d]; ++i)
      offsets.as<int64_t>()[i] *= strides[d];
    linear = converter.addStep(
        node, "add",
        {linear, converter.addStepConstant(node, "offsets_" + std::to_string(d),
                                           offsets)},
        "linear_" + std::to_string(d));
  }
  const int64_t count = numElements(shape);
  std::string safe = converter.addStep(
      node, "select", {inRange, linear, i64Constant("past_end", count)},
      "safe");
  return {viewStep(converter, node, data, Shape{count}, "flat"), safe};
}

void registerGatherScatterOps(OnnxRegistry &registry) {
  registry.on("Gather", "gather").attr("axis");
  registry.on("GatherElements", "gather")
      .attr("axis")
      .rewrite(gatherElementsFlat);
  registry.on("GatherND", "gather").attr("batch_dims").rewrite(gatherNDFlat);
  registry.on("ScatterElements", "select", 11)
      .attrs({"axis", "reduction"})
      .rewrite(scatterElements);
  registry.on("Scatter", "select", 9).attr("axis").rewrite(scatterElements);
  registry.on("ScatterND", "reshape", 11).attr("reduction").rewrite(scatterND);
  registry.on("TensorScatter", "select", 24)
      .attrs({"axis", "mode"})
      .rewrite(tensorScatter);
  registry.on("OneHot", "select")
      .attr("axis")
      .readsConstant(1)
      .rewrite(oneHotSelect);
  registry.on("ReverseSequence", "gather", 10)
      .attrs({"batch_axis", "time_axis"})
      .rewrite(reverseSequence);
}

} // namespace fusec::onnx_import
