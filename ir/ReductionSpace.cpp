//===- ReductionSpace.cpp - The iteration space of a reduction -----------===//

#include "ir/ReductionSpace.h"

#include "ir/FuseDialect.h"

using namespace mlir;

namespace fuse {

ReductionSpace ReductionSpace::of(ReductionOpInterface op) {
  ReductionSpace space;
  auto type = cast<RankedTensorType>(op.getReducedOperand().getType());
  space.full.assign(type.getShape().begin(), type.getShape().end());
  space.reduced.assign(space.full.size(), false);
  for (int64_t axis : op.getReducedAxes())
    space.reduced[axis] = true;
  return space;
}

fusec::Shape ReductionSpace::keptShape() const {
  fusec::Shape shape = full;
  for (size_t d = 0; d < full.size(); ++d)
    if (reduced[d])
      shape[d] = 1;
  return shape;
}

ValueRole ReductionSpace::roleOf(ArrayRef<int64_t> shape) const {
  if (shape == ArrayRef<int64_t>(full))
    return ValueRole::Full;
  if (shape == ArrayRef<int64_t>(keptShape()))
    return ValueRole::Reduced;
  fusec::Shape dropped;
  for (size_t d = 0; d < full.size(); ++d)
    if (!reduced[d])
      dropped.push_back(full[d]);
  if (shape == ArrayRef<int64_t>(dropped))
    return ValueRole::Reduced;
  return ValueRole::Unrelated;
}

ReductionSchedule ReductionSpace::schedule() const {
  // The reduced flags of the dims larger than 1, in order.
  std::vector<bool> pattern;
  for (size_t d = 0; d < full.size(); ++d)
    if (full[d] != 1)
      pattern.push_back(reduced[d]);
  size_t i = 0;
  while (i < pattern.size() && !pattern[i])
    ++i;
  size_t firstReduced = i;
  while (i < pattern.size() && pattern[i])
    ++i;
  bool oneReducedRun = i > firstReduced;
  size_t firstInnerKept = i;
  while (i < pattern.size() && !pattern[i])
    ++i;
  if (oneReducedRun && i == pattern.size() && firstInnerKept < pattern.size())
    return ReductionSchedule::Column;
  return ReductionSchedule::Row;
}

std::string ReductionSpace::describe() const {
  std::string text;
  for (size_t d = 0; d < full.size(); ++d) {
    if (d)
      text += "x";
    text += reduced[d] ? "[" + std::to_string(full[d]) + "]"
                       : std::to_string(full[d]);
  }
  return text.empty() ? "scalar" : text;
}

} // namespace fuse
