//===- LayoutOps.h - Shapes and bounds of the layout ops -------*- C++ -*-===//
//
// One place per fact: how ONNX's attributes of the layout ops (negative
// axes, clamped slice bounds, begin/end pads) resolve, and the result shape
// they give. The verifiers, the importer and codegen all call these. Each
// checking helper reports a bad attribute through `emitError`, which yields
// a diagnostic already naming the op (the verifier's emitOpError, the
// importer's "node 'n': error: 'slice' "); the helper appends the reason.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_IR_LAYOUTOPS_H
#define FUSE_IR_LAYOUTOPS_H

#include "ir/FuseDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace fuse {

using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// ONNX axes (each in [-rank, rank)) made non-negative, in the given order;
/// fails on an axis out of range or named twice. `what` names the attr.
mlir::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank, llvm::StringRef what,
              EmitErrorFn emitError);

/// The shape of transposing `shape` by `perm` (a permutation of [0, rank)).
mlir::FailureOr<llvm::SmallVector<int64_t>>
transposeShape(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> perm,
               EmitErrorFn emitError);

/// A slice resolved per dim of the operand: element `c` of result dim `d`
/// is operand element `starts[d] + c * steps[d]` along dim `d`. Dims not
/// sliced have start 0, step 1 and their full size; a dim of result size
/// 0 or 1 gets step 1 (its step is never applied).
struct ResolvedSlice {
  llvm::SmallVector<int64_t> starts, steps, sizes;
};
mlir::FailureOr<ResolvedSlice> resolveSlice(
    llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> starts,
    llvm::ArrayRef<int64_t> ends, std::optional<llvm::ArrayRef<int64_t>> axes,
    std::optional<llvm::ArrayRef<int64_t>> steps, EmitErrorFn emitError);
/// Of a verified op.
ResolvedSlice resolveSlice(SliceOp op);

/// The result type of concatenating `operands` (one dtype and rank, equal
/// in every dim but `axis`) along `axis` (negative counts from the end).
mlir::FailureOr<mlir::RankedTensorType>
concatType(mlir::TypeRange operands, int64_t axis, EmitErrorFn emitError);

/// The result type of gathering `indices` from `data` along `axis`:
/// data's dims before axis, indices' dims, data's dims after axis.
mlir::FailureOr<mlir::RankedTensorType>
gatherType(mlir::RankedTensorType data, mlir::RankedTensorType indices,
           int64_t axis, EmitErrorFn emitError);

/// Pads resolved per dim: `begins[d]` elements before, `ends[d]` after
/// (negative: removed).
struct ResolvedPad {
  llvm::SmallVector<int64_t> begins, ends;
};
/// `pads` holds all begins then all ends, for every dim or for `axes`.
mlir::FailureOr<ResolvedPad>
resolvePad(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> pads,
           std::optional<llvm::ArrayRef<int64_t>> axes, EmitErrorFn emitError);
/// Of a verified op.
ResolvedPad resolvePad(PadOp op);
/// The padded shape; fails when a dim would become negative.
mlir::FailureOr<llvm::SmallVector<int64_t>>
paddedShape(llvm::ArrayRef<int64_t> shape, const ResolvedPad &pad,
            EmitErrorFn emitError);
/// `value` fits `elementType`: any number for floats, a whole number in
/// range for integers, 0 or 1 for i1.
mlir::LogicalResult checkPadValue(mlir::Type elementType, double value,
                                  EmitErrorFn emitError);

/// The i64 result type of argmax/argmin of `operand` along `axis`.
mlir::FailureOr<mlir::RankedTensorType>
argReductionType(mlir::RankedTensorType operand, int64_t axis, bool keepdims,
                 EmitErrorFn emitError);

// Views imported as fuse.reshape / fuse.broadcast_to (no op of their own).

/// ONNX Squeeze: drop `axes` (each of size 1), or every dim of size 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
squeezeShape(llvm::ArrayRef<int64_t> shape,
             std::optional<llvm::ArrayRef<int64_t>> axes,
             EmitErrorFn emitError);
/// ONNX Unsqueeze: insert dims of 1 at `axes` of the result.
mlir::FailureOr<llvm::SmallVector<int64_t>>
unsqueezeShape(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> axes,
               EmitErrorFn emitError);
/// ONNX Flatten: (d0 * ... * d(axis-1), d(axis) * ... * d(rank-1)), with
/// `axis` in [-rank, rank].
mlir::FailureOr<llvm::SmallVector<int64_t>>
flattenShape(llvm::ArrayRef<int64_t> shape, int64_t axis,
             EmitErrorFn emitError);
/// ONNX Expand: the bidirectional broadcast of `shape` and `target`.
mlir::FailureOr<llvm::SmallVector<int64_t>>
expandShape(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> target,
            EmitErrorFn emitError);

} // namespace fuse

#endif
