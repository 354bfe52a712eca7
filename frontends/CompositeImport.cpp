//===- CompositeImport.cpp - Reduction and composite nodes ---------------===//
//
// reduce_* (ONNX ReduceSum & co.: `axes`, `keepdims`,
// `noop_with_empty_axes`), softmax/log_softmax (`axis`), layer_norm and
// rms_norm (`axis`, `epsilon`, optional weight and bias), gelu
// (`approximate`), silu, dequantize_linear (`axis`), the activations with
// float attrs (leaky_relu, elu, selu, celu, hard_sigmoid, shrink), isinf
// (`detect_positive`, `detect_negative`) and clip (optional min and max).
//
//===----------------------------------------------------------------------===//

#include "frontends/NodeImport.h"

#include "ir/FuseDialect.h"
#include "ir/LayoutOps.h"
#include "ir/TypeUtils.h"

#include <algorithm>

using namespace mlir;

namespace fuse {

namespace {

/// The reduced axes of a reduce_* node: ONNX's negative axes resolved,
/// sorted; absent or empty means every axis unless noop_with_empty_axes.
FailureOr<SmallVector<int64_t>> reductionAxes(NodeImport &node,
                                              RankedTensorType type) {
  FailureOr<std::vector<int64_t>> axes = node.getInts("axes", {{}});
  FailureOr<int64_t> noop = node.getInt("noop_with_empty_axes", 0);
  if (failed(axes) || failed(noop))
    return failure();
  SmallVector<int64_t> resolved;
  if (axes->empty()) {
    if (*noop == 0)
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        resolved.push_back(dim);
    return resolved;
  }
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(
      *axes, type.getRank(), "axes", [&] { return node.error(); });
  if (failed(normalized))
    return failure();
  resolved = std::move(*normalized);
  llvm::sort(resolved);
  return resolved;
}

template <typename OpTy> FailureOr<Value> importReduction(NodeImport &node) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  auto type = cast<RankedTensorType>(node.operands[0].getType());
  FailureOr<SmallVector<int64_t>> axes = reductionAxes(node, type);
  FailureOr<int64_t> keepdims = node.getInt("keepdims", 1);
  if (failed(axes) || failed(keepdims))
    return failure();
  // noop_with_empty_axes with no axes: the input itself (ONNX), even for
  // reduce_l2 and reduce_log_sum_exp, whose one-element results differ.
  FailureOr<int64_t> noop = node.getInt("noop_with_empty_axes", 0);
  if (failed(noop))
    return failure();
  if (axes->empty() && *noop != 0)
    return node.operands[0];
  RankedTensorType result = reducedTensorType(type, *axes, *keepdims != 0);
  return OpTy::create(node.builder, node.loc, result, node.operands[0], *axes,
                      *keepdims != 0)
      .getResult();
}

template <typename OpTy> FailureOr<Value> importSoftmax(NodeImport &node) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  FailureOr<int64_t> axis = node.getInt("axis", -1);
  if (failed(axis))
    return failure();
  return OpTy::create(node.builder, node.loc, node.operands[0].getType(),
                      node.operands[0], node.builder.getI64IntegerAttr(*axis))
      .getResult();
}

FailureOr<Value> importLayerNorm(NodeImport &node) {
  if (failed(node.expectOperands(1, 3)))
    return failure();
  FailureOr<int64_t> axis = node.getInt("axis", -1);
  FailureOr<double> epsilon = node.getFloat("epsilon", 1e-5);
  if (failed(axis) || failed(epsilon))
    return failure();
  return LayerNormOp::create(node.builder, node.loc, node.operands[0].getType(),
                             node.operands[0], node.operandOrNull(1),
                             node.operandOrNull(2),
                             node.builder.getI64IntegerAttr(*axis),
                             node.builder.getF64FloatAttr(*epsilon))
      .getResult();
}

FailureOr<Value> importRmsNorm(NodeImport &node) {
  if (failed(node.expectOperands(1, 2)))
    return failure();
  FailureOr<int64_t> axis = node.getInt("axis", -1);
  FailureOr<double> epsilon = node.getFloat("epsilon", 1e-5);
  if (failed(axis) || failed(epsilon))
    return failure();
  return RmsNormOp::create(node.builder, node.loc, node.operands[0].getType(),
                           node.operands[0], node.operandOrNull(1),
                           node.builder.getI64IntegerAttr(*axis),
                           node.builder.getF64FloatAttr(*epsilon))
      .getResult();
}

FailureOr<Value> importGelu(NodeImport &node) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  FailureOr<std::string> approximate = node.getString("approximate", "none");
  if (failed(approximate))
    return failure();
  return GeluOp::create(node.builder, node.loc, node.operands[0], *approximate)
      .getResult();
}

FailureOr<Value> importDequantizeLinear(NodeImport &node) {
  if (failed(node.expectOperands(2, 3)))
    return failure();
  FailureOr<int64_t> axis = node.getInt("axis", 1);
  if (failed(axis))
    return failure();
  auto type = cast<RankedTensorType>(node.operands[0].getType());
  auto scaleType = cast<RankedTensorType>(node.operands[1].getType());
  if (!type.getElementType().isInteger(8) &&
      !type.getElementType().isInteger(16) &&
      !type.getElementType().isSignlessInteger(32) &&
      !fusec::isNarrow(fuse::dtypeOf(type)))
    return node.error() << "quantized input must be i8, u8, i16, u16, i32 "
                           "or a float8, float4, 4-bit or 2-bit dtype, not "
                        << type.getElementType();
  if (!isa<FloatType>(scaleType.getElementType()))
    return node.error() << "scale must be a float tensor, not "
                        << typeString(scaleType);
  return DequantizeLinearOp::create(
             node.builder, node.loc, type.clone(scaleType.getElementType()),
             node.operands[0], node.operands[1], node.operandOrNull(2), *axis)
      .getResult();
}

FailureOr<Value> importSilu(NodeImport &node) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  return SiluOp::create(node.builder, node.loc, node.operands[0]).getResult();
}

/// An activation whose attrs are floats with ONNX's names and defaults:
/// `attrs` lists them in the op's builder order.
template <typename OpTy, size_t N>
FailureOr<Value>
importActivation(NodeImport &node,
                 const std::pair<const char *, double> (&attrs)[N]) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  SmallVector<NamedAttribute> named;
  for (const auto &[name, fallback] : attrs) {
    FailureOr<double> value = node.getFloat(name, fallback);
    if (failed(value))
      return failure();
    named.push_back(
        node.builder.getNamedAttr(name, node.builder.getF64FloatAttr(*value)));
  }
  return OpTy::create(node.builder, node.loc, node.operands[0].getType(),
                      ValueRange{node.operands[0]}, named)
      .getResult();
}

FailureOr<Value> importLeakyRelu(NodeImport &node) {
  static const std::pair<const char *, double> attrs[] = {{"alpha", 0.01}};
  return importActivation<LeakyReluOp>(node, attrs);
}
FailureOr<Value> importElu(NodeImport &node) {
  static const std::pair<const char *, double> attrs[] = {{"alpha", 1.0}};
  return importActivation<EluOp>(node, attrs);
}
FailureOr<Value> importSelu(NodeImport &node) {
  static const std::pair<const char *, double> attrs[] = {
      {"alpha", 1.67326319217681884765625},
      {"gamma", 1.05070102214813232421875}};
  return importActivation<SeluOp>(node, attrs);
}
FailureOr<Value> importCelu(NodeImport &node) {
  static const std::pair<const char *, double> attrs[] = {{"alpha", 1.0}};
  return importActivation<CeluOp>(node, attrs);
}
FailureOr<Value> importHardSigmoid(NodeImport &node) {
  static const std::pair<const char *, double> attrs[] = {{"alpha", 0.2},
                                                          {"beta", 0.5}};
  return importActivation<HardSigmoidOp>(node, attrs);
}
FailureOr<Value> importShrink(NodeImport &node) {
  static const std::pair<const char *, double> attrs[] = {{"bias", 0.0},
                                                          {"lambd", 0.5}};
  return importActivation<ShrinkOp>(node, attrs);
}

FailureOr<Value> importIsInf(NodeImport &node) {
  if (failed(node.expectOperands(1, 1)))
    return failure();
  FailureOr<int64_t> positive = node.getInt("detect_positive", 1);
  FailureOr<int64_t> negative = node.getInt("detect_negative", 1);
  if (failed(positive) || failed(negative))
    return failure();
  auto type = cast<RankedTensorType>(node.operands[0].getType());
  return IsInfOp::create(node.builder, node.loc,
                         type.clone(node.builder.getI1Type()), node.operands[0],
                         *positive, *negative)
      .getResult();
}

FailureOr<Value> importClip(NodeImport &node) {
  if (failed(node.expectOperands(1, 3)))
    return failure();
  return ClipOp::create(node.builder, node.loc, node.operands[0].getType(),
                        node.operands[0], node.operandOrNull(1),
                        node.operandOrNull(2))
      .getResult();
}

} // namespace

std::optional<FailureOr<Value>> importReductionOrComposite(NodeImport &node) {
  using Importer = FailureOr<Value> (*)(NodeImport &);
  static const std::pair<const char *, Importer> kImporters[] = {
      {"reduce_sum", importReduction<ReduceSumOp>},
      {"reduce_prod", importReduction<ReduceProdOp>},
      {"reduce_max", importReduction<ReduceMaxOp>},
      {"reduce_min", importReduction<ReduceMinOp>},
      {"reduce_mean", importReduction<ReduceMeanOp>},
      {"reduce_l2", importReduction<ReduceL2Op>},
      {"reduce_log_sum_exp", importReduction<ReduceLogSumExpOp>},
      {"softmax", importSoftmax<SoftmaxOp>},
      {"log_softmax", importSoftmax<LogSoftmaxOp>},
      {"layer_norm", importLayerNorm},
      {"rms_norm", importRmsNorm},
      {"gelu", importGelu},
      {"silu", importSilu},
      {"dequantize_linear", importDequantizeLinear},
      {"leaky_relu", importLeakyRelu},
      {"elu", importElu},
      {"selu", importSelu},
      {"celu", importCelu},
      {"hard_sigmoid", importHardSigmoid},
      {"shrink", importShrink},
      {"isinf", importIsInf},
      {"clip", importClip},
  };
  for (const auto &[name, importer] : kImporters)
    if (node.node.op == name)
      return importer(node);
  return std::nullopt;
}

} // namespace fuse
