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
using fusec::SymbolicShape;
using fusec::SymbolicSize;

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

/// `a * b` as text, with the factors 0 and 1 folded.
std::string times(const std::string &a, const std::string &b) {
  if (b == "0" || a == "0")
    return "0";
  if (b == "1")
    return a;
  if (a == "1")
    return b;
  return a + " * " + b;
}

/// Sum of terms, "0" when there are none; "a - 2", not "a + -2".
std::string sum(ArrayRef<std::string> terms) {
  std::string text;
  for (const std::string &term : terms) {
    if (term == "0")
      continue;
    if (!text.empty() && term.front() == '-')
      text += " - " + term.substr(1);
    else
      text += (text.empty() ? "" : " + ") + term;
  }
  return text.empty() ? "0" : text;
}

/// The elements of dims [begin, end) of `shape`.
SymbolicSize elementsOf(const SymbolicShape &shape, int64_t begin,
                        int64_t end) {
  return fusec::symbolicElements(
      SymbolicShape(shape.begin() + begin, shape.begin() + end));
}

bool isOne(const SymbolicSize &size) {
  return size == SymbolicSize::constant(1);
}

} // namespace

SymbolicShape LayoutEmitter::shapeOf(Value value) const {
  return dimsOf(symbolic, value);
}

std::string LayoutEmitter::size(const SymbolicSize &size) const {
  return sizeExpression(size, index);
}

std::string LayoutEmitter::load(unsigned k, const std::string &offset) {
  return operandReads[k].pointer.empty()
             ? operandReads[k].literal
             : operandReads[k].pointer + "[" + offset + "]";
}

SmallVector<std::string>
LayoutEmitter::coordinates(const SymbolicShape &shape) {
  SmallVector<std::string> coords(shape.size(), "0");
  int64_t outermost = -1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!isOne(shape[d])) {
      outermost = d;
      break;
    }
  if (outermost < 0)
    return coords;
  bool needRest = false;
  for (int64_t d = shape.size() - 1; d > outermost; --d)
    needRest |= !isOne(shape[d]);
  if (needRest)
    os << index << " rest = i;\n";
  for (int64_t d = shape.size() - 1; d >= outermost; --d) {
    if (isOne(shape[d]))
      continue;
    coords[d] = "c" + std::to_string(d);
    if (!needRest) {
      os << "const " << index << " " << coords[d] << " = i;\n";
    } else if (d == outermost) {
      os << "const " << index << " " << coords[d] << " = rest;\n";
    } else {
      os << "const " << index << " " << coords[d] << " = rest % "
         << size(shape[d]) << ";\n";
      os << "rest /= " << size(shape[d]) << ";\n";
    }
  }
  return coords;
}

std::array<std::string, 3> LayoutEmitter::split3(const SymbolicSize &outer,
                                                 const SymbolicSize &middle,
                                                 const SymbolicSize &inner,
                                                 const char *middleName) {
  std::array<std::string, 3> names = {"0", "0", "0"};
  if (!isOne(inner)) {
    names[2] = "r";
    os << "const " << index << " r = i % " << size(inner) << ";\n";
  }
  std::string divided = isOne(inner) ? "i" : "i / " + size(inner);
  if (!isOne(middle)) {
    names[1] = middleName;
    os << "const " << index << " " << middleName << " = ";
    if (isOne(outer))
      os << divided << ";\n";
    else
      os << "(" << divided << ") % " << size(middle) << ";\n";
  }
  if (!isOne(outer)) {
    names[0] = "o";
    os << "const " << index << " o = i / " << size(inner * middle) << ";\n";
  }
  return names;
}

std::string LayoutEmitter::formatShape(Value value) const {
  if (symbolic)
    return fusec::formatSymbolicShape(shapeOf(value), symbolic->symbols());
  return fusec::formatShape(toShape(cast<RankedTensorType>(value.getType())));
}

std::string LayoutEmitter::description() {
  std::string line = name + ": " + op->getName().stripDialect().str() + " ";
  for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
    auto type = cast<RankedTensorType>(operand.getType());
    line += std::string(k ? ", " : "") + fusec::dtypeName(dtypeOf(type)) + "[" +
            formatShape(operand) + "]";
  }
  Value result = op->getResult(0);
  return line + " -> " + fusec::dtypeName(dtypeOf(result.getType())) + "[" +
         formatShape(result) + "]";
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
  os << "// " << description() << "\n";
  printSignature(resultType);
  {
    auto function = os.scope("", "}\n");
    if (cast<ShapedType>(result.getType()).getNumElements() == 0)
      os << "// no elements: nothing to do\n";
    else
      printLoop(resultType);
  }
  return text;
}

void LayoutEmitter::printLoop(DType resultType) {
  printLoopHead(fusec::symbolicElements(shapeOf(op->getResult(0)))
                    .cExpression("fusec_dims"),
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
  SymbolicShape strides =
      fusec::rowMajorStrides(shapeOf(transpose.getOperand()));
  SmallVector<std::string> coords = coordinates(shapeOf(transpose));
  SmallVector<std::string> terms;
  for (auto [d, source] : llvm::enumerate(transpose.getPerm()))
    terms.push_back(times(coords[d], size(strides[source])));
  os << "out0[i] = " << load(0, sum(terms)) << ";\n";
}

void LayoutEmitter::printSlice(SliceOp slice) {
  ResolvedSlice bounds = resolveSlice(slice);
  SymbolicShape strides = fusec::rowMajorStrides(shapeOf(slice.getOperand()));
  SmallVector<std::string> coords = coordinates(shapeOf(slice));
  SmallVector<std::string> terms;
  for (size_t d = 0; d < strides.size(); ++d) {
    terms.push_back(times(
        coords[d], size(strides[d] * SymbolicSize::constant(bounds.steps[d]))));
    terms.push_back(
        size(strides[d] * SymbolicSize::constant(bounds.starts[d])));
  }
  os << "out0[i] = " << load(0, sum(terms)) << ";\n";
}

void LayoutEmitter::printConcat(ConcatOp concat) {
  SymbolicShape shape = shapeOf(concat);
  int64_t axis = *normalizeAxis(concat.getAxis(), shape.size());
  // A chunk (one outer step of the result) holds each part's slab in turn;
  // a part's slab is its length along the axis times `inner`, sizes that
  // may be symbolic (a cache grown by concatenation).
  SymbolicSize inner = elementsOf(shape, axis + 1, shape.size());
  SymbolicSize outer = elementsOf(shape, 0, axis);
  SymbolicSize chunk = shape[axis] * inner;
  std::string o = "0", w = "i";
  if (!isOne(outer)) {
    o = "o";
    w = "w";
    os << "const " << index << " o = i / " << size(chunk) << ";\n";
    os << "const " << index << " w = i - o * " << size(chunk) << ";\n";
  }
  // The operands with elements, and each one's slab.
  SmallVector<std::pair<unsigned, std::string>> parts;
  for (auto [k, operand] : llvm::enumerate(concat.getInputs())) {
    SymbolicSize length = shapeOf(operand)[axis];
    if (length != SymbolicSize::constant(0))
      parts.push_back({static_cast<unsigned>(k), size(length * inner)});
  }
  // Where the parts before end: their fixed lengths summed, and the
  // symbolic slabs.
  int64_t fixedBefore = 0;
  SmallVector<std::string> symbolicBefore;
  auto end = [&] {
    SmallVector<std::string> terms = symbolicBefore;
    terms.push_back(size(SymbolicSize::constant(fixedBefore) * inner));
    return sum(terms);
  };
  for (size_t p = 0; p < parts.size(); ++p) {
    const auto &[k, slab] = parts[p];
    std::string within = w;
    if (!symbolicBefore.empty())
      within += " - (" + end() + ")";
    else if (fixedBefore != 0)
      within += " - " + end();
    std::string offset = sum({times(o, slab), within});
    std::string store = "out0[i] = " + load(k, offset) + ";\n";
    SymbolicSize length = shapeOf(concat.getInputs()[k])[axis];
    if (length.isStatic())
      fixedBefore += length.factor;
    else
      symbolicBefore.push_back(slab);
    if (parts.size() == 1)
      os << store;
    else if (p == 0)
      os << "if (" << w << " < " << end() << ")\n  " << store;
    else if (p + 1 < parts.size())
      os << "else if (" << w << " < " << end() << ")\n  " << store;
    else
      os << "else\n  " << store;
  }
}

void LayoutEmitter::printGather(GatherOp gather) {
  SymbolicShape data = shapeOf(gather.getData());
  int64_t axis = *normalizeAxis(gather.getAxis(), data.size());
  SymbolicSize dim = data[axis];
  SymbolicSize inner = elementsOf(data, axis + 1, data.size());
  SymbolicSize outer = elementsOf(data, 0, axis);
  SymbolicSize indices = fusec::symbolicElements(shapeOf(gather.getIndices()));
  auto [o, j, r] = split3(outer, indices, inner, "j");
  os << "int64_t k = (int64_t)" << load(1, j) << ";\n";
  os << "if (k < 0)\n  k += " << size(dim) << ";\n";
  std::string offset = sum({times(o, size(dim * inner)),
                            times(wide ? "k" : "(int32_t)k", size(inner)), r});
  os << "out0[i] = k >= 0 && k < " << size(dim) << " ? " << load(0, offset)
     << " : (" << storageType(dtypeOf(gather.getType())) << ")0;\n";
}

void LayoutEmitter::printPad(PadOp pad) {
  ResolvedPad bounds = resolvePad(pad);
  SymbolicShape input = shapeOf(pad.getOperand());
  SymbolicShape strides = fusec::rowMajorStrides(input);
  SmallVector<std::string> coords = coordinates(shapeOf(pad));
  SmallVector<std::string> conditions, terms;
  for (size_t d = 0; d < input.size(); ++d) {
    int64_t begin = bounds.begins[d];
    if (begin > 0)
      conditions.push_back(coords[d] + " >= " + std::to_string(begin));
    if (bounds.ends[d] > 0)
      conditions.push_back(coords[d] + " < " +
                           (begin ? std::to_string(begin) + " + " : "") +
                           size(input[d]));
    terms.push_back(times(coords[d], size(strides[d])));
    if (begin != 0)
      terms.push_back(size(strides[d] * SymbolicSize::constant(-begin)));
  }
  // Conditions on a coordinate folded to 0 are constant: "0 >= 2", fine.
  std::string value = storageLiteral(
      dtypeOf(pad.getType()), bitsOf(pad.getType().getElementType(),
                                     pad.getConstantValue().convertToDouble()));
  if (conditions.empty()) {
    os << "out0[i] = " << load(0, sum(terms)) << ";\n";
    return;
  }
  std::string inside;
  for (const std::string &condition : conditions)
    inside += (inside.empty() ? "" : " && ") + condition;
  os << "out0[i] = " << inside << " ? " << load(0, sum(terms)) << " : " << value
     << ";\n";
}

template <typename OpTy>
void LayoutEmitter::printArgReduction(OpTy reduction, bool max) {
  SymbolicShape input = shapeOf(reduction.getOperand());
  int64_t axis = *normalizeAxis(reduction.getAxis(), input.size());
  SymbolicSize dimSize = input[axis];
  std::string dim = size(dimSize);
  SymbolicSize inner = elementsOf(input, axis + 1, input.size());
  SymbolicSize outer = elementsOf(input, 0, axis);
  DType dtype = dtypeOf(reduction.getOperand().getType());
  const char *computeType = fusec::dtypeInfo(dtype).computeCType;
  auto [o, unused, r] = split3(outer, SymbolicSize::constant(1), inner, "");
  (void)unused;
  std::string base = sum({times(o, size(dimSize * inner)), r});
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
    os << "const " << computeType << " v = "
       << fromStorage(dtype, load(0, "base + " + times("k", size(inner))))
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

void LayoutEmitter::printBlockArgReduction(const char *, DType,
                                           const std::string &,
                                           const BeatsFn &) {
  llvm_unreachable("a block per output is a CUDA schedule");
}

} // namespace fuse::layout
