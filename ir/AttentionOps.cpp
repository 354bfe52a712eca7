//===- AttentionOps.cpp - The attention op's verifier ---------------------===//

#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

#include <cmath>

using namespace mlir;

namespace fuse {

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

int64_t AttentionOp::getBatch() { return tensorType(getQuery()).getDimSize(0); }

int64_t AttentionOp::getQueryLength() {
  RankedTensorType type = tensorType(getQuery());
  return type.getDimSize(type.getRank() == 3 ? 1 : 2);
}

int64_t AttentionOp::getKeyLength() {
  RankedTensorType type = tensorType(getKey());
  return type.getDimSize(type.getRank() == 3 ? 1 : 2);
}

/// "" when `value` holds `heads` heads of `dim` elements for `length` rows
/// of `batch`: [batch, heads, length, dim], or [batch, length, C] with the
/// heads in columns [column, column + heads * dim) of C.
static std::string checkOperand(StringRef name, Value value, int64_t batch,
                                int64_t heads, int64_t length, int64_t dim,
                                int64_t column) {
  RankedTensorType type = tensorType(value);
  std::string shape = "[" + fusec::formatShape(toShape(type)) + "]";
  if (type.getRank() == 4) {
    fusec::Shape expected = {batch, heads, length, dim};
    if (toShape(type) != expected || column != 0)
      return (name + " " + shape + " must be [" + fusec::formatShape(expected) +
              "] (batch, heads, rows, head dim)" +
              (column != 0 ? " with column 0" : ""))
          .str();
    return "";
  }
  if (type.getRank() == 3) {
    if (type.getDimSize(0) != batch || type.getDimSize(1) != length ||
        column < 0 || column + heads * dim > type.getDimSize(2))
      return (name + " " + shape + " must be [" + std::to_string(batch) + ", " +
              std::to_string(length) + ", C] with its " +
              std::to_string(heads) + " heads of " + std::to_string(dim) +
              " in columns " + std::to_string(column) + ".." +
              std::to_string(column + heads * dim) + " of C")
          .str();
    return "";
  }
  return (name + " " + shape + " must have rank 4 [B, H, T, D] or 3 [B, T, C]")
      .str();
}

LogicalResult AttentionOp::verify() {
  int64_t heads = static_cast<int64_t>(getNumHeads()),
          kvHeads = static_cast<int64_t>(getKvNumHeads());
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return emitOpError() << "num_heads (" << heads
                         << ") must be a positive multiple of kv_num_heads ("
                         << kvHeads << ")";
  if (static_cast<int64_t>(getHeadDim()) <= 0 ||
      static_cast<int64_t>(getValueHeadDim()) <= 0)
    return emitOpError() << "head dims must be positive";
  Type dtype = tensorType(getQuery()).getElementType();
  if (tensorType(getKey()).getElementType() != dtype ||
      tensorType(getValue()).getElementType() != dtype ||
      tensorType(getResult()).getElementType() != dtype)
    return emitOpError() << "query, key, value and result must share one dtype";
  if (tensorType(getQuery()).getRank() < 3)
    return emitOpError() << "query must have rank 4 or 3";
  int64_t batch = getBatch(), queryLength = getQueryLength(),
          keyLength = getKeyLength();
  for (std::string error :
       {checkOperand("query", getQuery(), batch, heads, queryLength,
                     static_cast<int64_t>(getHeadDim()),
                     static_cast<int64_t>(getQueryColumn())),
        checkOperand("key", getKey(), batch, kvHeads, keyLength,
                     static_cast<int64_t>(getHeadDim()),
                     static_cast<int64_t>(getKeyColumn())),
        checkOperand("value", getValue(), batch, kvHeads, keyLength,
                     static_cast<int64_t>(getValueHeadDim()),
                     static_cast<int64_t>(getValueColumn())),
        checkOperand("result", getResult(), batch, heads, queryLength,
                     static_cast<int64_t>(getValueHeadDim()), 0)})
    if (!error.empty())
      return emitOpError() << error;
  if (isTokensFirst(getResult()) &&
      tensorType(getResult()).getDimSize(2) !=
          heads * static_cast<int64_t>(getValueHeadDim()))
    return emitOpError() << "a [B, T, C] result must have C = num_heads * "
                            "value_head_dim ("
                         << heads * static_cast<int64_t>(getValueHeadDim())
                         << ")";
  if (Value bias = getBias()) {
    RankedTensorType type = tensorType(bias);
    if (!type.getElementType().isInteger(1) && type.getElementType() != dtype)
      return emitOpError() << "bias must be bool or the operands' dtype";
    fusec::Shape scores = {batch, heads, queryLength, keyLength};
    fusec::Shape shape = toShape(type);
    std::optional<fusec::Shape> broadcast =
        fusec::broadcastShapes(shape, scores);
    if (shape.size() > 4 || !broadcast || *broadcast != scores)
      return emitOpError() << "bias [" << fusec::formatShape(shape)
                           << "] must broadcast to the scores ["
                           << fusec::formatShape(scores) << "]";
  }
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale))
    return emitOpError() << "scale must be finite (got " << scale << ")";
  if (static_cast<int64_t>(getWindowLeft()) < -1)
    return emitOpError() << "window_left must be -1 (none) or >= 0";
  if (static_cast<int64_t>(getWindowLeft()) >= 0 && !getCausal())
    return emitOpError() << "window_left needs causal (the window ends at "
                            "the causal diagonal)";
  return success();
}

} // namespace fuse
