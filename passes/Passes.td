//===- Passes.td - Every IR->IR pass of fusec --------------*- tablegen -*-===//

#ifndef FUSE_PASSES_TD
#define FUSE_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Before fusion
//===----------------------------------------------------------------------===//

def FuseLowerPrecision : Pass<"fuse-lower-precision", "mlir::ModuleOp"> {
  let summary = "Run the f32 tensors of a model in bf16 or f16 (--precision)";
  let description = [{
    Runs first. Every op on f32 tensors is retyped to `dtype`, except the
    ops kept in f32: bitcasts, the quantized ops, the nodes named by `keep`
    (their NameLoc), and the ops computing an f32 value that a cast to an
    integer or bool reads (back to a matmul or attention). Constants read
    by lowered ops are converted (finite values saturate); a cast joins
    each lowered value to an f32 reader, so the function's signature is
    unchanged:

      %y = fuse.sin %x : tensor<4xf32>; return %y
        => %l = fuse.cast %x : tensor<4xf32> to tensor<4xbf16>
           %s = fuse.sin %l : tensor<4xbf16>
           %y = fuse.cast %s : tensor<4xbf16> to tensor<4xf32>; return %y
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "The dtype f32 tensors become: bf16 or f16">,
    ListOption<"keep", "keep", "std::string",
               "Names of nodes whose f32 tensors stay f32">,
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered", "Ops retyped to the low dtype">,
    Statistic<"numBoundaryCasts", "num-boundary-casts",
              "Casts and converted constants between f32 and the low dtype">,
  ];
  let dependentDialects = ["fuse::FuseDialect"];
}

def FuseDecomposeComposites
    : Pass<"fuse-decompose-composites", "mlir::func::FuncOp"> {
  let summary = "Rewrite composite ops into the primitives that define them";
  let description = [{
    Softmax, log_softmax, layer_norm, rms_norm, gelu, silu, reduce_mean,
    reduce_l2 and reduce_log_sum_exp become elementwise ops and primitive
    reductions (f16/bf16 computed in f32):

      %y = fuse.softmax %x {axis = -1}
        => %m = fuse.reduce_max %x {axes = [-1]}; %e = fuse.exp(%x - %m)
           %s = fuse.reduce_sum %e {axes = [-1]}; %y = fuse.div %e, %s
  }];
  let dependentDialects = ["fuse::FuseDialect"];
}

def FuseFormAttention : Pass<"fuse-form-attention", "mlir::func::FuncOp"> {
  let summary = "Replace attention chains with one fuse.attention";
  let description = [{
    Runs first. Finds, from each softmax over the last dim of [B, H, Tq, Tk]
    scores that feeds a matmul with v,

      s = matmul(q', k')           (q' [B, H, Tq, D], k' [B, H, D, Tk])
      s = s * c | s / c            (c a positive splat scalar; also on q, k)
      s = select(m, -inf, s) | select(m, s, -inf) | s + bias
      o = matmul(softmax(s), v')   (v' [B, H, Tk, Dv])

    and replaces it with a fuse.attention. A constant mask that is a
    causal or sliding-window pattern becomes the op's `causal`,
    `causal_offset` and `window_left`; any other mask or bias is read by
    the kernel. q', k' and v' that are a transpose of a reshape of
    [B, T, H*D] (the head split), possibly a slice of the last dim of a
    fused qkv projection, are read in place ([B, T, C] operands with a
    column); a transpose [0, 2, 1, 3] and reshape to [B, Tq, H*Dv] after o
    (the head merge) becomes a [B, Tq, C] result. k' may also be k's
    transpose with the batch dims merged around it (torch's dynamo
    exporter: reshape to [B*H, Tk, D], transpose [0, 2, 1], reshape to [B,
    H, D, Tk]; with symbolic dims, SymbolicDims says the dims agree). Each
    intermediate must
    have no other user. A softmax feeding a matmul that does not match gets
    a remark "attention not formed: <why>". With `max-wide-query-rows`
    (the CUDA target), f32 and f64 attention of more query rows is left as
    its chain: with no tensor cores for them, cuBLAS and a softmax kernel
    beat the CUDA-core attention kernel there.
  }];
  let options = [
    Option<"maxWideQueryRows", "max-wide-query-rows", "int64_t",
           /*default=*/"-1",
           "Form f32/f64 attention only up to this many query rows "
           "(-1: any)">,
  ];
  let statistics = [
    Statistic<"numFormed", "num-formed", "Attention ops formed">,
  ];
  let dependentDialects = ["fuse::FuseDialect"];
}

def FusePrepareLibraryCalls
    : Pass<"fuse-prepare-library-calls", "mlir::func::FuncOp"> {
  let summary = "Fold transposes, scales, biases and activations into matmuls";
  let description = [{
    Runs first, while gemm and gelu are still whole. Gemm is decomposed into
    a fuse.matmul and the add of C. Then each matmul takes:
      - a transpose of the last two dims of an operand, as its flag;
      - a following multiply by a finite non-zero splat, as alpha;
      - with `epilogues` (the CUDA target), a following add of a vector of
        the last dim as its bias, then relu or gelu (tanh approximation) as
        its cuBLASLt epilogue, when the call is one product (no batch, or
        a batch that folds into the rows).
    Batch dims the call cannot stride over (neither complete nor all ones)
    are broadcast explicitly. With `pad-columns` (the CUDA target), a large
    call whose result rows are not whole 16-byte chunks and whose rhs (and
    bias) are constants gets zero columns up to that alignment, and a slice
    of its result feeds its users. Each matmul gets a remark saying what it
    folded and, where a chain stops, why.

      %t = fuse.transpose %w {perm = [1, 0]}
      %m = fuse.matmul %x, %t; %a = fuse.add %m, %b; %y = fuse.relu %a
        => %y = fuse.matmul %x, %w bias %b {epilogue = "relu",
                                            transpose_b = true}
  }];
  let options = [
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "Fold bias adds and activations into the call (cuBLASLt)">,
    Option<"padColumns", "pad-columns", "bool", /*default=*/"true",
           "Pad a large call's columns with zeros to whole 16-byte rows "
           "(constant rhs; cuBLASLt)">,
  ];
  let statistics = [
    Statistic<"numFolded", "num-folded", "Ops folded into library calls">,
  ];
  let dependentDialects = ["fuse::FuseDialect"];
}

def FuseMakeBroadcastsExplicit
    : Pass<"fuse-make-broadcasts-explicit", "mlir::func::FuncOp"> {
  let summary = "Insert fuse.broadcast_to for implicitly broadcast operands";
  let description = [{
      %y = fuse.sub %x, %m : (tensor<8x16xf32>, tensor<8x1xf32>) -> ...
        => %b = fuse.broadcast_to %m : tensor<8x1xf32> to tensor<8x16xf32>
           %y = fuse.sub %x, %b

    Splat constants stay implicit (they are cloned into regions).
  }];
  let statistics = [
    Statistic<"numBroadcasts", "num-broadcasts", "Broadcasts made explicit">,
  ];
  let dependentDialects = ["fuse::FuseDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FuseFormFusionRegions
    : Pass<"fuse-form-fusion-regions", "mlir::func::FuncOp"> {
  let summary = "Group pointwise ops into fuse.fusion regions, one per kernel";
  let description = [{
    Decide, then materialize. Walking the function in order, each pointwise
    op joins the groups of its pointwise producers when that computes no
    element twice and forms no cycle through an op left outside:

      %1 = fuse.sin %0; %2 = fuse.sin %1; %3 = fuse.mul %2, %y
        => %3 = fuse.fusion ins(%0, %y) { sin; sin; mul; fuse.yield }

    A producer whose result is broadcast into a larger consumer keeps its own
    kernel, so expensive work is not duplicated. A value used outside its
    group becomes an extra result of the region (multi-output kernels).
    Splat constants are cloned into the regions that use them; dense
    constants become region inputs. Every op left outside a region, and every
    producer/consumer edge not fused, gets a remark saying why.
  }];
  let options = [
    Option<"noFuse", "no-fuse", "bool", /*default=*/"false",
           "One region per op: the eager-like baseline and the reference">,
  ];
  let statistics = [
    Statistic<"numRegions", "num-regions", "Fusion regions formed">,
  ];
  let dependentDialects = ["fuse::FuseDialect"];
}

#endif // FUSE_PASSES_TD
