//===- ElementwiseFolding.cpp - Type inference and folders ---------------===//
//
// Shared by every op of the elementwise table: broadcast result types,
// constant folding through the table's reference implementation, and the
// obvious identities.
//
//===----------------------------------------------------------------------===//

#include "ir/ElementwiseOps.h"
#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;
using namespace fuse;
using fusec::DType;

/// Folding materializes every element: stay away from large tensors.
static constexpr int64_t kMaxFoldedElements = 1 << 16;

/// Broadcast result shape of several operands, or an error naming the pair.
static LogicalResult broadcastOperandShapes(std::optional<Location> loc,
                                            ValueRange operands,
                                            fusec::Shape &shape) {
  shape.clear();
  for (Value operand : operands) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type)
      return emitOptionalError(loc, "operand of type ",
                               typeString(operand.getType()),
                               " is not a ranked tensor");
  }
  shape = toShape(cast<RankedTensorType>(operands[0].getType()));
  for (Value operand : operands.drop_front()) {
    fusec::Shape next = toShape(cast<RankedTensorType>(operand.getType()));
    std::optional<fusec::Shape> joined = fusec::broadcastShapes(shape, next);
    if (!joined)
      return emitOptionalError(
          loc, "operand shapes ", fusec::formatShape(shape), " and ",
          fusec::formatShape(next),
          " are not broadcast-compatible (aligned from the right, each dim "
          "pair must be equal or contain a 1)");
    shape = *joined;
  }
  return success();
}

LogicalResult fuse::inferElementwiseResultType(
    StringRef opName, MLIRContext *context, std::optional<Location> loc,
    ValueRange operands, SmallVectorImpl<Type> &inferred) {
  const ElementwiseOpInfo *info =
      lookupElementwiseOp(opName.drop_front(strlen("fuse.")));
  if (!info)
    return emitOptionalError(loc, "'", opName, "' is not in the op table");
  if (operands.size() != info->arity)
    return emitOptionalError(loc, "'", opName, "' takes ", info->arity,
                             " operands but got ", operands.size());
  fusec::Shape shape;
  if (failed(broadcastOperandShapes(loc, operands, shape)))
    return failure();
  Type element = cast<RankedTensorType>(operands[0].getType()).getElementType();
  for (Value operand : operands.drop_front()) {
    Type other = cast<RankedTensorType>(operand.getType()).getElementType();
    if (other != element)
      return emitOptionalError(loc, "'", opName,
                               "' operands have different dtypes: ",
                               typeString(element), " and ", typeString(other));
  }
  std::optional<DType> dtype = toDType(element);
  if (!dtype || !info->accepts(*dtype))
    return emitOptionalError(loc, "'", opName, "' does not accept dtype ",
                             typeString(element));
  inferred.push_back(RankedTensorType::get(
      shape, toElementType(context, info->resultDType(*dtype))));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr,
                                         OpaqueProperties, RegionRange,
                                         SmallVectorImpl<Type> &inferred) {
  fusec::Shape shape;
  if (failed(broadcastOperandShapes(loc, operands, shape)))
    return failure();
  Type trueElement =
      cast<RankedTensorType>(operands[1].getType()).getElementType();
  Type falseElement =
      cast<RankedTensorType>(operands[2].getType()).getElementType();
  if (trueElement != falseElement)
    return emitOptionalError(
        loc, "'fuse.select' true and false values have different dtypes: ",
        typeString(trueElement), " and ", typeString(falseElement));
  inferred.push_back(RankedTensorType::get(shape, trueElement));
  return success();
}

//===----------------------------------------------------------------------===//
// Scalars of constant attributes
//===----------------------------------------------------------------------===//

/// A double as an element of `elementType`: rounded for floats, wrapped for
/// ints, `!= 0` for i1. Fails for float->int conversions that are undefined.
static FailureOr<Attribute> scalarAttr(Type elementType, double value,
                                       bool fromFloat) {
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat result(value);
    bool losesInfo;
    result.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                   &losesInfo);
    return Attribute(FloatAttr::get(elementType, result));
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width == 1)
    return Attribute(IntegerAttr::get(elementType, value != 0 ? 1 : 0));
  if (fromFloat && elementType.isUnsignedInteger()) {
    // The same for unsigned dtypes: [0, 2^n - 1].
    if (std::isnan(value) || value <= 0)
      return Attribute(IntegerAttr::get(elementType, APInt(width, 0)));
    if (value >= std::ldexp(1.0, width))
      return Attribute(
          IntegerAttr::get(elementType, APInt::getMaxValue(width)));
    return Attribute(IntegerAttr::get(
        elementType, APInt(width, static_cast<uint64_t>(value))));
  }
  if (fromFloat) {
    // A float converted to an integer truncates, saturates to the range and
    // maps NaN to 0, as the kernels do (codegen/device/ScalarMath.h).
    const double bound = std::ldexp(1.0, width - 1); // 2^(n-1)
    if (std::isnan(value))
      value = 0;
    else if (value <= -bound)
      return Attribute(
          IntegerAttr::get(elementType, APInt::getSignedMinValue(width)));
    else if (value >= bound)
      return Attribute(
          IntegerAttr::get(elementType, APInt::getSignedMaxValue(width)));
  }
  APInt bits(width, static_cast<uint64_t>(static_cast<int64_t>(value)),
             /*isSigned=*/false, /*implicitTrunc=*/true);
  return Attribute(IntegerAttr::get(elementType, bits));
}

/// Builds a constant of `type` whose element i is `compute(i)`.
template <typename ComputeFn>
static Attribute buildConstant(RankedTensorType type, bool allSplat,
                               bool fromFloat, ComputeFn compute) {
  int64_t count = allSplat ? 1 : type.getNumElements();
  if (count > kMaxFoldedElements)
    return {};
  SmallVector<Attribute> elements;
  elements.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    FailureOr<Attribute> element =
        scalarAttr(type.getElementType(), compute(i), fromFloat);
    if (failed(element))
      return {};
    elements.push_back(*element);
  }
  if (allSplat)
    return SplatElementsAttr::get(type, elements.front());
  return DenseElementsAttr::get(type, elements);
}

static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  return splat && constantElement(splat, 0) == value;
}

/// A splat of zero that is the identity of `x + zero` for every x: any
/// integer zero, but only -0.0 for floats (-0.0 + +0.0 is +0.0).
static bool isAdditiveIdentity(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isSplatOf(attr, 0))
    return false;
  if (!isa<FloatType>(splat.getElementType()))
    return true;
  return splat.getSplatValue<APFloat>().isNegative();
}

/// A splat of zero with `x - zero == x` for every x: any integer zero, or
/// +0.0 (x - -0.0 turns -0.0 into +0.0).
static bool isSubtractiveIdentity(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isSplatOf(attr, 0))
    return false;
  if (!isa<FloatType>(splat.getElementType()))
    return true;
  return !splat.getSplatValue<APFloat>().isNegative();
}

/// Element `index` of an integer constant, sign-extended (i1 as 0/1),
/// exactly: i64 values above 2^53 do not pass through a double.
static int64_t integerElement(DenseElementsAttr attr, int64_t index) {
  APInt value = *(attr.value_begin<APInt>() + (attr.isSplat() ? 0 : index));
  return attr.getElementType().isInteger(1) ||
                 attr.getElementType().isUnsignedInteger()
             ? static_cast<int64_t>(value.getZExtValue())
             : value.getSExtValue();
}

/// Integer folds compute in int64: exact for every integer dtype but u64,
/// whose values from 2^63 would read as negative (their order, division and
/// conversions would be wrong). u64 ops are left to the kernels.
static bool foldsInInt64(Type elementType) {
  return !elementType.isUnsignedInteger(64);
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

OpFoldResult fuse::foldElementwise(Operation *op,
                                   ArrayRef<Attribute> operands) {
  const ElementwiseOpInfo *info = &cast<ElementwiseOpInterface>(op).getInfo();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value lhs = op->getOperand(0);
  std::string_view name = info->mnemonic;

  // Identities that keep a value whose type is already the result's.
  auto keep = [&](unsigned index) -> OpFoldResult {
    Value kept = op->getOperand(index);
    return kept.getType() == resultType ? OpFoldResult(kept) : OpFoldResult();
  };
  if (info->arity == 2) {
    Attribute lhsAttr = operands[0], rhsAttr = operands[1];
    if (name == "add" && isAdditiveIdentity(rhsAttr))
      if (OpFoldResult kept = keep(0))
        return kept;
    if (name == "sub" && isSubtractiveIdentity(rhsAttr))
      if (OpFoldResult kept = keep(0))
        return kept;
    if (name == "add" && isAdditiveIdentity(lhsAttr))
      if (OpFoldResult kept = keep(1))
        return kept;
    if ((name == "mul" || name == "div") && isSplatOf(rhsAttr, 1))
      if (OpFoldResult kept = keep(0))
        return kept;
    if (name == "mul" && isSplatOf(lhsAttr, 1))
      if (OpFoldResult kept = keep(1))
        return kept;
    if ((name == "and" && isSplatOf(rhsAttr, 1)) ||
        (name == "or" && isSplatOf(rhsAttr, 0)))
      if (OpFoldResult kept = keep(0))
        return kept;
  }

  // Constant folding through the reference implementation.
  SmallVector<DenseElementsAttr> constants;
  for (Attribute attr : operands) {
    auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
    if (!dense)
      return {};
    constants.push_back(dense);
  }
  DType operandDType = dtypeOf(lhs.getType());
  bool allSplat = llvm::all_of(
      constants, [](DenseElementsAttr attr) { return attr.isSplat(); });
  fusec::Shape resultShape = toShape(resultType);
  SmallVector<fusec::BroadcastIndexer> indexers;
  for (Value operand : op->getOperands())
    indexers.emplace_back(toShape(cast<RankedTensorType>(operand.getType())),
                          resultShape);
  if (!fusec::isFloat(operandDType)) {
    if (!foldsInInt64(cast<ShapedType>(lhs.getType()).getElementType()))
      return {};
    // Integers and bools fold in int64 and wrap to the result's width.
    int64_t count = allSplat ? 1 : resultType.getNumElements();
    if (count > kMaxFoldedElements)
      return {};
    unsigned width = resultType.getElementType().getIntOrFloatBitWidth();
    SmallVector<APInt> elements;
    for (int64_t i = 0; i < count; ++i) {
      int64_t a = integerElement(constants[0], indexers[0](i));
      int64_t b =
          info->arity == 2 ? integerElement(constants[1], indexers[1](i)) : 0;
      int64_t result = info->refInt(a, b);
      elements.emplace_back(width, static_cast<uint64_t>(result),
                            /*isSigned=*/false, /*implicitTrunc=*/true);
    }
    if (allSplat)
      return SplatElementsAttr::get(resultType, elements.front());
    return DenseElementsAttr::get(resultType, elements);
  }
  return buildConstant(
      resultType, allSplat, fusec::isFloat(operandDType), [&](int64_t i) {
        double a = constantElement(constants[0], indexers[0](i));
        double b = info->arity == 2
                       ? constantElement(constants[1], indexers[1](i))
                       : 0.0;
        return info->reference(operandDType, a, b);
      });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  auto cond = dyn_cast_or_null<SplatElementsAttr>(adaptor.getCond());
  if (!cond)
    return {};
  Value chosen =
      constantElement(cond, 0) != 0 ? getTrueValue() : getFalseValue();
  return chosen.getType() == getType() ? OpFoldResult(chosen) : OpFoldResult();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (!input)
    return {};
  auto resultType = cast<RankedTensorType>(getType());
  // Casts to and from the narrow dtypes are left to the kernels, the one
  // implementation of their conversions (runtime/core/NarrowTypes.h).
  if (fusec::isNarrow(dtypeOf(getOperand().getType())) ||
      fusec::isNarrow(dtypeOf(getType())))
    return {};
  bool fromFloat = isa<FloatType>(input.getElementType());
  if (!foldsInInt64(input.getElementType()) ||
      !foldsInInt64(resultType.getElementType()))
    return {};
  if (!fromFloat) {
    // Exact from the integer: wrapped to a narrower int, != 0 for i1, or
    // rounded once (to nearest even) to a float.
    int64_t count = input.isSplat() ? 1 : resultType.getNumElements();
    if (count > kMaxFoldedElements)
      return {};
    Type element = resultType.getElementType();
    SmallVector<Attribute> elements;
    for (int64_t i = 0; i < count; ++i) {
      int64_t value = integerElement(input, i);
      if (auto floatType = dyn_cast<FloatType>(element)) {
        APFloat result(floatType.getFloatSemantics());
        result.convertFromAPInt(APInt(64, static_cast<uint64_t>(value)),
                                /*IsSigned=*/true,
                                APFloat::rmNearestTiesToEven);
        elements.push_back(FloatAttr::get(element, result));
      } else if (element.isInteger(1)) {
        elements.push_back(IntegerAttr::get(element, value != 0 ? 1 : 0));
      } else {
        elements.push_back(IntegerAttr::get(
            element, APInt(element.getIntOrFloatBitWidth(),
                           static_cast<uint64_t>(value), /*isSigned=*/false,
                           /*implicitTrunc=*/true)));
      }
    }
    if (input.isSplat())
      return SplatElementsAttr::get(resultType, elements.front());
    return DenseElementsAttr::get(resultType, elements);
  }
  // scalarAttr converts each value as the kernels do: rounded to a float,
  // truncated and saturated to an integer, != 0 to i1.
  return buildConstant(resultType, input.isSplat(), fromFloat,
                       [&](int64_t i) { return constantElement(input, i); });
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  // (A broadcast to symbolic dims stays: a constant's shape is fixed.)
  auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getOperand());
  if (splat && getType().hasStaticShape())
    return SplatElementsAttr::get(cast<ShapedType>(getType()),
                                  splat.getSplatValue<Attribute>());
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (dense && getType().hasStaticShape())
    return dense.reshape(cast<ShapedType>(getType()));
  // reshape(reshape(x)) is one reshape.
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
