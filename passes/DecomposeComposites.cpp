//===- DecomposeComposites.cpp - Composite ops into primitives -----------===//
//
// Each composite op (softmax, layer_norm, reduce_mean, gelu, ...) becomes
// the primitive elementwise ops and reductions that define it, so fusion
// sees, and keeps in one kernel, the reduce -> broadcast -> elementwise
// edges inside it. Normalizations and softmax compute in f32 for f16/bf16
// inputs (ONNX's stash_type) and round once at the end.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/SymbolicDims.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace fuse {
#define GEN_PASS_DEF_FUSEDECOMPOSECOMPOSITES
#include "passes/Passes.h.inc"
} // namespace fuse

using namespace mlir;
using namespace fuse;

namespace {

/// Builds the primitive ops of one decomposition at one location.
class Decomposer {
public:
  Decomposer(Operation *op) : builder(op), loc(op->getLoc()) {}

  /// A rank-0 constant of `elementType`, broadcast where it is used.
  Value scalar(Type elementType, double value) {
    auto type = RankedTensorType::get({}, elementType);
    Attribute element =
        isa<FloatType>(elementType)
            ? Attribute(builder.getFloatAttr(elementType, value))
            : Attribute(builder.getIntegerAttr(elementType,
                                               static_cast<int64_t>(value)));
    return ConstantOp::create(builder, loc, type,
                              DenseElementsAttr::get(type, element));
  }
  Value scalarLike(Value like, double value) {
    return scalar(cast<ShapedType>(like.getType()).getElementType(), value);
  }

  /// f16/bf16 values are computed in f32; others as they are.
  Value toCompute(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    if (!type.getElementType().isF16() && !type.getElementType().isBF16())
      return value;
    return CastOp::create(builder, loc, type.clone(builder.getF32Type()),
                          value);
  }
  /// toCompute, and integers in f64: the reductions ONNX defines by real
  /// functions (an L2 norm, a log-sum-exp) compute integers exactly in f64
  /// and truncate the result back.
  Value toRealCompute(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    if (isa<IntegerType>(type.getElementType()))
      return toType(value, type.clone(builder.getF64Type()));
    return toCompute(value);
  }
  Value toType(Value value, Type type) {
    if (value.getType() == type)
      return value;
    return CastOp::create(builder, loc, type, value);
  }

  template <typename OpTy> Value unary(Value operand) {
    return OpTy::create(builder, loc, operand).getResult();
  }
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    return OpTy::create(builder, loc, lhs, rhs).getResult();
  }
  template <typename OpTy>
  Value reduce(Value operand, ArrayRef<int64_t> axes, bool keepdims) {
    auto type = reducedTensorType(cast<RankedTensorType>(operand.getType()),
                                  axes, keepdims);
    return OpTy::create(builder, loc, type, operand, axes, keepdims)
        .getResult();
  }
  Value select(Value cond, Value trueValue, Value falseValue) {
    return SelectOp::create(builder, loc, cond, trueValue, falseValue)
        .getResult();
  }
  Value reshape(Value operand, Type type) {
    return ReshapeOp::create(builder, loc, type, operand).getResult();
  }

  /// The number of elements a reduction over `axes` of `value` combines,
  /// as a 0-d tensor of its element type. A symbolic dim's size is a
  /// fuse.dim_of, which the pass resolves to the dim's symbols after it.
  Value countOf(Value value, ArrayRef<int64_t> axes) {
    auto type = cast<RankedTensorType>(value.getType());
    int64_t fixed = 1;
    Value symbolic;
    for (int64_t axis : axes) {
      if (!type.isDynamicDim(axis)) {
        fixed *= type.getDimSize(axis);
        continue;
      }
      Value size = DimOfOp::create(
          builder, loc, RankedTensorType::get({}, builder.getI64Type()), value,
          axis);
      symbolic = symbolic ? binary<MulOp>(symbolic, size) : size;
    }
    if (!symbolic)
      return scalarLike(value, fixed);
    if (fixed != 1)
      symbolic = binary<MulOp>(symbolic, scalar(builder.getI64Type(), fixed));
    return toType(symbolic, cast<RankedTensorType>(symbolic.getType())
                                .clone(type.getElementType()));
  }

  OpBuilder builder;
  Location loc;
};

/// Dims [axis, rank): what a normalization reduces over.
SmallVector<int64_t> trailingAxes(Value value, int64_t axis) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t dim = *normalizeAxis(axis, rank); dim < rank; ++dim)
    axes.push_back(dim);
  return axes;
}

/// max along `axis`, subtracted: softmax's shift, so exp never overflows.
Value shiftedByMax(Decomposer &d, Value x, ArrayRef<int64_t> axes) {
  Value max = d.reduce<ReduceMaxOp>(x, axes, /*keepdims=*/true);
  return d.binary<SubOp>(x, max);
}

Value decompose(Decomposer &d, SoftmaxOp op) {
  Value x = d.toCompute(op.getOperand());
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> axes = {*normalizeAxis(op.getAxis(), rank)};
  Value exp = d.unary<ExpOp>(shiftedByMax(d, x, axes));
  Value sum = d.reduce<ReduceSumOp>(exp, axes, true);
  return d.toType(d.binary<DivOp>(exp, sum), op.getType());
}

Value decompose(Decomposer &d, LogSoftmaxOp op) {
  Value x = d.toCompute(op.getOperand());
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> axes = {*normalizeAxis(op.getAxis(), rank)};
  Value shifted = shiftedByMax(d, x, axes);
  Value sum = d.reduce<ReduceSumOp>(d.unary<ExpOp>(shifted), axes, true);
  return d.toType(d.binary<SubOp>(shifted, d.unary<LogOp>(sum)), op.getType());
}

/// mean over `axes`, kept as dims of 1.
Value mean(Decomposer &d, Value x, ArrayRef<int64_t> axes) {
  Value sum = d.reduce<ReduceSumOp>(x, axes, true);
  return d.binary<DivOp>(sum, d.countOf(x, axes));
}

Value decompose(Decomposer &d, LayerNormOp op) {
  Value x = d.toCompute(op.getOperand());
  SmallVector<int64_t> axes = trailingAxes(x, op.getAxis());
  // Two passes (mean, then the mean of squared deviations): robust where
  // E[x^2] - E[x]^2 cancels catastrophically.
  Value centered = d.binary<SubOp>(x, mean(d, x, axes));
  Value variance = mean(d, d.binary<MulOp>(centered, centered), axes);
  Value epsilon = d.scalarLike(x, op.getEpsilon().convertToDouble());
  Value inverse = d.unary<RsqrtOp>(d.binary<AddOp>(variance, epsilon));
  Value y = d.binary<MulOp>(centered, inverse);
  if (op.getWeight())
    y = d.binary<MulOp>(y, d.toCompute(op.getWeight()));
  if (op.getBias())
    y = d.binary<AddOp>(y, d.toCompute(op.getBias()));
  return d.toType(y, op.getType());
}

Value decompose(Decomposer &d, RmsNormOp op) {
  Value x = d.toCompute(op.getOperand());
  SmallVector<int64_t> axes = trailingAxes(x, op.getAxis());
  Value meanSquare = mean(d, d.binary<MulOp>(x, x), axes);
  Value epsilon = d.scalarLike(x, op.getEpsilon().convertToDouble());
  Value y = d.binary<MulOp>(
      x, d.unary<RsqrtOp>(d.binary<AddOp>(meanSquare, epsilon)));
  if (op.getWeight())
    y = d.binary<MulOp>(y, d.toCompute(op.getWeight()));
  return d.toType(y, op.getType());
}

Value decompose(Decomposer &d, GeluOp op) {
  Value x = d.toCompute(op.getOperand());
  Value inner;
  if (op.getApproximate() == "tanh") {
    // sqrt(2 / pi) * (x + 0.044715 * x^3)
    Value cube = d.binary<MulOp>(d.binary<MulOp>(x, x), x);
    Value sum =
        d.binary<AddOp>(x, d.binary<MulOp>(cube, d.scalarLike(x, 0.044715)));
    inner = d.unary<TanhOp>(
        d.binary<MulOp>(sum, d.scalarLike(x, 0.7978845608028654)));
  } else {
    inner = d.unary<ErfOp>(
        d.binary<MulOp>(x, d.scalarLike(x, 0.70710678118654752)));
  }
  Value phi = d.binary<MulOp>(d.binary<AddOp>(inner, d.scalarLike(x, 1.0)),
                              d.scalarLike(x, 0.5));
  return d.toType(d.binary<MulOp>(x, phi), op.getType());
}

Value decompose(Decomposer &d, SiluOp op) {
  Value x = d.toCompute(op.getOperand());
  return d.toType(d.binary<MulOp>(x, d.unary<SigmoidOp>(x)), op.getType());
}

// ONNX's activations with float attributes: their one definition. Every
// comparison is false on NaN, so NaN reaches the result through the
// arithmetic on x (or, for shrink, becomes 0, as ONNX's Where computes).

Value decompose(Decomposer &d, LeakyReluOp op) {
  Value x = d.toCompute(op.getOperand());
  double alpha = op.getAlpha().convertToDouble();
  Value negative = d.binary<LtOp>(x, d.scalarLike(x, 0.0));
  Value scaled = d.binary<MulOp>(x, d.scalarLike(x, alpha));
  return d.toType(d.select(negative, scaled, x), op.getType());
}

Value decompose(Decomposer &d, EluOp op) {
  Value x = d.toCompute(op.getOperand());
  double alpha = op.getAlpha().convertToDouble();
  Value negative = d.binary<LtOp>(x, d.scalarLike(x, 0.0));
  Value expm1 = d.binary<SubOp>(d.unary<ExpOp>(x), d.scalarLike(x, 1.0));
  Value scaled = d.binary<MulOp>(expm1, d.scalarLike(x, alpha));
  return d.toType(d.select(negative, scaled, x), op.getType());
}

Value decompose(Decomposer &d, SeluOp op) {
  Value x = d.toCompute(op.getOperand());
  Value alpha = d.scalarLike(x, op.getAlpha().convertToDouble());
  Value positive = d.binary<GtOp>(x, d.scalarLike(x, 0.0));
  Value negativePart =
      d.binary<SubOp>(d.binary<MulOp>(d.unary<ExpOp>(x), alpha), alpha);
  Value y = d.binary<MulOp>(d.select(positive, x, negativePart),
                            d.scalarLike(x, op.getGamma().convertToDouble()));
  return d.toType(y, op.getType());
}

Value decompose(Decomposer &d, CeluOp op) {
  Value x = d.toCompute(op.getOperand());
  Value alpha = d.scalarLike(x, op.getAlpha().convertToDouble());
  Value expm1 = d.binary<SubOp>(d.unary<ExpOp>(d.binary<DivOp>(x, alpha)),
                                d.scalarLike(x, 1.0));
  Value negativePart =
      d.binary<MinOp>(d.binary<MulOp>(expm1, alpha), d.scalarLike(x, 0.0));
  return d.toType(d.binary<AddOp>(d.unary<ReluOp>(x), negativePart),
                  op.getType());
}

Value decompose(Decomposer &d, HardSigmoidOp op) {
  Value x = d.toCompute(op.getOperand());
  Value linear = d.binary<AddOp>(
      d.binary<MulOp>(x, d.scalarLike(x, op.getAlpha().convertToDouble())),
      d.scalarLike(x, op.getBeta().convertToDouble()));
  Value y = d.binary<MaxOp>(d.binary<MinOp>(linear, d.scalarLike(x, 1.0)),
                            d.scalarLike(x, 0.0));
  return d.toType(y, op.getType());
}

Value decompose(Decomposer &d, ShrinkOp op) {
  Value x = op.getOperand();
  auto type = cast<RankedTensorType>(x.getType());
  // Integers: in f64, truncated back (ONNX's reference computes x + bias in
  // NumPy's float64 and converts with astype).
  x = isa<IntegerType>(type.getElementType())
          ? d.toType(x, type.clone(d.builder.getF64Type()))
          : d.toCompute(x);
  double lambd = op.getLambd().convertToDouble();
  Value bias = d.scalarLike(x, op.getBias().convertToDouble());
  Value below = d.binary<LtOp>(x, d.scalarLike(x, -lambd));
  Value above = d.binary<GtOp>(x, d.scalarLike(x, lambd));
  Value y =
      d.select(below, d.binary<AddOp>(x, bias),
               d.select(above, d.binary<SubOp>(x, bias), d.scalarLike(x, 0.0)));
  return d.toType(y, op.getType());
}

Value decompose(Decomposer &d, IsInfOp op) {
  Value x = op.getOperand();
  bool positive = op.getDetectPositive() != 0,
       negative = op.getDetectNegative() != 0;
  if (positive && negative)
    return d.binary<EqOp>(d.unary<AbsOp>(x), d.scalarLike(x, INFINITY));
  // Neither: x == NaN, false everywhere with the result's shape.
  double target = positive ? INFINITY : negative ? -INFINITY : NAN;
  return d.binary<EqOp>(x, d.scalarLike(x, target));
}

Value decompose(Decomposer &d, ClipOp op) {
  Value y = op.getOperand();
  if (Value low = op.getMin())
    y = d.binary<MaxOp>(y, low);
  if (Value high = op.getMax())
    y = d.binary<MinOp>(y, high);
  return y;
}

Value decompose(Decomposer &d, ReduceMeanOp op) {
  Value x = op.getOperand();
  auto type = cast<RankedTensorType>(x.getType());
  // Narrow integers sum and divide in i64: their own sum would wrap, and
  // the count may not fit them (5000 in i8); the mean then fits again.
  auto intType = dyn_cast<IntegerType>(type.getElementType());
  x = intType && intType.getWidth() < 64
          ? d.toType(x, type.clone(d.builder.getI64Type()))
          : d.toCompute(x);
  Value sum = d.reduce<ReduceSumOp>(x, op.getAxes(), op.getKeepdims());
  Value count = d.countOf(x, op.getAxes());
  return d.toType(d.binary<DivOp>(sum, count), op.getType());
}

Value decompose(Decomposer &d, ReduceL2Op op) {
  Value x = d.toRealCompute(op.getOperand());
  Value sum = d.reduce<ReduceSumOp>(d.binary<MulOp>(x, x), op.getAxes(),
                                    op.getKeepdims());
  return d.toType(d.unary<SqrtOp>(sum), op.getType());
}

Value decompose(Decomposer &d, ReduceLogSumExpOp op) {
  Value x = d.toRealCompute(op.getOperand());
  Value max = d.reduce<ReduceMaxOp>(x, op.getAxes(), true);
  // Shift by the max where it is finite (max - max == 0); by 0 where it is
  // infinite or NaN, so log(sum(exp(x))) keeps its -inf, +inf or NaN.
  Value zero = d.scalarLike(x, 0.0);
  Value isFinite = d.binary<EqOp>(d.binary<SubOp>(max, max), zero);
  Value shift =
      SelectOp::create(d.builder, d.loc, isFinite, max, zero).getResult();
  Value sum = d.reduce<ReduceSumOp>(d.unary<ExpOp>(d.binary<SubOp>(x, shift)),
                                    op.getAxes(), true);
  Value y = d.binary<AddOp>(d.unary<LogOp>(sum), shift);
  auto resultType = cast<RankedTensorType>(op.getType());
  auto keptType = cast<RankedTensorType>(y.getType());
  if (keptType.getShape() != resultType.getShape())
    y = d.reshape(y, keptType.clone(resultType.getShape()));
  return d.toType(y, op.getType());
}

/// (x - zero_point) * scale in f32, as ONNX's reference computes it; a
/// per-axis scale (and zero point) is shaped to broadcast along its axis.
Value decompose(Decomposer &d, DequantizeLinearOp op) {
  auto type = op.getOperand().getType();
  Type f32 = d.builder.getF32Type();
  auto alongAxis = [&](Value value) {
    auto valueType = cast<RankedTensorType>(value.getType());
    if (valueType.getRank() == 0 || valueType.getShape() == type.getShape())
      return value; // per tensor, or per element
    int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
    SmallVector<int64_t> shape(type.getRank() - axis, 1);
    shape[0] = valueType.getDimSize(0);
    return d.reshape(value, valueType.clone(shape));
  };
  Value x = d.toType(op.getOperand(), type.clone(f32));
  if (Value zeroPoint = op.getZeroPoint()) {
    auto zeroType = cast<RankedTensorType>(zeroPoint.getType());
    x = d.binary<SubOp>(x, alongAxis(d.toType(zeroPoint, zeroType.clone(f32))));
  }
  auto scaleType = op.getScale().getType();
  Value y = d.binary<MulOp>(
      x, alongAxis(d.toType(op.getScale(), scaleType.clone(f32))));
  return d.toType(y, op.getType());
}

/// alpha * A' @ B' + beta * C: the matmul takes the transposes and alpha
/// (a 0 or non-finite alpha is a multiply of its own, so NaN and inf in the
/// product survive it); C (scaled unless beta is 1) is added after it. A
/// beta of 0 leaves C out, NaN and inf in it too, as ONNX's reference
/// evaluator and BLAS do (C then only shapes nothing: it broadcasts to Y).
Value decompose(Decomposer &d, GemmOp op) {
  double alpha = op.getAlpha().convertToDouble();
  bool alphaOnCall = std::isfinite(alpha) && alpha != 0.0;
  Value product =
      MatmulOp::create(d.builder, d.loc, op.getType(), op.getA(), op.getB(),
                       Value(), op.getTransA(), op.getTransB(),
                       APFloat(alphaOnCall ? alpha : 1.0), "none")
          .getResult();
  if (!alphaOnCall)
    product = d.binary<MulOp>(product, d.scalarLike(product, alpha));
  Value c = op.getC();
  if (!c || op.getBeta().convertToDouble() == 0.0)
    return product;
  if (op.getBeta().convertToDouble() != 1.0)
    c = d.binary<MulOp>(c, d.scalarLike(c, op.getBeta().convertToDouble()));
  return AddOp::create(d.builder, d.loc, op.getType(), product, c).getResult();
}

struct DecomposeComposites
    : public fuse::impl::FuseDecomposeCompositesBase<DecomposeComposites> {
  void runOnOperation() override {
    SmallVector<Operation *> composites;
    getOperation().walk([&](FusionKindOpInterface op) {
      if (op.getFusionKind() == FusionKind::Composite)
        composites.push_back(op);
    });
    for (Operation *op : composites)
      if (failed(decomposeComposite(op)))
        return signalPassFailure();
    // The counts of reductions along symbolic dims become their sizes.
    bool readsSizes = false;
    getOperation().walk([&](DimOfOp) { readsSizes = true; });
    if (!readsSizes)
      return;
    FailureOr<SymbolicDims> dims = SymbolicDims::analyze(getOperation());
    if (failed(dims) || failed(resolveDimSizes(getOperation(), *dims)))
      return signalPassFailure();
  }
};

} // namespace

LogicalResult fuse::decomposeComposite(Operation *op) {
  Decomposer d(op);
  Value replacement =
      TypeSwitch<Operation *, Value>(op)
          .Case<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, GeluOp, SiluOp,
                LeakyReluOp, EluOp, SeluOp, CeluOp, HardSigmoidOp, ShrinkOp,
                IsInfOp, ClipOp, ReduceMeanOp, ReduceL2Op, ReduceLogSumExpOp,
                GemmOp, DequantizeLinearOp>(
              [&](auto concrete) { return decompose(d, concrete); })
          .Default([](Operation *) { return Value(); });
  if (!replacement)
    return op->emitError() << "internal error: no decomposition for "
                           << describeOp(op);
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
  return success();
}
