//===- ReductionSpace.h - The iteration space of a reduction ---*- C++ -*-===//
//
// A reduction iterates its operand's shape (the full space) and combines
// along some of its dims. Every value of a reduction kernel is either full
// (one element per point of the space) or reduced (one per kept point).
// Region formation and codegen read these facts from here.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_IR_REDUCTIONSPACE_H
#define FUSE_IR_REDUCTIONSPACE_H

#include "runtime/core/Shape.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace fuse {

class ReductionOpInterface;

enum class ValueRole { Full, Reduced, Unrelated };

/// How a reduction kernel walks the space.
enum class ReductionSchedule {
  /// The reduced dims come after every kept dim (ignoring dims of 1): each
  /// kept point reduces one contiguous row. Also any pattern that is
  /// neither row nor column, walked with general index math.
  Row,
  /// [kept..., reduced..., kept...] with a kept inner dim: threads walk the
  /// inner dims in parallel and the reduced dims sequentially.
  Column,
};

struct ReductionSpace {
  fusec::Shape full;
  std::vector<bool> reduced; ///< per dim of `full`

  static ReductionSpace of(ReductionOpInterface op);

  bool operator==(const ReductionSpace &other) const {
    return full == other.full && reduced == other.reduced;
  }
  bool operator!=(const ReductionSpace &other) const {
    return !(*this == other);
  }

  /// Full: `shape` is the space. Reduced: the space with the reduced dims
  /// kept as 1 (keepdims) or dropped.
  ValueRole roleOf(llvm::ArrayRef<int64_t> shape) const;
  /// The space with the reduced dims kept as 1: what broadcasts back.
  fusec::Shape keptShape() const;
  ReductionSchedule schedule() const;

  /// "16384x[4096]": the full shape with reduced dims in brackets.
  std::string describe() const;
};

} // namespace fuse

#endif
