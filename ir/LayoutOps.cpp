//===- LayoutOps.cpp - Shapes, bounds and verifiers of the layout ops ----===//

#include "ir/LayoutOps.h"

#include "ir/TypeUtils.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;

namespace fuse {

namespace {

std::string shapeString(ArrayRef<int64_t> shape) {
  return fusec::formatShape(fusec::Shape(shape.begin(), shape.end()));
}

std::string listString(ArrayRef<int64_t> values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

/// "f32", "i1": the dtype of a tensor type of the dialect.
const char *dtypeName(Type tensorType) {
  return fusec::dtypeName(dtypeOf(tensorType));
}

/// A number as JSON would show it: 1.5, 3, -0.25.
std::string numberString(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  if (std::strtod(text, nullptr) != value)
    std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

/// An ONNX axis in [-rank, rank) as a dim, or an error.
FailureOr<int64_t> checkedAxis(int64_t axis, int64_t rank, StringRef what,
                               EmitErrorFn emitError) {
  if (std::optional<int64_t> dim = normalizeAxis(axis, rank))
    return *dim;
  return emitError() << what << " " << axis << " is out of range for rank "
                     << rank << " (expected [" << -rank << ", " << rank << "))";
}

/// The result type must be the one the attributes give.
LogicalResult checkResultType(Operation *op, Type expected) {
  Type actual = op->getResult(0).getType();
  if (actual != expected)
    return op->emitOpError()
           << "result type " << typeString(actual)
           << " does not match the expected " << typeString(expected);
  return success();
}

} // namespace

FailureOr<SmallVector<int64_t>> normalizeAxes(ArrayRef<int64_t> axes,
                                              int64_t rank, StringRef what,
                                              EmitErrorFn emitError) {
  SmallVector<int64_t> dims;
  for (int64_t axis : axes) {
    std::optional<int64_t> dim = normalizeAxis(axis, rank);
    if (!dim)
      return emitError() << what << " " << listString(axes) << " has axis "
                         << axis << " out of range for rank " << rank
                         << " (expected [" << -rank << ", " << rank << "))";
    if (llvm::is_contained(dims, *dim))
      return emitError() << what << " " << listString(axes) << " names dim "
                         << *dim << " twice";
    dims.push_back(*dim);
  }
  return dims;
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> transposeShape(ArrayRef<int64_t> shape,
                                               ArrayRef<int64_t> perm,
                                               EmitErrorFn emitError) {
  int64_t rank = shape.size();
  SmallVector<bool> seen(rank, false);
  bool permutation = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t dim : perm) {
    if (!permutation || dim < 0 || dim >= rank || seen[dim]) {
      permutation = false;
      break;
    }
    seen[dim] = true;
  }
  if (!permutation)
    return emitError() << "perm " << listString(perm)
                       << " is not a permutation of the " << rank
                       << " dims [0, " << rank << ")";
  SmallVector<int64_t> result;
  for (int64_t dim : perm)
    result.push_back(shape[dim]);
  return result;
}

LogicalResult TransposeOp::verify() {
  auto type = cast<RankedTensorType>(getOperand().getType());
  FailureOr<SmallVector<int64_t>> shape =
      transposeShape(type.getShape(), getPerm(), [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  return checkResultType(*this, type.clone(*shape));
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

FailureOr<ResolvedSlice>
resolveSlice(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
             ArrayRef<int64_t> ends, std::optional<ArrayRef<int64_t>> axes,
             std::optional<ArrayRef<int64_t>> steps, EmitErrorFn emitError) {
  int64_t rank = shape.size();
  if (starts.size() != ends.size())
    return emitError() << "has " << starts.size() << " starts but "
                       << ends.size() << " ends";
  if (axes && axes->size() != starts.size())
    return emitError() << "has " << axes->size() << " axes but "
                       << starts.size() << " starts";
  if (steps && steps->size() != starts.size())
    return emitError() << "has " << steps->size() << " steps but "
                       << starts.size() << " starts";
  SmallVector<int64_t> dims;
  if (axes) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(*axes, rank, "axes", emitError);
    if (failed(normalized))
      return failure();
    dims = std::move(*normalized);
  } else {
    if (static_cast<int64_t>(starts.size()) > rank)
      return emitError() << "has " << starts.size()
                         << " starts (without axes) for rank " << rank;
    for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i)
      dims.push_back(i);
  }

  ResolvedSlice slice;
  slice.starts.assign(rank, 0);
  slice.steps.assign(rank, 1);
  slice.sizes.assign(shape.begin(), shape.end());
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t d = dims[i], dim = shape[d];
    int64_t step = steps ? (*steps)[i] : 1;
    if (ShapedType::isDynamic(dim))
      return emitError() << "slices dim " << d
                         << ", a symbolic dim (not supported yet)";
    if (step == 0)
      return emitError() << "step " << i << " (for axis " << d
                         << ") is 0; steps must be non-zero";
    // Adding the dim to a negative bound cannot overflow (dim >= 0).
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t size;
    if (dim == 0) {
      size = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? 1 + (end - start - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // |step| as unsigned: -INT64_MIN does not fit an int64_t.
      uint64_t magnitude = 0 - static_cast<uint64_t>(step);
      size = start > end
                 ? 1 + static_cast<int64_t>(
                           static_cast<uint64_t>(start - end - 1) / magnitude)
                 : 0;
    }
    slice.starts[d] = size > 0 ? start : 0;
    slice.steps[d] = size > 1 ? step : 1;
    slice.sizes[d] = size;
  }
  return slice;
}

ResolvedSlice resolveSlice(SliceOp op) {
  auto type = cast<RankedTensorType>(op.getOperand().getType());
  return *resolveSlice(type.getShape(), op.getStarts(), op.getEnds(),
                       op.getAxes(), op.getSteps(),
                       [&] { return op.emitOpError(); });
}

LogicalResult SliceOp::verify() {
  auto type = cast<RankedTensorType>(getOperand().getType());
  FailureOr<ResolvedSlice> slice =
      resolveSlice(type.getShape(), getStarts(), getEnds(), getAxes(),
                   getSteps(), [&] { return emitOpError(); });
  if (failed(slice))
    return failure();
  return checkResultType(*this, type.clone(slice->sizes));
}

//===----------------------------------------------------------------------===//
// Concat
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> concatType(TypeRange operands, int64_t axis,
                                       EmitErrorFn emitError) {
  if (operands.empty())
    return emitError() << "needs at least one operand";
  auto first = cast<RankedTensorType>(operands.front());
  FailureOr<int64_t> dim =
      checkedAxis(axis, first.getRank(), "axis", emitError);
  if (failed(dim))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*dim] = 0;
  for (auto [index, operandType] : llvm::enumerate(operands)) {
    auto type = cast<RankedTensorType>(operandType);
    if (type.getElementType() != first.getElementType())
      return emitError() << "operand #" << index << " has dtype "
                         << dtypeName(type) << " but operand #0 has "
                         << dtypeName(first);
    if (type.getRank() != first.getRank())
      return emitError() << "operand #" << index << " has rank "
                         << type.getRank() << " but operand #0 has rank "
                         << first.getRank();
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != *dim && type.getDimSize(d) != first.getDimSize(d))
        return emitError() << "operand #" << index << " of shape "
                           << shapeString(type.getShape())
                           << " differs from operand #0 of shape "
                           << shapeString(first.getShape()) << " in dim " << d
                           << " (only the concat axis " << *dim
                           << " may differ)";
    // A dynamic part makes the sum dynamic (SymbolicDims names it).
    shape[*dim] = ShapedType::isDynamic(shape[*dim]) || type.isDynamicDim(*dim)
                      ? ShapedType::kDynamic
                      : shape[*dim] + type.getDimSize(*dim);
  }
  return first.clone(shape);
}

LogicalResult ConcatOp::verify() {
  FailureOr<RankedTensorType> type = concatType(
      getInputs().getTypes(), getAxis(), [&] { return emitOpError(); });
  if (failed(type))
    return failure();
  return checkResultType(*this, *type);
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> gatherType(RankedTensorType data,
                                       RankedTensorType indices, int64_t axis,
                                       EmitErrorFn emitError) {
  if (data.getRank() == 0)
    return emitError() << "data must have rank 1 or more, not a scalar";
  FailureOr<int64_t> dim = checkedAxis(axis, data.getRank(), "axis", emitError);
  if (failed(dim))
    return failure();
  SmallVector<int64_t> shape(data.getShape().take_front(*dim));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*dim + 1));
  return data.clone(shape);
}

LogicalResult GatherOp::verify() {
  FailureOr<RankedTensorType> type =
      gatherType(cast<RankedTensorType>(getData().getType()),
                 cast<RankedTensorType>(getIndices().getType()), getAxis(),
                 [&] { return emitOpError(); });
  if (failed(type))
    return failure();
  return checkResultType(*this, *type);
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

FailureOr<ResolvedPad> resolvePad(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> pads,
                                  std::optional<ArrayRef<int64_t>> axes,
                                  EmitErrorFn emitError) {
  int64_t rank = shape.size();
  SmallVector<int64_t> dims;
  if (axes) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(*axes, rank, "axes", emitError);
    if (failed(normalized))
      return failure();
    dims = std::move(*normalized);
  } else {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  }
  if (pads.size() != 2 * dims.size())
    return emitError() << "pads " << listString(pads) << " has " << pads.size()
                       << " values; expected " << 2 * dims.size()
                       << " (a begin and an end for each "
                       << (axes ? "of the axes" : "dim") << ")";
  ResolvedPad pad;
  pad.begins.assign(rank, 0);
  pad.ends.assign(rank, 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    pad.begins[dims[i]] = pads[i];
    pad.ends[dims[i]] = pads[dims.size() + i];
  }
  return pad;
}

ResolvedPad resolvePad(PadOp op) {
  auto type = cast<RankedTensorType>(op.getOperand().getType());
  return *resolvePad(type.getShape(), op.getPads(), op.getAxes(),
                     [&] { return op.emitOpError(); });
}

FailureOr<SmallVector<int64_t>> paddedShape(ArrayRef<int64_t> shape,
                                            const ResolvedPad &pad,
                                            EmitErrorFn emitError) {
  // Pads beyond this are refused before they could overflow.
  constexpr int64_t kMaxPad = int64_t(1) << 48;
  SmallVector<int64_t> result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (std::abs(pad.begins[d]) > kMaxPad || std::abs(pad.ends[d]) > kMaxPad)
      return emitError() << "pads of dim " << d << " (" << pad.begins[d] << ", "
                         << pad.ends[d] << ") exceed 2^48";
    if (ShapedType::isDynamic(shape[d])) {
      // A symbolic dim grows by its pads (SymbolicDims names the sum); a
      // crop could leave no element at some size, and is refused.
      if (pad.begins[d] < 0 || pad.ends[d] < 0)
        return emitError() << "crops dim " << d
                           << ", a symbolic dim (only padding is supported)";
      result.push_back(shape[d]);
      continue;
    }
    int64_t size = shape[d] + pad.begins[d] + pad.ends[d];
    if (size < 0)
      return emitError() << "pads of dim " << d << " (begin " << pad.begins[d]
                         << ", end " << pad.ends[d] << ") remove more than its "
                         << shape[d] << " elements";
    result.push_back(size);
  }
  return result;
}

LogicalResult checkPadValue(Type elementType, double value,
                            EmitErrorFn emitError) {
  if (isa<FloatType>(elementType))
    return success();
  unsigned bits = elementType.getIntOrFloatBitWidth();
  if (bits == 1) {
    if (value != 0 && value != 1)
      return emitError() << "constant_value " << numberString(value)
                         << " is not 0 or 1, as an i1 pad needs";
    return success();
  }
  double limit = std::ldexp(1.0, bits - 1);
  if (std::trunc(value) != value || value < -limit || value >= limit)
    return emitError() << "constant_value " << numberString(value)
                       << " is not a whole number in the range of "
                       << fusec::dtypeName(*toDType(elementType));
  return success();
}

LogicalResult PadOp::verify() {
  auto type = cast<RankedTensorType>(getOperand().getType());
  auto emit = [&] { return emitOpError(); };
  FailureOr<ResolvedPad> pad =
      resolvePad(type.getShape(), getPads(), getAxes(), emit);
  if (failed(pad))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      paddedShape(type.getShape(), *pad, emit);
  if (failed(shape) ||
      failed(checkPadValue(type.getElementType(),
                           getConstantValue().convertToDouble(), emit)))
    return failure();
  return checkResultType(*this, type.clone(*shape));
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> argReductionType(RankedTensorType operand,
                                             int64_t axis, bool keepdims,
                                             EmitErrorFn emitError) {
  FailureOr<int64_t> dim =
      checkedAxis(axis, operand.getRank(), "axis", emitError);
  if (failed(dim))
    return failure();
  RankedTensorType result = reducedTensorType(operand, {*dim}, keepdims);
  result = result.clone(IntegerType::get(operand.getContext(), 64));
  if (operand.getDimSize(*dim) == 0 && result.hasStaticShape() &&
      result.getNumElements() != 0)
    return emitError() << "reduces dim " << *dim << " of size 0 (shape "
                       << shapeString(operand.getShape())
                       << "): an empty sequence has no index";
  return result;
}

#define FUSE_ARG_REDUCTION_VERIFY(Op)                                          \
  LogicalResult Op::verify() {                                                 \
    FailureOr<RankedTensorType> type = argReductionType(                       \
        cast<RankedTensorType>(getOperand().getType()), getAxis(),             \
        getKeepdims(), [&] { return emitOpError(); });                         \
    if (failed(type))                                                          \
      return failure();                                                        \
    return checkResultType(*this, *type);                                      \
  }
FUSE_ARG_REDUCTION_VERIFY(ArgMaxOp)
FUSE_ARG_REDUCTION_VERIFY(ArgMinOp)
#undef FUSE_ARG_REDUCTION_VERIFY

//===----------------------------------------------------------------------===//
// Views: squeeze, unsqueeze, flatten, expand
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
squeezeShape(ArrayRef<int64_t> shape, std::optional<ArrayRef<int64_t>> axes,
             EmitErrorFn emitError) {
  SmallVector<int64_t> dims;
  if (axes) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(*axes, shape.size(), "axes", emitError);
    if (failed(normalized))
      return failure();
    dims = std::move(*normalized);
    for (int64_t d : dims)
      if (shape[d] != 1)
        return emitError() << "cannot squeeze dim " << d << " of size "
                           << shape[d] << " (shape " << shapeString(shape)
                           << "): only dims of size 1 can be removed";
  } else {
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 1)
        dims.push_back(d);
  }
  SmallVector<int64_t> result;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
      result.push_back(shape[d]);
  return result;
}

FailureOr<SmallVector<int64_t>> unsqueezeShape(ArrayRef<int64_t> shape,
                                               ArrayRef<int64_t> axes,
                                               EmitErrorFn emitError) {
  int64_t rank = shape.size() + axes.size();
  FailureOr<SmallVector<int64_t>> dims =
      normalizeAxes(axes, rank, "axes", emitError);
  if (failed(dims))
    return failure();
  SmallVector<int64_t> result;
  const int64_t *next = shape.begin();
  for (int64_t d = 0; d < rank; ++d)
    result.push_back(llvm::is_contained(*dims, d) ? 1 : *next++);
  return result;
}

FailureOr<SmallVector<int64_t>>
flattenShape(ArrayRef<int64_t> shape, int64_t axis, EmitErrorFn emitError) {
  int64_t rank = shape.size();
  if (axis < -rank || axis > rank)
    return emitError() << "axis " << axis << " is out of range for rank "
                       << rank << " (expected [" << -rank << ", " << rank
                       << "])";
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= shape[d];
  return SmallVector<int64_t>{outer, inner};
}

FailureOr<SmallVector<int64_t>> expandShape(ArrayRef<int64_t> shape,
                                            ArrayRef<int64_t> target,
                                            EmitErrorFn emitError) {
  for (int64_t dim : target)
    if (dim < 0)
      return emitError() << "shape " << listString(target)
                         << " has a negative dim " << dim;
  std::optional<fusec::Shape> result =
      fusec::broadcastShapes(fusec::Shape(shape.begin(), shape.end()),
                             fusec::Shape(target.begin(), target.end()));
  if (!result)
    return emitError() << "cannot expand shape " << shapeString(shape) << " to "
                       << listString(target)
                       << " (aligned from the right, each dim pair must be "
                          "equal or contain a 1)";
  return SmallVector<int64_t>(result->begin(), result->end());
}

} // namespace fuse
