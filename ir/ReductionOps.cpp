//===- ReductionOps.cpp - Verifiers and folders of reductions ------------===//

#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {

RankedTensorType reducedTensorType(RankedTensorType operand,
                                   ArrayRef<int64_t> axes, bool keepdims) {
  SmallVector<int64_t> shape;
  for (auto [dim, size] : llvm::enumerate(operand.getShape())) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(dim));
    if (!reduced)
      shape.push_back(size);
    else if (keepdims)
      shape.push_back(1);
  }
  return RankedTensorType::get(shape, operand.getElementType());
}

/// Shared by every reduction op: axes sorted, unique, in range; the result
/// type is the operand's with those dims kept as 1 or dropped.
static LogicalResult verifyReduction(Operation *op, Value operand,
                                     ArrayRef<int64_t> axes, bool keepdims,
                                     Type resultType) {
  auto type = cast<RankedTensorType>(operand.getType());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= type.getRank())
      return op->emitOpError()
             << "axis " << axes[i] << " is out of range for rank "
             << type.getRank();
    if (i > 0 && axes[i] <= axes[i - 1])
      return op->emitOpError() << "axes must be sorted and unique";
  }
  RankedTensorType expected = reducedTensorType(type, axes, keepdims);
  if (expected != resultType)
    return op->emitOpError() << "result type " << resultType
                             << " does not match the reduced type " << expected;
  return success();
}

/// A reduction over nothing (no axes, or only dims of size 1) keeps every
/// element: it folds to its operand when the shape is unchanged.
bool reducesUnitAxesOnly(RankedTensorType operand, ArrayRef<int64_t> axes) {
  return llvm::all_of(
      axes, [&](int64_t axis) { return operand.getDimSize(axis) == 1; });
}

static OpFoldResult foldTrivialReduction(Value operand, Type resultType,
                                         ArrayRef<int64_t> axes) {
  if (reducesUnitAxesOnly(cast<RankedTensorType>(operand.getType()), axes) &&
      operand.getType() == resultType)
    return operand;
  return {};
}

#define FUSE_REDUCTION_OP_METHODS(Op)                                          \
  LogicalResult Op::verify() {                                                 \
    return verifyReduction(getOperation(), getOperand(), getAxes(),            \
                           getKeepdims(), getType());                          \
  }
FUSE_REDUCTION_OP_METHODS(ReduceSumOp)
FUSE_REDUCTION_OP_METHODS(ReduceProdOp)
FUSE_REDUCTION_OP_METHODS(ReduceMaxOp)
FUSE_REDUCTION_OP_METHODS(ReduceMinOp)
FUSE_REDUCTION_OP_METHODS(ReduceMeanOp)
FUSE_REDUCTION_OP_METHODS(ReduceL2Op)
FUSE_REDUCTION_OP_METHODS(ReduceLogSumExpOp)
#undef FUSE_REDUCTION_OP_METHODS

// Sum, prod, max, min and mean of one element are that element; L2 and
// log-sum-exp are not (|x| and x only for finite x), so they do not fold.
#define FUSE_IDENTITY_FOLD(Op)                                                 \
  OpFoldResult Op::fold(FoldAdaptor) {                                         \
    return foldTrivialReduction(getOperand(), getType(), getAxes());           \
  }
FUSE_IDENTITY_FOLD(ReduceProdOp)
FUSE_IDENTITY_FOLD(ReduceMaxOp)
FUSE_IDENTITY_FOLD(ReduceMinOp)
FUSE_IDENTITY_FOLD(ReduceMeanOp)
#undef FUSE_IDENTITY_FOLD
// A sum over an empty set is +0 (NumPy's), but the kernels' sums start
// from -0.0, the float sum's true identity, so that a sum of -0.0 stays
// -0.0: the empty sum is folded to +0 here rather than run.
OpFoldResult ReduceSumOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getOperand().getType());
  auto resultType = cast<RankedTensorType>(getType());
  bool empty = llvm::any_of(
      getAxes(), [&](int64_t axis) { return type.getDimSize(axis) == 0; });
  if (empty && resultType.hasStaticShape() && resultType.getNumElements() > 0) {
    Type element = resultType.getElementType();
    Attribute zero = isa<FloatType>(element)
                         ? Attribute(FloatAttr::get(element, 0.0))
                         : Attribute(IntegerAttr::get(element, 0));
    return DenseElementsAttr::get(resultType, zero);
  }
  return foldTrivialReduction(getOperand(), getType(), getAxes());
}
OpFoldResult ReduceL2Op::fold(FoldAdaptor) { return {}; }
OpFoldResult ReduceLogSumExpOp::fold(FoldAdaptor) { return {}; }

} // namespace fuse
