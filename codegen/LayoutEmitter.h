//===- LayoutEmitter.h - What the layout printers share --------*- C++ -*-===//
//
// The C++ (cpu/LayoutCppPrinter.cpp) and CUDA (cuda/LayoutCudaPrinter.cpp)
// printers of a layout kernel: each output element decomposes its linear
// index into coordinates (compile-time constant shapes) and reads the
// operand element it comes from. Both targets print the same per-element
// body; a target prints the signature and the loop around it, as the
// LayoutParams (schedule/LayoutSchedule.h) say. Layout ops copy bits
// (storage types, no conversion); only argmax/argmin convert, to compare
// values.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_LAYOUTEMITTER_H
#define FUSE_CODEGEN_LAYOUTEMITTER_H

#include "codegen/schedule/LayoutSchedule.h"
#include "ir/FuseDialect.h"
#include "ir/LayoutOps.h"
#include "ir/SymbolicDims.h"

#include "mlir/Support/IndentedOstream.h"

#include <array>
#include <functional>
#include <optional>
#include <string>

namespace fuse::layout {

/// The kernel of `op` (transpose, slice, concat, gather, pad,
/// argmax/argmin) as C++ with OpenMP: `extern "C" void NAME(const void
/// *const *, void *const *)`. With `symbolic` (given for a kernel whose
/// values have symbolic dims) it also takes their sizes.
mlir::FailureOr<std::string>
printCppLayout(FusionOp fusion, mlir::Operation *op, const LayoutParams &params,
               const std::string &name, const SymbolicDims *symbolic = nullptr);
/// The same as CUDA C: `extern "C" __global__ void NAME(in0.., out0)`, a
/// grid-stride loop.
mlir::FailureOr<std::string>
printCudaLayout(FusionOp fusion, mlir::Operation *op,
                const LayoutParams &params, const std::string &name,
                const SymbolicDims *symbolic = nullptr);

/// Prints a layout kernel: the operands' reads, the comment and the
/// per-element body; a target's subclass prints the signature and opens
/// the loop.
class LayoutEmitter {
public:
  virtual ~LayoutEmitter() = default;

  mlir::FailureOr<std::string> print();

  /// A kernel with symbolic dims: the values' dims, whose sizes the index
  /// arithmetic reads from the kernel's `fusec_dims` where they are
  /// symbolic (null for a kernel whose values are all static).
  void setSymbolicDims(const SymbolicDims *dims) { symbolic = dims; }
  /// The kernel takes the sizes.
  bool readsDimSizes() const { return symbolic != nullptr; }

protected:
  LayoutEmitter(FusionOp fusion, mlir::Operation *op,
                const LayoutParams &params, std::string name)
      : fusion(fusion), op(op), params(params), name(std::move(name)),
        wide(params.index64), index(wide ? "int64_t" : "int32_t") {}

  /// `extern "C" ... NAME(...) {`, parameters and all.
  virtual void printSignature(fusec::DType resultType) = 0;
  /// What precedes the loop over the result's `count` elements, and the
  /// loop's opening line: index `i`, the body follows.
  virtual void printLoopHead(const std::string &count,
                             fusec::DType resultType) = 0;
  /// What closes the loops printLoopHead opened.
  virtual const char *loopTail() const { return "}\n"; }
  /// Prints whether candidate value and index (v, k) beat the best so far
  /// (best, bestIndex): the order of an argmax/argmin, ties broken by
  /// index.
  using BeatsFn = std::function<std::string(
      const std::string &v, const std::string &k, const std::string &best,
      const std::string &bestIndex)>;
  /// An argmax/argmin output `i` whose row (`dim` contiguous elements from
  /// `base`: the last axis) a whole block scans
  /// (LayoutParams::blockPerOutput).
  virtual void printBlockArgReduction(const char *computeType,
                                      fusec::DType dtype,
                                      const std::string &dim,
                                      const BeatsFn &beats);

  const SymbolicDims *symbolic = nullptr;
  size_t dimCount() const { return symbolic ? symbolic->symbols().size() : 0; }
  FusionOp fusion;
  mlir::Operation *op;
  const LayoutParams &params;
  std::string name;
  bool wide;
  std::string index;
  std::string text;
  llvm::raw_string_ostream stringStream{text};
  mlir::raw_indented_ostream os{stringStream};

  /// A value's dims (its type's, in a static program).
  fusec::SymbolicShape shapeOf(mlir::Value value) const;
  /// A size as C in the kernel's index type (sizeExpression).
  std::string size(const fusec::SymbolicSize &size) const;

protected:
  /// Reads element `offset` of operand `k`: `inN[offset]` for a region
  /// input, the literal for a splat constant.
  std::string load(unsigned k, const std::string &offset);

private:
  /// Prints the coordinates of linear index `i` in `shape` (row-major) and
  /// returns them: "cD" per dim, "0" for dims of size 1.
  llvm::SmallVector<std::string> coordinates(const fusec::SymbolicShape &shape);

  /// Splits linear index `i` of a (outer, middle, inner) view of the result
  /// into `o`, `m`, `r` ("0" where a factor is 1).
  std::array<std::string, 3> split3(const fusec::SymbolicSize &outer,
                                    const fusec::SymbolicSize &middle,
                                    const fusec::SymbolicSize &inner,
                                    const char *middleName);

  /// The loop over the result's elements and its body.
  void printLoop(fusec::DType resultType);
  void printTranspose(TransposeOp transpose);
  void printSlice(SliceOp slice);
  void printConcat(ConcatOp concat);
  void printGather(GatherOp gather);
  void printPad(PadOp pad);
  template <typename OpTy> void printArgReduction(OpTy reduction, bool max);
  std::string description();
  /// "2x768", or with symbols "batchxseqx768".
  std::string formatShape(mlir::Value value) const;

  struct OperandRead {
    std::string pointer; ///< "in2", or "" for a splat constant
    std::string literal; ///< the splat's value
  };
  llvm::SmallVector<OperandRead> operandReads;
};

/// A target's printer (`Emitter`, a LayoutEmitter) run on `op`.
template <typename Emitter>
mlir::FailureOr<std::string>
printLayoutWith(FusionOp fusion, mlir::Operation *op,
                const LayoutParams &params, const std::string &name,
                const SymbolicDims *symbolic) {
  Emitter emitter(fusion, op, params, name);
  emitter.setSymbolicDims(symbolic);
  return emitter.print();
}

} // namespace fuse::layout

#endif
