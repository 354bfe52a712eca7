//===- LibraryOps.td - Ops run by a vendor library ---------*- tablegen -*-===//
//
// Included by FuseOps.td. `matmul` reports FusionKind::Library: it stays
// outside fusion regions and becomes a cuBLASLt (GPU) or BLAS (CPU) call.
// Its transposes, scale, bias and activation are the call's own flags and
// epilogue, folded into it by fuse-fold-into-library-calls. `gemm` is
// ONNX's Gemm, decomposed into a matmul and the ops around it.
//
//===----------------------------------------------------------------------===//

def Fuse_MatmulOp : Fuse_Op<"matmul", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Library">.kindDeclaration # [{
    /// The call's shapes (m, n, k, batches), from the operand types.
    ::fuse::MatmulShape getMatmulShape();
  }];
  let summary = "epilogue(alpha * op(lhs) @ op(rhs) + bias), NumPy matmul";
  let description = [{
    NumPy/ONNX MatMul: a 1-D lhs is a row vector and a 1-D rhs a column
    vector (their unit dim is dropped from the result); the dims before the
    last two are batch dims and broadcast. `transpose_a`/`transpose_b` swap
    the last two dims of an operand of rank >= 2 before the product. The
    product accumulates in f32 for f16/bf16 (f64 for f64) and is scaled by
    `alpha`; `bias`, a vector of the result's last dim, is added to every
    row; `epilogue` ("none", "relu" or "gelu_tanh", the tanh approximation)
    is applied last, and the result rounds once to its dtype: the operands'
    or, for f16/bf16 operands, f32 (a cast after the call, folded in); the
    bias has the result's dtype.
  }];
  let arguments = (ins Fuse_FloatTensor:$lhs, Fuse_FloatTensor:$rhs,
                       Optional<Fuse_FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$epilogue);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fuse_GemmOp : Fuse_Op<"gemm", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Composite">.kindDeclaration;
  let summary = "ONNX Gemm: alpha * A' @ B' + beta * C (decomposed)";
  let description = [{
    A and B are 2-D; A' is A transposed when `trans_a`, B' likewise. The
    optional C broadcasts to the [M, N] result. Decomposed into a
    fuse.matmul (flags and alpha) plus, with C, an add of C (times beta).
  }];
  let arguments = (ins Fuse_FloatTensor:$a, Fuse_FloatTensor:$b,
                       Optional<Fuse_FloatTensor>:$c,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`c` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fuse_QuantizedMatmulOp : Fuse_Op<"quantized_matmul",
    [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Contraction">.kindDeclaration;
  let summary = "lhs @ dequantized int8 weight^T: a GEMV for few rows";
  let description = [{
    lhs is [..., m, k] (batch dims stack into rows), weight is int8 [n, k]
    (row j holds output channel j), scale is [n]. Each weight dequantizes
    as DequantizeLinear does, `weight[j, i] * scale[j]` computed in f32 and
    rounded to the scale's dtype; products accumulate in f32 (f64 for f64)
    and round once to the result, [..., m, n]. lhs, scale and the result
    share one dtype. Made by fuse-prepare-library-calls from a matmul whose
    rhs is a per-channel dequantize_linear of int8 weights, when the rows
    are few: the kernel reads int8 weights, half the bytes of bf16 ones.
  }];
  let arguments = (ins Fuse_FloatTensor:$lhs, StaticShapeTensorOf<[I8]>:$weight,
                       Fuse_FloatTensor:$scale);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $weight `,` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}
