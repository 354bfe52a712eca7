//===- FuseDialect.cpp - The fuse dialect, its ops and verifiers ---------===//

#include "ir/FuseDialect.h"
#include "ir/LayoutOps.h"
#include "ir/LibraryOps.h"
#include "ir/SymbolicDims.h"
#include "ir/TypeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace fuse;

#include "ir/FuseDialect.cpp.inc"

void FuseDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/FuseOps.cpp.inc"
      >();
}

Operation *FuseDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

namespace {
/// pow(x, 2) on floats is x * x: the exact square rounded once, which is
/// what a correctly rounded pow gives too (signed zeros, infinities and NaN
/// included). It spares each kernel an inlined pow: a quarter of
/// llama_d256's NVRTC time, in its RMS norms.
struct SquareForPowerOfTwo : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op,
                                PatternRewriter &rewriter) const override {
    Value base = op.getLhs();
    DenseElementsAttr exponent;
    if (base.getType() != op.getType() ||
        !fusec::isFloat(dtypeOf(base.getType())) ||
        !matchPattern(op.getRhs(), m_Constant(&exponent)) ||
        !exponent.isSplat() || constantElement(exponent, 0) != 2.0)
      return failure();
    rewriter.replaceOpWithNewOp<MulOp>(op, base, base);
    return success();
  }
};

/// A sum, product, max, min or mean over axes of size 1 only is its operand
/// (the folders' rule); with the axes dropped (keepdims false) the type
/// changes, so it becomes a reshape, a view, rather than a reduction
/// kernel. TensorScatter's single-position update (a decode step) makes
/// these.
template <typename ReductionOp>
struct ReductionOverUnitAxes : OpRewritePattern<ReductionOp> {
  using OpRewritePattern<ReductionOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReductionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOperand().getType() == op.getType() ||
        !reducesUnitAxesOnly(cast<RankedTensorType>(op.getOperand().getType()),
                             op.getAxes()))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getOperand());
    return success();
  }
};

/// A transpose that keeps the order of the dims larger than 1 moves no
/// element (in a decode step, [1, 1, heads, d] to [1, heads, 1, d]): it is
/// a reshape, a view, rather than a copy kernel.
struct TransposeOfUnitDims : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getOperand().getType());
    if (!type.hasStaticShape())
      return failure();
    int64_t previous = -1;
    for (int64_t source : op.getPerm()) {
      if (type.getDimSize(source) == 1)
        continue;
      if (source < previous)
        return failure();
      previous = source;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getOperand());
    return success();
  }
};
/// A product over a contracted dim of size 1 is an outer product, a
/// broadcast multiply ([..., m, 1] @ [..., 1, n]: RoPE's frequencies times
/// positions): a pointwise kernel rather than a library call, and one that
/// takes symbolic m and n.
struct MatmulOfOneTerm : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    auto lhs = cast<RankedTensorType>(op.getLhs().getType());
    auto rhs = cast<RankedTensorType>(op.getRhs().getType());
    auto result = cast<RankedTensorType>(op.getType());
    if (op.getBias() || op.getTransposeA() || op.getTransposeB() ||
        op.getAlpha().convertToDouble() != 1.0 || op.getEpilogue() != "none" ||
        lhs.getRank() < 2 || rhs.getRank() < 2 || lhs.getShape().back() != 1 ||
        rhs.getShape()[rhs.getRank() - 2] != 1 ||
        lhs.getElementType() != result.getElementType() ||
        rhs.getElementType() != result.getElementType())
      return failure();
    rewriter.replaceOpWithNewOp<MulOp>(op, result, op.getLhs(), op.getRhs());
    return success();
  }
};
/// A product of symbolic sizes and fixed integers is one symbolic size
/// (`dim_size(seq) * 8` is `dim_size {symbols = ["seq"], factor = 8}`): the
/// count a mean over `[seq, 8]` divides by, which kernels then read as a
/// size they take rather than compute in a one-element kernel.
struct ProductOfSizes : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (type.getRank() != 0 || !type.getElementType().isInteger(64))
      return failure();
    SmallVector<Attribute> symbols;
    int64_t factor = 1;
    bool anySize = false;
    for (Value operand : {op.getLhs(), op.getRhs()}) {
      if (auto size = operand.getDefiningOp<DimSizeOp>()) {
        llvm::append_range(symbols, size.getSymbols());
        factor *= size.getFactor();
        anySize = true;
        continue;
      }
      auto constant = operand.getDefiningOp<ConstantOp>();
      auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue())
                            : SplatElementsAttr();
      if (!splat)
        return failure();
      int64_t value = splat.getSplatValue<APInt>().getSExtValue();
      // (A size is never negative; a product that could overflow stays.)
      if (value < 0 || (factor != 0 && value > (int64_t(1) << 48) / factor))
        return failure();
      factor *= value;
    }
    if (!anySize)
      return failure();
    rewriter.replaceOpWithNewOp<DimSizeOp>(
        op, type, rewriter.getArrayAttr(symbols), factor);
    return success();
  }
};
} // namespace

void FuseDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  results.add<
      SquareForPowerOfTwo, TransposeOfUnitDims, MatmulOfOneTerm, ProductOfSizes,
      ReductionOverUnitAxes<ReduceSumOp>, ReductionOverUnitAxes<ReduceProdOp>,
      ReductionOverUnitAxes<ReduceMaxOp>, ReductionOverUnitAxes<ReduceMinOp>,
      ReductionOverUnitAxes<ReduceMeanOp>>(getContext());
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

std::optional<fusec::DType> fuse::toDType(Type type) {
  if (type.isF64())
    return fusec::DType::F64;
  if (type.isF32())
    return fusec::DType::F32;
  if (type.isF16())
    return fusec::DType::F16;
  if (type.isBF16())
    return fusec::DType::BF16;
  if (type.isSignlessInteger(1))
    return fusec::DType::I1;
  if (type.isSignlessInteger(8))
    return fusec::DType::I8;
  if (type.isSignlessInteger(32))
    return fusec::DType::I32;
  if (type.isSignlessInteger(64))
    return fusec::DType::I64;
  if (type.isSignlessInteger(16))
    return fusec::DType::I16;
  if (type.isUnsignedInteger(8))
    return fusec::DType::U8;
  if (type.isUnsignedInteger(16))
    return fusec::DType::U16;
  if (type.isUnsignedInteger(32))
    return fusec::DType::U32;
  if (type.isUnsignedInteger(64))
    return fusec::DType::U64;
  if (isa<Float8E4M3FNType>(type))
    return fusec::DType::F8E4M3FN;
  if (isa<Float8E4M3FNUZType>(type))
    return fusec::DType::F8E4M3FNUZ;
  if (isa<Float8E5M2Type>(type))
    return fusec::DType::F8E5M2;
  if (isa<Float8E5M2FNUZType>(type))
    return fusec::DType::F8E5M2FNUZ;
  if (isa<Float4E2M1FNType>(type))
    return fusec::DType::F4E2M1;
  if (isa<Float8E8M0FNUType>(type))
    return fusec::DType::F8E8M0;
  if (type.isSignlessInteger(4))
    return fusec::DType::I4;
  if (type.isUnsignedInteger(4))
    return fusec::DType::U4;
  if (type.isSignlessInteger(2))
    return fusec::DType::I2;
  if (type.isUnsignedInteger(2))
    return fusec::DType::U2;
  return std::nullopt;
}

Type fuse::toElementType(MLIRContext *context, fusec::DType dtype) {
  Builder b(context);
  switch (dtype) {
  case fusec::DType::F64:
    return b.getF64Type();
  case fusec::DType::F32:
    return b.getF32Type();
  case fusec::DType::F16:
    return b.getF16Type();
  case fusec::DType::BF16:
    return b.getBF16Type();
  case fusec::DType::I8:
    return b.getI8Type();
  case fusec::DType::I32:
    return b.getI32Type();
  case fusec::DType::I64:
    return b.getI64Type();
  case fusec::DType::I1:
    return b.getI1Type();
  case fusec::DType::I16:
    return b.getI16Type();
  // Unsigned integers are MLIR's ui types: signless ones would lose what
  // comparisons, division and casts need.
  case fusec::DType::U8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case fusec::DType::U16:
    return b.getIntegerType(16, /*isSigned=*/false);
  case fusec::DType::U32:
    return b.getIntegerType(32, /*isSigned=*/false);
  case fusec::DType::U64:
    return b.getIntegerType(64, /*isSigned=*/false);
  case fusec::DType::F8E4M3FN:
    return b.getType<Float8E4M3FNType>();
  case fusec::DType::F8E4M3FNUZ:
    return b.getType<Float8E4M3FNUZType>();
  case fusec::DType::F8E5M2:
    return b.getType<Float8E5M2Type>();
  case fusec::DType::F8E5M2FNUZ:
    return b.getType<Float8E5M2FNUZType>();
  case fusec::DType::F4E2M1:
    return b.getType<Float4E2M1FNType>();
  case fusec::DType::F8E8M0:
    return b.getType<Float8E8M0FNUType>();
  case fusec::DType::I4:
    return b.getIntegerType(4);
  case fusec::DType::U4:
    return b.getIntegerType(4, /*isSigned=*/false);
  case fusec::DType::I2:
    return b.getIntegerType(2);
  case fusec::DType::U2:
    return b.getIntegerType(2, /*isSigned=*/false);
  }
  return {};
}

fusec::DType fuse::dtypeOf(Type tensorType) {
  return *toDType(cast<ShapedType>(tensorType).getElementType());
}

std::string fuse::nodeNameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string name = nodeNameOf(inner); !name.empty())
        return name;
  return "";
}

std::string fuse::describeOp(Operation *op) {
  std::string text = "'" + op->getName().getStringRef().str() + "'";
  if (std::string node = nodeNameOf(op->getLoc()); !node.empty())
    text += " (node '" + node + "')";
  return text;
}

double fuse::constantElement(DenseElementsAttr attr, int64_t index) {
  int64_t i = attr.isSplat() ? 0 : index;
  if (isa<FloatType>(attr.getElementType()))
    return (*(attr.value_begin<APFloat>() + i)).convertToDouble();
  APInt value = *(attr.value_begin<APInt>() + i);
  return attr.getElementType().isInteger(1) ||
                 attr.getElementType().isUnsignedInteger()
             ? static_cast<double>(value.getZExtValue())
             : static_cast<double>(value.getSExtValue());
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

std::string fuse::typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

/// Cast and bitcast change the dtype alone.
static LogicalResult verifyShapeKept(Operation *op, const char *what) {
  auto from = cast<RankedTensorType>(op->getOperand(0).getType());
  auto to = cast<RankedTensorType>(op->getResult(0).getType());
  if (from.getShape() != to.getShape())
    return op->emitOpError() << "changes the shape from " << typeString(from)
                             << " to " << typeString(to) << "; " << what;
  return success();
}

LogicalResult CastOp::verify() {
  if (failed(verifyShapeKept(*this, "a cast only converts the dtype")))
    return failure();
  if (std::optional<StringRef> mode = getRoundMode();
      mode && *mode != "up" && *mode != "down" && *mode != "nearest")
    return emitOpError() << "round_mode must be \"up\", \"down\" or "
                            "\"nearest\", not \""
                         << *mode << "\"";
  return success();
}

LogicalResult BitcastOp::verify() {
  if (failed(verifyShapeKept(*this, "a bitcast only reinterprets the dtype")))
    return failure();
  auto from = cast<RankedTensorType>(getOperand().getType());
  auto to = cast<RankedTensorType>(getType());
  int fromBits = fusec::dtypeInfo(dtypeOf(from)).bits,
      toBits = fusec::dtypeInfo(dtypeOf(to)).bits;
  if (fromBits != toBits)
    return emitOpError() << "reinterprets " << fromBits << "-bit elements as "
                         << toBits << "-bit ones ("
                         << typeString(from.getElementType()) << " to "
                         << typeString(to.getElementType())
                         << "): the widths must be equal";
  return success();
}

/// A symbolic size's names must be symbols of the enclosing function
/// (`fuse.symbols`), its factor positive.
static LogicalResult verifySymbolicSize(Operation *op, ArrayAttr symbols,
                                        int64_t factor) {
  if (symbols.empty())
    return op->emitOpError() << "needs at least one symbol";
  if (factor < 1)
    return op->emitOpError()
           << "factor must be positive (got " << factor << ")";
  auto function = op->getParentOfType<func::FuncOp>();
  for (Attribute symbol : symbols) {
    StringRef name = cast<StringAttr>(symbol).getValue();
    if (!declaresSymbol(function, name))
      return op->emitOpError()
             << "names '" << name << "', which is not a symbol of the function";
  }
  return success();
}

LogicalResult DimSizeOp::verify() {
  return verifySymbolicSize(*this, getSymbols(), getFactor());
}

LogicalResult DimOfOp::verify() {
  int64_t rank = cast<RankedTensorType>(getOperand().getType()).getRank();
  int64_t dim = static_cast<int64_t>(getDim());
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is outside rank " << rank;
  return success();
}

LogicalResult IotaOp::verify() {
  if (!cast<RankedTensorType>(getType()).isDynamicDim(0))
    return emitOpError() << "has a fixed length: a fixed range is a constant";
  return verifySymbolicSize(*this, getSymbols(), getFactor());
}

LogicalResult BroadcastToOp::verify() {
  auto from = cast<RankedTensorType>(getOperand().getType());
  auto to = cast<RankedTensorType>(getType());
  if (from.getElementType() != to.getElementType())
    return emitOpError() << "changes the dtype from " << typeString(from)
                         << " to " << typeString(to);
  if (!fusec::broadcastsTo(toShape(from), toShape(to)))
    return emitOpError() << "cannot broadcast " << typeString(from) << " to "
                         << typeString(to)
                         << ": each dim must be 1 or equal to the target's";
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto from = cast<RankedTensorType>(getOperand().getType());
  auto to = cast<RankedTensorType>(getType());
  if (from.getElementType() != to.getElementType())
    return emitOpError() << "changes the dtype from " << typeString(from)
                         << " to " << typeString(to);
  // With symbolic dims the element counts are SymbolicDims' to check.
  if (from.hasStaticShape() && to.hasStaticShape() &&
      from.getNumElements() != to.getNumElements())
    return emitOpError() << "cannot reshape " << from.getNumElements()
                         << " elements (" << typeString(from) << ") into "
                         << to.getNumElements() << " (" << typeString(to)
                         << ")";
  return success();
}

YieldOp FusionOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but "
                         << body.getNumArguments() << " block arguments";
  for (auto [index, input, arg] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError() << "input #" << index << " has type "
                           << typeString(input.getType())
                           << " but its block argument has type "
                           << typeString(arg.getType());
  YieldOp yield = getYield();
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values whose types do not match its "
                         << getNumResults() << " results";
  return success();
}

#define GET_OP_CLASSES
#include "ir/FuseOps.cpp.inc"
