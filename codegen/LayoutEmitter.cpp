//===- LayoutEmitter.cpp - What the layout printers share ----------------===//

#include "codegen/LayoutEmitter.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/RegionKind.h"
#include "ir/TypeUtils.h"

#include <climits>
#include <cmath>
#include <cstdio>

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse::layout {

namespace {

/// A literal of `dtype`'s storage type whose bits are `bits`.
std::string storageLiteral(DType dtype, const APInt &bits) {
  char text[64];
  auto floating = [&](double value, bool single) -> std::string {
    if (std::isnan(value))
      return "NAN";
    if (std::isinf(value))
      return value < 0 ? "-INFINITY" : "INFINITY";
    std::snprintf(text, sizeof text, single ? "%.9g" : "%.17g", value);
    std::string literal = text;
    if (literal.find_first_of(".e") == std::string::npos)
      literal += ".0";
    return literal + (single ? "f" : "");
  };
  switch (dtype) {
  case DType::F64:
    return floating(APFloat(APFloat::IEEEdouble(), bits).convertToDouble(),
                    false);
  case DType::F32:
    return floating(APFloat(APFloat::IEEEsingle(), bits).convertToFloat(),
                    true);
  case DType::F16:
  case DType::BF16:
    std::snprintf(text, sizeof text, "(uint16_t)0x%04x",
                  static_cast<unsigned>(bits.getZExtValue()));
    return text;
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F4E2M1:
  case DType::F8E8M0:
  case DType::U4:
  case DType::U2:
    std::snprintf(text, sizeof text, "(uint8_t)0x%02x",
                  static_cast<unsigned>(bits.getZExtValue()));
    return text;
  case DType::I1:
    return bits.isZero() ? "false" : "true";
  case DType::I8:
  case DType::I4:
  case DType::I2:
    return "(int8_t)" + std::to_string(bits.getSExtValue());
  case DType::I32:
    if (bits.getSExtValue() == INT32_MIN)
      return "(-2147483647 - 1)";
    return std::to_string(bits.getSExtValue());
  case DType::I64:
    if (bits.getSExtValue() == INT64_MIN)
      return "(-9223372036854775807LL - 1)";
    return std::to_string(bits.getSExtValue()) + "LL";
  case DType::I16:
    return "(int16_t)" + std::to_string(bits.getSExtValue());
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return std::string("(") + fusec::dtypeInfo(dtype).storageCType + ")" +
           std::to_string(bits.getZExtValue()) + "ULL";
  }
  return "0";
}

/// The bits of `value` converted to `elementType` (floats round to nearest
/// even; integers are whole, checked by the verifier).
APInt bitsOf(Type elementType, double value) {
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat converted(value);
    bool lost = false;
    converted.convert(floatType.getFloatSemantics(),
                      APFloat::rmNearestTiesToEven, &lost);
    return converted.bitcastToAPInt();
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width == 1)
    return APInt(1, value != 0 ? 1 : 0);
  return APInt(width, static_cast<uint64_t>(static_cast<int64_t>(value)),
               /*isSigned=*/true, /*implicitTrunc=*/true);
}

Shape shapeOf(Value value) {
  return toShape(cast<RankedTensorType>(value.getType()));
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// `a * b` as text, with the factors 0 and 1 folded.
std::string times(const std::string &a, int64_t b) {
  if (b == 0 || a == "0")
    return "0";
  if (b == 1)
    return a;
  return a + " * " + std::to_string(b);
}

/// Sum of terms, "0" when there are none; `constant` added last.
std::string sum(ArrayRef<std::string> terms, int64_t constant = 0) {
  std::string text;
  for (const std::string &term : terms)
    if (term != "0")
      text += (text.empty() ? "" : " + ") + term;
  if (constant != 0)
    text += text.empty() ? std::to_string(constant)
                         : (constant > 0 ? " + " : " - ") +
                               std::to_string(std::abs(constant));
  return text.empty() ? "0" : text;
}

} // namespace

int64_t LayoutEmitter::shapeElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

std::string LayoutEmitter::load(unsigned k, const std::string &offset) {
  return operandReads[k].pointer.empty()
             ? operandReads[k].literal
             : operandReads[k].pointer + "[" + offset + "]";
}

SmallVector<std::string> LayoutEmitter::coordinates(ArrayRef<int64_t> shape) {
  SmallVector<std::string> coords(shape.size(), "0");
  int64_t outermost = -1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) {
      outermost = d;
      break;
    }
  if (outermost < 0)
    return coords;
  bool needRest = false;
  for (int64_t d = shape.size() - 1; d > outermost; --d)
    needRest |= shape[d] != 1;
  if (needRest)
    os << index << " rest = i;\n";
  for (int64_t d = shape.size() - 1; d >= outermost; --d) {
    if (shape[d] == 1)
      continue;
    coords[d] = "c" + std::to_string(d);
    if (!needRest) {
      os << "const " << index << " " << coords[d] << " = i;\n";
    } else if (d == outermost) {
      os << "const " << index << " " << coords[d] << " = rest;\n";
    } else {
      os << "const " << index << " " << coords[d] << " = rest % " << shape[d]
         << ";\n";
      os << "rest /= " << shape[d] << ";\n";
    }
  }
  return coords;
}

std::array<std::string, 3> LayoutEmitter::split3(int64_t outer, int64_t middle,
                                                 int64_t inner,
                                                 const char *middleName) {
  std::array<std::string, 3> names = {"0", "0", "0"};
  if (inner != 1) {
    names[2] = "r";
    os << "const " << index << " r = i % " << inner << ";\n";
  }
  std::string divided = inner == 1 ? "i" : "i / " + std::to_string(inner);
  if (middle != 1) {
    names[1] = middleName;
    os << "const " << index << " " << middleName << " = ";
    if (outer == 1)
      os << divided << ";\n";
    else
      os << "(" << divided << ") % " << middle << ";\n";
  }
  if (outer != 1) {
    names[0] = "o";
    os << "const " << index << " o = i / " << inner * middle << ";\n";
  }
  return names;
}

std::string LayoutEmitter::description() {
  std::string line = name + ": " + op->getName().stripDialect().str() + " ";
  for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
    auto type = cast<RankedTensorType>(operand.getType());
    line += std::string(k ? ", " : "") + fusec::dtypeName(dtypeOf(type)) + "[" +
            fusec::formatShape(toShape(type)) + "]";
  }
  Value result = op->getResult(0);
  return line + " -> " + fusec::dtypeName(dtypeOf(result.getType())) + "[" +
         fusec::formatShape(shapeOf(result)) + "]";
}

FailureOr<std::string> LayoutEmitter::print() {
  for (Value operand : op->getOperands()) {
    OperandRead read;
    if (auto arg = dyn_cast<BlockArgument>(operand)) {
      read.pointer = "in" + std::to_string(arg.getArgNumber());
    } else {
      auto constant = operand.getDefiningOp<ConstantOp>();
      auto splat =
          constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
      if (!splat)
        return op->emitError()
               << "codegen: an operand of " << describeOp(op)
               << " is neither a region input nor a splat constant";
      DType dtype = dtypeOf(operand.getType());
      APInt bits = isa<FloatType>(splat.getElementType())
                       ? splat.getSplatValue<APFloat>().bitcastToAPInt()
                       : splat.getSplatValue<APInt>();
      read.literal = storageLiteral(dtype, bits);
    }
    operandReads.push_back(read);
  }

  Value result = op->getResult(0);
  DType resultType = dtypeOf(result.getType());
  int64_t count = shapeElements(result);
  os << "// " << description() << "\n";
  printSignature(resultType);
  {
    auto function = os.scope("", "}\n");
    if (count == 0)
      os << "// no elements: nothing to do\n";
    else
      printLoop(count, resultType);
  }
  return text;
}

void LayoutEmitter::printLoop(int64_t count, DType resultType) {
  printLoopHead(symbolicElements ? symbolicElements->cExpression("fusec_dims")
                                 : std::to_string(count),
                resultType);
  auto loop = os.scope("", loopTail());
  if (auto transpose = dyn_cast<TransposeOp>(op))
    printTranspose(transpose);
  else if (auto slice = dyn_cast<SliceOp>(op))
    printSlice(slice);
  else if (auto concat = dyn_cast<ConcatOp>(op))
    printConcat(concat);
  else if (auto gather = dyn_cast<GatherOp>(op))
    printGather(gather);
  else if (auto pad = dyn_cast<PadOp>(op))
    printPad(pad);
  else if (auto argmax = dyn_cast<ArgMaxOp>(op))
    printArgReduction(argmax, /*max=*/true);
  else if (auto argmin = dyn_cast<ArgMinOp>(op))
    printArgReduction(argmin, /*max=*/false);
}

void LayoutEmitter::printTranspose(TransposeOp transpose) {
  Shape strides = fusec::rowMajorStrides(shapeOf(transpose.getOperand()));
  SmallVector<std::string> coords = coordinates(shapeOf(transpose));
  SmallVector<std::string> terms;
  for (auto [d, source] : llvm::enumerate(transpose.getPerm()))
    terms.push_back(times(coords[d], strides[source]));
  os << "out0[i] = " << load(0, sum(terms)) << ";\n";
}

void LayoutEmitter::printSlice(SliceOp slice) {
  ResolvedSlice bounds = resolveSlice(slice);
  Shape strides = fusec::rowMajorStrides(shapeOf(slice.getOperand()));
  SmallVector<std::string> coords = coordinates(bounds.sizes);
  SmallVector<std::string> terms;
  int64_t base = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    base += bounds.starts[d] * strides[d];
    terms.push_back(times(coords[d], bounds.steps[d] * strides[d]));
  }
  std::string offset = sum(terms, base);
  os << "out0[i] = " << load(0, offset) << ";\n";
}

void LayoutEmitter::printConcat(ConcatOp concat) {
  Shape shape = shapeOf(concat);
  int64_t axis = *normalizeAxis(concat.getAxis(), shape.size());
  int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  int64_t chunk = shape[axis] * inner; // one outer step of the result
  std::string o = "0", w = "i";
  if (outer != 1) {
    o = "o";
    w = "w";
    os << "const " << index << " o = i / " << chunk << ";\n";
    os << "const " << index << " w = i - o * " << chunk << ";\n";
  }
  // The operands with elements, and where each ends within a chunk.
  SmallVector<std::pair<unsigned, int64_t>> parts;
  for (auto [k, operand] : llvm::enumerate(concat.getInputs()))
    if (int64_t size = shapeOf(operand)[axis] * inner)
      parts.push_back({static_cast<unsigned>(k), size});
  int64_t begin = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    auto [k, size] = parts[p];
    std::string within = begin == 0 ? w : w + " - " + std::to_string(begin);
    std::string offset = sum({times(o, size), within});
    std::string store = "out0[i] = " + load(k, offset) + ";\n";
    if (parts.size() == 1)
      os << store;
    else if (p == 0)
      os << "if (" << w << " < " << begin + size << ")\n  " << store;
    else if (p + 1 < parts.size())
      os << "else if (" << w << " < " << begin + size << ")\n  " << store;
    else
      os << "else\n  " << store;
    begin += size;
  }
}

void LayoutEmitter::printGather(GatherOp gather) {
  Shape data = shapeOf(gather.getData());
  int64_t axis = *normalizeAxis(gather.getAxis(), data.size());
  int64_t dim = data[axis];
  int64_t inner = product(ArrayRef<int64_t>(data).drop_front(axis + 1));
  int64_t outer = product(ArrayRef<int64_t>(data).take_front(axis));
  int64_t indices = fusec::numElements(shapeOf(gather.getIndices()));
  auto [o, j, r] = split3(outer, indices, inner, "j");
  os << "int64_t k = (int64_t)" << load(1, j) << ";\n";
  os << "if (k < 0)\n  k += " << dim << ";\n";
  std::string offset =
      sum({times(o, dim * inner), times(wide ? "k" : "(int32_t)k", inner), r});
  os << "out0[i] = k >= 0 && k < " << dim << " ? " << load(0, offset) << " : ("
     << storageType(dtypeOf(gather.getType())) << ")0;\n";
}

void LayoutEmitter::printPad(PadOp pad) {
  ResolvedPad bounds = resolvePad(pad);
  Shape input = shapeOf(pad.getOperand());
  Shape strides = fusec::rowMajorStrides(input);
  SmallVector<std::string> coords = coordinates(shapeOf(pad));
  SmallVector<std::string> conditions, terms;
  int64_t base = 0;
  for (size_t d = 0; d < input.size(); ++d) {
    int64_t begin = bounds.begins[d];
    if (begin > 0)
      conditions.push_back(coords[d] + " >= " + std::to_string(begin));
    if (bounds.ends[d] > 0)
      conditions.push_back(coords[d] + " < " +
                           std::to_string(begin + input[d]));
    base -= begin * strides[d];
    terms.push_back(times(coords[d], strides[d]));
  }
  // Conditions on a coordinate folded to 0 are constant: "0 >= 2", fine.
  std::string value = storageLiteral(
      dtypeOf(pad.getType()), bitsOf(pad.getType().getElementType(),
                                     pad.getConstantValue().convertToDouble()));
  if (conditions.empty()) {
    os << "out0[i] = " << load(0, sum(terms, base)) << ";\n";
    return;
  }
  std::string inside;
  for (const std::string &condition : conditions)
    inside += (inside.empty() ? "" : " && ") + condition;
  os << "out0[i] = " << inside << " ? " << load(0, sum(terms, base)) << " : "
     << value << ";\n";
}

template <typename OpTy>
void LayoutEmitter::printArgReduction(OpTy reduction, bool max) {
  Shape input = shapeOf(reduction.getOperand());
  int64_t axis = *normalizeAxis(reduction.getAxis(), input.size());
  int64_t dim = input[axis];
  int64_t inner = product(ArrayRef<int64_t>(input).drop_front(axis + 1));
  int64_t outer = product(ArrayRef<int64_t>(input).take_front(axis));
  DType dtype = dtypeOf(reduction.getOperand().getType());
  const char *computeType = fusec::dtypeInfo(dtype).computeCType;
  auto [o, unused, r] = split3(outer, 1, inner, "");
  (void)unused;
  std::string base = sum({times(o, dim * inner), r});
  os << "const " << index << " base = " << base << ";\n";
  // Whether candidate (v, k) beats (best, bestIndex). NumPy: NaN wins over
  // any number; among equals (and among NaNs) the first index, or the last
  // with select_last_index.
  const bool last = reduction.getSelectLastIndex();
  auto beats = [&](const std::string &v, const std::string &k,
                   const std::string &best, const std::string &bestIndex) {
    std::string order = k + (last ? " > " : " < ") + bestIndex;
    std::string wins = v + (max ? " > " : " < ") + best + " || (" + v +
                       " == " + best + " && " + order + ")";
    if (!fusec::isFloat(dtype))
      return wins;
    return "(" + v + " != " + v + " ? (" + best + " == " + best + " || " +
           order + ") : (" + best + " == " + best + " && (" + wins + ")))";
  };
  if (params.blockPerOutput) {
    printBlockArgReduction(computeType, dtype, dim, beats);
    return;
  }
  os << computeType << " best = " << fromStorage(dtype, load(0, "base"))
     << ";\n";
  os << "int64_t bestIndex = 0;\n";
  os << "for (" << index << " k = 1; k < " << dim << "; ++k) {\n";
  {
    auto loop = os.scope("", "}\n");
    os << "const " << computeType
       << " v = " << fromStorage(dtype, load(0, "base + " + times("k", inner)))
       << ";\n";
    // In index order, k is past every index seen: ties go by `last`.
    std::string compare =
        std::string("v ") + (max ? ">" : "<") + (last ? "=" : "") + " best";
    if (fusec::isFloat(dtype))
      compare += last ? " || v != v" : " || (v != v && best == best)";
    os << "if (" << compare << ") {\n";
    os << "  best = v;\n";
    os << "  bestIndex = k;\n";
    os << "}\n";
  }
  os << "out0[i] = bestIndex;\n";
}

void LayoutEmitter::printBlockArgReduction(const char *, DType, int64_t,
                                           const BeatsFn &) {
  llvm_unreachable("a block per output is a CUDA schedule");
}

} // namespace fuse::layout
