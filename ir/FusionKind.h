//===- FusionKind.h - What fusion may do with an op ------------*- C++ -*-===//
//
// Every op of the fuse dialect reports its kind through
// FusionKindOpInterface; region formation reads nothing else.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_IR_FUSIONKIND_H
#define FUSE_IR_FUSIONKIND_H

#include <cstdint>

namespace fuse {

enum class FusionKind {
  /// Each result element from the operand elements at the same index.
  Elementwise,
  /// Repeats its operand along dims of size 1 (an explicit broadcast).
  Broadcast,
  /// Same elements in the same order under another shape (reshape).
  View,
  /// Combines elements along some axes: the root of a reduction kernel.
  Reduction,
  /// Moves elements to other indices (transpose, slice, concat, gather,
  /// pad): a kernel of its own.
  Layout,
  /// A call into a vendor library (matmul): outside every region.
  Library,
  /// Contracts its operands in a generated kernel of its own (the int8
  /// weight GEMV).
  Contraction,
  /// Defined by other ops: decomposed before fusion.
  Composite,
};

/// How a reduction combines two partial results.
enum class ReductionCombiner { Sum, Prod, Max, Min };

} // namespace fuse

#endif
