#include "codegen/ScalarExprPrinter.h"

#include "ir/ElementwiseOps.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>

using namespace mlir;
using fusec::DType;

namespace fuse {

std::string narrowFunctionStem(DType dtype) {
  std::string stem = fusec::dtypeName(dtype);
  for (char &c : stem)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return stem;
}

std::string fromStorage(DType dtype, const std::string &element) {
  if (dtype == DType::F16)
    return "fusec_f16_to_f32(" + element + ")";
  if (dtype == DType::BF16)
    return "fusec_bf16_to_f32(" + element + ")";
  if (fusec::isNarrow(dtype) && fusec::isFloat(dtype))
    return "fusec_" + narrowFunctionStem(dtype) + "_to_f32(" + element + ")";
  return element;
}

std::string toStorage(DType dtype, const std::string &value) {
  if (dtype == DType::F16)
    return "fusec_f32_to_f16(" + value + ")";
  if (dtype == DType::BF16)
    return "fusec_f32_to_bf16(" + value + ")";
  // The value is one of the format's already (casts round), E5M2's
  // infinities too: stored exactly, so without saturation (and E8M0's
  // 2^-127, an f32 subnormal, rounded down).
  if (dtype == DType::F8E8M0)
    return "fusec_f32_to_f8e8m0fnu_rounded(" + value + ", 0, 1)";
  if (fusec::isNarrow(dtype) && fusec::isFloat(dtype))
    return "fusec_f32_to_" + narrowFunctionStem(dtype) + "(" + value + ", 0)";
  return value;
}

/// BitCast: the operand's stored bits read as `to`'s (both of one width).
/// Narrower than a byte, the bits are the low ones of the byte each element
/// takes (sign-extended for a signed target); read as i1, any nonzero byte
/// is true.
static std::string bitcastExpression(const std::string &operand, DType from,
                                     DType to) {
  // f16, bf16 and E5M2 NaNs keep their payloads (toStorage's conversions
  // give one NaN).
  std::string bits = from == DType::F16    ? "fusec_f16_bits(" + operand + ")"
                     : from == DType::BF16 ? "fusec_bf16_bits(" + operand + ")"
                     : from == DType::F8E5M2
                         ? "(uint8_t)(fusec_f16_bits(" + operand + ") >> 8)"
                         : toStorage(from, operand);
  const fusec::DTypeInfo &target = fusec::dtypeInfo(to);
  if (to == DType::I1)
    return "(fusec_bit_cast<uint8_t>(" + bits + ") != 0)";
  if (target.bits < 8) {
    std::string low = "(int64_t)(fusec_bit_cast<uint8_t>(" + bits + ") & " +
                      std::to_string((1 << target.bits) - 1) + ")";
    if (fusec::isInteger(to) && !fusec::isUnsigned(to))
      low =
          "fusec_wrap_signed(" + low + ", " + std::to_string(target.bits) + ")";
    return fromStorage(to, std::string("(") + target.storageCType + ")" + low);
  }
  return fromStorage(to, std::string("fusec_bit_cast<") + target.storageCType +
                             ">(" + bits + ")");
}

std::string ScalarExprPrinter::integerLiteral(int64_t value, DType dtype) {
  if (fusec::dtypeInfo(dtype).kind == fusec::DTypeKind::Bool)
    return value != 0 ? "true" : "false";
  const char *type = fusec::dtypeInfo(dtype).computeCType;
  // -9223372036854775808LL would be a positive literal out of range, negated.
  if (value == INT64_MIN)
    return std::string("(") + type + ")(-9223372036854775807LL - 1)";
  return std::string("(") + type + ")" + std::to_string(value) + "LL";
}

std::string ScalarExprPrinter::literal(double value, DType dtype) {
  const char *type = fusec::dtypeInfo(dtype).computeCType;
  char text[64];
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
      result += operands[p[1] - '0'];
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

/// `value` (an f32 expression) rounded to `dtype` and widened back, where
/// `dtype` is a float stored narrower than f32 (a narrow float saturating
/// unless `saturates` is false); `value` as it is otherwise.
static std::string roundedTo(DType dtype, const std::string &value,
                             bool saturates = true) {
  if (dtype == DType::F16 || dtype == DType::BF16)
    return std::string(dtype == DType::F16 ? "fusec_round_to_f16("
                                           : "fusec_round_to_bf16(") +
           value + ")";
  if (fusec::isNarrow(dtype) && fusec::isFloat(dtype))
    return "fusec_round_to_" + narrowFunctionStem(dtype) + "(" + value + ", " +
           (saturates ? "1" : "0") + ")";
  return value;
}

/// A conversion between compute types with fusec's cast semantics.
static std::string castExpression(const std::string &operand, DType from,
                                  DType to, bool saturates, int roundMode) {
  if (to == DType::I1)
    return "(" + operand + " != 0)";
  if (to == DType::F8E8M0)
    return "fusec_round_to_f8e8m0fnu_by((float)(" + operand + "), " +
           (saturates ? "1" : "0") + ", " + std::to_string(roundMode) + ")";
  // An explicit cast to a float narrower than f32 rounds, even though the
  // value stays in f32 inside the kernel. It rounds once: f64 and integers
  // (exact in f64 up to 2^53) go through f32 rounded to odd.
  if (fusec::isFloat(to) && fusec::dtypeBytes(to) < 4)
    return roundedTo(to,
                     fusec::isFloat(from) && fusec::dtypeBytes(from) <= 4
                         ? "(float)(" + operand + ")"
                         : "fusec_f64_to_f32_round_odd((double)(" + operand +
                               "))",
                     saturates);
  // The 4- and 2-bit integers wrap what the integer conversion (through
  // i64) gives.
  if (fusec::isNarrow(to)) {
    std::string wide = fusec::isFloat(from)
                           ? "fusec_float_to_int<int64_t>(" + operand + ")"
                           : "(int64_t)(" + operand + ")";
    return std::string(fusec::isUnsigned(to) ? "fusec_wrap_unsigned("
                                             : "fusec_wrap_signed(") +
           wide + ", " + std::to_string(fusec::dtypeInfo(to).bits) + ")";
  }
  const char *toType = fusec::dtypeInfo(to).computeCType;
  if (std::string(fusec::dtypeInfo(from).computeCType) == toType)
    return operand;
  if (fusec::isFloat(from) && fusec::isInteger(to))
    return std::string("fusec_float_to_int<") + toType + ">(" + operand + ")";
  return std::string("(") + toType + ")(" + operand + ")";
}

std::string ScalarExprPrinter::print(const ScalarExpr &expr) const {
  // Leaves print as they are; an operand that is itself an expression is
  // parenthesized, so templates need no parentheses around `{0}`.
  auto printOperand = [&](const ScalarExpr *operand) {
    bool leaf = operand->kind == ScalarExpr::Kind::Variable ||
                operand->kind == ScalarExpr::Kind::Literal;
    return leaf ? print(*operand) : "(" + print(*operand) + ")";
  };
  auto operandNames = [&] {
    SmallVector<std::string> names;
    for (const ScalarExpr *operand : expr.operands)
      names.push_back(printOperand(operand));
    return names;
  };
  switch (expr.kind) {
  case ScalarExpr::Kind::Variable:
    return expr.name;
  case ScalarExpr::Kind::Literal:
    return fusec::dtypeInfo(expr.dtype).kind == fusec::DTypeKind::Float
               ? literal(expr.literal, expr.dtype)
               : integerLiteral(expr.integer, expr.dtype);
  // An op on f16/bf16 tensors is computed in f32 and its result rounded to
  // the tensor's dtype, as ONNX defines each op's output: a fused chain
  // gives the numbers of the unfused one. One rounding of the f32 result is
  // the correctly rounded f16/bf16 result of + - * / and sqrt (f32's 24
  // bits are at least twice 11, plus 2). --fast-math keeps the chain in f32
  // instead (roundsEachOp): a 9-op bf16 gelu ran 25% longer rounded.
  case ScalarExpr::Kind::ScaleByReciprocal:
    return roundedTo(roundsEachOp ? expr.dtype : DType::F32,
                     printOperand(expr.operands[0]) + " * " + expr.name);
  case ScalarExpr::Kind::Apply: {
    DType operandDType = expr.operands[0]->dtype;
    std::string expression =
        instantiate(expr.op->cExpression(operandDType), operandNames());
    if (f32Functions &&
        std::string(fusec::dtypeInfo(operandDType).computeCType) == "float")
      expression = renameCalls(expression, *f32Functions);
    return roundedTo(roundsEachOp ? expr.dtype : DType::F32, expression);
  }
  case ScalarExpr::Kind::Select: {
    SmallVector<std::string> names = operandNames();
    return "(" + names[0] + " ? " + names[1] + " : " + names[2] + ")";
  }
  case ScalarExpr::Kind::Bitcast:
    return bitcastExpression(printOperand(expr.operands[0]),
                             expr.operands[0]->dtype, expr.dtype);
  case ScalarExpr::Kind::Cast:
    return castExpression(printOperand(expr.operands[0]),
                          expr.operands[0]->dtype, expr.dtype, expr.saturates,
                          expr.roundMode);
  }
  llvm_unreachable("unknown scalar expression kind");
}

void ScalarExprPrinter::print(ArrayRef<ScalarLet> lets,
                              llvm::raw_ostream &os) const {
  for (const ScalarLet &let : lets)
    os << "const " << fusec::dtypeInfo(let.variable->dtype).computeCType << " "
       << let.variable->name << " = " << print(*let.value) << ";\n";
}

} // namespace fuse
