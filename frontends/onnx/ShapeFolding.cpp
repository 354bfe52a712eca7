//===- ShapeFolding.cpp - Shape computations evaluated on import ------===//
//
// Integers are computed as fusec's kernels compute them (two's complement
// wrapping, Div truncating toward zero), in int64 and wrapped back to the
// operand's dtype; what ONNX leaves undefined (division by zero, an index
// out of range) is not folded, so the graph reports it.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ShapeFolding.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

namespace fusec {

const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          const std::string &name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

namespace {

/// Shapes, axes and bounds: anything larger is data, left to the graph.
constexpr int64_t kMaxElements = 64;

/// An integer or bool tensor's elements, exact.
struct Ints {
  DType dtype;
  Shape shape;
  std::vector<int64_t> values;
};

bool isIntegerOrBool(DType dtype) {
  return dtype == DType::I64 || dtype == DType::I32 || dtype == DType::I1;
}

std::optional<Ints> intsOf(const Tensor *tensor) {
  if (!tensor || !isIntegerOrBool(tensor->dtype) ||
      tensor->numElements() > kMaxElements)
    return std::nullopt;
  Ints ints{tensor->dtype, tensor->shape, {}};
  for (int64_t i = 0; i < tensor->numElements(); ++i) {
    if (tensor->dtype == DType::I64)
      ints.values.push_back(tensor->as<int64_t>()[i]);
    else if (tensor->dtype == DType::I32)
      ints.values.push_back(tensor->as<int32_t>()[i]);
    else
      ints.values.push_back(tensor->as<uint8_t>()[i] != 0);
  }
  return ints;
}

/// `value` wrapped to `dtype` (two's complement), or made a bool.
int64_t wrapTo(DType dtype, int64_t value) {
  if (dtype == DType::I32)
    return static_cast<int32_t>(static_cast<uint32_t>(value));
  if (dtype == DType::I1)
    return value != 0;
  return value;
}

Tensor tensorOf(const Ints &ints) {
  Tensor tensor(ints.dtype, ints.shape);
  for (size_t i = 0; i < ints.values.size(); ++i) {
    if (ints.dtype == DType::I64)
      tensor.as<int64_t>()[i] = ints.values[i];
    else if (ints.dtype == DType::I32)
      tensor.as<int32_t>()[i] = static_cast<int32_t>(ints.values[i]);
    else
      tensor.as<uint8_t>()[i] = ints.values[i] != 0;
  }
  return tensor;
}

int64_t intAttr(const onnx::NodeProto &node, const std::string &name,
                int64_t fallback) {
  const onnx::AttributeProto *attr = findAttribute(node, name);
  return attr && attr->type() == onnx::AttributeProto::INT ? attr->i()
                                                           : fallback;
}

/// `axis` in [-rank, rank) made non-negative; nullopt outside.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// NumPy broadcasting of several shapes; nullopt if they do not broadcast.
std::optional<Shape> broadcastShape(const std::vector<Shape> &shapes) {
  Shape result;
  for (const Shape &shape : shapes) {
    if (shape.size() > result.size())
      result.insert(result.begin(), shape.size() - result.size(), 1);
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t &dim = result[result.size() - shape.size() + i];
      if (dim == 1)
        dim = shape[i];
      else if (shape[i] != dim && shape[i] != 1)
        return std::nullopt;
    }
  }
  return result;
}

/// The index of the element of a tensor of `operand` shape that
/// broadcasts to element `index` of `shape`.
int64_t broadcastIndex(const Shape &operand, const Shape &shape,
                       int64_t index) {
  int64_t offset = 0, stride = 1;
  size_t lead = shape.size() - operand.size();
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t coordinate = index % shape[d];
    index /= shape[d];
    if (d >= lead) {
      int64_t dim = operand[d - lead];
      offset += (dim == 1 ? 0 : coordinate) * stride;
      stride *= dim;
    }
  }
  return offset;
}

/// Elementwise over broadcast operands; `compute` returns nullopt for an
/// undefined element.
std::optional<Ints> elementwise(
    const std::vector<const Ints *> &operands, DType resultType,
    const std::function<std::optional<int64_t>(const std::vector<int64_t> &)>
        &compute) {
  std::vector<Shape> shapes;
  for (const Ints *operand : operands)
    shapes.push_back(operand->shape);
  std::optional<Shape> shape = broadcastShape(shapes);
  if (!shape || numElements(*shape) > kMaxElements)
    return std::nullopt;
  Ints result{resultType, *shape, {}};
  std::vector<int64_t> arguments(operands.size());
  for (int64_t i = 0; i < numElements(*shape); ++i) {
    for (size_t k = 0; k < operands.size(); ++k)
      arguments[k] =
          operands[k]->values[broadcastIndex(operands[k]->shape, *shape, i)];
    std::optional<int64_t> value = compute(arguments);
    if (!value)
      return std::nullopt;
    result.values.push_back(wrapTo(resultType, *value));
  }
  return result;
}

int64_t wrappingOp(int64_t a, int64_t b, char op) {
  uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
  return static_cast<int64_t>(op == '+' ? x + y : op == '-' ? x - y : x * y);
}

std::optional<Ints> foldArithmetic(const std::string &op, const Ints &a,
                                   const Ints &b) {
  if (a.dtype != b.dtype || a.dtype == DType::I1)
    return std::nullopt;
  int64_t minimum = a.dtype == DType::I32 ? INT32_MIN : INT64_MIN;
  return elementwise(
      {&a, &b}, a.dtype,
      [&](const std::vector<int64_t> &v) -> std::optional<int64_t> {
        if (op == "Add")
          return wrappingOp(v[0], v[1], '+');
        if (op == "Sub")
          return wrappingOp(v[0], v[1], '-');
        if (op == "Mul")
          return wrappingOp(v[0], v[1], '*');
        if (v[1] == 0 || (v[0] == minimum && v[1] == -1))
          return std::nullopt; // undefined, or overflowing
        if (op == "Div")
          return v[0] / v[1];
        // Mod (fmod = 0): the remainder takes the divisor's sign.
        int64_t remainder = v[0] % v[1];
        if (remainder != 0 && (remainder < 0) != (v[1] < 0))
          remainder += v[1];
        return remainder;
      });
}

/// Not, And, Or and Xor of booleans.
std::optional<Ints>
foldLogic(const std::string &op,
          const std::vector<std::optional<Ints>> &operands) {
  for (const std::optional<Ints> &operand : operands)
    if (!operand || operand->dtype != DType::I1)
      return std::nullopt;
  if (op == "Not")
    return operands.size() == 1
               ? elementwise({&*operands[0]}, DType::I1,
                             [](const std::vector<int64_t> &v) -> int64_t {
                               return !v[0];
                             })
               : std::nullopt;
  if (operands.size() != 2)
    return std::nullopt;
  return elementwise({&*operands[0], &*operands[1]}, DType::I1,
                     [&](const std::vector<int64_t> &v) -> int64_t {
                       if (op == "And")
                         return v[0] && v[1];
                       if (op == "Or")
                         return v[0] || v[1];
                       return (v[0] != 0) != (v[1] != 0);
                     });
}

std::optional<Ints> foldComparison(const std::string &op, const Ints &a,
                                   const Ints &b) {
  if (a.dtype != b.dtype || (a.dtype == DType::I1 && op != "Equal"))
    return std::nullopt;
  return elementwise({&a, &b}, DType::I1,
                     [&](const std::vector<int64_t> &v) -> int64_t {
                       if (op == "Equal")
                         return v[0] == v[1];
                       if (op == "Less")
                         return v[0] < v[1];
                       if (op == "LessOrEqual")
                         return v[0] <= v[1];
                       if (op == "Greater")
                         return v[0] > v[1];
                       return v[0] >= v[1];
                     });
}

/// Shape: the dims from `start` to `end` (opset 15), clamped to the rank.
Ints foldShape(const onnx::NodeProto &node, const Shape &shape) {
  int64_t rank = shape.size();
  auto clamp = [&](int64_t bound) {
    if (bound < 0)
      bound += rank;
    return std::clamp<int64_t>(bound, 0, rank);
  };
  int64_t start = clamp(intAttr(node, "start", 0));
  int64_t end = clamp(intAttr(node, "end", rank));
  Ints result{DType::I64, {std::max<int64_t>(end - start, 0)}, {}};
  for (int64_t d = start; d < end; ++d)
    result.values.push_back(shape[d]);
  return result;
}

std::optional<Ints> foldConcat(const onnx::NodeProto &node,
                               const std::vector<std::optional<Ints>> &parts) {
  if (parts.empty())
    return std::nullopt;
  const Ints &first = *parts[0];
  int64_t rank = first.shape.size();
  std::optional<int64_t> axis = normalizeAxis(intAttr(node, "axis", 0), rank);
  if (!axis)
    return std::nullopt;
  Shape shape = first.shape;
  shape[*axis] = 0;
  for (const std::optional<Ints> &part : parts) {
    if (part->dtype != first.dtype ||
        static_cast<int64_t>(part->shape.size()) != rank)
      return std::nullopt;
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && part->shape[d] != first.shape[d])
        return std::nullopt;
    shape[*axis] += part->shape[*axis];
  }
  if (numElements(shape) > kMaxElements)
    return std::nullopt;
  // outer x (axis x inner) blocks, appended part by part.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *axis; ++d)
    outer *= shape[d];
  for (int64_t d = *axis + 1; d < rank; ++d)
    inner *= shape[d];
  Ints result{first.dtype, shape, {}};
  for (int64_t o = 0; o < outer; ++o)
    for (const std::optional<Ints> &part : parts) {
      int64_t block = part->shape[*axis] * inner;
      result.values.insert(result.values.end(),
                           part->values.begin() + o * block,
                           part->values.begin() + (o + 1) * block);
    }
  return result;
}

std::optional<Ints> foldGather(const onnx::NodeProto &node, const Ints &data,
                               const Ints &indices) {
  int64_t rank = data.shape.size();
  std::optional<int64_t> axis = normalizeAxis(intAttr(node, "axis", 0), rank);
  if (!axis || indices.dtype == DType::I1)
    return std::nullopt;
  int64_t outer = 1, inner = 1, dim = data.shape[*axis];
  for (int64_t d = 0; d < *axis; ++d)
    outer *= data.shape[d];
  for (int64_t d = *axis + 1; d < rank; ++d)
    inner *= data.shape[d];
  Shape shape(data.shape.begin(), data.shape.begin() + *axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  if (numElements(shape) > kMaxElements)
    return std::nullopt;
  Ints result{data.dtype, shape, {}};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices.values) {
      if (index < -dim || index >= dim)
        return std::nullopt;
      if (index < 0)
        index += dim;
      for (int64_t i = 0; i < inner; ++i)
        result.values.push_back(data.values[(o * dim + index) * inner + i]);
    }
  return result;
}

/// ScatterElements on a shape: TorchScript's export of index_copy/index_put
/// builds an Expand's shape by scattering a length into Shape(cache).
/// Returns nullopt (the graph reports it) for an index out of range.
std::optional<Ints> foldScatterElements(const onnx::NodeProto &node,
                                        const Ints &data, const Ints &indices,
                                        const Ints &updates) {
  const int64_t rank = data.shape.size();
  std::optional<int64_t> axis = normalizeAxis(intAttr(node, "axis", 0), rank);
  if (!axis || indices.dtype == DType::I1 || updates.dtype != data.dtype ||
      indices.shape != updates.shape ||
      static_cast<int64_t>(indices.shape.size()) != rank)
    return std::nullopt;
  std::string reduction = "none";
  if (const onnx::AttributeProto *attr = findAttribute(node, "reduction"))
    reduction = attr->s();
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    return std::nullopt;
  Shape strides = rowMajorStrides(data.shape);
  Ints result = data;
  for (int64_t i = 0; i < numElements(indices.shape); ++i) {
    // The index tuple of element i of `indices`, with its axis replaced.
    int64_t rest = i, target = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t coordinate = rest % indices.shape[d];
      rest /= indices.shape[d];
      if (d == *axis) {
        coordinate = indices.values[i];
        if (coordinate < 0)
          coordinate += data.shape[d];
      }
      if (coordinate < 0 || coordinate >= data.shape[d])
        return std::nullopt;
      target += coordinate * strides[d];
    }
    int64_t &slot = result.values[target], update = updates.values[i];
    if (reduction == "none")
      slot = update;
    else if (reduction == "add")
      slot = wrapTo(data.dtype, wrappingOp(slot, update, '+'));
    else if (reduction == "mul")
      slot = wrapTo(data.dtype, wrappingOp(slot, update, '*'));
    else if (reduction == "max")
      slot = std::max(slot, update);
    else
      slot = std::min(slot, update);
  }
  return result;
}

/// The elements of `data` at the cartesian product of `picked[d]` (indices
/// along each dim), in row-major order.
Ints gatherProduct(const Ints &data,
                   const std::vector<std::vector<int64_t>> &picked) {
  Shape shape;
  for (const std::vector<int64_t> &indices : picked)
    shape.push_back(static_cast<int64_t>(indices.size()));
  Ints result{data.dtype, shape, {}};
  int64_t count = numElements(shape);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t source = 0, rest = flat, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      source += picked[d][rest % shape[d]] * stride;
      rest /= shape[d];
      stride *= data.shape[d];
    }
    result.values.push_back(data.values[source]);
  }
  return result;
}

/// Slice (opset 10 on: starts, ends, axes and steps inputs), with ONNX's
/// clamping of the bounds, along any axes.
std::optional<Ints> foldSlice(const Ints &data,
                              const std::vector<std::optional<Ints>> &inputs) {
  if (inputs.size() < 3 || !inputs[1] || !inputs[2])
    return std::nullopt;
  const std::vector<int64_t> &starts = inputs[1]->values,
                             &ends = inputs[2]->values;
  int64_t rank = data.shape.size();
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (inputs.size() > 3 && inputs[3])
    axes = inputs[3]->values;
  else
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (inputs.size() > 4 && inputs[4])
    steps = inputs[4]->values;
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return std::nullopt;
  std::vector<std::vector<int64_t>> picked(rank);
  std::vector<bool> sliced(rank, false);
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < data.shape[d]; ++i)
      picked[d].push_back(i);
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], rank);
    if (!axis || sliced[*axis] || steps[i] == 0)
      return std::nullopt;
    sliced[*axis] = true;
    int64_t dim = data.shape[*axis], step = steps[i];
    std::vector<int64_t> &indices = picked[*axis];
    indices.clear();
    if (dim == 0)
      continue;
    // Negative bounds count from the end; then they are clamped to
    // [0, dim] going forward, [-1, dim - 1] going backward.
    auto fromEnd = [&](int64_t bound) {
      return bound < 0 ? bound + dim : bound;
    };
    int64_t first = fromEnd(starts[i]), last = fromEnd(ends[i]);
    if (step > 0) {
      first = std::clamp<int64_t>(first, 0, dim);
      last = std::clamp<int64_t>(last, 0, dim);
    } else {
      first = std::clamp<int64_t>(first, 0, dim - 1);
      last = std::clamp<int64_t>(last, -1, dim - 1);
    }
    for (int64_t at = first; step > 0 ? at < last : at > last;) {
      indices.push_back(at);
      if (step > 0 ? step >= last - at : step <= last - at)
        break; // the next index is past the end (and might overflow)
      at += step;
    }
  }
  return gatherProduct(data, picked);
}

/// Reshape: 0 copies the input's dim (unless allowzero), one -1 takes what
/// is left.
std::optional<Ints> foldReshape(const onnx::NodeProto &node, const Ints &data,
                                const Ints &shape) {
  if (shape.shape.size() != 1)
    return std::nullopt;
  bool allowZero = intAttr(node, "allowzero", 0) != 0;
  Shape result;
  int64_t known = 1, inferred = -1;
  for (size_t d = 0; d < shape.values.size(); ++d) {
    int64_t dim = shape.values[d];
    if (dim == 0 && !allowZero) {
      if (d >= data.shape.size())
        return std::nullopt;
      dim = data.shape[d];
    }
    if (dim == -1) {
      if (inferred >= 0)
        return std::nullopt;
      inferred = static_cast<int64_t>(d);
    } else if (dim < 0 || dim > kMaxElements) {
      return std::nullopt;
    } else {
      known *= dim; // each at most 64, the product checked below
      if (known > kMaxElements)
        return std::nullopt;
    }
    result.push_back(dim);
  }
  int64_t count = static_cast<int64_t>(data.values.size());
  if (inferred >= 0) {
    if (known == 0 || count % known != 0)
      return std::nullopt;
    result[inferred] = count / known;
  }
  if (numElements(result) != count)
    return std::nullopt;
  return Ints{data.dtype, result, data.values};
}

/// Transpose by `perm` (reversed dims by default).
std::optional<Ints> foldTranspose(const onnx::NodeProto &node,
                                  const Ints &data) {
  int64_t rank = data.shape.size();
  std::vector<int64_t> perm;
  if (const onnx::AttributeProto *attr = findAttribute(node, "perm"))
    perm.assign(attr->ints().begin(), attr->ints().end());
  else
    for (int64_t d = rank; d-- > 0;)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank)
    return std::nullopt;
  std::vector<bool> seen(rank, false);
  Shape shape;
  for (int64_t d : perm) {
    if (d < 0 || d >= rank || seen[d])
      return std::nullopt;
    seen[d] = true;
    shape.push_back(data.shape[d]);
  }
  // Element `flat` of the result reads the source at its permuted
  // coordinates.
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * data.shape[d];
  Ints result{data.dtype, shape, {}};
  for (int64_t flat = 0; flat < numElements(shape); ++flat) {
    int64_t source = 0, rest = flat;
    for (int64_t d = rank; d-- > 0;) {
      source += rest % shape[d] * strides[perm[d]];
      rest /= shape[d];
    }
    result.values.push_back(data.values[source]);
  }
  return result;
}

/// Expand to the broadcast of the input's shape and `shape`.
std::optional<Ints> foldExpand(const Ints &data, const Ints &shape) {
  if (shape.shape.size() != 1)
    return std::nullopt;
  for (int64_t dim : shape.values)
    if (dim < 0 || dim > kMaxElements)
      return std::nullopt;
  std::optional<Shape> result = broadcastShape(
      {data.shape, Shape(shape.values.begin(), shape.values.end())});
  if (!result)
    return std::nullopt;
  int64_t count = 1;
  for (int64_t dim : *result) {
    count *= dim; // each dim at most 64: checked before it can overflow
    if (count > kMaxElements)
      return std::nullopt;
  }
  Ints expanded{data.dtype, *result, {}};
  for (int64_t i = 0; i < numElements(*result); ++i)
    expanded.values.push_back(
        data.values[broadcastIndex(data.shape, *result, i)]);
  return expanded;
}

/// Tile: each dim repeated `repeats` times.
std::optional<Ints> foldTile(const Ints &data, const Ints &repeats) {
  if (repeats.values.size() != data.shape.size())
    return std::nullopt;
  std::vector<std::vector<int64_t>> picked;
  int64_t count = 1;
  for (size_t d = 0; d < data.shape.size(); ++d) {
    int64_t times = repeats.values[d];
    if (times < 0 || times > kMaxElements)
      return std::nullopt;
    count *= data.shape[d] * times; // each factor at most 64 * 64
    if (count > kMaxElements)
      return std::nullopt;
    picked.emplace_back();
    for (int64_t t = 0; t < times; ++t)
      for (int64_t i = 0; i < data.shape[d]; ++i)
        picked.back().push_back(i);
  }
  return gatherProduct(data, picked);
}

/// Range of integers: start, start + delta, ... before limit.
std::optional<Ints> foldRange(const std::vector<std::optional<Ints>> &inputs) {
  if (inputs.size() != 3 || !inputs[1] || !inputs[2])
    return std::nullopt;
  const Ints &start = *inputs[0], &limit = *inputs[1], &delta = *inputs[2];
  if (start.values.size() != 1 || limit.values.size() != 1 ||
      delta.values.size() != 1 || start.dtype == DType::I1 ||
      start.dtype != limit.dtype || start.dtype != delta.dtype ||
      delta.values[0] == 0)
    return std::nullopt;
  // max(ceil((limit - start) / delta), 0) elements, exactly (in 128 bits:
  // limit - start may not fit 64); only short ranges fold. Every element
  // lies between start and limit, so none overflows.
  __int128 first = start.values[0], step = delta.values[0],
           span = static_cast<__int128>(limit.values[0]) - first;
  __int128 count = span / step + (span % step != 0 && (span > 0) == (step > 0));
  if (count > kMaxElements)
    return std::nullopt;
  Ints result{start.dtype, {count > 0 ? static_cast<int64_t>(count) : 0}, {}};
  for (int64_t i = 0; i < result.shape[0]; ++i)
    result.values.push_back(static_cast<int64_t>(first + i * step));
  return result;
}

/// Flatten to 2-D at `axis`.
std::optional<Ints> foldFlatten(const onnx::NodeProto &node, const Ints &data) {
  int64_t rank = data.shape.size();
  int64_t axis = intAttr(node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return std::nullopt;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  int64_t count = static_cast<int64_t>(data.values.size());
  return Ints{data.dtype, {outer, outer == 0 ? 0 : count / outer}, data.values};
}

/// Unsqueeze and Squeeze: the same elements under a new shape.
std::optional<Ints> foldView(const onnx::NodeProto &node, int64_t opset,
                             const Ints &data,
                             const std::vector<std::optional<Ints>> &inputs) {
  std::vector<int64_t> axes;
  bool given = false;
  if (opset >= 13 && inputs.size() > 1 && inputs[1]) {
    axes = inputs[1]->values;
    given = true;
  } else if (const onnx::AttributeProto *attr = findAttribute(node, "axes")) {
    axes.assign(attr->ints().begin(), attr->ints().end());
    given = true;
  }
  bool unsqueeze = node.op_type() == "Unsqueeze";
  if (unsqueeze && !given)
    return std::nullopt;
  int64_t rank = data.shape.size() + (unsqueeze ? axes.size() : 0);
  std::vector<bool> marked(rank, false);
  for (int64_t axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized || marked[*normalized])
      return std::nullopt;
    marked[*normalized] = true;
  }
  Shape shape;
  if (unsqueeze) {
    for (int64_t d = 0, source = 0; d < rank; ++d)
      shape.push_back(marked[d] ? 1 : data.shape[source++]);
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      bool squeezed = given ? marked[d] : data.shape[d] == 1;
      if (squeezed && data.shape[d] != 1)
        return std::nullopt;
      if (!squeezed)
        shape.push_back(data.shape[d]);
    }
  }
  return Ints{data.dtype, shape, data.values};
}

/// ConstantOfShape of an integer or bool value (a float one is data: it
/// becomes a broadcast in the graph).
std::optional<Ints> foldConstantOfShape(const onnx::NodeProto &node,
                                        const Ints &shape) {
  const onnx::AttributeProto *value = findAttribute(node, "value");
  if (!value || shape.shape.size() != 1)
    return std::nullopt;
  const onnx::TensorProto &proto = value->t();
  DType dtype;
  int64_t element;
  if (proto.data_type() == onnx::TensorProto::INT64 &&
      proto.int64_data_size() == 1) {
    dtype = DType::I64;
    element = proto.int64_data(0);
  } else if ((proto.data_type() == onnx::TensorProto::INT32 ||
              proto.data_type() == onnx::TensorProto::BOOL) &&
             proto.int32_data_size() == 1) {
    dtype =
        proto.data_type() == onnx::TensorProto::INT32 ? DType::I32 : DType::I1;
    element = proto.int32_data(0);
  } else if (proto.data_type() == onnx::TensorProto::INT64 &&
             proto.raw_data().size() == sizeof(int64_t)) {
    dtype = DType::I64;
    std::memcpy(&element, proto.raw_data().data(), sizeof element);
  } else {
    return std::nullopt;
  }
  int64_t count = 1;
  for (int64_t dim : shape.values) {
    if (dim < 0 || dim > kMaxElements)
      return std::nullopt;
    count *= dim; // both at most 64: no overflow
    if (count > kMaxElements)
      return std::nullopt;
  }
  Shape result(shape.values.begin(), shape.values.end());
  return Ints{
      dtype, result,
      std::vector<int64_t>(numElements(result), wrapTo(dtype, element))};
}

std::optional<Ints> foldCast(const onnx::NodeProto &node, const Ints &input) {
  switch (intAttr(node, "to", 0)) {
  case onnx::TensorProto::INT64:
    return Ints{DType::I64, input.shape, input.values};
  case onnx::TensorProto::INT32: {
    Ints result{DType::I32, input.shape, {}};
    for (int64_t value : input.values)
      result.values.push_back(wrapTo(DType::I32, value));
    return result;
  }
  case onnx::TensorProto::BOOL: {
    Ints result{DType::I1, input.shape, {}};
    for (int64_t value : input.values)
      result.values.push_back(value != 0);
    return result;
  }
  default:
    return std::nullopt; // floats are data
  }
}

/// The largest magnitude below which every integer is exact in a double.
constexpr double kExactInDouble = 0x1p53;

/// Float to integer as fusec's kernels convert (docs/semantics.md):
/// truncated, saturated at the dtype's range, NaN to 0.
int64_t floatToInteger(double value, DType dtype) {
  if (std::isnan(value))
    return 0;
  double low = dtype == DType::I32 ? INT32_MIN : -0x1p63;
  double high = dtype == DType::I32 ? INT32_MAX : 0x1p63;
  if (value <= low)
    return dtype == DType::I32 ? INT32_MIN : INT64_MIN;
  if (value >= high)
    return dtype == DType::I32 ? INT32_MAX : INT64_MAX;
  return static_cast<int64_t>(value);
}

/// Float bounds (Range's limit from a window's size, ...): Cast, Neg and
/// the four arithmetic ops, computed as the kernels compute them (in f32
/// for f16, bf16 and f32, in f64 for f64; each result rounded to the dtype
/// once).
std::optional<Tensor>
foldFloatBound(const onnx::NodeProto &node,
               const std::vector<const Tensor *> &inputs) {
  const std::string &op = node.op_type();
  for (const Tensor *input : inputs)
    if (!input || input->numElements() > kMaxElements)
      return std::nullopt;
  if (inputs.empty())
    return std::nullopt;
  const Tensor &a = *inputs[0];
  if (op == "Cast") {
    std::optional<DType> to;
    switch (intAttr(node, "to", 0)) {
    case onnx::TensorProto::FLOAT:
      to = DType::F32;
      break;
    case onnx::TensorProto::DOUBLE:
      to = DType::F64;
      break;
    case onnx::TensorProto::FLOAT16:
      to = DType::F16;
      break;
    case onnx::TensorProto::BFLOAT16:
      to = DType::BF16;
      break;
    case onnx::TensorProto::BOOL:
      to = DType::I1;
      break;
    case onnx::TensorProto::INT32:
      to = DType::I32;
      break;
    case onnx::TensorProto::INT64:
      to = DType::I64;
      break;
    default:
      return std::nullopt;
    }
    if (!isFloat(a.dtype) && !isFloat(*to))
      return std::nullopt; // integer casts are shapes: foldCast
    Tensor result(*to, a.shape);
    for (int64_t i = 0; i < a.numElements(); ++i) {
      if (*to == DType::I1) {
        result.set(i, a.at(i) != 0 ? 1.0 : 0.0); // NaN is true
      } else if (isFloat(*to)) {
        // Integers beyond 2^53 would be rounded twice through a double.
        int64_t exact = a.dtype == DType::I64 ? a.as<int64_t>()[i] : 0;
        if (std::fabs(static_cast<double>(exact)) >= kExactInDouble)
          return std::nullopt;
        result.set(i, a.at(i));
      } else {
        int64_t value = floatToInteger(a.at(i), *to);
        if (*to == DType::I64)
          result.as<int64_t>()[i] = value;
        else
          result.as<int32_t>()[i] = static_cast<int32_t>(value);
      }
    }
    return result;
  }
  // Range's expansion counts its elements as Relu(Ceil((limit - start) /
  // delta)): exact in any float dtype.
  bool unary = op == "Neg" || op == "Ceil" || op == "Floor" || op == "Relu";
  bool binary = op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
  if (!isFloat(a.dtype) || !(unary || binary) ||
      inputs.size() != (unary ? 1u : 2u) ||
      (binary && inputs[1]->dtype != a.dtype))
    return std::nullopt;
  std::vector<Shape> shapes;
  for (const Tensor *input : inputs)
    shapes.push_back(input->shape);
  std::optional<Shape> shape = broadcastShape(shapes);
  if (!shape || numElements(*shape) > kMaxElements)
    return std::nullopt;
  auto compute = [&](auto x, auto y) {
    if (op == "Neg")
      return -x;
    if (op == "Ceil")
      return std::ceil(x);
    if (op == "Floor")
      return std::floor(x);
    if (op == "Relu")
      return x < 0 ? decltype(x)(0) : x; // NaN stays NaN
    if (op == "Add")
      return x + y;
    if (op == "Sub")
      return x - y;
    if (op == "Mul")
      return x * y;
    return x / y;
  };
  Tensor result(a.dtype, *shape);
  for (int64_t i = 0; i < result.numElements(); ++i) {
    double x = a.at(broadcastIndex(a.shape, *shape, i));
    double y = binary
                   ? inputs[1]->at(broadcastIndex(inputs[1]->shape, *shape, i))
                   : 0.0;
    if (a.dtype == DType::F64)
      result.set(i, compute(x, y));
    else
      result.set(i, static_cast<double>(
                        compute(static_cast<float>(x), static_cast<float>(y))));
  }
  return result;
}

} // namespace

std::optional<Tensor>
foldShapeComputation(const onnx::NodeProto &node, int64_t opset,
                     const std::vector<const Tensor *> &inputs,
                     const std::optional<Shape> &inputShape, bool isBound) {
  if (node.output_size() != 1 ||
      (!node.domain().empty() && node.domain() != "ai.onnx"))
    return std::nullopt;
  const std::string &op = node.op_type();
  if (isBound)
    if (std::optional<Tensor> value = foldFloatBound(node, inputs))
      return value;
  if (op == "Shape" || op == "Size") {
    if (!inputShape)
      return std::nullopt;
    // A symbolic dim (-1 here) is no constant: OnnxConverter computes it
    // from the run's sizes (foldToSymbolicSizes).
    if (op == "Shape") {
      Ints shape = foldShape(node, *inputShape);
      if (std::any_of(shape.values.begin(), shape.values.end(),
                      [](int64_t dim) { return dim < 0; }))
        return std::nullopt;
      return tensorOf(shape);
    }
    if (std::any_of(inputShape->begin(), inputShape->end(),
                    [](int64_t dim) { return dim < 0; }))
      return std::nullopt;
    return tensorOf(Ints{DType::I64, {}, {numElements(*inputShape)}});
  }
  std::vector<std::optional<Ints>> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool absent =
        i >= static_cast<size_t>(node.input_size()) || node.input(i).empty();
    operands.push_back(absent ? std::nullopt : intsOf(inputs[i]));
    if (!absent && !operands.back())
      return std::nullopt; // a non-constant, float or large operand
  }
  if (operands.empty() || !operands[0])
    return std::nullopt;
  const Ints &a = *operands[0];
  std::optional<Ints> result;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod") {
    bool fmod = false;
    for (const onnx::AttributeProto &attr : node.attribute())
      fmod |= attr.name() == "fmod" && attr.i() != 0;
    if (operands.size() == 2 && operands[1] && !fmod)
      result = foldArithmetic(op, a, *operands[1]);
  } else if (op == "Not" || op == "And" || op == "Or" || op == "Xor") {
    result = foldLogic(op, operands);
  } else if (op == "Equal" || op == "Less" || op == "LessOrEqual" ||
             op == "Greater" || op == "GreaterOrEqual") {
    if (operands.size() == 2 && operands[1])
      result = foldComparison(op, a, *operands[1]);
  } else if (op == "Where") {
    if (operands.size() == 3 && operands[1] && operands[2] &&
        a.dtype == DType::I1 && operands[1]->dtype == operands[2]->dtype)
      result = elementwise(
          {&a, &*operands[1], &*operands[2]}, operands[1]->dtype,
          [](const std::vector<int64_t> &v) { return v[0] ? v[1] : v[2]; });
  } else if (op == "Max" || op == "Min") {
    // Variadic, broadcasting (CenterCropPad's padded size: Max(Shape(x),
    // shape)).
    std::vector<const Ints *> all;
    for (const std::optional<Ints> &operand : operands)
      if (operand && operand->dtype == a.dtype && a.dtype != DType::I1)
        all.push_back(&*operand);
    if (all.size() == operands.size())
      result = elementwise(all, a.dtype, [&](const std::vector<int64_t> &v) {
        return op == "Max" ? *std::max_element(v.begin(), v.end())
                           : *std::min_element(v.begin(), v.end());
      });
  } else if (op == "Neg" || op == "Abs") {
    if (a.dtype != DType::I1)
      result = elementwise({&a}, a.dtype,
                           [&](const std::vector<int64_t> &v) -> int64_t {
                             bool negate = op == "Neg" || v[0] < 0;
                             return negate ? wrappingOp(0, v[0], '-') : v[0];
                           });
  } else if (op == "Cast") {
    result = foldCast(node, a);
  } else if (op == "Concat") {
    for (const std::optional<Ints> &operand : operands)
      if (!operand)
        return std::nullopt;
    result = foldConcat(node, operands);
  } else if (op == "Gather") {
    if (operands.size() == 2 && operands[1])
      result = foldGather(node, a, *operands[1]);
  } else if (op == "Slice") {
    if (opset >= 10)
      result = foldSlice(a, operands);
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    result = foldView(node, opset, a, operands);
  } else if (op == "ConstantOfShape") {
    result = foldConstantOfShape(node, a);
  } else if (op == "Reshape") {
    if (opset >= 5 && operands.size() == 2 && operands[1])
      result = foldReshape(node, a, *operands[1]);
  } else if (op == "Transpose") {
    result = foldTranspose(node, a);
  } else if (op == "Expand") {
    if (operands.size() == 2 && operands[1])
      result = foldExpand(a, *operands[1]);
  } else if (op == "Tile") {
    if (opset >= 6 && operands.size() == 2 && operands[1])
      result = foldTile(a, *operands[1]);
  } else if (op == "Range") {
    result = foldRange(operands);
  } else if (op == "ScatterElements" || (op == "Scatter" && opset < 11)) {
    if (operands.size() == 3 && operands[1] && operands[2])
      result = foldScatterElements(node, a, *operands[1], *operands[2]);
  } else if (op == "Identity") {
    result = a;
  } else if (op == "Flatten") {
    result = foldFlatten(node, a);
  }
  if (!result)
    return std::nullopt;
  return tensorOf(*result);
}

} // namespace fusec
