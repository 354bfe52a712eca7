//===- LayoutImport.cpp - Layout nodes into fuse ops ---------------------===//
//
// ONNX's layout operators with their attribute names and defaults (opset
// 13+; Slice's and Pad's bounds are attributes here, not inputs). Shapes
// come from the helpers of ir/LayoutOps.h, which the verifiers share; their
// errors name the node. Squeeze, Unsqueeze and Flatten become fuse.reshape
// and Expand fuse.broadcast_to.
//
//===----------------------------------------------------------------------===//

#include "frontends/NodeImport.h"

#include "ir/LayoutOps.h"

#include <limits>
#include <numeric>

using namespace mlir;

namespace fuse {

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// An optional integer-list attr: nullopt when absent.
FailureOr<std::optional<std::vector<int64_t>>>
getOptionalInts(NodeImport &node, const std::string &attr) {
  if (!node.has(attr))
    return std::optional<std::vector<int64_t>>();
  FailureOr<std::vector<int64_t>> values = node.getInts(attr, std::nullopt);
  if (failed(values))
    return failure();
  return std::optional<std::vector<int64_t>>(std::move(*values));
}

/// An ONNX 0/1 flag (keepdims, select_last_index).
FailureOr<bool> getFlag(NodeImport &node, const std::string &attr,
                        bool fallback) {
  FailureOr<int64_t> value = node.getInt(attr, fallback ? 1 : 0);
  if (failed(value))
    return failure();
  if (*value != 0 && *value != 1)
    return node.error() << "attr \"" << attr << "\" must be 0 or 1, not "
                        << *value;
  return *value == 1;
}

std::optional<ArrayRef<int64_t>>
asRef(const std::optional<std::vector<int64_t>> &values) {
  if (!values)
    return std::nullopt;
  return ArrayRef<int64_t>(*values);
}

DenseI64ArrayAttr optionalArray(OpBuilder &builder,
                                const std::optional<std::vector<int64_t>> &v) {
  return v ? builder.getDenseI64ArrayAttr(*v) : DenseI64ArrayAttr();
}

FailureOr<Value> importTranspose(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  Value operand = node.operands[0];
  RankedTensorType type = typeOf(operand);
  std::vector<int64_t> reversed(type.getRank());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  FailureOr<std::vector<int64_t>> perm = node.getInts("perm", reversed);
  if (failed(perm))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      transposeShape(type.getShape(), *perm, emitError);
  if (failed(shape))
    return failure();
  return TransposeOp::create(node.builder, node.loc, type.clone(*shape),
                             operand, node.builder.getDenseI64ArrayAttr(*perm))
      .getResult();
}

FailureOr<Value> importSlice(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  Value operand = node.operands[0];
  RankedTensorType type = typeOf(operand);
  FailureOr<std::vector<int64_t>> starts = node.getInts("starts", std::nullopt);
  if (failed(starts))
    return failure();
  FailureOr<std::vector<int64_t>> ends = node.getInts("ends", std::nullopt);
  if (failed(ends))
    return failure();
  auto axes = getOptionalInts(node, "axes");
  if (failed(axes))
    return failure();
  auto steps = getOptionalInts(node, "steps");
  if (failed(steps))
    return failure();
  // The last element along a symbolic dim (x[:, -1:], a decoder's last
  // position): a gather of index -1, which any size has.
  if (starts->size() == 1 && ends->size() == 1 && (*starts)[0] == -1 &&
      (*ends)[0] >= std::numeric_limits<int32_t>::max() &&
      (!*steps || (**steps)[0] == 1) && *axes) {
    int64_t rank = type.getRank(), axis = (**axes)[0];
    if (axis < 0)
      axis += rank;
    if (axis >= 0 && axis < rank && type.isDynamicDim(axis)) {
      OpBuilder &b = node.builder;
      auto indexType = RankedTensorType::get({1}, b.getI64Type());
      Value index = ConstantOp::create(
          b, node.loc,
          DenseElementsAttr::get(indexType, ArrayRef<int64_t>{-1}));
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = 1;
      return GatherOp::create(b, node.loc, type.clone(shape), operand, index,
                              b.getI64IntegerAttr(axis))
          .getResult();
    }
  }
  FailureOr<ResolvedSlice> slice = resolveSlice(
      type.getShape(), *starts, *ends, asRef(*axes), asRef(*steps), emitError);
  if (failed(slice))
    return failure();
  OpBuilder &b = node.builder;
  return SliceOp::create(b, node.loc, type.clone(slice->sizes), operand,
                         b.getDenseI64ArrayAttr(*starts),
                         b.getDenseI64ArrayAttr(*ends), optionalArray(b, *axes),
                         optionalArray(b, *steps))
      .getResult();
}

FailureOr<Value> importConcat(NodeImport &node, EmitErrorFn emitError) {
  if (node.operands.empty())
    return node.error() << "takes 1 or more inputs but 0 were given";
  for (auto [index, operand] : llvm::enumerate(node.operands))
    if (!operand)
      return node.error() << "input #" << index
                          << " is empty; concat has no optional inputs";
  FailureOr<int64_t> axis = node.getInt("axis", std::nullopt);
  if (failed(axis))
    return failure();
  FailureOr<RankedTensorType> type =
      concatType(ValueRange(node.operands).getTypes(), *axis, emitError);
  if (failed(type))
    return failure();
  return ConcatOp::create(node.builder, node.loc, *type, node.operands,
                          node.builder.getI64IntegerAttr(*axis))
      .getResult();
}

FailureOr<Value> importGather(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(2, 2)))
    return failure();
  Value data = node.operands[0], indices = node.operands[1];
  Type indexType = typeOf(indices).getElementType();
  if (!indexType.isSignlessInteger(32) && !indexType.isSignlessInteger(64))
    return node.error() << "indices must be i32 or i64, not "
                        << typeString(indices.getType());
  FailureOr<int64_t> axis = node.getInt("axis", 0);
  if (failed(axis))
    return failure();
  FailureOr<RankedTensorType> type =
      gatherType(typeOf(data), typeOf(indices), *axis, emitError);
  if (failed(type))
    return failure();
  return GatherOp::create(node.builder, node.loc, *type, data, indices,
                          node.builder.getI64IntegerAttr(*axis))
      .getResult();
}

FailureOr<Value> importPad(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  Value operand = node.operands[0];
  RankedTensorType type = typeOf(operand);
  FailureOr<std::string> mode = node.getString("mode", std::string("constant"));
  if (failed(mode))
    return failure();
  if (*mode != "constant")
    return node.error() << "mode \"" << *mode
                        << "\" is not supported; only \"constant\" is";
  FailureOr<std::vector<int64_t>> pads = node.getInts("pads", std::nullopt);
  if (failed(pads))
    return failure();
  FailureOr<double> value = node.getFloat("constant_value", 0.0);
  if (failed(value))
    return failure();
  auto axes = getOptionalInts(node, "axes");
  if (failed(axes))
    return failure();
  FailureOr<ResolvedPad> pad =
      resolvePad(type.getShape(), *pads, asRef(*axes), emitError);
  if (failed(pad))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      paddedShape(type.getShape(), *pad, emitError);
  if (failed(shape) ||
      failed(checkPadValue(type.getElementType(), *value, emitError)))
    return failure();
  OpBuilder &b = node.builder;
  return PadOp::create(b, node.loc, type.clone(*shape), operand,
                       b.getDenseI64ArrayAttr(*pads), b.getF64FloatAttr(*value),
                       optionalArray(b, *axes))
      .getResult();
}

template <typename OpTy>
FailureOr<Value> importArgReduction(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  Value operand = node.operands[0];
  FailureOr<int64_t> axis = node.getInt("axis", 0);
  if (failed(axis))
    return failure();
  FailureOr<bool> keepdims = getFlag(node, "keepdims", true);
  if (failed(keepdims))
    return failure();
  FailureOr<bool> selectLast = getFlag(node, "select_last_index", false);
  if (failed(selectLast))
    return failure();
  FailureOr<RankedTensorType> type =
      argReductionType(typeOf(operand), *axis, *keepdims, emitError);
  if (failed(type))
    return failure();
  OpBuilder &b = node.builder;
  return OpTy::create(b, node.loc, *type, operand, b.getI64IntegerAttr(*axis),
                      b.getBoolAttr(*keepdims), b.getBoolAttr(*selectLast))
      .getResult();
}

/// Squeeze, unsqueeze and flatten: the same elements under a new shape.
FailureOr<Value> importView(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  Value operand = node.operands[0];
  RankedTensorType type = typeOf(operand);
  FailureOr<SmallVector<int64_t>> shape;
  if (node.node.op == "squeeze") {
    auto axes = getOptionalInts(node, "axes");
    if (failed(axes))
      return failure();
    shape = squeezeShape(type.getShape(), asRef(*axes), emitError);
  } else if (node.node.op == "unsqueeze") {
    FailureOr<std::vector<int64_t>> axes = node.getInts("axes", std::nullopt);
    if (failed(axes))
      return failure();
    shape = unsqueezeShape(type.getShape(), *axes, emitError);
  } else {
    FailureOr<int64_t> axis = node.getInt("axis", 1);
    if (failed(axis))
      return failure();
    shape = flattenShape(type.getShape(), *axis, emitError);
  }
  if (failed(shape))
    return failure();
  return ReshapeOp::create(node.builder, node.loc, type.clone(*shape), operand)
      .getResult();
}

FailureOr<Value> importExpand(NodeImport &node, EmitErrorFn emitError) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  Value operand = node.operands[0];
  RankedTensorType type = typeOf(operand);
  FailureOr<std::vector<int64_t>> target = node.getInts("shape", std::nullopt);
  if (failed(target))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      expandShape(type.getShape(), *target, emitError);
  if (failed(shape))
    return failure();
  return BroadcastToOp::create(node.builder, node.loc, type.clone(*shape),
                               operand)
      .getResult();
}

} // namespace

std::optional<FailureOr<Value>> importLayout(NodeImport &node) {
  const std::string &op = node.node.op;
  auto emitError = [&] { return node.error(); };
  if (op == "transpose")
    return importTranspose(node, emitError);
  if (op == "slice")
    return importSlice(node, emitError);
  if (op == "concat")
    return importConcat(node, emitError);
  if (op == "gather")
    return importGather(node, emitError);
  if (op == "pad")
    return importPad(node, emitError);
  if (op == "argmax")
    return importArgReduction<ArgMaxOp>(node, emitError);
  if (op == "argmin")
    return importArgReduction<ArgMinOp>(node, emitError);
  if (op == "squeeze" || op == "unsqueeze" || op == "flatten")
    return importView(node, emitError);
  if (op == "expand")
    return importExpand(node, emitError);
  return std::nullopt;
}

} // namespace fuse
