#include "codegen/ScalarExpr.h"

#include "ir/ElementwiseOps.h"
#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

using namespace mlir;
using fusec::DType;

namespace fuse {

ScalarExpr &ScalarExprBuilder::newNode(ScalarExpr::Kind kind, DType dtype) {
  ScalarExpr &node = nodes.emplace_back();
  node.kind = kind;
  node.dtype = dtype;
  return node;
}

void ScalarExprBuilder::bind(Value value, std::string variable) {
  ScalarExpr &node =
      newNode(ScalarExpr::Kind::Variable, dtypeOf(value.getType()));
  node.name = std::move(variable);
  variables[value] = &node;
}

const std::string &ScalarExprBuilder::variableOf(Value value) const {
  return variables.find(value)->second->name;
}

LogicalResult ScalarExprBuilder::build(Block &body, ScalarLets &lets) {
  for (Operation &op : body.without_terminator())
    if (failed(build(op, lets)))
      return failure();
  return success();
}

LogicalResult ScalarExprBuilder::build(Operation &op, ScalarLets &lets) {
  // A value the kernel binds itself (a symbolic size, the element index).
  if (op.getNumResults() == 1 && isBound(op.getResult(0)))
    return success();
  if (isa<DimSizeOp, IotaOp>(op))
    return op.emitError() << "codegen: " << describeOp(&op)
                          << " needs a pointwise kernel of a symbolic program";
  if (isa<BroadcastToOp, ReshapeOp>(op)) {
    // Inputs are read at broadcast indices already, and views keep the
    // element order: nothing to compute.
    variables[op.getResult(0)] = variableNode(op.getOperand(0));
    return success();
  }
  DType dtype = dtypeOf(op.getResult(0).getType());
  auto withOperands = [&](ScalarExpr &node) -> ScalarExpr & {
    for (Value operand : op.getOperands())
      node.operands.push_back(variableNode(operand));
    return node;
  };
  const ScalarExpr *value;
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (!splat)
      return op.emitError("codegen: a dense constant inside a fusion region "
                          "must be passed in as a region input");
    ScalarExpr &node = newNode(ScalarExpr::Kind::Literal, dtype);
    if (auto integerType = dyn_cast<IntegerType>(splat.getElementType()))
      node.integer = integerType.getWidth() == 1
                         ? splat.getSplatValue<APInt>().getZExtValue()
                         : splat.getSplatValue<APInt>().getSExtValue();
    else
      node.literal = constantElement(splat, 0);
    value = &node;
  } else if (auto div = dyn_cast<DivOp>(op);
             div && reciprocals.count(div.getRhs())) {
    ScalarExpr &node = newNode(ScalarExpr::Kind::ScaleByReciprocal, dtype);
    node.name = reciprocals.lookup(div.getRhs());
    node.operands.push_back(variableNode(div.getLhs()));
    value = &node;
  } else if (auto elementwise = dyn_cast<ElementwiseOpInterface>(op)) {
    ScalarExpr &node = withOperands(newNode(ScalarExpr::Kind::Apply, dtype));
    node.op = &elementwise.getInfo();
    value = &node;
  } else if (isa<SelectOp>(op)) {
    value = &withOperands(newNode(ScalarExpr::Kind::Select, dtype));
  } else if (isa<BitcastOp>(op)) {
    value = &withOperands(newNode(ScalarExpr::Kind::Bitcast, dtype));
  } else if (auto cast = dyn_cast<CastOp>(op)) {
    ScalarExpr &node = withOperands(newNode(ScalarExpr::Kind::Cast, dtype));
    node.saturates = !cast.getNonSaturating();
    std::optional<StringRef> mode = cast.getRoundMode();
    node.roundMode = !mode || *mode == "up" ? 0 : *mode == "down" ? 1 : 2;
    value = &node;
  } else {
    return op.emitError() << "codegen: " << describeOp(&op)
                          << " cannot be part of a pointwise kernel";
  }
  ScalarExpr &variable = newNode(ScalarExpr::Kind::Variable, dtype);
  variable.name = prefix + std::to_string(counter++);
  variables[op.getResult(0)] = &variable;
  lets.push_back({&variable, value});
  return success();
}

} // namespace fuse
