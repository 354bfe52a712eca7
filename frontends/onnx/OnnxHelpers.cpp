//===- OnnxHelpers.cpp - helpers the op families share --------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

namespace fusec::onnx_import {

/// `axis` counted from 0, or an Unsupported when it is outside
/// [-rank, rank) (negative axes count from the end).
int64_t resolvedAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    throw Unsupported{"axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank)};
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> integersOf(const Tensor &tensor, const std::string &what) {
  std::vector<int64_t> values(tensor.numElements());
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    if (tensor.dtype == DType::I64)
      values[i] = tensor.as<int64_t>()[i];
    else if (tensor.dtype == DType::I32)
      values[i] = tensor.as<int32_t>()[i];
    else
      throw Unsupported{what + " must be an int32 or int64 tensor, not " +
                        std::string(dtypeName(tensor.dtype))};
  }
  return values;
}

/// A reshape step of `value` to `shape` (a 0 is a dim of 0).
std::string viewStep(OnnxConverter &converter, const GraphNode &node,
                     const std::string &value, const Shape &shape,
                     const std::string &suffix) {
  return converter.addStep(
      node, "reshape", {value}, suffix,
      {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
       {"allowzero", int64_t(1)}});
}

/// `node` itself becomes a reshape of its (rewritten) input to `shape`.
void becomeView(GraphNode &node, const std::string &value, const Shape &shape) {
  node.op = "reshape";
  node.inputs = {value};
  node.attrs = {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                {"allowzero", int64_t(1)}};
}

/// The 2-D view ONNX's ops before opset 13 coerce their input to around
/// `axis`: [prod(dims before axis), prod(dims from axis on)].
Shape viewAs2D(const Shape &shape, int64_t axis) {
  Shape view = {1, 1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    view[d < axis ? 0 : 1] *= shape[d];
  return view;
}

/// Softmax and LogSoftmax before opset 13 coerce their input to 2-D around
/// `axis` (default 1) and normalize over all the dims from `axis` on: the
/// op runs on that 2-D view along its last axis and the result is viewed
/// back. (From opset 13 `axis`, default -1, is the one axis.)
void coerceTo2DBeforeOpset13(OnnxConverter &converter,
                             const onnx::NodeProto &proto, GraphNode &node) {
  if (converter.opset >= 13)
    return;
  auto it = node.attrs.find("axis");
  int64_t axis = it == node.attrs.end() ? 1 : std::get<int64_t>(it->second);
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  int64_t rank = shape.size();
  axis = resolvedAxis(axis, rank);
  if (axis == rank - 1) { // the 2-D view changes nothing
    node.attrs["axis"] = int64_t(-1);
    return;
  }
  std::string coerced =
      viewStep(converter, node, x, viewAs2D(shape, axis), "coerced");
  std::string normalized = converter.addStep(node, node.op, {coerced}, "rows",
                                             {{"axis", int64_t(1)}});
  becomeView(node, normalized, shape);
}

/// A rank-0 constant of `dtype` holding `value`.
/// The float attribute `name` of `node`, or `fallback` (a float's value, as
/// ONNX's default is).
double floatAttr(const GraphNode &node, const char *name, float fallback) {
  auto it = node.attrs.find(name);
  return it == node.attrs.end() ? fallback : std::get<double>(it->second);
}

/// names[i], or "" where the node has fewer (an optional input or output
/// left out).
std::string nameOrEmpty(const std::vector<std::string> &names, size_t i) {
  return i < names.size() ? names[i] : std::string();
}

/// The integer attribute `name` of `node`, or `fallback`.
int64_t intAttr(const GraphNode &node, const char *name, int64_t fallback) {
  auto it = node.attrs.find(name);
  return it == node.attrs.end() ? fallback : std::get<int64_t>(it->second);
}

Tensor scalarTensor(DType dtype, double value) {
  Tensor tensor(dtype, {});
  tensor.set(0, value);
  return tensor;
}

/// The lowest or highest value of `dtype` (an infinity for floats) as a
/// scalar, exact for 64-bit integers too (which a double is not).
Tensor extremeScalar(DType dtype, bool highest) {
  Tensor tensor(dtype, {});
  const double infinity = std::numeric_limits<double>::infinity();
  const int bits = dtypeInfo(dtype).bits;
  if (isInteger(dtype) && isNarrow(dtype)) { // 4 and 2 bits: exact in double
    double count = std::ldexp(1.0, isUnsigned(dtype) ? bits : bits - 1);
    tensor.set(0, highest ? count - 1 : (isUnsigned(dtype) ? 0 : -count));
    return tensor;
  }
  switch (dtypeInfo(dtype).kind) {
  case DTypeKind::Float:
    tensor.set(0, highest ? infinity : -infinity);
    break;
  case DTypeKind::Bool:
    tensor.set(0, highest ? 1.0 : 0.0);
    break;
  case DTypeKind::UInt:
    std::fill(tensor.bytes.begin(), tensor.bytes.end(), highest ? 0xff : 0);
    break;
  case DTypeKind::Int:
    // Little-endian two's complement: 0x7f ff .. ff and 0x80 00 .. 00.
    std::fill(tensor.bytes.begin(), tensor.bytes.end(), highest ? 0xff : 0);
    tensor.bytes.back() = highest ? 0x7f : 0x80;
    break;
  }
  return tensor;
}

/// Refuses a constant a converter would build of more than 2^26 elements
/// (the dims it derives from may be declared far larger than any data).
void checkConstantElements(int64_t elements, const std::string &what) {
  if (elements < 0)
    throw Unsupported{what + " would have a negative size (" +
                      std::to_string(elements) + ")"};
  if (elements > (int64_t(1) << 26))
    throw Unsupported{what + " would take " + std::to_string(elements) +
                      " elements, more than fusec builds (2^26)"};
}

/// An i64 constant counting 0, 1, ... along `axis` of a tensor of `rank`
/// (dims of 1 elsewhere, broadcast where it is used).
Tensor indicesAlong(int64_t rank, int64_t axis, int64_t count) {
  checkConstantElements(count, "the positions along an axis");
  Shape shape(rank, 1);
  shape[axis] = count;
  Tensor tensor(DType::I64, shape);
  for (int64_t i = 0; i < count; ++i)
    tensor.as<int64_t>()[i] = i;
  return tensor;
}

/// An integer attribute that may have come from a one-element input.
int64_t singleInteger(const AttrValue &value, const std::string &what) {
  if (const int64_t *scalar = std::get_if<int64_t>(&value))
    return *scalar;
  if (const auto *list = std::get_if<std::vector<int64_t>>(&value))
    if (list->size() == 1)
      return (*list)[0];
  throw Unsupported{what + " must be a single integer"};
}

/// An attribute as a graph attribute value.
AttrValue attrValueOf(const onnx::AttributeProto &attr) {
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return attr.i();
  case onnx::AttributeProto::FLOAT:
    return static_cast<double>(attr.f());
  case onnx::AttributeProto::STRING:
    return attr.s();
  case onnx::AttributeProto::INTS:
    return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
  default:
    throw Unsupported{"attribute '" + attr.name() +
                      "' has an unsupported type"};
  }
}

onnx::AttributeProto intAttribute(const std::string &name, int64_t value) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(value);
  return attr;
}

std::string describeOnnxNode(const onnx::NodeProto &node, int index,
                             int64_t opset) {
  std::string what = node.op_type();
  if (opset >= 0)
    what += ", opset " + std::to_string(opset);
  if (!node.name().empty())
    return "node '" + node.name() + "' (" + what + ")";
  if (node.output_size() > 0 && !node.output(0).empty())
    what += ", output '" + node.output(0) + "'";
  return "node #" + std::to_string(index) + " (" + what + ")";
}

} // namespace fusec::onnx_import
