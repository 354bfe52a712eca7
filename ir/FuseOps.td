//===- FuseOps.td - Operations of the fuse dialect ---------*- tablegen -*-===//

#ifndef FUSE_OPS_TD
#define FUSE_OPS_TD

include "ir/FuseDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "ir/FuseInterfaces.td"

// The kind an op reports to fusion (FusionKindOpInterface).
class Fuse_KindIs<string kind> {
  code kindDeclaration = [{
    ::fuse::FusionKind getFusionKind() { return ::fuse::FusionKind::}] # kind # [{; }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise ops: the classes here, the rows in ElementwiseOps.def.
//===----------------------------------------------------------------------===//

class Fuse_ElementwiseOp<string mnemonic, list<Trait> traits>
    : Fuse_Op<mnemonic, !listconcat([Pure, Fuse_ElementwiseOpInterface,
                         DeclareOpInterfaceMethods<InferTypeOpInterface>],
                         traits)> {
  let hasFolder = 1;
  let extraClassDeclaration = Fuse_KindIs<"Elementwise">.kindDeclaration # [{
    /// This op's row of ElementwiseOps.def.
    const ::fuse::ElementwiseOpInfo &getInfo();
  }];
  // Type inference and folding are shared by every row of the table (ops
  // with SameOperandsAndResultType get their inference from that trait).
  defvar preservesType = !foldl(false, traits, found, trait,
      !or(found, !eq(!cast<string>(trait), "SameOperandsAndResultType")));
  let extraClassDefinition = !if(preservesType, "", [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, ::std::optional<::mlir::Location> loc,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr,
        ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::fuse::inferElementwiseResultType(getOperationName(), context,
                                                loc, operands, inferred);
    }
  }]) # [{
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return ::fuse::foldElementwise(getOperation(), adaptor.getOperands());
    }
    const ::fuse::ElementwiseOpInfo &$cppClass::getInfo() {
      static const ::fuse::ElementwiseOpInfo &info =
          *::fuse::lookupElementwiseOp(getOperationName().drop_front(5));
      return info;
    }
  }];
}

class Fuse_UnaryElementwiseOp<string mnemonic, Type operandType,
                              Type resultType, list<Trait> traits>
    : Fuse_ElementwiseOp<mnemonic, traits> {
  let summary = "elementwise " # mnemonic;
  let arguments = (ins operandType:$operand);
  let results = (outs resultType:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

class Fuse_BinaryElementwiseOp<string mnemonic, Type operandType,
                               Type resultType, list<Trait> traits>
    : Fuse_ElementwiseOp<mnemonic, traits> {
  let summary = "elementwise " # mnemonic # " with NumPy broadcasting";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

include "ElementwiseOps.td"

//===----------------------------------------------------------------------===//
// Other pointwise ops
//===----------------------------------------------------------------------===//

def Fuse_SelectOp : Fuse_Op<"select", [Pure, Fuse_FusionKindOpInterface,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let extraClassDeclaration = Fuse_KindIs<"Elementwise">.kindDeclaration;
  let summary = "cond ? true_value : false_value, with NumPy broadcasting";
  let arguments = (ins Fuse_BoolTensor:$cond, Fuse_AnyTensor:$true_value,
                       Fuse_AnyTensor:$false_value);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$cond `,` $true_value `,` $false_value attr-dict `:` "
                       "functional-type(operands, results)";
  let hasFolder = 1;
}

def Fuse_CastOp : Fuse_Op<"cast", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Elementwise">.kindDeclaration;
  let summary = "elementwise dtype conversion";
  let description = [{
    Float to integer truncates toward zero; anything to i1 is `x != 0`;
    anything to a 4- or 2-bit integer wraps into its bits. To a float8
    dtype, a value past its range saturates to the largest finite value,
    or with `non_saturating` becomes its NaN (E5M2: infinity), ONNX Cast's
    saturate=0. To f8E8M0FNU (a power of two) the exponent rounds by
    `round_mode`: "up" (the default), "down" or "nearest".
  }];
  let arguments = (ins Fuse_AnyTensor:$operand, UnitAttr:$non_saturating,
                       OptionalAttr<StrAttr>:$round_mode);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_BitcastOp : Fuse_Op<"bitcast", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Elementwise">.kindDeclaration;
  let summary = "elementwise reinterpretation of the bits (ONNX BitCast)";
  let description = [{
    Each element's bits, unchanged, read as the result's dtype, which has
    the same number of bits (little-endian, as ONNX defines it). Read as
    i1, any nonzero byte is true.
  }];
  let arguments = (ins Fuse_AnyTensor:$operand);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
}

def Fuse_DimSizeOp : Fuse_Op<"dim_size", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Elementwise">.kindDeclaration;
  let summary = "a symbolic size at run time, as a 0-d i64 tensor";
  let description = [{
    `factor` times the product of the function's symbols named in
    `symbols` (`fuse.symbols`), at the sizes a run binds: how a model's
    shape computation over symbolic dims (ONNX `Shape` of `[1, seq]`)
    reaches its data, as in `next_len = past_len + seq`. Kernels read it
    as one of the sizes they take.
  }];
  let arguments = (ins StrArrayAttr:$symbols,
                       DefaultValuedAttr<I64Attr, "1">:$factor);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fuse_DimOfOp : Fuse_Op<"dim_of", [Pure]> {
  let summary = "the size of one dim of a tensor, as a 0-d i64 tensor";
  let description = [{
    Dim `dim` of `operand` at run time (ONNX `Shape(x)[d]` where the
    frontend cannot name the dim's symbols). Before any pass runs it becomes
    a constant (a fixed dim) or a fuse.dim_size of the dim's symbols
    (resolveDimSizes, from SymbolicDims).
  }];
  let arguments = (ins Fuse_AnyTensor:$operand, I64Attr:$dim);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

def Fuse_IotaOp : Fuse_Op<"iota", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Elementwise">.kindDeclaration;
  let summary = "0, 1, ..., n - 1 for a symbolic n, as a 1-D i64 tensor";
  let description = [{
    n is `factor` times the product of the function's symbols named in
    `symbols`: an ONNX `Range(0, seq, 1)` over a symbolic `seq` (a fixed
    range folds to a constant). The result's one dim is dynamic.
  }];
  let arguments = (ins StrArrayAttr:$symbols,
                       DefaultValuedAttr<I64Attr, "1">:$factor);
  let results = (outs 1DTensorOf<[I64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fuse_BroadcastToOp : Fuse_Op<"broadcast_to",
    [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Broadcast">.kindDeclaration;
  let summary = "broadcast a tensor to a larger shape (NumPy rules)";
  let arguments = (ins Fuse_AnyTensor:$operand);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_ReshapeOp : Fuse_Op<"reshape", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"View">.kindDeclaration;
  let summary = "reinterpret a tensor with a new shape of the same size";
  let arguments = (ins Fuse_AnyTensor:$operand);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_ConstantOp : Fuse_Op<"constant", [Pure, ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a dense or splat tensor constant";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Fuse_ReductionBase<string mnemonic, Type operandType, list<Trait> traits>
    : Fuse_Op<mnemonic, !listconcat([Pure], traits)> {
  let arguments = (ins operandType:$operand, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

class Fuse_PrimitiveReductionOp<string mnemonic, string combiner>
    : Fuse_ReductionBase<mnemonic, Fuse_NumericTensor,
                         [Fuse_ReductionOpInterface]> {
  let summary = "combine elements along `axes` with " # combiner;
  let description = [{
    `axes` are sorted and non-negative (frontends resolve ONNX's negative
    and absent axes). An empty reduced set gives the combiner's identity:
    0 for Sum, 1 for Prod, -inf (or the dtype's minimum) for Max, +inf (or
    its maximum) for Min. Max and Min propagate NaN.
  }];
  let extraClassDeclaration = Fuse_KindIs<"Reduction">.kindDeclaration # [{
    ::fuse::ReductionCombiner getCombiner() {
      return ::fuse::ReductionCombiner::}] # combiner # [{;
    }
  }];
}

def Fuse_ReduceSumOp : Fuse_PrimitiveReductionOp<"reduce_sum", "Sum">;
def Fuse_ReduceProdOp : Fuse_PrimitiveReductionOp<"reduce_prod", "Prod">;
def Fuse_ReduceMaxOp : Fuse_PrimitiveReductionOp<"reduce_max", "Max">;
def Fuse_ReduceMinOp : Fuse_PrimitiveReductionOp<"reduce_min", "Min">;

class Fuse_CompositeReductionOp<string mnemonic, Type operandType,
                                string formula>
    : Fuse_ReductionBase<mnemonic, operandType, [Fuse_FusionKindOpInterface]> {
  let summary = formula # " along `axes` (decomposed before fusion)";
  let extraClassDeclaration = Fuse_KindIs<"Composite">.kindDeclaration;
}

def Fuse_ReduceMeanOp : Fuse_CompositeReductionOp<"reduce_mean",
    Fuse_NumericTensor, "sum / count">;
def Fuse_ReduceL2Op : Fuse_CompositeReductionOp<"reduce_l2",
    Fuse_NumericTensor, "sqrt(sum(x * x))">;
def Fuse_ReduceLogSumExpOp : Fuse_CompositeReductionOp<"reduce_log_sum_exp",
    Fuse_NumericTensor, "log(sum(exp(x)))">;

//===----------------------------------------------------------------------===//
// Composites: defined by primitives, decomposed before fusion
//===----------------------------------------------------------------------===//

class Fuse_CompositeOp<string mnemonic, list<Trait> traits = []>
    : Fuse_Op<mnemonic, !listconcat([Pure, Fuse_FusionKindOpInterface],
                                    traits)> {
  let extraClassDeclaration = Fuse_KindIs<"Composite">.kindDeclaration;
}

class Fuse_SoftmaxLikeOp<string mnemonic, string formula>
    : Fuse_CompositeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = formula # " along `axis` (ONNX " # mnemonic # ", opset 13)";
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

def Fuse_SoftmaxOp : Fuse_SoftmaxLikeOp<"softmax",
    "exp(x - max) / sum(exp(x - max))">;
def Fuse_LogSoftmaxOp : Fuse_SoftmaxLikeOp<"log_softmax",
    "x - max - log(sum(exp(x - max)))">;

def Fuse_LayerNormOp : Fuse_CompositeOp<"layer_norm",
    [AttrSizedOperandSegments]> {
  let summary = "ONNX LayerNormalization over the dims from `axis` on";
  let description = [{
    (x - mean) / sqrt(var + epsilon) * weight + bias, with mean and variance
    over dims [axis, rank) computed in f32 (ONNX's stash_type) for f16/bf16
    inputs. Weight and bias are optional and broadcast to those dims.
  }];
  let arguments = (ins Fuse_FloatTensor:$operand,
                       Optional<Fuse_FloatTensor>:$weight,
                       Optional<Fuse_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`weight` $weight^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fuse_RmsNormOp : Fuse_CompositeOp<"rms_norm"> {
  let summary = "ONNX RMSNormalization over the dims from `axis` on";
  let description = [{
    x / sqrt(mean(x * x) + epsilon) * weight, the mean over dims [axis,
    rank) in f32 for f16/bf16 inputs. The weight is optional.
  }];
  let arguments = (ins Fuse_FloatTensor:$operand,
                       Optional<Fuse_FloatTensor>:$weight,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fuse_GeluOp : Fuse_CompositeOp<"gelu", [SameOperandsAndResultType]> {
  let summary = "ONNX Gelu: x * Phi(x), exact (erf) or the tanh approximation";
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

def Fuse_DequantizeLinearOp : Fuse_CompositeOp<"dequantize_linear"> {
  let summary = "ONNX DequantizeLinear: (x - zero_point) * scale";
  let description = [{
    Per tensor (a rank-0 scale), per axis (a 1-D scale of the operand's
    `axis` dim, negative counting from the end) or per element (a scale of
    the operand's shape: blocked quantization's scales, replicated over
    their blocks). The optional zero point has the scale's shape and the
    operand's dtype. Computed in f32 as the
    ONNX reference does, rounded once to the scale's dtype, which is the
    result's.
  }];
  let arguments = (ins Fuse_QuantizedTensor:$operand,
                       Fuse_FloatTensor:$scale,
                       Optional<Fuse_QuantizedTensor>:$zero_point,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $scale (`zero_point` $zero_point^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fuse_SiluOp : Fuse_CompositeOp<"silu", [SameOperandsAndResultType]> {
  let summary = "x * sigmoid(x)";
  let arguments = (ins Fuse_FloatTensor:$operand);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

// ONNX's activations with float attributes (named and defaulted as ONNX
// names them): each defined once, by its decomposition into rows of the
// elementwise table (passes/DecomposeComposites.cpp).
class Fuse_ActivationOp<string mnemonic, string formula>
    : Fuse_CompositeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = "ONNX " # formula;
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

def Fuse_LeakyReluOp : Fuse_ActivationOp<"leaky_relu",
    "LeakyRelu: x < 0 ? alpha * x : x"> {
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<F64Attr, "0.01">:$alpha);
}

def Fuse_EluOp : Fuse_ActivationOp<"elu",
    "Elu: x < 0 ? alpha * (exp(x) - 1) : x"> {
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
}

def Fuse_SeluOp : Fuse_ActivationOp<"selu",
    "Selu: gamma * (x > 0 ? x : alpha * exp(x) - alpha)"> {
  let arguments = (ins Fuse_FloatTensor:$operand,
      DefaultValuedAttr<F64Attr, "1.67326319217681884765625">:$alpha,
      DefaultValuedAttr<F64Attr, "1.05070102214813232421875">:$gamma);
}

def Fuse_CeluOp : Fuse_ActivationOp<"celu",
    "Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))"> {
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
}

def Fuse_HardSigmoidOp : Fuse_ActivationOp<"hard_sigmoid",
    "HardSigmoid: max(0, min(1, alpha * x + beta))"> {
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<F64Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F64Attr, "0.5">:$beta);
}

def Fuse_ShrinkOp : Fuse_CompositeOp<"shrink", [SameOperandsAndResultType]> {
  let summary = "ONNX Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0";
  let description = [{
    Integers are computed in f64 and truncated back toward zero, as ONNX's
    reference does (`astype`).
  }];
  let arguments = (ins Fuse_NumericTensor:$operand,
                       DefaultValuedAttr<F64Attr, "0.0">:$bias,
                       DefaultValuedAttr<F64Attr, "0.5">:$lambd);
  let results = (outs Fuse_NumericTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

def Fuse_IsInfOp : Fuse_CompositeOp<"isinf"> {
  let summary = "ONNX IsInf: x is +inf (detect_positive), -inf (detect_negative)";
  let arguments = (ins Fuse_FloatTensor:$operand,
                       DefaultValuedAttr<I64Attr, "1">:$detect_positive,
                       DefaultValuedAttr<I64Attr, "1">:$detect_negative);
  let results = (outs Fuse_BoolTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

def Fuse_ClipOp : Fuse_CompositeOp<"clip", [AttrSizedOperandSegments]> {
  let summary = "ONNX Clip (NumPy's clip): min(max(x, min), max)";
  let description = [{
    Either bound is optional. NaN stays NaN (max and min propagate it); a
    lower bound above the upper gives the upper. The bounds have the
    operand's dtype and broadcast to its shape, which is the result's.
  }];
  let arguments = (ins Fuse_NumericTensor:$operand,
                       Optional<Fuse_NumericTensor>:$min,
                       Optional<Fuse_NumericTensor>:$max);
  let results = (outs Fuse_NumericTensor:$result);
  let assemblyFormat = [{
    $operand (`min` $min^)? (`max` $max^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// Layout ops (transpose, slice, concat, gather, pad, argmax/argmin).
include "ir/LayoutOps.td"

// Library ops (matmul) and gemm.
include "ir/LibraryOps.td"
include "ir/AttentionOps.td"

//===----------------------------------------------------------------------===//
// Fusion regions
//===----------------------------------------------------------------------===//

def Fuse_FusionOp : Fuse_Op<"fusion",
    [IsolatedFromAbove, RecursiveMemoryEffects, SingleBlock]> {
  let summary = "a region of fused ops that becomes one kernel";
  let description = [{
    The body computes the results from the block arguments, which are bound
    to `ins`. Codegen turns each region into one kernel that reads each input
    once and writes each result once.
  }];
  let arguments = (ins Variadic<Fuse_AnyTensor>:$inputs);
  let results = (outs Variadic<Fuse_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? attr-dict `->` type($results)
    $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator that yields the region's results.
    YieldOp getYield();
  }];
}

def Fuse_YieldOp : Fuse_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusionOp">]> {
  let summary = "yields the results of a fusion region";
  let arguments = (ins Variadic<Fuse_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // FUSE_OPS_TD
