//===- LayoutOps.td - Ops that move elements ---------------*- tablegen -*-===//
//
// Included by FuseOps.td. Layout ops report FusionKind::Layout and run as a
// kernel of their own. Their attributes carry ONNX's names and meanings
// (opset 13+, negative axes included); the resolved form (axes made
// non-negative, slice bounds clamped) is computed in one place, the helpers
// of ir/LayoutOps.h, used by the verifiers, the importer and codegen.
//
// Squeeze, Unsqueeze and Flatten import as fuse.reshape and Expand as
// fuse.broadcast_to: they need no op of their own.
//
//===----------------------------------------------------------------------===//

class Fuse_LayoutOp<string mnemonic, list<Trait> traits = []>
    : Fuse_Op<mnemonic, !listconcat([Pure, Fuse_FusionKindOpInterface],
                                    traits)> {
  let extraClassDeclaration = Fuse_KindIs<"Layout">.kindDeclaration;
  let hasVerifier = 1;
}

def Fuse_TransposeOp : Fuse_LayoutOp<"transpose"> {
  let summary = "permute the dims (ONNX Transpose)";
  let description = [{
    Result dim `d` is operand dim `perm[d]`; `perm` is a permutation of
    [0, rank). (ONNX's default, the reversed dims, is filled in by the
    importer.)
  }];
  let arguments = (ins Fuse_AnyTensor:$operand, DenseI64ArrayAttr:$perm);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
}

def Fuse_SliceOp : Fuse_LayoutOp<"slice"> {
  let summary = "a strided sub-tensor (ONNX Slice, bounds as attributes)";
  let description = [{
    For each `i`: along axis `axes[i]` (default: i; negative counts from the
    end) take `starts[i]`, `starts[i] + steps[i]`, ... up to but excluding
    `ends[i]` (steps default to 1, may be negative, never 0). Negative starts
    and ends count from the end of the dim; then, as ONNX says, a start is
    clamped to [0, dim] (to [0, dim - 1] for a negative step) and an end to
    [0, dim] (to [-1, dim - 1] for a negative step), so INT64_MAX and
    INT64_MIN mean "to the end". Axes not named are kept whole.
  }];
  let arguments = (ins Fuse_AnyTensor:$operand, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends,
                       OptionalAttr<DenseI64ArrayAttr>:$axes,
                       OptionalAttr<DenseI64ArrayAttr>:$steps);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
}

def Fuse_ConcatOp : Fuse_LayoutOp<"concat"> {
  let summary = "join tensors along `axis` (ONNX Concat)";
  let description = [{
    One or more operands of one dtype and rank, equal in every dim but
    `axis` (negative counts from the end); the result's `axis` dim is the
    sum of theirs. Operands of size 0 along `axis` contribute nothing.
  }];
  let arguments = (ins Variadic<Fuse_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, results)";
}

def Fuse_GatherOp : Fuse_LayoutOp<"gather"> {
  let summary = "pick slices along `axis` by index (ONNX Gather)";
  let description = [{
    With `data` of rank r and `indices` of rank q, the result has rank
    q + r - 1: data's dims before `axis`, then indices' dims, then data's
    dims after `axis`. An index `k` selects `data[..., k, ...]`; a negative
    `k` counts from the end (`k + dim`).

    Out-of-range indices (outside [-dim, dim)) are an error in ONNX but can
    only be seen at run time: fusec does not read out of bounds, the
    result elements they select are 0 (0.0, false) on every target.
  }];
  let arguments = (ins Fuse_AnyTensor:$data,
                       RankedTensorOf<[I32, I64]>:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` "
                       "functional-type(operands, results)";
}

def Fuse_PadOp : Fuse_LayoutOp<"pad"> {
  let summary = "pad with a constant (ONNX Pad, mode \"constant\")";
  let description = [{
    `pads` lists, as in ONNX, all the begins then all the ends: for every dim
    (or for each of `axes`, negative counting from the end, when given) the
    count of `constant_value` elements added before and after. Negative pads
    remove elements (cropping); no dim may end up negative.
    `constant_value` is stored as f64 and converted to the dtype (for
    integer and i1 tensors it must be a whole number; i1 takes 0 or 1).
    Only ONNX's "constant" mode exists; the importer rejects the others.
  }];
  let arguments = (ins Fuse_AnyTensor:$operand, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$constant_value,
                       OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
}

class Fuse_ArgReductionOp<string mnemonic, string extreme, string onnxName>
    : Fuse_LayoutOp<mnemonic> {
  let summary = "index of the " # extreme # " along `axis` (ONNX " #
                onnxName # ")";
  let description = [{
    The i64 index along `axis` (negative counts from the end) of the first
    (or, with `select_last_index`, the last) occurrence of the extreme value;
    `keepdims` keeps the axis as a dim of 1. NaN follows NumPy: a NaN counts
    as more extreme than any number, so the index of the first NaN is
    returned (the last one with `select_last_index`). The reduced dim may
    be 0 only if the result is empty.
  }];
  let arguments = (ins Fuse_AnyTensor:$operand,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
}

def Fuse_ArgMaxOp : Fuse_ArgReductionOp<"argmax", "maximum", "ArgMax">;
def Fuse_ArgMinOp : Fuse_ArgReductionOp<"argmin", "minimum", "ArgMin">;
