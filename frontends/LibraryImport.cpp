//===- LibraryImport.cpp - matmul and gemm nodes -------------------------===//
//
// matmul (ONNX MatMul: NumPy's matmul), gemm (ONNX Gemm: `alpha`,
// `beta`, `transA`, `transB`, an optional C broadcast to the result) and
// attention (fuse.attention's operands and attrs).
//
// Float products become fuse.matmul and fuse.gemm, run by cuBLASLt or BLAS.
// No library multiplies 32- and 64-bit integers, so integer products are
// built here from a multiply and a sum, which fuse into one reduction
// kernel.
//
//===----------------------------------------------------------------------===//

#include "frontends/NodeImport.h"

#include "ir/FuseDialect.h"
#include "ir/LayoutOps.h"
#include "ir/TypeUtils.h"
#include "runtime/core/DType.h"

using namespace mlir;

namespace fuse {

namespace {

/// Checks that the operands share one dtype that ONNX's MatMul and Gemm
/// take: a float, or a 32- or 64-bit integer.
LogicalResult checkOperandTypes(NodeImport &node, unsigned count) {
  Type elementType =
      cast<RankedTensorType>(node.operands[0].getType()).getElementType();
  for (unsigned i = 0; i < count; ++i) {
    Value operand = node.operandOrNull(i);
    if (!operand)
      continue;
    auto type = cast<RankedTensorType>(operand.getType());
    if (type.getElementType() != elementType)
      return node.error() << "operands must share one dtype (input " << i
                          << " is " << typeString(type) << ", input 0 is "
                          << typeString(node.operands[0].getType()) << ")";
  }
  unsigned bits = elementType.getIntOrFloatBitWidth();
  if (!isa<FloatType>(elementType) && bits != 32 && bits != 64)
    return node.error() << "takes f16, bf16, f32, f64, i32, i64, u32 or u64 "
                           "operands, not "
                        << fusec::dtypeName(*toDType(elementType));
  return success();
}

bool isInteger(Value value) {
  return isa<IntegerType>(
      cast<RankedTensorType>(value.getType()).getElementType());
}

/// NumPy's matmul of integer tensors: the sum over k of
/// lhs[..., m, k, 1] * rhs[..., 1, k, n], wrapping as NumPy's integer
/// matmul does. The multiply fuses into the sum, so the [..., m, k, n]
/// products are never stored.
Value integerProduct(NodeImport &node, Value lhs, Value rhs,
                     RankedTensorType resultType) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  // A 1-D lhs is a row [1, k], a 1-D rhs a column [k, 1].
  SmallVector<int64_t> lhsShape(lhsType.getShape());
  if (lhsShape.size() == 1)
    lhsShape.insert(lhsShape.begin(), 1);
  lhsShape.push_back(1);
  SmallVector<int64_t> rhsShape(rhsType.getShape());
  if (rhsShape.size() == 1)
    rhsShape.push_back(1);
  rhsShape.insert(rhsShape.end() - 2, 1);
  Value lhsColumns =
      ReshapeOp::create(node.builder, node.loc, lhsType.clone(lhsShape), lhs);
  Value rhsRows =
      ReshapeOp::create(node.builder, node.loc, rhsType.clone(rhsShape), rhs);
  Value products =
      MulOp::create(node.builder, node.loc, lhsColumns, rhsRows).getResult();
  auto productsType = cast<RankedTensorType>(products.getType());
  int64_t kAxis = productsType.getRank() - 2;
  Value sums = ReduceSumOp::create(
      node.builder, node.loc, reducedTensorType(productsType, {kAxis}, false),
      products, ArrayRef<int64_t>{kAxis}, false);
  if (sums.getType() == resultType)
    return sums;
  return ReshapeOp::create(node.builder, node.loc, resultType, sums);
}

/// A rank-0 constant of `elementType`, broadcast where it is used.
Value scalarConstant(NodeImport &node, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      node.builder, node.loc, type,
      DenseElementsAttr::get(type,
                             node.builder.getFloatAttr(elementType, value)));
}

/// ONNX Gemm of integers, computed as onnx.reference does: the product
/// wraps in the integer dtype; unless alpha is 1 and beta 1 or 0 (where
/// integer arithmetic gives the same result exactly), alpha * product +
/// beta * C is computed in f64 and converted back (truncating).
Value integerGemm(NodeImport &node, RankedTensorType resultType, double alpha,
                  double beta, bool transposeA, bool transposeB) {
  auto transposed = [&](Value matrix, bool transpose) -> Value {
    if (!transpose)
      return matrix;
    auto type = cast<RankedTensorType>(matrix.getType());
    return TransposeOp::create(
        node.builder, node.loc,
        type.clone({type.getDimSize(1), type.getDimSize(0)}), matrix,
        ArrayRef<int64_t>{1, 0});
  };
  Value product =
      integerProduct(node, transposed(node.operands[0], transposeA),
                     transposed(node.operands[1], transposeB), resultType);
  Value c = node.operandOrNull(2);
  if (beta == 0.0)
    c = Value();
  if (alpha == 1.0 && (!c || beta == 1.0))
    return c ? AddOp::create(node.builder, node.loc, resultType, product, c)
                   .getResult()
             : product;
  Type f64 = node.builder.getF64Type();
  auto inF64 = [&](Value value) -> Value {
    auto type = cast<RankedTensorType>(value.getType());
    return CastOp::create(node.builder, node.loc, type.clone(f64), value);
  };
  Value sum = MulOp::create(node.builder, node.loc, inF64(product),
                            scalarConstant(node, f64, alpha))
                  .getResult();
  if (c) {
    Value scaledC = MulOp::create(node.builder, node.loc, inF64(c),
                                  scalarConstant(node, f64, beta))
                        .getResult();
    sum = AddOp::create(node.builder, node.loc, resultType.clone(f64), sum,
                        scaledC)
              .getResult();
  }
  return CastOp::create(node.builder, node.loc, resultType, sum);
}

/// The result type of the product, or an error with the shape rule broken.
FailureOr<RankedTensorType> productType(NodeImport &node, bool transposeA,
                                        bool transposeB) {
  auto lhs = cast<RankedTensorType>(node.operands[0].getType());
  auto rhs = cast<RankedTensorType>(node.operands[1].getType());
  MatmulShape shape;
  std::string error = inferMatmulShape(toShape(lhs), toShape(rhs), transposeA,
                                       transposeB, shape);
  if (!error.empty())
    return node.error() << error;
  return RankedTensorType::get(shape.result, lhs.getElementType());
}

FailureOr<Value> importMatmul(NodeImport &node) {
  if (failed(node.expectOperands(2, 2)) || failed(checkOperandTypes(node, 2)))
    return failure();
  FailureOr<RankedTensorType> type = productType(node, false, false);
  if (failed(type))
    return failure();
  if (isInteger(node.operands[0]))
    return integerProduct(node, node.operands[0], node.operands[1], *type);
  return MatmulOp::create(node.builder, node.loc, *type, node.operands[0],
                          node.operands[1], Value(), false, false, APFloat(1.0),
                          "none")
      .getResult();
}

FailureOr<Value> importGemm(NodeImport &node) {
  if (failed(node.expectOperands(2, 3)) || failed(checkOperandTypes(node, 3)))
    return failure();
  FailureOr<double> alpha = node.getFloat("alpha", 1.0);
  FailureOr<double> beta = node.getFloat("beta", 1.0);
  FailureOr<int64_t> transA = node.getInt("transA", 0);
  FailureOr<int64_t> transB = node.getInt("transB", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  for (unsigned i = 0; i < 2; ++i)
    if (cast<RankedTensorType>(node.operands[i].getType()).getRank() != 2)
      return node.error() << "input " << i << " must be 2-D (got "
                          << typeString(node.operands[i].getType()) << ")";
  FailureOr<RankedTensorType> type =
      productType(node, *transA != 0, *transB != 0);
  if (failed(type))
    return failure();
  if (isInteger(node.operands[0]))
    return integerGemm(node, *type, *alpha, *beta, *transA != 0, *transB != 0);
  return GemmOp::create(node.builder, node.loc, *type, node.operands[0],
                        node.operands[1], node.operandOrNull(2),
                        APFloat(*alpha), APFloat(*beta), *transA != 0,
                        *transB != 0)
      .getResult();
}

/// attention: q, k, v and an optional bias, as fuse.attention takes them
/// ([B, H, T, D] or [B, T, C] operands; see ir/AttentionOps.td).
FailureOr<Value> importAttention(NodeImport &node) {
  if (failed(node.expectOperands(3, 4)))
    return failure();
  FailureOr<int64_t> heads = node.getInt("num_heads", std::nullopt);
  FailureOr<int64_t> headDim = node.getInt("head_dim", std::nullopt);
  if (failed(heads) || failed(headDim))
    return failure();
  FailureOr<int64_t> kvHeads = node.getInt("kv_num_heads", *heads);
  FailureOr<int64_t> valueHeadDim = node.getInt("value_head_dim", *headDim);
  FailureOr<double> scale = node.getFloat("scale", std::nullopt);
  FailureOr<int64_t> causal = node.getInt("causal", 0);
  FailureOr<int64_t> causalOffset = node.getInt("causal_offset", 0);
  FailureOr<int64_t> windowLeft = node.getInt("window_left", -1);
  FailureOr<int64_t> zeroMaskedRows = node.getInt("zero_masked_rows", 0);
  FailureOr<int64_t> queryColumn = node.getInt("query_column", 0);
  FailureOr<int64_t> keyColumn = node.getInt("key_column", 0);
  FailureOr<int64_t> valueColumn = node.getInt("value_column", 0);
  for (bool failedRead :
       {failed(kvHeads), failed(valueHeadDim), failed(scale), failed(causal),
        failed(causalOffset), failed(windowLeft), failed(zeroMaskedRows),
        failed(queryColumn), failed(keyColumn), failed(valueColumn)})
    if (failedRead)
      return failure();
  auto query = cast<RankedTensorType>(node.operands[0].getType());
  if (query.getRank() != 3 && query.getRank() != 4)
    return node.error() << "query must be [B, H, T, D] or [B, T, C], not "
                        << typeString(query);
  int64_t batch = query.getDimSize(0);
  int64_t rows = query.getDimSize(query.getRank() == 3 ? 1 : 2);
  RankedTensorType resultType =
      query.getRank() == 3 ? query.clone({batch, rows, *heads * *valueHeadDim})
                           : query.clone({batch, *heads, rows, *valueHeadDim});
  return AttentionOp::create(node.builder, node.loc, resultType,
                             node.operands[0], node.operands[1],
                             node.operands[2], node.operandOrNull(3),
                             node.builder.getI64IntegerAttr(*heads),
                             node.builder.getI64IntegerAttr(*kvHeads),
                             node.builder.getI64IntegerAttr(*headDim),
                             node.builder.getI64IntegerAttr(*valueHeadDim),
                             node.builder.getI64IntegerAttr(*queryColumn),
                             node.builder.getI64IntegerAttr(*keyColumn),
                             node.builder.getI64IntegerAttr(*valueColumn),
                             node.builder.getF64FloatAttr(*scale),
                             node.builder.getBoolAttr(*causal != 0),
                             node.builder.getI64IntegerAttr(*causalOffset),
                             node.builder.getI64IntegerAttr(*windowLeft),
                             node.builder.getBoolAttr(*zeroMaskedRows != 0))
      .getResult();
}

} // namespace

std::optional<FailureOr<Value>> importLibrary(NodeImport &node) {
  if (node.node.op == "matmul")
    return importMatmul(node);
  if (node.node.op == "gemm")
    return importGemm(node);
  if (node.node.op == "attention")
    return importAttention(node);
  return std::nullopt;
}

} // namespace fuse
