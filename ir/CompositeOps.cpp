//===- CompositeOps.cpp - Verifiers of the composite ops -----------------===//

#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, Value operand) {
  int64_t rank = cast<RankedTensorType>(operand.getType()).getRank();
  if (!normalizeAxis(axis, rank))
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << rank
           << " (expected [" << -rank << ", " << rank << "))";
  return success();
}

/// A normalization's weight or bias: the operand's dtype, broadcastable to
/// the normalized dims [axis, rank).
static LogicalResult verifyNormParameter(Operation *op, const char *what,
                                         Value parameter, Value operand,
                                         int64_t axis) {
  if (!parameter)
    return success();
  auto type = cast<RankedTensorType>(operand.getType());
  auto parameterType = cast<RankedTensorType>(parameter.getType());
  if (parameterType.getElementType() != type.getElementType())
    return op->emitOpError()
           << what << " has dtype " << parameterType.getElementType()
           << " but the operand has " << type.getElementType();
  int64_t first = *normalizeAxis(axis, type.getRank());
  fusec::Shape normalized(type.getShape().begin() + first,
                          type.getShape().end());
  if (!fusec::broadcastsTo(toShape(parameterType), normalized))
    return op->emitOpError()
           << what << " of shape " << fusec::formatShape(toShape(parameterType))
           << " does not broadcast to the normalized dims "
           << fusec::formatShape(normalized);
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(getOperation(), getAxis(), getOperand());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(getOperation(), getAxis(), getOperand());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyAxis(getOperation(), getAxis(), getOperand())))
    return failure();
  if (getType() != getOperand().getType())
    return emitOpError("result type must match the operand's");
  if (failed(verifyNormParameter(getOperation(), "weight", getWeight(),
                                 getOperand(), getAxis())))
    return failure();
  return verifyNormParameter(getOperation(), "bias", getBias(), getOperand(),
                             getAxis());
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyAxis(getOperation(), getAxis(), getOperand())))
    return failure();
  if (getType() != getOperand().getType())
    return emitOpError("result type must match the operand's");
  return verifyNormParameter(getOperation(), "weight", getWeight(),
                             getOperand(), getAxis());
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "approximate must be \"none\" or \"tanh\", not \""
                         << getApproximate() << "\"";
  return success();
}

LogicalResult IsInfOp::verify() {
  auto type = cast<RankedTensorType>(getOperand().getType());
  if (getType() != type.clone(IntegerType::get(getContext(), 1)))
    return emitOpError() << "result must be "
                         << typeString(
                                type.clone(IntegerType::get(getContext(), 1)))
                         << " (the operand's shape, i1)";
  return success();
}

LogicalResult ClipOp::verify() {
  auto type = cast<RankedTensorType>(getOperand().getType());
  if (getType() != type)
    return emitOpError("result type must match the operand's");
  for (auto [what, bound] :
       {std::pair<const char *, Value>{"min", getMin()}, {"max", getMax()}}) {
    if (!bound)
      continue;
    auto boundType = cast<RankedTensorType>(bound.getType());
    if (boundType.getElementType() != type.getElementType())
      return emitOpError() << what << " has dtype "
                           << boundType.getElementType()
                           << " but the operand has " << type.getElementType();
    if (!fusec::broadcastsTo(toShape(boundType), toShape(type)))
      return emitOpError() << what << " of shape ["
                           << fusec::formatShape(toShape(boundType))
                           << "] does not broadcast to the operand's shape ["
                           << fusec::formatShape(toShape(type)) << "]";
  }
  return success();
}

LogicalResult DequantizeLinearOp::verify() {
  auto type = getOperand().getType();
  auto scaleType = getScale().getType();
  if (getType() !=
      RankedTensorType::get(type.getShape(), scaleType.getElementType()))
    return emitOpError() << "result must be "
                         << typeString(type.clone(scaleType.getElementType()))
                         << " (the operand's shape, the scale's dtype)";
  bool perElement =
      scaleType.getRank() > 0 && scaleType.getShape() == type.getShape();
  if (scaleType.getRank() > 1 && !perElement)
    return emitOpError() << "scale must be rank 0 (per tensor), 1-D (per "
                            "axis) or of the operand's shape (per element), "
                            "got "
                         << typeString(scaleType);
  if (scaleType.getRank() == 1 && !perElement) {
    std::optional<int64_t> axis = normalizeAxis(getAxis(), type.getRank());
    if (!axis)
      return emitOpError() << "axis " << getAxis()
                           << " is out of range for rank " << type.getRank();
    if (scaleType.getDimSize(0) != type.getDimSize(*axis))
      return emitOpError() << "per-axis scale has " << scaleType.getDimSize(0)
                           << " elements but axis " << getAxis() << " has "
                           << type.getDimSize(*axis);
  }
  if (Value zeroPoint = getZeroPoint()) {
    auto zeroType = cast<RankedTensorType>(zeroPoint.getType());
    if (zeroType.getShape() != scaleType.getShape() ||
        zeroType.getElementType() != type.getElementType())
      return emitOpError() << "zero point must have the scale's shape and the "
                              "operand's dtype (got "
                           << typeString(zeroType) << ")";
  }
  return success();
}

} // namespace fuse
