//===- KernelRepro.cpp - Standalone programs of single kernels -----------===//
//
// A repro is one C++ (CPU) or CUDA C + driver API (GPU) program per kernel.
// Its parts, in order: the kernel (included on the CPU, held as a string and
// compiled by NVRTC on the GPU), a support block that is the same in every
// repro (a seeded generator, buffers, index helpers, the checker, timing),
// then `main`: inputs, the kernel's run as the runtime does it, the
// reference, the checks and the timing.
//
// The reference is written from the region's fuse ops, one loop nest per op
// over whole tensors, unfused and unvectorized, floats in double. Each op's
// per-element C comes from the elementwise op table through the C++
// target's ScalarExprPrinter (evaluated on doubles), reduction combiners are
// the table's add/mul/max/min rows, and layout ops resolve their attributes
// with ir/LayoutOps.h: no second copy of any op's semantics.
//
//===----------------------------------------------------------------------===//

#include "tools/lib/KernelRepro.h"

#include "codegen/EmbeddedSources.h"
#include "codegen/PointwiseKernel.h"
#include "codegen/RegionKind.h"
#include "codegen/ScalarExpr.h"
#include "codegen/ScalarExprPrinter.h"
#include "ir/ElementwiseOps.h"
#include "ir/FuseDialect.h"
#include "ir/LayoutOps.h"
#include "ir/TypeUtils.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Compare.h"
#include "runtime/cuda/CudaApi.h"
#include "tools/lib/ReproSources.h"

#include "llvm/ADT/StringExtras.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/IndentedOstream.h"

#include <cctype>
#include <cstdio>
#include <optional>
#include <sstream>

using namespace mlir;
using fusec::BufferDesc;
using fusec::BufferRole;
using fusec::DType;
using fusec::KernelDesc;
using fusec::Shape;

namespace fuse {

namespace {

/// Constants up to this size are copied into a repro; larger ones are
/// filled like inputs (and the repro says so).
constexpr size_t kMaxEmbeddedConstantBytes = 64 * 1024;

/// The host compiler flags of a CPU repro: the runtime's flags for kernel
/// code (KernelCache::hostKernelCodeFlags), building an executable.
std::string cpuBuildFlags() {
  return llvm::join(fusec::KernelCache::hostKernelCodeFlags(), " ");
}
/// A CUDA repro: host code only (NVRTC compiles the kernel at run time);
/// -fwrapv because the integer reference wraps as kernels do.
constexpr const char *kCudaBuildFlags = "-O2 -std=c++17 -Xcompiler -fwrapv";
constexpr const char *kCudaLibraries = "-lnvrtc -lcuda";

/// "-1", "0.5": a number in a comment.
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

/// `text` as a C string literal.
std::string stringLiteral(const std::string &text) {
  std::string literal = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      literal += '\\';
    literal += c == '\n' ? ' ' : c;
  }
  return literal + "\"";
}

std::string shapeText(const Shape &shape) {
  std::string text;
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  return text;
}

/// "f32[8x16]"
std::string typeText(DType dtype, const Shape &shape) {
  return std::string(fusec::dtypeName(dtype)) + "[" + shapeText(shape) + "]";
}

/// A C++ initializer of a shape: "{8, 16}".
std::string shapeInitializer(llvm::ArrayRef<int64_t> shape) {
  std::string text = "{";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "}";
}

/// How the reference holds a value of `dtype`: floats in double, integers
/// and bools in the type kernels compute them in (so that they wrap alike).
std::string referenceType(DType dtype) {
  return fusec::isFloat(dtype) ? "double" : computeType(dtype);
}

/// A node of the printer's expression tree (ScalarExpr.h).
ScalarExpr node(ScalarExpr::Kind kind, DType dtype, std::string name = "") {
  ScalarExpr expr;
  expr.kind = kind;
  expr.dtype = dtype;
  expr.name = std::move(name);
  return expr;
}

/// `value` (a double expression) converted to `dtype` as fusec's cast does
/// (f16/bf16 rounded once), then held in the reference's type again.
std::string roundedTo(DType dtype, const std::string &value) {
  ScalarExpr source = node(ScalarExpr::Kind::Variable, DType::F64, value);
  ScalarExpr cast = node(ScalarExpr::Kind::Cast, dtype);
  cast.operands.push_back(&source);
  return ScalarExprPrinter().print(cast);
}

/// A variable name for a value of the region: "%arg0" -> "arg0", "%3" ->
/// "v3", as the IR in the comments names them.
std::string variableName(Value value, AsmState &state) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  value.printAsOperand(os, state);
  std::string name;
  for (char c : printed)
    if (std::isalnum(static_cast<unsigned char>(c)))
      name += c;
    else if (c == '#')
      name += '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = "v" + name;
  return name;
}

std::string printedOp(Operation &op, AsmState &state) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op.print(os, state);
  // One line: the IR of an op is short, but keep comments tidy.
  for (char &c : text)
    if (c == '\n')
      c = ' ';
  return text;
}

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Where a kernel input's elements are drawn from.
struct InputRange {
  double low = -1, high = 1;
  std::string why = "modest range";
};

/// The range that keeps the first op with a restricted domain defined
/// (log, sqrt: positive; asin: (-1, 1); acosh: > 1), following the input
/// through views, broadcasts and casts; gather indices cover their dim
/// (negative ones included) and integers stay small.
InputRange inputRange(BlockArgument argument) {
  DType dtype = dtypeOf(argument.getType());
  InputRange range;
  if (!fusec::isFloat(dtype)) {
    range = {-8, 8, "small integers"};
    if (dtype == DType::I1)
      range = {0, 1, "bools"};
  }
  SmallVector<Value> pending = {argument};
  for (size_t i = 0; i < pending.size() && i < 64; ++i) {
    for (OpOperand &use : pending[i].getUses()) {
      Operation *user = use.getOwner();
      if (auto gather = dyn_cast<GatherOp>(user);
          gather && use.getOperandNumber() == 1) {
        RankedTensorType data = tensorType(gather.getData());
        int64_t axis = static_cast<int64_t>(gather.getAxis());
        if (axis < 0)
          axis += data.getRank();
        int64_t dim = data.getDimSize(axis);
        return {static_cast<double>(-dim),
                static_cast<double>(std::max<int64_t>(dim - 1, 0)),
                "gather indices"};
      }
      if (isa<BroadcastToOp, ReshapeOp, CastOp>(user)) {
        pending.push_back(user->getResult(0));
        continue;
      }
      auto elementwise = dyn_cast<ElementwiseOpInterface>(user);
      if (!elementwise || !fusec::isFloat(dtype))
        continue;
      const ElementwiseOpInfo &info = elementwise.getInfo();
      switch (info.domain) {
      case InputDomain::Real:
        break;
      case InputDomain::Positive:
        return {0.5, 2, std::string("positive for ") + info.mnemonic};
      case InputDomain::Unit:
        return {-0.9, 0.9, std::string("in (-1, 1) for ") + info.mnemonic};
      case InputDomain::AboveOne:
        return {1.1, 3, std::string("above 1 for ") + info.mnemonic};
      }
    }
  }
  return range;
}

/// The reference of one region, as statements of `main`: one loop nest per
/// op, reading the inputs' buffers and leaving each op's result in a
/// std::vector named after its value.
class ReferenceWriter {
public:
  ReferenceWriter(FusionOp fusion, raw_indented_ostream &os,
                  const std::string &lastDiagnostic)
      : fusion(fusion), state(fusion->getParentOp()), os(os),
        lastDiagnostic(lastDiagnostic) {}

  /// Names of the values the kernel's outputs are checked against.
  std::vector<std::string> outputNames;

  /// Writes the reference; on an op it cannot evaluate, returns why.
  std::optional<std::string> write(llvm::ArrayRef<std::string> inputBuffers) {
    Block &body = fusion.getBody().front();
    for (BlockArgument argument : body.getArguments()) {
      DType dtype = dtypeOf(argument.getType());
      std::string name = nameOf(argument);
      const std::string &buffer = inputBuffers[argument.getArgNumber()];
      int64_t count = tensorType(argument).getNumElements();
      os << "// %" << name << " holds the elements of " << buffer << ".\n";
      os << "std::vector<" << referenceType(dtype) << "> " << name << "("
         << count << ");\n";
      os << "for (int64_t i = 0; i < " << count << "; ++i)\n";
      os << "  " << name << "[i] = "
         << fromStorage(dtype, buffer + ".as<" + storageType(dtype) + ">()[i]")
         << ";\n";
    }
    for (Operation &op : body.without_terminator()) {
      os << "// " << printedOp(op, state) << "\n";
      if (std::optional<std::string> problem = writeOp(op))
        return describeOp(&op) + ": " + *problem;
    }
    for (Value value : fusion.getYield().getValues())
      outputNames.push_back(nameOf(value));
    return std::nullopt;
  }

private:
  std::string nameOf(Value value) { return variableName(value, state); }

  /// `std::vector<T> NAME(count[, init]);` for an op's result.
  void declareResult(Value result, const std::string &init = "") {
    os << "std::vector<" << referenceType(dtypeOf(result.getType())) << "> "
       << nameOf(result) << "(" << tensorType(result).getNumElements()
       << (init.empty() ? "" : ", " + init) << ");\n";
  }

  /// `for (int64_t i = 0; i < count; ++i) {` and its scope.
  raw_indented_ostream::DelimitedScope loop(const std::string &index,
                                            int64_t count) {
    os << "for (int64_t " << index << " = 0; " << index << " < " << count
       << "; ++" << index << ") {\n";
    return os.scope("", "}\n");
  }

  /// `const repro::Shape NAME = {...};`
  void declareShape(const std::string &name, llvm::ArrayRef<int64_t> shape) {
    os << "const repro::Shape " << name << " = " << shapeInitializer(shape)
       << ";\n";
  }

  std::optional<std::string> writeOp(Operation &op) {
    if (isa<ElementwiseOpInterface, SelectOp, CastOp, BitcastOp, ConstantOp>(
            op))
      return writeElementwise(op);
    if (auto broadcast = dyn_cast<BroadcastToOp>(op))
      return writeBroadcast(broadcast);
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      // Row-major element order is kept: the same elements.
      os << "const std::vector<" << referenceType(dtypeOf(reshape.getType()))
         << "> &" << nameOf(reshape) << " = " << nameOf(reshape.getOperand())
         << ";\n";
      return std::nullopt;
    }
    if (auto reduction = dyn_cast<ReductionOpInterface>(op))
      return writeReduction(op, reduction);
    if (auto transpose = dyn_cast<TransposeOp>(op))
      return writeTranspose(transpose);
    if (auto slice = dyn_cast<SliceOp>(op))
      return writeSlice(slice);
    if (auto concat = dyn_cast<ConcatOp>(op))
      return writeConcat(concat);
    if (auto gather = dyn_cast<GatherOp>(op))
      return writeGather(gather);
    if (auto pad = dyn_cast<PadOp>(op))
      return writePad(pad);
    if (auto argmax = dyn_cast<ArgMaxOp>(op))
      return writeArgReduction(op, /*isMax=*/true, argmax.getAxis(),
                               argmax.getSelectLastIndex());
    if (auto argmin = dyn_cast<ArgMinOp>(op))
      return writeArgReduction(op, /*isMax=*/false, argmin.getAxis(),
                               argmin.getSelectLastIndex());
    if (auto gemv = dyn_cast<QuantizedMatmulOp>(op))
      return writeQuantizedMatmul(gemv);
    if (auto attention = dyn_cast<AttentionOp>(op))
      return writeAttention(attention);
    return std::string("no reference for this op");
  }

  /// Ops of the op table, select, cast and splat constants: the C++
  /// target's expression of the op on operands named x0, x1, x2, each read
  /// at the element NumPy broadcasting gives it.
  std::optional<std::string> writeElementwise(Operation &op) {
    Value result = op.getResult(0);
    ScalarExprBuilder builder("r");
    for (auto [index, operand] : llvm::enumerate(op.getOperands()))
      builder.bind(operand, "x" + std::to_string(index));
    ScalarLets lets;
    if (failed(builder.build(op, lets)) || lets.size() != 1)
      return "no scalar expression (" + lastDiagnostic + ")";
    std::string expression = ScalarExprPrinter().print(*lets.front().value);
    if (isa<ConstantOp>(op)) {
      declareResult(result, expression);
      return std::nullopt;
    }
    RankedTensorType type = tensorType(result);
    declareResult(result);
    bool broadcasts = llvm::any_of(op.getOperands(), [&](Value operand) {
      return tensorType(operand).getShape() != type.getShape();
    });
    std::optional<raw_indented_ostream::DelimitedScope> shapeScope;
    if (broadcasts) {
      shapeScope.emplace(os, "{\n", "}\n");
      declareShape("shape", type.getShape());
    }
    auto body = loop("i", type.getNumElements());
    for (auto [index, operand] : llvm::enumerate(op.getOperands())) {
      RankedTensorType operandType = tensorType(operand);
      std::string element = "i";
      if (operandType.getShape() != type.getShape())
        element = "repro::broadcastOffset(i, shape, " +
                  shapeInitializer(operandType.getShape()) + ")";
      os << "const " << referenceType(dtypeOf(operandType)) << " x" << index
         << " = " << nameOf(operand) << "[" << element << "];\n";
    }
    os << nameOf(result) << "[i] = " << expression << ";\n";
    return std::nullopt;
  }

  std::optional<std::string> writeBroadcast(BroadcastToOp op) {
    RankedTensorType type = tensorType(op);
    declareResult(op);
    os << "{\n";
    {
      auto scope = os.scope();
      declareShape("shape", type.getShape());
      declareShape("from", tensorType(op.getOperand()).getShape());
      auto body = loop("i", type.getNumElements());
      os << nameOf(op) << "[i] = " << nameOf(op.getOperand())
         << "[repro::broadcastOffset(i, shape, from)];\n";
    }
    os << "}\n";
    return std::nullopt;
  }

  /// Every operand element combined into its result element with the op
  /// table's add, mul, max or min (NaN propagating), from the identity.
  std::optional<std::string> writeReduction(Operation &op,
                                            ReductionOpInterface reduction) {
    Value operand = reduction.getReducedOperand();
    RankedTensorType operandType = tensorType(operand);
    DType dtype = dtypeOf(operandType);
    std::string type = referenceType(dtype);
    const char *combinerOp = nullptr, *identity = nullptr;
    switch (reduction.getCombiner()) {
    case ReductionCombiner::Sum:
      combinerOp = "add";
      identity = "0";
      break;
    case ReductionCombiner::Prod:
      combinerOp = "mul";
      identity = "1";
      break;
    case ReductionCombiner::Max:
      combinerOp = "max";
      identity = "lowest";
      break;
    case ReductionCombiner::Min:
      combinerOp = "min";
      identity = "highest";
      break;
    }
    std::string init = identity;
    if (init == "lowest" || init == "highest")
      init = "FusecLimits<" + type + ">::" + init + "()";
    ScalarExpr accumulator = node(ScalarExpr::Kind::Variable, dtype, "acc");
    ScalarExpr element = node(ScalarExpr::Kind::Variable, dtype, "x");
    ScalarExpr combine = node(ScalarExpr::Kind::Apply, dtype);
    combine.op = lookupElementwiseOp(combinerOp);
    combine.operands = {&accumulator, &element};
    std::string reduced = "{";
    llvm::ArrayRef<int64_t> axes = reduction.getReducedAxes();
    for (int64_t d = 0; d < operandType.getRank(); ++d)
      reduced += std::string(d ? ", " : "") +
                 (llvm::is_contained(axes, d) ? "true" : "false");
    reduced += "}";

    Value result = op.getResult(0);
    declareResult(result, init);
    os << "{\n";
    {
      auto scope = os.scope();
      declareShape("shape", operandType.getShape());
      os << "const std::vector<bool> reduced = " << reduced << ";\n";
      auto body = loop("i", operandType.getNumElements());
      os << type << " &acc = " << nameOf(result)
         << "[repro::reducedOffset(i, shape, reduced)];\n";
      os << "const " << type << " x = " << nameOf(operand) << "[i];\n";
      os << "acc = " << ScalarExprPrinter().print(combine) << ";\n";
    }
    os << "}\n";
    return std::nullopt;
  }

  /// For each result element, `coords` (its coordinates) are mapped to
  /// `source` (the operand's) by `mapping`, then copied.
  /// `element` (default: the operand at `source`) is what is copied.
  void writeGatheringLoop(Value result, Value operand,
                          const std::string &mapping,
                          const std::string &element = "") {
    RankedTensorType type = tensorType(result);
    RankedTensorType operandType = tensorType(operand);
    declareResult(result);
    os << "{\n";
    {
      auto scope = os.scope();
      declareShape("shape", type.getShape());
      declareShape("from", operandType.getShape());
      os << "int64_t coords[" << std::max<int64_t>(type.getRank(), 1)
         << "], source[" << std::max<int64_t>(operandType.getRank(), 1)
         << "];\n";
      auto body = loop("i", type.getNumElements());
      os << "repro::coordinates(i, shape, coords);\n";
      os << mapping;
      os << nameOf(result) << "[i] = "
         << (element.empty() ? nameOf(operand) + "[repro::offset(source, from)]"
                             : element)
         << ";\n";
    }
    os << "}\n";
  }

  std::optional<std::string> writeTranspose(TransposeOp op) {
    // Result dim d is operand dim perm[d].
    std::string mapping;
    for (auto [d, from] : llvm::enumerate(op.getPerm()))
      mapping += "source[" + std::to_string(from) + "] = coords[" +
                 std::to_string(d) + "];\n";
    writeGatheringLoop(op, op.getOperand(), mapping);
    return std::nullopt;
  }

  std::optional<std::string> writeSlice(SliceOp op) {
    ResolvedSlice slice = resolveSlice(op);
    std::string mapping;
    for (size_t d = 0; d < slice.starts.size(); ++d)
      mapping += "source[" + std::to_string(d) +
                 "] = " + std::to_string(slice.starts[d]) + " + coords[" +
                 std::to_string(d) + "] * " + std::to_string(slice.steps[d]) +
                 ";\n";
    writeGatheringLoop(op, op.getOperand(), mapping);
    return std::nullopt;
  }

  std::optional<std::string> writeConcat(ConcatOp op) {
    RankedTensorType type = tensorType(op);
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += type.getRank();
    declareResult(op);
    os << "{\n";
    {
      auto scope = os.scope();
      declareShape("shape", type.getShape());
      os << "int64_t coords[" << std::max<int64_t>(type.getRank(), 1) << "];\n";
      // Each operand's elements land `start` further along the axis.
      int64_t start = 0;
      for (Value input : op.getInputs()) {
        RankedTensorType inputType = tensorType(input);
        os << "{\n";
        {
          auto inner = os.scope();
          declareShape("from", inputType.getShape());
          auto body = loop("j", inputType.getNumElements());
          os << "repro::coordinates(j, from, coords);\n";
          os << "coords[" << axis << "] += " << start << ";\n";
          os << nameOf(op)
             << "[repro::offset(coords, shape)] = " << nameOf(input)
             << "[j];\n";
        }
        os << "}\n";
        start += inputType.getDimSize(axis);
      }
    }
    os << "}\n";
    return std::nullopt;
  }

  std::optional<std::string> writeGather(GatherOp op) {
    RankedTensorType type = tensorType(op);
    RankedTensorType data = tensorType(op.getData());
    RankedTensorType indices = tensorType(op.getIndices());
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += data.getRank();
    int64_t q = indices.getRank(), dim = data.getDimSize(axis);
    DType dtype = dtypeOf(type);
    declareResult(op);
    os << "{\n";
    {
      auto scope = os.scope();
      declareShape("shape", type.getShape());
      declareShape("from", data.getShape());
      declareShape("indexShape", indices.getShape());
      os << "int64_t coords[" << std::max<int64_t>(type.getRank(), 1)
         << "], source[" << std::max<int64_t>(data.getRank(), 1) << "], index["
         << std::max<int64_t>(q, 1) << "];\n";
      auto body = loop("i", type.getNumElements());
      // Result coords: data's dims before axis, indices' dims, data's after.
      os << "repro::coordinates(i, shape, coords);\n";
      os << "for (int d = 0; d < " << axis << "; ++d)\n"
         << "  source[d] = coords[d];\n";
      os << "for (int d = 0; d < " << q << "; ++d)\n"
         << "  index[d] = coords[" << axis << " + d];\n";
      os << "for (int d = " << axis + 1 << "; d < " << data.getRank()
         << "; ++d)\n"
         << "  source[d] = coords[d + " << q - 1 << "];\n";
      os << "int64_t k = (int64_t)" << nameOf(op.getIndices())
         << "[repro::offset(index, indexShape)];\n";
      os << "if (k < 0)\n  k += " << dim << ";\n";
      // Out of range: 0 on every target (ir/LayoutOps.td).
      os << "source[" << axis << "] = k;\n";
      os << nameOf(op) << "[i] = k >= 0 && k < " << dim << " ? "
         << nameOf(op.getData()) << "[repro::offset(source, from)] : ("
         << referenceType(dtype) << ")0;\n";
    }
    os << "}\n";
    return std::nullopt;
  }

  std::optional<std::string> writePad(PadOp op) {
    RankedTensorType type = tensorType(op);
    RankedTensorType operandType = tensorType(op.getOperand());
    DType dtype = dtypeOf(type);
    ResolvedPad pad = resolvePad(op);
    double value = op.getConstantValue().convertToDouble();
    std::string constant =
        fusec::isFloat(dtype)
            ? roundedTo(dtype, ScalarExprPrinter::literal(value, DType::F64))
            : ScalarExprPrinter::integerLiteral(static_cast<int64_t>(value),
                                                dtype);
    std::string mapping = "bool inside = true;\n";
    for (int64_t d = 0; d < type.getRank(); ++d)
      mapping += "source[" + std::to_string(d) + "] = coords[" +
                 std::to_string(d) + "] - " + std::to_string(pad.begins[d]) +
                 ";\ninside = inside && source[" + std::to_string(d) +
                 "] >= 0 && source[" + std::to_string(d) + "] < " +
                 std::to_string(operandType.getDimSize(d)) + ";\n";
    writeGatheringLoop(op, op.getOperand(), mapping,
                       "inside ? " + nameOf(op.getOperand()) +
                           "[repro::offset(source, from)] : " + constant);
    return std::nullopt;
  }

  /// The index of the first (last) extreme along the axis; NaN is more
  /// extreme than any number (NumPy).
  std::optional<std::string> writeArgReduction(Operation &op, bool isMax,
                                               uint64_t rawAxis,
                                               bool selectLast) {
    Value operand = op.getOperand(0);
    RankedTensorType operandType = tensorType(operand);
    int64_t axis = static_cast<int64_t>(rawAxis);
    if (axis < 0)
      axis += operandType.getRank();
    int64_t dim = operandType.getDimSize(axis);
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < operandType.getRank(); ++d)
      inner *= operandType.getDimSize(d);
    int64_t outer = dim == 0 ? 0 : operandType.getNumElements() / dim / inner;
    std::string type = referenceType(dtypeOf(operandType));
    const char *better =
        isMax ? (selectLast ? ">=" : ">") : (selectLast ? "<=" : "<");
    Value result = op.getResult(0);
    declareResult(result);
    auto outerLoop = loop("o", outer);
    auto innerLoop = loop("n", inner);
    os << "int64_t best = 0;\n";
    os << type << " bestValue = " << nameOf(operand) << "[o * " << dim * inner
       << " + n];\n";
    {
      auto scan = loop("j", dim);
      os << "const " << type << " v = " << nameOf(operand) << "[o * "
         << dim * inner << " + j * " << inner << " + n];\n";
      os << "const bool take = bestValue != bestValue ? "
         << (selectLast ? "v != v" : "false") << " : v != v || v " << better
         << " bestValue;\n";
      os << "if (take) {\n  best = j;\n  bestValue = v;\n}\n";
    }
    os << nameOf(result) << "[o * " << inner << " + n] = best;\n";
    return std::nullopt;
  }

  /// lhs [rows, k] @ dequantized weight [n, k]^T: each weight as
  /// DequantizeLinear gives it (f32 product rounded to the scale's dtype),
  /// products summed in double.
  std::optional<std::string> writeQuantizedMatmul(QuantizedMatmulOp op) {
    RankedTensorType lhs = tensorType(op.getLhs());
    RankedTensorType weight = tensorType(op.getWeight());
    DType scaleDType = dtypeOf(op.getScale().getType());
    int64_t n = weight.getDimSize(0), k = weight.getDimSize(1);
    int64_t rows = k == 0 ? 0 : lhs.getNumElements() / k;
    if (k == 0)
      rows = tensorType(op).getNumElements() / std::max<int64_t>(n, 1);
    std::string dequantized =
        roundedTo(scaleDType, "(float)" + nameOf(op.getWeight()) + "[j * " +
                                  std::to_string(k) + " + c] * (float)" +
                                  nameOf(op.getScale()) + "[j]");
    declareResult(op);
    auto rowLoop = loop("r", rows);
    auto channelLoop = loop("j", n);
    os << "double sum = 0;\n";
    {
      auto inner = loop("c", k);
      os << "sum += " << nameOf(op.getLhs()) << "[r * " << k << " + c] * "
         << dequantized << ";\n";
    }
    os << nameOf(op) << "[r * " << n << " + j] = sum;\n";
    return std::nullopt;
  }

  /// `auto NAME = [&](b, h, t, d)`: element (b, h, t, d) of an attention
  /// operand or result, [B, H, T, D] or [B, T, C] with head h at `column` +
  /// h * headDim.
  void declareHeadAccessor(const std::string &name, Value value,
                           int64_t headDim, int64_t column) {
    ArrayRef<int64_t> shape = tensorType(value).getShape();
    bool tokens = shape.size() == 3;
    int64_t rowStride = tokens ? shape[2] : shape[3];
    int64_t headStride = tokens ? headDim : shape[2] * shape[3];
    int64_t batchStride = tokens ? shape[1] * shape[2] : shape[1] * headStride;
    os << "auto " << name
       << " = [&](int64_t b, int64_t h, int64_t t, int64_t d) -> auto & "
          "{ return "
       << nameOf(value) << "[" << column << " + b * " << batchStride
       << " + h * " << headStride << " + t * " << rowStride << " + d]; };\n";
  }

  /// Softmax(scale * q k^T + bias, hidden keys -inf) v in double, row by
  /// row, the max subtracted (ir/AttentionOps.td).
  std::optional<std::string> writeAttention(AttentionOp op) {
    const int64_t heads = static_cast<int64_t>(op.getNumHeads());
    const int64_t group = heads / static_cast<int64_t>(op.getKvNumHeads());
    const int64_t headDim = static_cast<int64_t>(op.getHeadDim());
    const int64_t valueHeadDim = static_cast<int64_t>(op.getValueHeadDim());
    const int64_t queries = op.getQueryLength(), keys = op.getKeyLength();
    const int64_t offset = static_cast<int64_t>(op.getCausalOffset());
    const int64_t window = static_cast<int64_t>(op.getWindowLeft());
    declareResult(op);
    raw_indented_ostream::DelimitedScope scope(os, "{\n", "}\n");
    declareHeadAccessor("q_at", op.getQuery(), headDim,
                        static_cast<int64_t>(op.getQueryColumn()));
    declareHeadAccessor("k_at", op.getKey(), headDim,
                        static_cast<int64_t>(op.getKeyColumn()));
    declareHeadAccessor("v_at", op.getValue(), valueHeadDim,
                        static_cast<int64_t>(op.getValueColumn()));
    declareHeadAccessor("out_at", op.getResult(), valueHeadDim, 0);
    if (Value bias = op.getBias())
      declareShape("scores_shape", {op.getBatch(), heads, queries, keys});
    os << "std::vector<double> s(" << keys << ");\n";
    auto batchLoop = loop("b", op.getBatch());
    auto headLoop = loop("h", heads);
    auto rowLoop = loop("i", queries);
    os << "double max = -INFINITY;\n";
    {
      auto keyLoop = loop("j", keys);
      os << "double dot = 0;\n";
      {
        auto dLoop = loop("d", headDim);
        os << "dot += (double)q_at(b, h, i, d) * (double)k_at(b, h / " << group
           << ", j, d);\n";
      }
      os << "s[j] = "
         << ScalarExprPrinter::literal(op.getScale().convertToDouble(),
                                       DType::F64)
         << " * dot;\n";
      if (Value bias = op.getBias()) {
        RankedTensorType biasType = tensorType(bias);
        std::string element = nameOf(bias) + "[repro::broadcastOffset(((b * " +
                              std::to_string(heads) + " + h) * " +
                              std::to_string(queries) + " + i) * " +
                              std::to_string(keys) + " + j, scores_shape, " +
                              shapeInitializer(biasType.getShape()) + ")]";
        if (biasType.getElementType().isInteger(1))
          os << "if (!" << element << ") s[j] = -INFINITY;\n";
        else
          os << "s[j] += " << element << ";\n";
      }
      if (op.getCausal())
        os << "if (j > i + " << offset << ") s[j] = -INFINITY;\n";
      if (op.getCausal() && window >= 0)
        os << "if (j < i + " << offset - window << ") s[j] = -INFINITY;\n";
      os << "if (s[j] != s[j] || max != max) max = NAN;\n";
      os << "else if (s[j] > max) max = s[j];\n";
    }
    os << "double sum = 0;\n";
    os << "for (int64_t j = 0; j < " << keys
       << "; ++j) sum += std::exp(s[j] - max);\n";
    auto dLoop = loop("d", valueHeadDim);
    os << "double acc = 0;\n";
    os << "for (int64_t j = 0; j < " << keys
       << "; ++j) acc += std::exp(s[j] - max) * (double)v_at(b, h / " << group
       << ", j, d);\n";
    if (op.getZeroNanRows())
      os << "out_at(b, h, i, d) = (max == -INFINITY || sum != sum) ? 0.0 : "
            "acc / sum;\n";
    else
      os << "out_at(b, h, i, d) = max == -INFINITY ? "
         << (op.getZeroMaskedRows() ? "0.0" : "NAN") << " : acc / sum;\n";
    return std::nullopt;
  }

  FusionOp fusion;
  AsmState state;
  raw_indented_ostream &os;
  const std::string &lastDiagnostic;
};

/// A C++ array of a constant's bytes.
void printBytes(raw_indented_ostream &os, const std::string &name,
                const std::vector<uint8_t> &bytes) {
  os << "static const unsigned char " << name << "[" << bytes.size() << "] = {";
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 16 == 0)
      os << "\n   ";
    char hex[8];
    std::snprintf(hex, sizeof hex, " 0x%02x,", bytes[i]);
    os << hex;
  }
  os << "\n};\n";
}

} // namespace

struct KernelReproWriter::Impl {
  const fusec::Program &program;
  bool fastMath;
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  /// The i-th region is kernel i; empty when the IR is unusable.
  std::vector<FusionOp> regions;
  std::string problem;
  /// The last diagnostic the context emitted.
  mutable std::string lastDiagnostic;

  Impl(const fusec::Program &program, const std::string &fusedIR, bool fastMath)
      : program(program), fastMath(fastMath) {
    DialectRegistry registry;
    registry.insert<FuseDialect, func::FuncDialect>();
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
    context->disableMultithreading();
    // Diagnostics (of the parse, of an op without a scalar expression)
    // become the reasons repros give, not output on stderr.
    context->getDiagEngine().registerHandler([this](Diagnostic &diag) {
      lastDiagnostic = diag.str();
      return success();
    });
    if (fusedIR.empty()) {
      problem = "no fused IR was given";
      return;
    }
    module = parseSourceString<ModuleOp>(fusedIR, context.get());
    if (!module) {
      problem = "the fused IR does not parse: " + lastDiagnostic;
      return;
    }
    std::vector<FusionOp> found;
    module->walk([&](FusionOp fusion) { found.push_back(fusion); });
    if (found.size() != program.kernels.size()) {
      problem = "the fused IR has " + std::to_string(found.size()) +
                " regions for " + std::to_string(program.kernels.size()) +
                " kernels";
      return;
    }
    for (size_t k = 0; k < found.size(); ++k) {
      const KernelDesc &kernel = program.kernels[k];
      if (regionOpNames(found[k]) != kernel.ops ||
          found[k].getInputs().size() != kernel.inputs.size() ||
          found[k].getNumResults() != kernel.outputs.size()) {
        problem = "region " + std::to_string(k) +
                  " of the fused IR does not match kernel '" + kernel.name +
                  "'";
        return;
      }
    }
    regions = std::move(found);
  }

  bool cuda() const { return program.target == fusec::Target::Cuda; }

  std::string writeRepro(size_t index, const std::string &sourceFile,
                         const std::string &reproFile) const;
  void writeInputs(raw_indented_ostream &os, const KernelDesc &kernel,
                   FusionOp region) const;
};

KernelReproWriter::KernelReproWriter(const fusec::Program &program,
                                     const std::string &fusedIR, bool fastMath)
    : impl(std::make_unique<Impl>(program, fusedIR, fastMath)) {}

KernelReproWriter::~KernelReproWriter() = default;

const std::string &KernelReproWriter::referenceProblem() const {
  return impl->problem;
}

std::string KernelReproWriter::sourceFileName(size_t index) const {
  return impl->program.kernels[index].name + (impl->cuda() ? ".cu" : ".cpp");
}

std::string KernelReproWriter::kernelSource(size_t index) const {
  return impl->program.prelude + "\n" + impl->program.kernels[index].source;
}

std::string KernelReproWriter::reproFileName(size_t index) const {
  return impl->program.kernels[index].name +
         (impl->cuda() ? ".repro.cu" : ".repro.cpp");
}

std::string KernelReproWriter::repro(size_t index) const {
  return impl->writeRepro(index, sourceFileName(index), reproFileName(index));
}

/// Allocates and fills `inN` for each kernel input: constants copied from
/// the program where small, everything else from the seeded generator.
void KernelReproWriter::Impl::writeInputs(raw_indented_ostream &os,
                                          const KernelDesc &kernel,
                                          FusionOp region) const {
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    int id = kernel.inputs[i];
    int root = id;
    while (program.buffers[root].role == BufferRole::Alias)
      root = program.buffers[root].aliasOf;
    const BufferDesc &buffer = program.buffers[id];
    const BufferDesc &storage = program.buffers[root];
    std::string name = "in" + std::to_string(i);
    bool embedded =
        storage.role == BufferRole::Constant &&
        storage.data.size() <= kMaxEmbeddedConstantBytes &&
        static_cast<int64_t>(storage.data.size()) == buffer.byteSize();
    InputRange range;
    if (region)
      range = inputRange(region.getBody().front().getArgument(i));
    else if (!fusec::isFloat(buffer.dtype))
      range = {-8, 8, "small integers"};
    if (buffer.dtype == DType::I1)
      range = {0, 1, "bools"};
    os << "// " << name << ": '" << buffer.name << "', "
       << typeText(buffer.dtype, buffer.shape) << ", "
       << (storage.role == BufferRole::Input      ? "a graph input"
           : storage.role == BufferRole::Constant ? "a constant"
                                                  : "computed by the model")
       << (embedded ? ", its data copied from the model"
                    : ", filled with values in [" + number(range.low) + ", " +
                          number(range.high) + "] (" + range.why + ")")
       << ".\n";
    os << "repro::HostBuffer " << name << "(" << buffer.byteSize() << ");\n";
    if (embedded) {
      os << "{\n";
      {
        auto scope = os.scope();
        printBytes(os, "data", storage.data);
        os << "std::memcpy(" << name << ".data, data, sizeof data);\n";
      }
      os << "}\n";
      continue;
    }
    const char *type = storageType(buffer.dtype);
    os << "{\n";
    {
      auto scope = os.scope();
      os << "repro::Rng rng(options.seed * 1000003 + " << i << ");\n";
      os << type << " *p = " << name << ".as<" << type << ">();\n";
      os << "for (int64_t i = 0; i < " << fusec::numElements(buffer.shape)
         << "; ++i)\n";
      std::string value;
      if (buffer.dtype == DType::I1)
        value = "rng.integer(0, 1) != 0";
      else if (fusec::isFloat(buffer.dtype))
        value = toStorage(
            buffer.dtype,
            std::string("(") + computeType(buffer.dtype) + ")rng.uniform(" +
                ScalarExprPrinter::literal(range.low, DType::F64) + ", " +
                ScalarExprPrinter::literal(range.high, DType::F64) + ")");
      else
        value = std::string("(") + type + ")rng.integer(" +
                std::to_string(static_cast<int64_t>(range.low)) + ", " +
                std::to_string(static_cast<int64_t>(range.high)) + ")";
      os << "  p[i] = " << value << ";\n";
    }
    os << "}\n";
  }
}

std::string
KernelReproWriter::Impl::writeRepro(size_t index, const std::string &sourceFile,
                                    const std::string &reproFile) const {
  const KernelDesc &kernel = program.kernels[index];
  FusionOp region = regions.empty() ? FusionOp() : regions[index];
  std::string binary = reproFile.substr(0, reproFile.rfind('.'));
  std::string text;
  llvm::raw_string_ostream raw(text);
  raw_indented_ostream os(raw);

  // What it is and how to build it.
  os << "// " << reproFile << ": a standalone repro of kernel '" << kernel.name
     << "' of '" << program.name << "', generated by fusec\n"
     << "// for target " << fusec::targetName(program.target) << " (schedule "
     << kernel.schedule << "; ops:";
  for (const std::string &op : kernel.ops)
    os << " " << op;
  os << ").\n//\n";
  if (cuda())
    os << "// Build: nvcc " << kCudaBuildFlags << " " << reproFile << " -o "
       << binary << " " << kCudaLibraries << "\n";
  else
    os << "// Build: g++ " << cpuBuildFlags() << " " << reproFile << " -o "
       << binary << " -lmvec\n";
  os << "// Run:   ./" << binary << " [--runs=N] [--warmup=N] [--seed=N]"
     << (cuda() ? " [--kernel=FILE.cu]" : "") << "\n//\n"
     << "// Fills the kernel's inputs from a fixed seed, runs the kernel once "
        "as the\n// runtime does, checks each output against a scalar "
        "reference evaluated op\n// by op in double precision, then times "
        "the kernel; prints PASS or FAIL\n// (exit code 1).\n";
  if (cuda())
    os << "// The kernel is compiled at run time with NVRTC, as the runtime "
          "compiles it;\n// --kernel=FILE compiles FILE (e.g. an edited "
       << sourceFile << ") instead.\n\n";
  else
    os << "// The kernel is " << sourceFile
       << " (prelude and kernel, as the runtime compiles\n// them): edit it "
          "and rebuild this file to try a change.\n\n";

  if (cuda()) {
    os << "#include <math.h>\n#include <stdint.h>\n\n"
       << "// fusec's scalar helpers and f16/bf16 conversions, for the "
          "reference on the host\n// (not all of them are used: no "
          "warnings for those).\n#pragma nv_diag_suppress 177\n";
    raw << kCombinersSource << kScalarMathSource << "\n"
        << kHalfFloatSource << "\n"
        << kNarrowTypesSource;
    os << "#pragma nv_diag_default 177\n";
    raw << kSupportSource << kCudaSupportSource;
    // The delimiter cannot occur in generated C.
    os << "\n// The kernel as the runtime compiles it (" << sourceFile
       << "): the prelude, then the kernel.\n";
    raw << "static const char *kKernelSource = R\"fusec_kernel(";
    raw << program.prelude << "\n" << kernel.source;
    raw << ")fusec_kernel\";\n\n";
  } else {
    os << "#include \"" << sourceFile << "\"\n";
    raw << kSupportSource << "\n";
  }

  // The reference first, into a string: an op without one leaves the repro
  // without a reference, not without a build.
  std::string referenceText;
  std::vector<std::string> referenceOutputs;
  std::string noReference = problem;
  if (region) {
    llvm::raw_string_ostream referenceRaw(referenceText);
    raw_indented_ostream referenceOs(referenceRaw);
    std::vector<std::string> inputBuffers;
    for (size_t i = 0; i < kernel.inputs.size(); ++i)
      inputBuffers.push_back("in" + std::to_string(i));
    ReferenceWriter writer(region, referenceOs, lastDiagnostic);
    if (std::optional<std::string> problem = writer.write(inputBuffers)) {
      noReference = *problem;
      referenceText.clear();
    } else {
      referenceOutputs = writer.outputNames;
    }
  }

  os << "int main(int argc, char **argv) {\n";
  {
    auto body = os.scope();
    os << "const repro::Options options = repro::parseOptions(argc, argv);\n";
    os << "std::printf(\"" << kernel.name << " ("
       << fusec::targetName(program.target) << "): seed %llu\\n\", "
       << "(unsigned long long)options.seed);\n\n";
    writeInputs(os, kernel, region);
    int64_t bytesMoved = 0;
    for (int id : kernel.inputs)
      bytesMoved += program.buffers[id].byteSize();
    for (size_t o = 0; o < kernel.outputs.size(); ++o) {
      const BufferDesc &buffer = program.buffers[kernel.outputs[o]];
      bytesMoved += buffer.byteSize();
      os << "// out" << o << ": '" << buffer.name << "', "
         << typeText(buffer.dtype, buffer.shape) << ".\n";
      os << "repro::HostBuffer out" << o << "(" << buffer.byteSize() << ");\n";
      // The runtime's buffers are not zeroed either: an element the kernel
      // does not write shows as NaN (or -1).
      os << "std::memset(out" << o << ".data, 0xff, out" << o << ".bytes);\n";
    }
    os << "\n";

    // The run, as the runtime's executables do it.
    std::vector<std::string> inputNames, outputNames;
    for (size_t i = 0; i < kernel.inputs.size(); ++i)
      inputNames.push_back("in" + std::to_string(i));
    for (size_t o = 0; o < kernel.outputs.size(); ++o)
      outputNames.push_back("out" + std::to_string(o));
    if (!cuda()) {
      os << "// The host runtime's call: (inputs, outputs) in the Program's "
            "order.\n";
      os << "const void *const inputs[] = {";
      for (size_t i = 0; i < inputNames.size(); ++i)
        os << (i ? ", " : "") << inputNames[i] << ".data";
      os << (inputNames.empty() ? "nullptr" : "") << "};\n";
      os << "void *const outputs[] = {";
      for (size_t o = 0; o < outputNames.size(); ++o)
        os << (o ? ", " : "") << outputNames[o] << ".data";
      os << (outputNames.empty() ? "nullptr" : "") << "};\n";
      os << "auto run = [&] { " << kernel.name << "(inputs, outputs); };\n";
      os << "run();\n\n";
    } else {
      const fusec::LaunchGeometry &launch = kernel.launch;
      os << "REPRO_CU(cuInit(0));\n";
      os << "CUdevice device;\nREPRO_CU(cuDeviceGet(&device, 0));\n";
      os << "CUcontext context;\n"
            "REPRO_CU(cuDevicePrimaryCtxRetain(&context, device));\n"
            "REPRO_CU(cuCtxSetCurrent(context));\n";
      os << "const std::string source = options.kernelFile ? "
            "repro::readFile(options.kernelFile) : kKernelSource;\n";
      os << "CUmodule module = repro::loadKernels(source, device, "
         << "\"" << fusec::cuda::nvrtcArithmeticOption(fastMath) << "\");\n";
      os << "CUfunction kernel;\n";
      os << "REPRO_CU(cuModuleGetFunction(&kernel, module, \"" << kernel.name
         << "\"));\n";
      // Past 48 KiB a kernel's dynamic shared memory must be asked for, as
      // the runtime does.
      if (kernel.launch.sharedBytes > 48 * 1024)
        os << "REPRO_CU(cuFuncSetAttribute(kernel, "
              "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "
           << kernel.launch.sharedBytes << "));\n";
      std::vector<std::string> arguments;
      for (const std::string &name : inputNames) {
        os << "repro::DeviceBuffer d_" << name << "(" << name << ".bytes, "
           << name << ".data);\n";
        arguments.push_back("d_" + name);
      }
      for (const std::string &name : outputNames) {
        os << "repro::DeviceBuffer d_" << name << "(" << name
           << ".bytes, (unsigned char)0xff);\n";
        arguments.push_back("d_" + name);
      }
      if (kernel.scratch >= 0) {
        os << "// The kernel's scratch, zeroed once: it leaves it zeroed.\n";
        os << "repro::DeviceBuffer d_scratch(" << kernel.scratchBytes
           << ", (unsigned char)0);\n";
        arguments.push_back("d_scratch");
      }
      os << "// The runtime's launch: inputs, outputs";
      os << (kernel.scratch >= 0 ? ", scratch" : "")
         << "; the Program's geometry.\n";
      os << "void *arguments[] = {";
      for (size_t a = 0; a < arguments.size(); ++a)
        os << (a ? ", " : "") << "&" << arguments[a] << ".address";
      os << (arguments.empty() ? "nullptr" : "") << "};\n";
      os << "int64_t blocks = " << std::max<int64_t>(launch.gridX, 1) << ";\n";
      if (launch.maxBlocksPerMultiprocessor > 0) {
        os << "// Grid-stride: at most " << launch.maxBlocksPerMultiprocessor
           << " blocks per multiprocessor.\n";
        os << "int multiprocessors = 0;\n"
              "REPRO_CU(cuDeviceGetAttribute(&multiprocessors, "
              "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));\n";
        os << "blocks = std::min<int64_t>(blocks, (int64_t)multiprocessors * "
           << launch.maxBlocksPerMultiprocessor << ");\n";
      }
      os << "std::printf(\"launch: grid (%lld, " << launch.gridY << "), block ("
         << launch.blockX << ", " << launch.blockY << "), "
         << launch.sharedBytes
         << " bytes of shared memory\\n\", (long long)blocks);\n";
      os << "auto run = [&] {\n";
      os << "  REPRO_CU(cuLaunchKernel(kernel, (unsigned)blocks, "
         << launch.gridY << ", 1, " << launch.blockX << ", " << launch.blockY
         << ", 1, " << launch.sharedBytes
         << ", nullptr, arguments, nullptr));\n";
      os << "};\n";
      os << "run();\n";
      os << "REPRO_CU(cuCtxSynchronize());\n";
      for (const std::string &name : outputNames)
        os << "d_" << name << ".copyTo(" << name << ");\n";
      os << "\n";
    }

    // The reference and the checks.
    os << "bool passed = true;\n";
    if (!referenceText.empty()) {
      os << "// The reference: each op of the region on whole tensors, "
            "floats in double.\n";
      os << referenceText;
      for (size_t o = 0; o < kernel.outputs.size(); ++o) {
        const BufferDesc &buffer = program.buffers[kernel.outputs[o]];
        fusec::Tolerance tolerance = fusec::toleranceFor(buffer.dtype);
        std::string checker = "check" + std::to_string(o);
        os << "{\n";
        {
          auto scope = os.scope();
          char bounds[96];
          std::snprintf(bounds, sizeof bounds, "%g, %g", tolerance.atol,
                        tolerance.rtol);
          int digits = buffer.dtype == DType::F64   ? 17
                       : buffer.dtype == DType::F32 ? 9
                                                    : 5;
          os << "repro::Checker " << checker << "(\"out" << o << " '"
             << buffer.name << "' " << typeText(buffer.dtype, buffer.shape)
             << "\", " << shapeInitializer(buffer.shape) << ", " << bounds
             << ", " << digits << ");\n";
          os << "const " << storageType(buffer.dtype) << " *got = out" << o
             << ".as<" << storageType(buffer.dtype) << ">();\n";
          os << "for (int64_t i = 0; i < " << fusec::numElements(buffer.shape)
             << "; ++i)\n";
          std::string got = fromStorage(buffer.dtype, "got[i]");
          std::string want = referenceOutputs[o] + "[i]";
          if (fusec::isFloat(buffer.dtype))
            os << "  " << checker << ".floating(i, " << got << ", "
               << roundedTo(buffer.dtype, want) << ");\n";
          else
            os << "  " << checker << ".exact(i, (long long)" << got
               << ", (long long)" << want << ");\n";
          os << "passed = " << checker << ".report() && passed;\n";
        }
        os << "}\n";
      }
    } else {
      os << "std::printf(\"no reference for " << kernel.name << ": %s\\n\", "
         << stringLiteral(noReference) << ");\n";
    }
    os << "\n";

    // The timing.
    os << "std::vector<double> micros;\n";
    if (!cuda()) {
      os << "for (int r = 0; r < options.warmup; ++r)\n  run();\n";
      os << "for (int r = 0; r < options.runs; ++r) {\n";
      os << "  const double start = repro::nowMicros();\n";
      os << "  run();\n";
      os << "  micros.push_back(repro::nowMicros() - start);\n";
      os << "}\n";
    } else {
      os << "CUevent start, stop;\n"
            "REPRO_CU(cuEventCreate(&start, 0));\n"
            "REPRO_CU(cuEventCreate(&stop, 0));\n";
      os << "for (int r = 0; r < options.warmup; ++r)\n  run();\n";
      os << "for (int r = 0; r < options.runs; ++r) {\n";
      os << "  REPRO_CU(cuEventRecord(start, nullptr));\n";
      os << "  run();\n";
      os << "  REPRO_CU(cuEventRecord(stop, nullptr));\n";
      os << "  REPRO_CU(cuEventSynchronize(stop));\n";
      os << "  float ms = 0;\n";
      os << "  REPRO_CU(cuEventElapsedTime(&ms, start, stop));\n";
      os << "  micros.push_back(ms * 1e3);\n";
      os << "}\n";
    }
    os << "repro::printTiming(micros, options.warmup, " << bytesMoved
       << ".0);\n";
    if (referenceText.empty()) {
      os << "std::printf(\"NO REFERENCE " << kernel.name << "\\n\");\n";
      os << "return 0;\n";
    } else {
      os << "std::printf(\"%s " << kernel.name
         << "\\n\", passed ? \"PASS\" : \"FAIL\");\n";
      os << "return passed ? 0 : 1;\n";
    }
  }
  os << "}\n";
  return text;
}

std::string KernelReproWriter::readme() const {
  const fusec::Program &program = impl->program;
  bool cuda = impl->cuda();
  std::ostringstream os;
  os << "# Kernels of '" << program.name << "' (target "
     << fusec::targetName(program.target) << ")\n\n";
  os << "Written by `fusec --dump-kernels`. Each kernel has its source, `"
     << (cuda ? "<kernel>.cu" : "<kernel>.cpp")
     << "` (the prelude and the kernel, as the runtime compiles them), and a "
        "standalone repro, `"
     << (cuda ? "<kernel>.repro.cu" : "<kernel>.repro.cpp")
     << "`: it fills the kernel's inputs (the Program's shapes and dtypes) "
        "from a fixed seed, runs the kernel as the runtime does, checks every "
        "output against a scalar reference evaluated op by op in double "
        "precision, and prints the median time of `--runs` runs (default "
        "100, after `--warmup` runs, default 10) with the GB/s it reaches. "
        "It prints `PASS` or `FAIL` with the worst element, and exits 1 on "
        "`FAIL`. `--seed=N` draws other inputs.\n\n";
  if (cuda)
    os << "The repros are host programs using the CUDA driver API: each "
          "compiles its kernel with NVRTC at run time (the options the "
          "runtime uses"
       << ", " << fusec::cuda::nvrtcArithmeticOption(impl->fastMath)
       << ") for the GPU it finds, loads it with `cuModuleLoadData` and "
          "launches it with the Program's grid, block and shared memory. "
          "`--kernel=FILE.cu` compiles an edited copy of the kernel's source "
          "instead. Build with the CUDA toolkit's `nvcc` (in "
          "/usr/local/cuda/bin; it finds the CUDA headers and NVRTC, and "
          "links against the toolkit's `libcuda` stub where no driver is "
          "installed); run on a machine with a GPU and its driver.\n\n";
  else
    os << "Each repro includes its kernel's `.cpp` file: edit the kernel "
          "and rebuild the repro to try a change. The flags are those the "
          "runtime compiles kernels with.\n\n";
  if (!impl->problem.empty())
    os << "The repros have no reference: " << impl->problem << ".\n\n";
  os << "| kernel | schedule | ops |\n|---|---|---|\n";
  for (const KernelDesc &kernel : program.kernels) {
    os << "| `" << kernel.name << "` | " << kernel.schedule << " |";
    for (const std::string &op : kernel.ops)
      os << " " << op;
    os << " |\n";
  }
  os << "\nEvery repro, built and run:\n\n```sh\n";
  if (cuda)
    os << "for f in *.repro.cu; do nvcc " << kCudaBuildFlags
       << " \"$f\" -o \"${f%.cu}\" " << kCudaLibraries
       << " && \"./${f%.cu}\"; done\n";
  else
    os << "for f in *.repro.cpp; do g++ " << cpuBuildFlags()
       << " \"$f\" -o \"${f%.cpp}\" -lmvec && \"./${f%.cpp}\"; done\n";
  os << "```\n\nOne by one:\n\n```sh\n";
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    std::string repro = reproFileName(k);
    std::string binary = repro.substr(0, repro.rfind('.'));
    if (cuda)
      os << "nvcc " << kCudaBuildFlags << " " << repro << " -o " << binary
         << " " << kCudaLibraries << " && ./" << binary << "\n";
    else
      os << "g++ " << cpuBuildFlags() << " " << repro << " -o " << binary
         << " -lmvec && ./" << binary << "\n";
  }
  os << "```\n";
  if (!program.matmuls.empty()) {
    os << "\nLibrary calls have no repro: they run "
       << (cuda ? "cuBLASLt" : "BLAS (OpenBLAS)")
       << ", not generated code. In run order:\n\n";
    for (const fusec::MatmulCall &call : program.matmuls)
      os << "- " << call.describe(program.buffers) << "\n";
  }
  return os.str();
}

} // namespace fuse
