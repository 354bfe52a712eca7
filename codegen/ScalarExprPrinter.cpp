#include "codegen/ScalarExprPrinter.h"

#include "ir/ElementwiseOps.h"
#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

#include <cctype>
#include <cmath>
#include <cstdio>

using namespace mlir;
using fusec::DType;

namespace fuse {

void ScalarExprPrinter::bind(Value value, std::string variable) {
  variables[value] = std::move(variable);
}

const std::string &ScalarExprPrinter::variableOf(Value value) const {
  return variables.find(value)->second;
}

std::string ScalarExprPrinter::newVariable() {
  return prefix + std::to_string(counter++);
}

std::string ScalarExprPrinter::literal(double value, DType dtype) {
  const char *type = fusec::dtypeInfo(dtype).computeCType;
  char text[64];
  switch (fusec::dtypeInfo(dtype).kind) {
  case fusec::DTypeKind::Bool:
    return value != 0 ? "true" : "false";
  case fusec::DTypeKind::Int:
    std::snprintf(text, sizeof text, "(%s)%lldLL", type,
                  static_cast<long long>(value));
    return text;
  case fusec::DTypeKind::Float:
    break;
  }
  if (std::isnan(value))
    return std::string("(") + type + ")NAN";
  if (std::isinf(value))
    return std::string("(") + type + ")" + (value < 0 ? "-" : "") + "INFINITY";
  bool isDouble = dtype == DType::F64;
  std::snprintf(text, sizeof text, isDouble ? "%.17g" : "%.9g", value);
  std::string result = text;
  if (result.find_first_of(".e") == std::string::npos)
    result += ".0";
  return isDouble ? result : result + "f";
}

/// Substitutes `{0}`, `{1}` in an expression template.
static std::string instantiate(const char *pattern,
                               ArrayRef<std::string> operands) {
  std::string result;
  for (const char *p = pattern; *p; ++p) {
    if (p[0] == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}') {
      result += operands[p[1] - '0']; // always a variable: no parentheses
      p += 2;
    } else {
      result += *p;
    }
  }
  return result;
}

/// Renames the calls `name(` of `expression` found in `functions`.
static std::string renameCalls(const std::string &expression,
                               const MathFunctionMap &functions) {
  std::string result;
  for (size_t i = 0; i < expression.size();) {
    if (!std::isalpha(static_cast<unsigned char>(expression[i])) &&
        expression[i] != '_') {
      result += expression[i++];
      continue;
    }
    size_t end = i;
    while (end < expression.size() &&
           (std::isalnum(static_cast<unsigned char>(expression[end])) ||
            expression[end] == '_'))
      ++end;
    std::string word = expression.substr(i, end - i);
    auto it = functions.find(word);
    bool isCall = end < expression.size() && expression[end] == '(';
    result += isCall && it != functions.end() ? it->second : word;
    i = end;
  }
  return result;
}

/// A conversion between compute types with fusec's cast semantics.
static std::string castExpression(const std::string &operand, DType from,
                                  DType to) {
  if (to == DType::I1)
    return "(" + operand + " != 0)";
  // An explicit cast to a 16-bit float rounds, even though the value stays
  // in f32 inside the kernel.
  if (to == DType::F16)
    return "fusec_f16_to_f32(fusec_f32_to_f16((float)(" + operand + ")))";
  if (to == DType::BF16)
    return "fusec_bf16_to_f32(fusec_f32_to_bf16((float)(" + operand + ")))";
  const char *toType = fusec::dtypeInfo(to).computeCType;
  if (std::string(fusec::dtypeInfo(from).computeCType) == toType)
    return operand;
  return std::string("(") + toType + ")(" + operand + ")";
}

LogicalResult ScalarExprPrinter::print(Block &body,
                                       std::vector<std::string> &statements) {
  for (Operation &op : body.without_terminator())
    if (failed(printOp(op, statements)))
      return failure();
  return success();
}

LogicalResult ScalarExprPrinter::printOp(Operation &op,
                                         std::vector<std::string> &statements) {
  {
    auto operandVariables = [&] {
      SmallVector<std::string> names;
      for (Value operand : op.getOperands())
        names.push_back(variableOf(operand));
      return names;
    };
    if (isa<BroadcastToOp, ReshapeOp>(op)) {
      // Inputs are read at broadcast indices already, and views keep the
      // element order: nothing to compute.
      bind(op.getResult(0), variableOf(op.getOperand(0)));
      return success();
    }
    std::string expression;
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (!splat)
        return op.emitError("codegen: a dense constant inside a fusion region "
                            "must be passed in as a region input");
      expression = literal(constantElement(splat, 0),
                           dtypeOf(op.getResult(0).getType()));
    } else if (auto div = dyn_cast<DivOp>(op);
               div && reciprocals.count(div.getRhs())) {
      expression =
          variableOf(div.getLhs()) + " * " + reciprocals.lookup(div.getRhs());
    } else if (auto elementwise = dyn_cast<ElementwiseOpInterface>(op)) {
      const ElementwiseOpInfo *info = &elementwise.getInfo();
      DType operandDType = dtypeOf(op.getOperand(0).getType());
      expression =
          instantiate(info->cExpression(operandDType), operandVariables());
      if (f32Functions &&
          std::string(fusec::dtypeInfo(operandDType).computeCType) == "float")
        expression = renameCalls(expression, *f32Functions);
    } else if (isa<SelectOp>(op)) {
      SmallVector<std::string> names = operandVariables();
      expression = "(" + names[0] + " ? " + names[1] + " : " + names[2] + ")";
    } else if (auto cast = dyn_cast<CastOp>(op)) {
      expression = castExpression(variableOf(cast.getOperand()),
                                  dtypeOf(cast.getOperand().getType()),
                                  dtypeOf(cast.getType()));
    } else {
      return op.emitError() << "codegen: " << describeOp(&op)
                            << " cannot be part of a pointwise kernel";
    }
    std::string variable = newVariable();
    const char *type =
        fusec::dtypeInfo(dtypeOf(op.getResult(0).getType())).computeCType;
    statements.push_back(std::string("const ") + type + " " + variable + " = " +
                         expression + ";");
    bind(op.getResult(0), variable);
  }
  return success();
}

} // namespace fuse
