//===- LibraryOps.cpp - Matmul shapes and the library ops' verifiers -----===//

#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

#include <cmath>

using namespace mlir;

namespace fuse {

std::string inferMatmulShape(const fusec::Shape &lhs, const fusec::Shape &rhs,
                             bool transposeA, bool transposeB,
                             MatmulShape &shape) {
  if (lhs.empty() || rhs.empty())
    return "matmul operands must have rank >= 1 (got [" +
           fusec::formatShape(lhs) + "] and [" + fusec::formatShape(rhs) + "])";
  if ((transposeA && lhs.size() < 2) || (transposeB && rhs.size() < 2))
    return "a transposed matmul operand must have rank >= 2";
  // A 1-D lhs is one row [1, k]; a 1-D rhs one column [k, 1].
  size_t lhsRank = lhs.size(), rhsRank = rhs.size();
  int64_t lhsRows = lhsRank == 1 ? 1 : lhs[lhsRank - 2];
  int64_t lhsCols = lhs[lhsRank - 1];
  int64_t rhsRows = rhs[rhsRank - 1 - (rhsRank == 1 ? 0 : 1)];
  int64_t rhsCols = rhsRank == 1 ? 1 : rhs[rhsRank - 1];
  if (transposeA)
    std::swap(lhsRows, lhsCols);
  if (transposeB)
    std::swap(rhsRows, rhsCols);
  if (lhsCols != rhsRows)
    return "operands [" + fusec::formatShape(lhs) + "] and [" +
           fusec::formatShape(rhs) + "]" +
           (transposeA || transposeB ? " (transposed)" : "") +
           ": the contracted dims differ (" + std::to_string(lhsCols) + " vs " +
           std::to_string(rhsRows) + ")";
  shape.m = lhsRows;
  shape.k = lhsCols;
  shape.n = rhsCols;
  shape.lhsBatch.assign(lhs.begin(), lhs.end() - std::min<size_t>(lhsRank, 2));
  shape.rhsBatch.assign(rhs.begin(), rhs.end() - std::min<size_t>(rhsRank, 2));
  std::optional<fusec::Shape> batch =
      fusec::broadcastShapes(shape.lhsBatch, shape.rhsBatch);
  if (!batch)
    return "matmul batch dims [" + fusec::formatShape(shape.lhsBatch) +
           "] and [" + fusec::formatShape(shape.rhsBatch) +
           "] do not broadcast";
  shape.batch = *batch;
  shape.result = shape.batch;
  if (lhsRank > 1)
    shape.result.push_back(shape.m);
  if (rhsRank > 1)
    shape.result.push_back(shape.n);
  return "";
}

bool isOneProduct(const MatmulShape &shape, bool transposeA) {
  // By dims, not element counts: a symbolic batch dim is dynamic.
  auto allOnes = [](const fusec::Shape &dims) {
    return llvm::all_of(dims, [](int64_t dim) { return dim == 1; });
  };
  // With an all-ones rhs batch, the batch is the lhs's with leading ones.
  auto withoutLeadingOnes = [](const fusec::Shape &dims) {
    auto first = llvm::find_if(dims, [](int64_t dim) { return dim != 1; });
    return fusec::Shape(first, dims.end());
  };
  return allOnes(shape.batch) || (!transposeA && allOnes(shape.rhsBatch) &&
                                  withoutLeadingOnes(shape.lhsBatch) ==
                                      withoutLeadingOnes(shape.batch));
}

bool isMatmulEpilogue(const std::string &name) {
  return name == "none" || name == "relu" || name == "gelu_tanh";
}

/// The product's shape rules, and the op's result shape against them.
static LogicalResult verifyProductShape(Operation *op, RankedTensorType lhs,
                                        RankedTensorType rhs, bool transposeA,
                                        bool transposeB, MatmulShape &shape) {
  std::string error = inferMatmulShape(toShape(lhs), toShape(rhs), transposeA,
                                       transposeB, shape);
  if (!error.empty())
    return op->emitOpError() << error;
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (toShape(result) != shape.result)
    return op->emitOpError()
           << "result shape [" << fusec::formatShape(toShape(result))
           << "] should be [" << fusec::formatShape(shape.result) << "]";
  return success();
}

MatmulShape MatmulOp::getMatmulShape() {
  MatmulShape shape;
  std::string error =
      inferMatmulShape(toShape(getLhs().getType()), toShape(getRhs().getType()),
                       getTransposeA(), getTransposeB(), shape);
  assert(error.empty() && "verified matmul");
  (void)error;
  return shape;
}

LogicalResult MatmulOp::verify() {
  Type elementType = getLhs().getType().getElementType();
  Type resultElementType = getType().getElementType();
  bool wideResult = (elementType.isF16() || elementType.isBF16()) &&
                    resultElementType.isF32();
  if (getRhs().getType().getElementType() != elementType ||
      (resultElementType != elementType && !wideResult))
    return emitOpError() << "operands must share one dtype, and the result "
                            "have it too or be f32 for f16/bf16 operands (got "
                         << typeString(getLhs().getType()) << ", "
                         << typeString(getRhs().getType()) << " -> "
                         << typeString(getType()) << ")";
  MatmulShape shape;
  if (failed(verifyProductShape(getOperation(), getLhs().getType(),
                                getRhs().getType(), getTransposeA(),
                                getTransposeB(), shape)))
    return failure();
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getElementType() != resultElementType ||
        biasType.getShape() != ArrayRef<int64_t>{shape.n})
      return emitOpError() << "bias must be a vector of " << shape.n << " "
                           << resultElementType << " (got "
                           << typeString(biasType) << ")";
  }
  double alpha = getAlpha().convertToDouble();
  if (!std::isfinite(alpha) || alpha == 0.0)
    return emitOpError() << "alpha must be finite and non-zero (got " << alpha
                         << "): libraries may skip the product when alpha "
                            "is 0, losing its NaN and infinities";
  if (!isMatmulEpilogue(getEpilogue().str()))
    return emitOpError() << "unknown epilogue '" << getEpilogue()
                         << "' (expected none, relu or gelu_tanh)";
  return success();
}

LogicalResult GemmOp::verify() {
  auto aType = getA().getType(), bType = getB().getType();
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return emitOpError() << "A and B must be 2-D (got " << typeString(aType)
                         << " and " << typeString(bType) << ")";
  Type elementType = aType.getElementType();
  if (bType.getElementType() != elementType ||
      getType().getElementType() != elementType ||
      (getC() && getC().getType().getElementType() != elementType))
    return emitOpError() << "operands and result must share one dtype";
  MatmulShape shape;
  if (failed(verifyProductShape(getOperation(), aType, bType, getTransA(),
                                getTransB(), shape)))
    return failure();
  if (getC() && !fusec::broadcastsTo(toShape(getC().getType()), shape.result))
    return emitOpError() << "C of shape ["
                         << fusec::formatShape(toShape(getC().getType()))
                         << "] does not broadcast to ["
                         << fusec::formatShape(shape.result) << "]";
  return success();
}

LogicalResult QuantizedMatmulOp::verify() {
  auto lhsType = getLhs().getType();
  auto weightType = getWeight().getType();
  auto scaleType = getScale().getType();
  if (lhsType.getRank() < 1 || weightType.getRank() != 2 ||
      scaleType.getRank() != 1)
    return emitOpError() << "expects lhs of rank >= 1, a 2-D weight and a "
                            "1-D scale";
  int64_t n = weightType.getDimSize(0), k = weightType.getDimSize(1);
  if (lhsType.getShape().back() != k || scaleType.getDimSize(0) != n)
    return emitOpError() << "weight [n, k] = " << typeString(weightType)
                         << " does not fit lhs " << typeString(lhsType)
                         << " and scale " << typeString(scaleType);
  if (scaleType.getElementType() != lhsType.getElementType())
    return emitOpError() << "lhs and scale must share one dtype";
  SmallVector<int64_t> shape(lhsType.getShape());
  shape.back() = n;
  if (getType() != lhsType.clone(shape))
    return emitOpError() << "result must be "
                         << typeString(lhsType.clone(shape));
  return success();
}

} // namespace fuse
