//===- LibraryImport.cpp - matmul and gemm nodes -------------------------===//
//
// matmul (ONNX MatMul: NumPy's matmul) and gemm (ONNX Gemm: `alpha`,
// `beta`, `transA`, `transB`, an optional C broadcast to the result).
//
//===----------------------------------------------------------------------===//

#include "frontends/NodeImport.h"

#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {

namespace {

/// The operands' common float dtype, or an error naming what is wrong:
/// cuBLASLt and BLAS have no integer GEMM, so integer matmuls are refused.
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
  if (!isa<FloatType>(elementType))
    return node.error() << "takes f16, bf16, f32 or f64 operands, not "
                        << elementType << " (integer GEMMs are not supported)";
  return success();
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
  return GemmOp::create(node.builder, node.loc, *type, node.operands[0],
                        node.operands[1], node.operandOrNull(2),
                        APFloat(*alpha), APFloat(*beta), *transA != 0,
                        *transB != 0)
      .getResult();
}

} // namespace

std::optional<FailureOr<Value>> importLibrary(NodeImport &node) {
  if (node.node.op == "matmul")
    return importMatmul(node);
  if (node.node.op == "gemm")
    return importGemm(node);
  return std::nullopt;
}

} // namespace fuse
