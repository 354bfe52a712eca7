//===- SymbolicShapes.cpp - Dims and shape values over symbolic sizes -----===//
//
// ONNX's inference names a symbolic dim only as far as its data propagation
// carries the input's dim_param: past a Range, a Reshape to a computed shape,
// a ConstantOfShape or an Expand of a Where (what the exporters write for
// `x.view(x.size(0), x.size(1), 12, 64)` and for masks) the dims are unnamed,
// and a Shape of them could not be read. The converter tracks its own, node
// by node as it converts (propagateSymbolicShapes): each value's dims, and
// each small integer value's elements, as SymbolicSizes of the graph's
// symbols. The ops that read a shape (Reshape, Expand, ConstantOfShape,
// Slice) then take a symbolic one (convertSymbolicShapeReader), and shape
// values become dim_size ops (foldToSymbolicSizes).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "ir/ElementwiseOps.h"

#include <algorithm>
#include <limits>

namespace fusec::onnx_import {

namespace {

using Sizes = std::vector<SymbolicSize>;

/// Integer values past this many elements are data, not shapes.
constexpr size_t kMaxValueElements = 64;

const SymbolicSize kOne = SymbolicSize::constant(1);

/// The least and greatest value of `size` over the symbols' ranges
/// (saturated at int64's bounds).
std::pair<int64_t, int64_t> boundsOf(const SymbolicSize &size,
                                     const std::vector<DimSymbol> &symbols) {
  auto saturatedProduct = [](int64_t a, int64_t b) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product))
      return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                                : std::numeric_limits<int64_t>::max();
    return product;
  };
  int64_t low = size.factor, high = size.factor;
  for (int symbol : size.symbols) {
    low = saturatedProduct(low, symbols[symbol].min);
    high = saturatedProduct(high, symbols[symbol].max);
  }
  return {std::min(low, high), std::max(low, high)};
}

std::optional<SymbolicSize>
staticResult(int64_t a, int64_t b, bool (*op)(int64_t, int64_t, int64_t *)) {
  int64_t result = 0;
  if (op(a, b, &result))
    return std::nullopt;
  return SymbolicSize::constant(result);
}

bool checkedAdd(int64_t a, int64_t b, int64_t *r) {
  return __builtin_add_overflow(a, b, r);
}
bool checkedSub(int64_t a, int64_t b, int64_t *r) {
  return __builtin_sub_overflow(a, b, r);
}

/// a + b; a sum of distinct products of symbols is a derived symbol of
/// `symbols` (`past + seq`).
std::optional<SymbolicSize> add(const SymbolicSize &a, const SymbolicSize &b,
                                std::vector<DimSymbol> &symbols) {
  if (a.isStatic() && b.isStatic())
    return staticResult(a.factor, b.factor, checkedAdd);
  return addSymbolicSizes(a, b, /*subtract=*/false, symbols);
}

/// a - b, where the result is a constant or a size over the whole range
/// (`(past+seq) - seq` is past).
std::optional<SymbolicSize> subtract(const SymbolicSize &a,
                                     const SymbolicSize &b,
                                     std::vector<DimSymbol> &symbols) {
  if (a.isStatic() && b.isStatic())
    return staticResult(a.factor, b.factor, checkedSub);
  return addSymbolicSizes(a, b, /*subtract=*/true, symbols);
}

std::optional<SymbolicSize> multiply(const SymbolicSize &a,
                                     const SymbolicSize &b) {
  int64_t factor = 0;
  if (__builtin_mul_overflow(a.factor, b.factor, &factor))
    return std::nullopt;
  return a * b;
}

/// a / b where it is exact, or where both are non-negative constants (ONNX's
/// integer Div truncates, as C++'s does).
std::optional<SymbolicSize> divide(const SymbolicSize &a,
                                   const SymbolicSize &b) {
  if (b.factor == 0)
    return std::nullopt;
  if (a.isStatic() && b.isStatic()) {
    if (a.factor % b.factor == 0 || (a.factor >= 0 && b.factor > 0))
      return SymbolicSize::constant(a.factor / b.factor);
    return std::nullopt;
  }
  if (a.factor % b.factor != 0)
    return std::nullopt;
  SymbolicSize quotient{a.factor / b.factor, a.symbols};
  for (int symbol : b.symbols) {
    auto found =
        std::find(quotient.symbols.begin(), quotient.symbols.end(), symbol);
    if (found == quotient.symbols.end())
      return std::nullopt;
    quotient.symbols.erase(found);
  }
  return quotient;
}

/// The result of a comparison where the symbols' ranges decide it: the
/// bounds of a - b, with sums expanded (`past + seq > past` always holds).
std::optional<bool> compare(const std::string &op, const SymbolicSize &a,
                            const SymbolicSize &b,
                            const std::vector<DimSymbol> &symbols) {
  if (a == b)
    return op == "Equal" || op == "LessOrEqual" || op == "GreaterOrEqual";
  auto [low, high] = differenceBounds(a, b, symbols);
  auto decided = [](bool holds, bool fails) -> std::optional<bool> {
    if (holds)
      return true;
    if (fails)
      return false;
    return std::nullopt;
  };
  if (op == "Equal")
    return decided(low == 0 && high == 0, low > 0 || high < 0);
  if (op == "Less")
    return decided(high < 0, low >= 0);
  if (op == "Greater")
    return decided(low > 0, high <= 0);
  if (op == "LessOrEqual")
    return decided(high <= 0, low > 0);
  if (op == "GreaterOrEqual")
    return decided(low >= 0, high < 0);
  return std::nullopt;
}

/// NumPy's broadcast of dims that may be symbolic: a fixed 1 takes the
/// other's dim; other dims must be equal (a symbolic dim against another
/// one, or a fixed size, is not known to be).
std::optional<SymbolicShape>
broadcastShapes(const std::vector<SymbolicShape> &shapes) {
  size_t rank = 0;
  for (const SymbolicShape &shape : shapes)
    rank = std::max(rank, shape.size());
  SymbolicShape result(rank, kOne);
  for (size_t d = 0; d < rank; ++d) {
    std::optional<SymbolicSize> dim;
    for (const SymbolicShape &shape : shapes) {
      if (d + shape.size() < rank)
        continue;
      const SymbolicSize &size = shape[d + shape.size() - rank];
      if (size == kOne)
        continue;
      if (dim && *dim != size)
        return std::nullopt;
      dim = size;
    }
    result[d] = dim.value_or(kOne);
  }
  return result;
}

int64_t intAttribute(const onnx::NodeProto &node, const std::string &name,
                     int64_t fallback) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return attr.i();
  return fallback;
}

std::optional<std::vector<int64_t>> intsAttribute(const onnx::NodeProto &node,
                                                  const std::string &name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
  return std::nullopt;
}

/// A start or end index of a slice of `length` elements (negative ones
/// count from the end), clamped to [0, length] as ONNX's Slice and Shape do.
int64_t clampedIndex(int64_t index, int64_t length) {
  if (index < 0)
    index += length;
  return std::clamp<int64_t>(index, 0, length);
}

/// `axis` in [0, rank), or nullopt.
std::optional<size_t> axisIn(int64_t axis, size_t rank) {
  if (axis < 0)
    axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    return std::nullopt;
  return static_cast<size_t>(axis);
}

bool isIntegerOrBool(DType dtype) {
  return dtype == DType::I1 || isInteger(dtype);
}

/// ONNX ops whose first output has their first input's dims.
bool keepsFirstInputShape(const std::string &op) {
  static const std::set<std::string> kOps = {"Softmax",
                                             "LogSoftmax",
                                             "Hardmax",
                                             "Trilu",
                                             "CumSum",
                                             "Dropout",
                                             "LayerNormalization",
                                             "RMSNormalization",
                                             "Gelu",
                                             "LeakyRelu",
                                             "Elu",
                                             "Selu",
                                             "Celu",
                                             "HardSigmoid",
                                             "Shrink",
                                             "IsInf",
                                             "ThresholdedRelu",
                                             "Swish",
                                             "Clip",
                                             "Identity",
                                             "Cast",
                                             "CastLike",
                                             "InstanceNormalization",
                                             "LpNormalization",
                                             "MeanVarianceNormalization"};
  return kOps.count(op) > 0;
}

/// ONNX ops that broadcast all their inputs (NumPy's rules) to their output.
bool broadcastsInputs(const std::string &op) {
  static const std::set<std::string> kOps = {
      "Where", "Pow", "Max", "Min", "Sum", "Mean", "Mod", "PRelu", "BitShift"};
  if (kOps.count(op))
    return true;
  const OnnxOpDef *def = OnnxRegistry::instance().find(op);
  return def && !def->graphOp.empty() &&
         fuse::lookupElementwiseOp(def->graphOp) != nullptr;
}

} // namespace

std::optional<SymbolicShape>
OnnxConverter::symbolicShapeOf(const std::string &value) const {
  std::string name = resolve(value);
  if (auto it = symbolicShapes.find(name); it != symbolicShapes.end())
    return it->second;
  for (const GraphInput &input : graph.inputs) {
    if (input.name != name)
      continue;
    SymbolicShape shape;
    for (size_t d = 0; d < input.shape.size(); ++d) {
      if (input.shape[d] >= 0) {
        shape.push_back(SymbolicSize::constant(input.shape[d]));
        continue;
      }
      std::optional<int> symbol = symbolIndex(input.dimNames.at(d));
      if (!symbol)
        return std::nullopt;
      shape.push_back(SymbolicSize::symbol(*symbol));
    }
    return shape;
  }
  if (auto it = constants.find(name); it != constants.end())
    return fusec::symbolicShapeOf(it->second.shape);
  if (auto it = inferredShapes.find(name); it != inferredShapes.end())
    return fusec::symbolicShapeOf(it->second);
  return std::nullopt;
}

std::optional<std::vector<SymbolicSize>>
OnnxConverter::symbolicValueOf(const std::string &value) const {
  std::string name = resolve(value);
  if (auto it = symbolicShapeValues.find(name); it != symbolicShapeValues.end())
    return it->second;
  if (auto it = shapeValues.find(name); it != shapeValues.end()) {
    Sizes sizes;
    for (int64_t v : it->second)
      sizes.push_back(SymbolicSize::constant(v));
    return sizes;
  }
  auto it = constants.find(name);
  if (it == constants.end() || it->second.shape.size() > 1 ||
      static_cast<size_t>(it->second.numElements()) > kMaxValueElements ||
      !isIntegerOrBool(it->second.dtype))
    return std::nullopt;
  Sizes sizes;
  const Tensor &tensor = it->second;
  for (int64_t k = 0; k < tensor.numElements(); ++k)
    sizes.push_back(SymbolicSize::constant(
        tensor.dtype == DType::I64 ? tensor.as<int64_t>()[k]
                                   : static_cast<int64_t>(tensor.at(k))));
  return sizes;
}

std::optional<int> OnnxConverter::symbolIndex(const std::string &name) const {
  for (size_t s = 0; s < graph.symbols.size(); ++s)
    if (graph.symbols[s].name == name)
      return static_cast<int>(s);
  return std::nullopt;
}

std::string OnnxConverter::dimsText(const SymbolicShape &shape) const {
  std::string text;
  for (const SymbolicSize &dim : shape)
    text += (text.empty() ? "" : ",") + sizeText(dim);
  return text;
}

void OnnxConverter::propagateSymbolicShapes(const onnx::NodeProto &node) {
  if (graph.symbols.empty() || node.output_size() == 0 ||
      node.output(0).empty())
    return;
  recordSymbolicShapes(node);
  recordCountingIndices(node);
  // Why a value is not known, carried to the values computed from it, so
  // that the op that needs one says why.
  const std::string &output = node.output(0);
  if (symbolicShapeValues.count(output) || symbolicGaps.count(output))
    return;
  for (const std::string &input : node.input())
    if (auto gap = symbolicGaps.find(resolve(input));
        !input.empty() && gap != symbolicGaps.end()) {
      symbolicGaps[output] = gap->second;
      return;
    }
}

/// Index tensors that count up along one axis (countingIndices): a Range
/// of step 1 over [start, start + n), plus a scalar, cast, unsqueezed or
/// expanded.
void OnnxConverter::recordCountingIndices(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  auto input = [&](int i) {
    return i < node.input_size() ? resolve(node.input(i)) : std::string();
  };
  auto scalarLike = [&](const std::string &name) {
    std::optional<SymbolicShape> shape = symbolicShapeOf(name);
    return shape &&
           (shape->empty() || (shape->size() == 1 && (*shape)[0] == kOne));
  };
  auto isZero = [&](const std::string &name) {
    std::optional<std::vector<SymbolicSize>> value = symbolicValueOf(name);
    return value && value->size() == 1 &&
           (*value)[0] == SymbolicSize::constant(0);
  };
  auto record = [&](std::string start, size_t axis) {
    countingIndices[node.output(0)] = {std::move(start), axis};
  };
  if (op == "Range") {
    std::optional<std::vector<SymbolicSize>> delta = symbolicValueOf(input(2));
    if (delta && delta->size() == 1 && (*delta)[0] == kOne &&
        scalarLike(input(0)))
      record(isZero(input(0)) ? "" : input(0), 0);
    return;
  }
  const CountingIndices *first = countingIndicesOrNull(input(0));
  if (op == "Add" && node.input_size() == 2) {
    for (int i : {0, 1}) {
      const CountingIndices *counting = countingIndicesOrNull(input(i));
      if (counting && counting->start.empty() && scalarLike(input(1 - i)))
        record(input(1 - i), counting->axis);
    }
    return;
  }
  if (!first)
    return;
  if (op == "Cast" || op == "Identity")
    record(first->start, first->axis);
  // A count unsqueezed or reshaped: the counting dim is the output's only
  // dim that is not a fixed 1 ([n] to [n, 1, 1]: transformers' index
  // grids).
  if (op == "Reshape" || op == "Unsqueeze") {
    std::optional<SymbolicShape> out = symbolicShapeOf(node.output(0));
    std::optional<SymbolicShape> in = symbolicShapeOf(input(0));
    if (!out || !in || in->size() != 1)
      return;
    std::optional<size_t> axis;
    for (size_t d = 0; d < out->size(); ++d)
      if ((*out)[d] != kOne) {
        if (axis || (*out)[d] != (*in)[0])
          return;
        axis = d;
      }
    // (A count of one, [0], counts along any dim of 1: the first.)
    if (!axis && (*in)[0] == kOne && !out->empty())
      axis = 0;
    if (axis)
      record(first->start, *axis);
  }
  if (op == "Expand") {
    // The counting dim stays (it is not 1); dims added in front shift it.
    std::optional<SymbolicShape> out = symbolicShapeOf(node.output(0));
    std::optional<SymbolicShape> in = symbolicShapeOf(input(0));
    // (A count of one broadcast along its dim would be zeros: not kept.)
    size_t shift =
        out && in ? out->size() - std::min(out->size(), in->size()) : 0;
    if (out && in && out->size() >= in->size() && first->axis < in->size() &&
        (*in)[first->axis] == (*out)[first->axis + shift])
      record(first->start, first->axis + shift);
  }
}

bool OnnxConverter::namesEveryElement(const std::string &indices,
                                      const SymbolicShape &data) const {
  // Concat(axis -1) of Unsqueeze(c_k, -1), each c_k counting from 0 along
  // dim k of a tensor of the data's dims: the tuple at each point is the
  // point itself.
  const onnx::NodeProto *concat = producerOf(indices);
  if (!concat || concat->op_type() != "Concat" ||
      concat->input_size() != static_cast<int>(data.size()))
    return false;
  std::optional<SymbolicShape> tuples = symbolicShapeOf(indices);
  if (!tuples || tuples->size() != data.size() + 1 ||
      !std::equal(data.begin(), data.end(), tuples->begin()))
    return false;
  for (int k = 0; k < concat->input_size(); ++k) {
    const onnx::NodeProto *unsqueeze = producerOf(concat->input(k));
    if (!unsqueeze || unsqueeze->op_type() != "Unsqueeze" ||
        unsqueeze->input_size() < 1)
      return false;
    std::string component = resolve(unsqueeze->input(0));
    const CountingIndices *counting = countingIndicesOrNull(component);
    // (Along a dim of 1 the count is 0: any dim of 1 does.)
    if (!counting || !counting->start.empty() ||
        symbolicShapeOf(component) != data ||
        (counting->axis != static_cast<size_t>(k) &&
         (data[k] != kOne || data[counting->axis] != kOne)))
      return false;
  }
  return true;
}

void OnnxConverter::recordSymbolicShapes(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  std::vector<DimSymbol> &symbols = graph.symbols;
  auto input = [&](int i) {
    return i < node.input_size() && !node.input(i).empty()
               ? resolve(node.input(i))
               : std::string();
  };
  auto shapeIn = [&](int i) -> std::optional<SymbolicShape> {
    std::string name = input(i);
    return name.empty() ? std::nullopt : symbolicShapeOf(name);
  };
  auto valueIn = [&](int i) -> std::optional<Sizes> {
    std::string name = input(i);
    return name.empty() ? std::nullopt : symbolicValueOf(name);
  };
  auto setShape = [&](int output, const SymbolicShape &shape) {
    if (output < node.output_size() && !node.output(output).empty())
      symbolicShapes[node.output(output)] = shape;
  };
  // Values are kept for integer outputs of rank 0 or 1 (shapes and sizes).
  auto setValue = [&](const Sizes &value) {
    auto type = inferredTypes.find(node.output(0));
    if (value.size() <= kMaxValueElements && type != inferredTypes.end() &&
        isIntegerOrBool(type->second))
      symbolicShapeValues[node.output(0)] = value;
  };
  // Integer inputs read as constants (axes, perms).
  auto constantInts = [&](int i) -> std::optional<std::vector<int64_t>> {
    std::optional<Sizes> value = valueIn(i);
    if (!value)
      return std::nullopt;
    std::vector<int64_t> ints;
    for (const SymbolicSize &size : *value) {
      if (!size.isStatic())
        return std::nullopt;
      ints.push_back(size.factor);
    }
    return ints;
  };
  // Axes from attribute `axes` before `inputSince`, from input 1 after.
  auto axesOf = [&](int64_t inputSince) -> std::optional<std::vector<int64_t>> {
    if (opset >= inputSince)
      return input(1).empty()
                 ? std::optional<std::vector<int64_t>>(std::vector<int64_t>{})
                 : constantInts(1);
    return intsAttribute(node, "axes").value_or(std::vector<int64_t>{});
  };

  if (op == "Shape") {
    std::optional<SymbolicShape> shape = shapeIn(0);
    if (!shape)
      return;
    int64_t rank = static_cast<int64_t>(shape->size());
    int64_t start = clampedIndex(intAttribute(node, "start", 0), rank);
    int64_t end = clampedIndex(intAttribute(node, "end", rank), rank);
    Sizes value(shape->begin() + start, shape->begin() + std::max(start, end));
    setShape(0, {SymbolicSize::constant(value.size())});
    setValue(value);
    return;
  }
  if (op == "Size") {
    if (std::optional<SymbolicShape> shape = shapeIn(0)) {
      setShape(0, {});
      setValue({symbolicElements(*shape)});
    }
    return;
  }
  if (op == "Identity" || op == "Cast" || op == "CastLike") {
    if (std::optional<SymbolicShape> shape = shapeIn(0))
      setShape(0, *shape);
    if (std::optional<Sizes> value = valueIn(0))
      setValue(*value);
    return;
  }
  if (op == "Gather") {
    std::optional<SymbolicShape> data = shapeIn(0), indices = shapeIn(1);
    if (!data || !indices)
      return;
    std::optional<size_t> axis =
        axisIn(intAttribute(node, "axis", 0), data->size());
    if (!axis)
      return;
    SymbolicShape shape(data->begin(), data->begin() + *axis);
    shape.insert(shape.end(), indices->begin(), indices->end());
    shape.insert(shape.end(), data->begin() + *axis + 1, data->end());
    setShape(0, shape);
    std::optional<Sizes> value = valueIn(0);
    std::optional<std::vector<int64_t>> picks = constantInts(1);
    if (value && picks && data->size() == 1) {
      Sizes gathered;
      for (int64_t pick : *picks) {
        std::optional<size_t> at = axisIn(pick, value->size());
        if (!at)
          return;
        gathered.push_back((*value)[*at]);
      }
      setValue(gathered);
    }
    return;
  }
  if (op == "ScatterElements" || op == "ScatterND") {
    std::optional<SymbolicShape> data = shapeIn(0);
    if (!data)
      return;
    setShape(0, *data);
    // A shape value with some elements replaced (the exporters' index_copy
    // writes Shape(x) with one dim set to another value's length).
    std::optional<Sizes> value = valueIn(0), updates = valueIn(2);
    std::optional<std::vector<int64_t>> indices = constantInts(1);
    std::optional<SymbolicShape> indexShape = shapeIn(1);
    if (!value || !updates || !indices || data->size() != 1 ||
        indices->size() != updates->size() || !indexShape ||
        (op == "ScatterND" && indexShape->back() != kOne) ||
        (op == "ScatterElements" && (intAttribute(node, "axis", 0) != 0 &&
                                     intAttribute(node, "axis", 0) != -1)))
      return;
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.name() == "reduction" && attr.s() != "none")
        return;
    Sizes scattered = *value;
    for (size_t k = 0; k < indices->size(); ++k) {
      std::optional<size_t> at = axisIn((*indices)[k], scattered.size());
      if (!at)
        return;
      scattered[*at] = (*updates)[k];
    }
    setValue(scattered);
    return;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::optional<SymbolicShape> in = shapeIn(0);
    std::optional<std::vector<int64_t>> axes = axesOf(13);
    if (!in || !axes)
      return;
    SymbolicShape shape;
    if (op == "Unsqueeze") {
      size_t rank = in->size() + axes->size();
      std::vector<bool> inserted(rank, false);
      for (int64_t axis : *axes) {
        std::optional<size_t> at = axisIn(axis, rank);
        if (!at || inserted[*at])
          return;
        inserted[*at] = true;
      }
      auto next = in->begin();
      for (size_t d = 0; d < rank; ++d)
        shape.push_back(inserted[d] ? kOne : *next++);
    } else {
      std::vector<bool> removed(in->size(), false);
      for (int64_t axis : *axes) {
        std::optional<size_t> at = axisIn(axis, in->size());
        if (!at)
          return;
        removed[*at] = true;
      }
      for (size_t d = 0; d < in->size(); ++d) {
        bool squeezed = axes->empty() ? (*in)[d] == kOne : removed[d];
        // Without axes a symbolic dim of size 1 would be squeezed too.
        if (axes->empty() && !(*in)[d].isStatic())
          return;
        if (!squeezed)
          shape.push_back((*in)[d]);
      }
    }
    setShape(0, shape);
    if (std::optional<Sizes> value = valueIn(0))
      setValue(*value);
    return;
  }
  // Every input's dims, or nullopt where one is not known.
  auto allShapesIn = [&]() -> std::optional<std::vector<SymbolicShape>> {
    std::vector<SymbolicShape> shapes;
    for (int i = 0; i < node.input_size(); ++i) {
      std::optional<SymbolicShape> shape = shapeIn(i);
      if (!shape)
        return std::nullopt;
      shapes.push_back(*shape);
    }
    return shapes;
  };

  if (op == "Concat") {
    std::optional<std::vector<SymbolicShape>> inputShapes = allShapesIn();
    if (!inputShapes)
      return;
    const std::vector<SymbolicShape> &shapes = *inputShapes;
    Sizes value;
    bool valuesKnown = true;
    for (int i = 0; i < node.input_size(); ++i) {
      std::optional<Sizes> part = valueIn(i);
      valuesKnown &= part.has_value();
      if (part)
        value.insert(value.end(), part->begin(), part->end());
    }
    if (shapes.empty())
      return;
    std::optional<size_t> axis =
        axisIn(intAttribute(node, "axis", 0), shapes[0].size());
    if (!axis)
      return;
    SymbolicShape shape = shapes[0];
    SymbolicSize along = SymbolicSize::constant(0);
    for (const SymbolicShape &part : shapes) {
      if (part.size() != shape.size())
        return;
      for (size_t d = 0; d < shape.size(); ++d)
        if (d != *axis && part[d] != shape[d])
          return;
      std::optional<SymbolicSize> sum = add(along, part[*axis], symbols);
      if (!sum)
        return;
      along = *sum;
    }
    shape[*axis] = along;
    setShape(0, shape);
    if (valuesKnown)
      setValue(value);
    return;
  }
  if (op == "Reshape" || op == "Expand") {
    std::optional<SymbolicShape> in = shapeIn(0);
    std::optional<Sizes> target = valueIn(1);
    if (!in || !target)
      return;
    if (op == "Expand") {
      if (std::optional<SymbolicShape> shape = broadcastShapes({*in, *target}))
        setShape(0, *shape);
      return;
    }
    bool allowZero = intAttribute(node, "allowzero", 0) != 0;
    SymbolicShape shape;
    std::optional<size_t> inferred;
    SymbolicSize known = kOne;
    for (size_t d = 0; d < target->size(); ++d) {
      SymbolicSize dim = (*target)[d];
      if (dim == SymbolicSize::constant(0) && !allowZero) {
        if (d >= in->size())
          return;
        dim = (*in)[d];
      }
      if (dim == SymbolicSize::constant(-1)) {
        if (inferred)
          return;
        inferred = d;
      } else if (dim.factor < 0) {
        return;
      } else {
        std::optional<SymbolicSize> product = multiply(known, dim);
        if (!product)
          return;
        known = *product;
      }
      shape.push_back(dim);
    }
    if (inferred) {
      std::optional<SymbolicSize> rest = divide(symbolicElements(*in), known);
      if (!rest || multiply(*rest, known) != symbolicElements(*in))
        return;
      shape[*inferred] = *rest;
    }
    setShape(0, shape);
    if (std::optional<Sizes> value = valueIn(0))
      setValue(*value);
    return;
  }
  if (op == "ConstantOfShape") {
    if (std::optional<Sizes> target = valueIn(0))
      setShape(0, *target);
    return;
  }
  if (op == "Range") {
    std::optional<Sizes> start = valueIn(0), limit = valueIn(1),
                         delta = valueIn(2);
    if (!start || !limit || !delta || start->size() != 1 ||
        limit->size() != 1 || delta->size() != 1)
      return;
    if (delta->front() != kOne)
      return; // a static Range folds to a constant
    if (std::optional<SymbolicSize> length =
            subtract(limit->front(), start->front(), symbols))
      if (!length->isStatic() || length->factor >= 0)
        setShape(0, {*length});
    return;
  }
  if (op == "Slice") {
    std::optional<SymbolicShape> in = shapeIn(0);
    if (!in)
      return;
    std::optional<std::vector<SymbolicSlice>> slices = symbolicSlices(node);
    if (!slices)
      return;
    SymbolicShape shape = *in;
    for (const SymbolicSlice &slice : *slices) {
      std::optional<SymbolicSize> size =
          slicedSize((*in)[slice.axis], slice, symbols);
      if (!size)
        return;
      shape[slice.axis] = *size;
    }
    setShape(0, shape);
    // A slice of a 1-D shape value with fixed bounds.
    std::optional<Sizes> value = valueIn(0);
    if (!value || in->size() != 1 || slices->size() != 1)
      return;
    const SymbolicSlice &slice = slices->front();
    if (!slice.start.isStatic() || !slice.end.isStatic() ||
        !slice.step.isStatic() || slice.step.factor <= 0)
      return;
    int64_t length = static_cast<int64_t>(value->size());
    Sizes sliced;
    int64_t end = clampedIndex(slice.end.factor, length);
    for (int64_t k = clampedIndex(slice.start.factor, length); k < end;
         k += slice.step.factor)
      sliced.push_back((*value)[k]);
    setValue(sliced);
    return;
  }
  if (op == "Transpose") {
    std::optional<SymbolicShape> in = shapeIn(0);
    if (!in)
      return;
    std::vector<int64_t> perm(in->size());
    for (size_t d = 0; d < perm.size(); ++d)
      perm[d] = static_cast<int64_t>(perm.size() - 1 - d);
    perm = intsAttribute(node, "perm").value_or(perm);
    if (perm.size() != in->size())
      return;
    SymbolicShape shape;
    for (int64_t axis : perm) {
      std::optional<size_t> at = axisIn(axis, in->size());
      if (!at)
        return;
      shape.push_back((*in)[*at]);
    }
    setShape(0, shape);
    return;
  }
  if (op == "MatMul") {
    std::optional<SymbolicShape> lhs = shapeIn(0), rhs = shapeIn(1);
    if (!lhs || !rhs || lhs->empty() || rhs->empty())
      return;
    bool lhsVector = lhs->size() == 1, rhsVector = rhs->size() == 1;
    if (lhsVector)
      lhs->insert(lhs->begin(), kOne);
    if (rhsVector)
      rhs->push_back(kOne);
    SymbolicShape lhsBatch(lhs->begin(), lhs->end() - 2);
    SymbolicShape rhsBatch(rhs->begin(), rhs->end() - 2);
    std::optional<SymbolicShape> shape = broadcastShapes({lhsBatch, rhsBatch});
    if (!shape)
      return;
    if (!lhsVector)
      shape->push_back((*lhs)[lhs->size() - 2]);
    if (!rhsVector)
      shape->push_back(rhs->back());
    setShape(0, *shape);
    return;
  }
  if (op == "Gemm") {
    std::optional<SymbolicShape> a = shapeIn(0), b = shapeIn(1);
    if (!a || !b || a->size() != 2 || b->size() != 2)
      return;
    bool transA = intAttribute(node, "transA", 0) != 0;
    bool transB = intAttribute(node, "transB", 0) != 0;
    setShape(0, {(*a)[transA ? 1 : 0], (*b)[transB ? 0 : 1]});
    return;
  }
  if (op == "Split") {
    std::optional<SymbolicShape> in = shapeIn(0);
    if (!in)
      return;
    std::optional<size_t> axis =
        axisIn(intAttribute(node, "axis", 0), in->size());
    if (!axis)
      return;
    std::optional<std::vector<int64_t>> sizes =
        opset >= 13 ? (input(1).empty() ? std::nullopt : constantInts(1))
                    : intsAttribute(node, "split");
    if (!sizes) {
      // Equal parts of a fixed dim.
      const SymbolicSize &dim = (*in)[*axis];
      int64_t parts = node.output_size();
      if (!dim.isStatic() || dim.factor % parts != 0)
        return;
      sizes = std::vector<int64_t>(parts, dim.factor / parts);
    }
    if (static_cast<int>(sizes->size()) != node.output_size())
      return;
    for (int o = 0; o < node.output_size(); ++o) {
      SymbolicShape shape = *in;
      shape[*axis] = SymbolicSize::constant((*sizes)[o]);
      setShape(o, shape);
    }
    return;
  }
  if (op == "Flatten") {
    std::optional<SymbolicShape> in = shapeIn(0);
    if (!in)
      return;
    int64_t axis = intAttribute(node, "axis", 1);
    if (axis < 0)
      axis += static_cast<int64_t>(in->size());
    if (axis < 0 || axis > static_cast<int64_t>(in->size()))
      return;
    setShape(0,
             {symbolicElements(SymbolicShape(in->begin(), in->begin() + axis)),
              symbolicElements(SymbolicShape(in->begin() + axis, in->end()))});
    return;
  }
  if (op.rfind("Reduce", 0) == 0 || op == "ArgMax" || op == "ArgMin") {
    std::optional<SymbolicShape> in = shapeIn(0);
    if (!in)
      return;
    std::optional<std::vector<int64_t>> axes;
    if (op == "ArgMax" || op == "ArgMin")
      axes = std::vector<int64_t>{intAttribute(node, "axis", 0)};
    else
      axes = axesOf(op == "ReduceSum" ? 13 : 18);
    if (!axes)
      return;
    bool keep = intAttribute(node, "keepdims", 1) != 0;
    if (axes->empty() && intAttribute(node, "noop_with_empty_axes", 0)) {
      setShape(0, *in);
      return;
    }
    std::vector<bool> reduced(in->size(), axes->empty());
    for (int64_t axis : *axes) {
      std::optional<size_t> at = axisIn(axis, in->size());
      if (!at)
        return;
      reduced[*at] = true;
    }
    SymbolicShape shape;
    for (size_t d = 0; d < in->size(); ++d)
      if (!reduced[d])
        shape.push_back((*in)[d]);
      else if (keep)
        shape.push_back(kOne);
    setShape(0, shape);
    return;
  }
  if (keepsFirstInputShape(op)) {
    if (std::optional<SymbolicShape> shape = shapeIn(0)) {
      setShape(0, *shape);
      if (op == "Dropout")
        setShape(1, *shape);
    }
    return;
  }
  if (!broadcastsInputs(op))
    return;
  std::optional<std::vector<SymbolicShape>> shapes = allShapesIn();
  std::optional<SymbolicShape> shape =
      shapes ? broadcastShapes(*shapes) : std::nullopt;
  if (!shape)
    return;
  setShape(0, *shape);
  // The values of integer arithmetic and comparisons on shape values (the
  // exporters' `Where(Equal(shape, -1), 1, shape)` before an Expand).
  if (shape->size() > 1)
    return;
  std::vector<Sizes> values;
  size_t length = 1;
  for (int i = 0; i < node.input_size(); ++i) {
    std::optional<Sizes> value = valueIn(i);
    if (!value || value->empty())
      return;
    // A negated size (-seq) is only a Slice's bound: arithmetic on it
    // (other than negating it back) is not followed.
    if (op != "Neg" &&
        std::any_of(value->begin(), value->end(),
                    [](const SymbolicSize &v) { return v.isNegated(); }))
      return;
    if (value->size() != 1 && length != 1 && value->size() != length)
      return;
    length = std::max(length, value->size());
    values.push_back(*value);
  }
  auto at = [&](size_t i, size_t k) -> const SymbolicSize & {
    return values[i].size() == 1 ? values[i][0] : values[i][k];
  };
  Sizes result;
  for (size_t k = 0; k < length; ++k) {
    std::optional<SymbolicSize> element;
    if (values.size() == 2) {
      const SymbolicSize &a = at(0, k), &b = at(1, k);
      if (op == "Add" || op == "Sub") {
        element = op == "Add" ? add(a, b, symbols) : subtract(a, b, symbols);
        if (!element && op == "Sub" && a == SymbolicSize::constant(0))
          element = b.negated(); // 0 - seq, as Neg
        if (!element && (!a.isStatic() || !b.isStatic()))
          symbolicGaps[node.output(0)] =
              "'" + node.output(0) + "' is " + sizeText(a) +
              (op == "Add" ? " + " : " - ") + sizeText(b) +
              ", not a size at every size in the symbols' ranges (fusec "
              "follows sums of sizes and differences that cancel)";
      } else if (op == "Mul")
        element = multiply(a, b);
      else if (op == "Div")
        element = divide(a, b);
      else if (op == "Max" || op == "Min") {
        std::optional<bool> less = compare("LessOrEqual", a, b, symbols);
        if (less)
          element = (*less == (op == "Min")) ? a : b;
      } else if (std::optional<bool> truth = compare(op, a, b, symbols)) {
        element = SymbolicSize::constant(*truth ? 1 : 0);
      }
    } else if (values.size() == 3 && op == "Where") {
      const SymbolicSize &condition = at(0, k);
      if (condition.isStatic())
        element = condition.factor != 0 ? at(1, k) : at(2, k);
    } else if (values.size() == 1 && op == "Not" && at(0, k).isStatic()) {
      element = SymbolicSize::constant(at(0, k).factor == 0 ? 1 : 0);
    } else if (values.size() == 1 && op == "Neg") {
      // -seq: a Slice's start counted from the back (T5's
      // position_bias[:, :, -seq:]); a negative value is no size, and
      // only a Slice reads one (symbolicSlices).
      element = at(0, k).negated();
    }
    if (!element)
      return;
    result.push_back(*element);
  }
  setValue(result);
}

std::optional<std::vector<OnnxConverter::SymbolicSlice>>
OnnxConverter::symbolicSlices(const onnx::NodeProto &node) const {
  std::optional<SymbolicShape> in = symbolicShapeOf(node.input(0));
  if (!in)
    return std::nullopt;
  auto read = [&](int i, const char *attr) -> std::optional<Sizes> {
    if (opset < 10) {
      std::optional<std::vector<int64_t>> ints = intsAttribute(node, attr);
      if (!ints)
        return std::nullopt;
      Sizes sizes;
      for (int64_t v : *ints)
        sizes.push_back(SymbolicSize::constant(v));
      return sizes;
    }
    if (i >= node.input_size() || node.input(i).empty())
      return std::nullopt;
    return symbolicValueOf(node.input(i));
  };
  std::optional<Sizes> starts = read(1, "starts"), ends = read(2, "ends");
  if (!starts || !ends || starts->size() != ends->size())
    return std::nullopt;
  std::optional<Sizes> axes = read(3, "axes"), steps = read(4, "steps");
  if ((axes && axes->size() != starts->size()) ||
      (steps && steps->size() != starts->size()))
    return std::nullopt;
  std::vector<SymbolicSlice> slices;
  for (size_t k = 0; k < starts->size(); ++k) {
    SymbolicSlice slice;
    SymbolicSize axis =
        axes ? (*axes)[k] : SymbolicSize::constant(static_cast<int64_t>(k));
    std::optional<size_t> at =
        axis.isStatic() ? axisIn(axis.factor, in->size()) : std::nullopt;
    if (!at)
      return std::nullopt;
    slice.axis = *at;
    // A bound counted back from the end by exactly the dim's own size
    // (-seq on a seq-long dim) is its start.
    auto fromBack = [&](const SymbolicSize &bound) {
      if (bound.isNegated() && bound.negated() == (*in)[*at])
        return SymbolicSize::constant(0);
      return bound;
    };
    slice.start = fromBack((*starts)[k]);
    slice.end = fromBack((*ends)[k]);
    slice.step = steps ? (*steps)[k] : kOne;
    slices.push_back(slice);
  }
  return slices;
}

std::optional<SymbolicSize>
OnnxConverter::slicedSize(const SymbolicSize &dim, const SymbolicSlice &slice,
                          std::vector<DimSymbol> &symbols) {
  if (slice.step != kOne)
    return std::nullopt;
  const SymbolicSize &start = slice.start, &end = slice.end;
  if (dim.isStatic() && start.isStatic() && end.isStatic()) {
    int64_t from = clampedIndex(start.factor, dim.factor),
            to = clampedIndex(end.factor, dim.factor);
    return SymbolicSize::constant(std::max<int64_t>(to - from, 0));
  }
  const SymbolicSize zero = SymbolicSize::constant(0);
  auto [dimLow, dimHigh] = boundsOf(dim, symbols);
  auto [endLow, endHigh] = boundsOf(end, symbols);
  // The last n, [-n:], of a dim at least n long.
  if (start.isStatic() && start.factor < 0 && end.isStatic() &&
      endLow >= dimHigh && -start.factor <= dimLow)
    return SymbolicSize::constant(-start.factor);
  // [start, end) within the dim at every size in range (an end past every
  // size is the dim's end): end - start long, where that is a size
  // (`[past, past + seq)` is seq long).
  // (An end counted from the back of a symbolic dim, [:-1], is seq - 1:
  // no size.)
  SymbolicSize to = end.isStatic() && endLow >= dimHigh ? dim : end;
  if (to.isStatic() && to.factor < 0)
    return std::nullopt;
  if (differenceBounds(start, zero, symbols).first < 0 ||
      differenceBounds(dim, to, symbols).first < 0)
    return std::nullopt;
  if (start == zero)
    return to;
  std::optional<SymbolicSize> length = subtract(to, start, symbols);
  if (!length || (length->isStatic() && length->factor < 0))
    return std::nullopt;
  return length;
}

bool OnnxConverter::convertSymbolicShapeReader(const onnx::NodeProto &node) {
  if (graph.symbols.empty() || node.output_size() == 0)
    return false;
  const std::string &op = node.op_type();
  // The inputs each op reads as a shape (or bounds).
  std::vector<int> shapeInputs;
  if (op == "Reshape" || op == "Expand")
    shapeInputs = {1};
  else if (op == "ConstantOfShape")
    shapeInputs = {0};
  else if (op == "Slice" && opset >= 10)
    shapeInputs = {1, 2, 3, 4};
  else
    return false;
  bool readsRunTimeValue = false;
  for (int i : shapeInputs)
    readsRunTimeValue |= i < node.input_size() && !node.input(i).empty() &&
                         !constants.count(resolve(node.input(i)));
  if (!readsRunTimeValue)
    return false;
  const std::string &output = node.output(0);
  std::optional<SymbolicShape> result = symbolicShapeOf(output);
  if (!result) {
    // The first input computed at run time, and whether its value is known.
    std::string shapeInput;
    bool known = true;
    for (int i : shapeInputs) {
      if (i >= node.input_size() || node.input(i).empty())
        continue;
      std::string name = resolve(node.input(i));
      if (shapeInput.empty() && !constants.count(name))
        shapeInput = node.input(i);
      known &= symbolicValueOf(name).has_value();
    }
    std::string what = op + "'s " +
                       (op == "Slice" ? "bounds are" : "shape is") +
                       " computed at run time ('" + shapeInput + "')";
    if (known)
      throw Unsupported{
          what + (op == "Slice"
                      ? ": fusec takes step 1 and 0 <= start <= end <= the "
                        "dim at every size in the symbols' ranges, with end - "
                        "start a sum of products of the symbols"
                      : ": its sizes do not fit the input's dims as products "
                        "of the graph's symbols")};
    auto gap = symbolicGaps.find(resolve(shapeInput));
    throw Unsupported{
        what + ", from values fusec cannot follow: " +
        (gap != symbolicGaps.end()
             ? gap->second
             : std::string("the sizes it reads must be products of the "
                           "graph's symbols (Shape, Gather, Concat and "
                           "arithmetic on them)"))};
  }
  GraphNode owner;
  owner.name = node.name();
  owner.outputs = {output};
  std::string data =
      op == "ConstantOfShape" ? std::string() : resolve(node.input(0));
  if (op == "Reshape") {
    addOutputStep(owner, "reshape", {data}, output,
                  {{"dims", dimsText(*result)}});
    return true;
  }
  if (op == "Expand") {
    if (symbolicShapeOf(data) == result)
      addAlias(output, data);
    else
      addOutputStep(owner, "broadcast_to", {data}, output,
                    {{"dims", dimsText(*result)}});
    return true;
  }
  if (op == "ConstantOfShape") {
    // A fill is the one value broadcast to the run's shape.
    Tensor value = scalarTensor(DType::F32, 0.0);
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.name() == "value") {
        value = tensorFromProto(attr.t(), modelDir);
        if (value.numElements() != 1)
          throw Unsupported{"ConstantOfShape's value must have one element"};
        value.shape = {};
      }
    std::string fill = addStepConstant(owner, "fill", std::move(value));
    addOutputStep(owner, "broadcast_to", {fill}, output,
                  {{"dims", dimsText(*result)}});
    return true;
  }
  // Slice: along each dim it cuts, a gather of its positions, start +
  // iota(length) (a position table cut to the sequence, the rows [past,
  // past + seq) of a causal mask).
  std::optional<SymbolicShape> in = symbolicShapeOf(data);
  std::optional<std::vector<SymbolicSlice>> slices = symbolicSlices(node);
  if (!in || in->size() != result->size() || !slices)
    throw Unsupported{"Slice's input dims are not known"};
  std::vector<const SymbolicSlice *> cuts;
  for (const SymbolicSlice &slice : *slices)
    if ((*result)[slice.axis] != (*in)[slice.axis] ||
        slice.start != SymbolicSize::constant(0))
      cuts.push_back(&slice);
  if (cuts.empty()) {
    addAlias(output, data);
    return true;
  }
  std::string sliced = data;
  for (const SymbolicSlice *cut : cuts) {
    size_t d = cut->axis;
    std::string axis = std::to_string(d);
    std::string positions = addStep(owner, "iota", {}, "positions_" + axis,
                                    {{"size", sizeText((*result)[d])}});
    // The start: a size, or a constant (counted from the end where
    // negative; clamped to a fixed dim as ONNX does).
    SymbolicSize start = cut->start;
    if (start.isStatic() && (*in)[d].isStatic())
      start.factor = clampedIndex(start.factor, (*in)[d].factor);
    std::string offset;
    if (start.isStatic() && start.factor < 0) {
      Tensor back = scalarTensor(DType::I64, 0);
      back.set(0, static_cast<double>(start.factor));
      offset = addStep(owner, "add",
                       {addStep(owner, "dim_size", {}, "length_" + axis,
                                {{"size", sizeText((*in)[d])}}),
                        addStepConstant(owner, "back_" + axis, back)},
                       "start_" + axis);
    } else if (start.isStatic() && start.factor > 0) {
      Tensor first = scalarTensor(DType::I64, 0);
      first.set(0, static_cast<double>(start.factor));
      offset = addStepConstant(owner, "start_" + axis, first);
    } else if (!start.isStatic()) {
      offset = addStep(owner, "dim_size", {}, "start_" + axis,
                       {{"size", sizeText(start)}});
    }
    if (!offset.empty())
      positions = addStep(owner, "add", {positions, offset}, "from_" + axis);
    std::map<std::string, AttrValue> along = {
        {"axis", static_cast<int64_t>(d)}};
    if (cut == cuts.back())
      addOutputStep(owner, "gather", {sliced, positions}, output, along);
    else
      sliced = addStep(owner, "gather", {sliced, positions}, "sliced_" + axis,
                       along);
  }
  return true;
}

} // namespace fusec::onnx_import
