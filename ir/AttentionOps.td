//===- AttentionOps.td - Fused scaled dot-product attention -*- tablegen -*-===//
//
// Included by FuseOps.td. `attention` is made by fuse-form-attention from
// the matmul / scale / mask / softmax / matmul chain a model writes (or
// ONNX's Attention op), with the head split and merge around it folded
// into how it addresses its operands. It contracts its operands in a
// generated kernel of its own that never writes the scores to memory.
//
//===----------------------------------------------------------------------===//

def Fuse_AttentionOp : Fuse_Op<"attention", [Pure, Fuse_FusionKindOpInterface]> {
  let extraClassDeclaration = Fuse_KindIs<"Contraction">.kindDeclaration # [{
    int64_t getBatch();
    int64_t getQueryLength();
    int64_t getKeyLength();
    /// Whether an operand (or the result) is addressed as [B, T, C]
    /// (tokens first, heads side by side in C) rather than [B, H, T, D].
    static bool isTokensFirst(::mlir::Value value) {
      return ::llvm::cast<::mlir::RankedTensorType>(value.getType())
                 .getRank() == 3;
    }
  }];
  let summary = "softmax(scale * q @ k^T + bias, hidden keys -inf) @ v";
  let description = [{
    For every batch b, query head h < num_heads and query row i:
      s[j] = scale * sum_d q[b, h, i, d] * k[b, h / g, j, d] + bias[b, h, i, j]
      result[b, h, i, :] = sum_j softmax_j(s)[j] * v[b, h / g, j, :]
    with g = num_heads / kv_num_heads (grouped-query heads share a kv
    head). A key is hidden (its score -inf) when `causal` and
    j > i + causal_offset; when also window_left >= 0 and
    j < i + causal_offset - window_left (a sliding window); or where a
    bool bias is false. A float bias (the operands' dtype) is added. Scores, softmax statistics
    and the weighted sum are computed in f32 (f64 for f64), and the result
    rounds once. A row whose scores are all -inf is NaN (as Softmax gives
    it) or, with `zero_masked_rows` (ONNX Attention), zero. With
    `zero_nan_rows` every row whose softmax is NaN (all scores -inf, or a
    NaN or +inf score) is zero: what `Where(IsNaN(p), 0, p)` before the
    matmul with v gives (the exporters' SDPA) when v is finite.

    Each of q, k, v and the result is either [B, H, T, D] (heads first) or
    [B, T, C] (tokens first): head h's D elements of row t then start at
    column `*_column` + h * D, so a slice of a fused qkv projection and the
    head split of a reshape and transpose need no copy. The bias broadcasts
    (NumPy, right-aligned) to [B, num_heads, Tq, Tk].
  }];
  let arguments = (ins Fuse_FloatTensor:$query, Fuse_FloatTensor:$key,
                       Fuse_FloatTensor:$value,
                       Optional<RankedTensorOf<[F64, F32, F16, BF16, I1]>>:$bias,
                       I64Attr:$num_heads, I64Attr:$kv_num_heads,
                       I64Attr:$head_dim, I64Attr:$value_head_dim,
                       DefaultValuedAttr<I64Attr, "0">:$query_column,
                       DefaultValuedAttr<I64Attr, "0">:$key_column,
                       DefaultValuedAttr<I64Attr, "0">:$value_column,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$causal_offset,
                       DefaultValuedAttr<I64Attr, "-1">:$window_left,
                       DefaultValuedAttr<BoolAttr, "false">:$zero_masked_rows,
                       DefaultValuedAttr<BoolAttr, "false">:$zero_nan_rows);
  let results = (outs Fuse_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}
