//===- FusionKind.cpp - Fusion kinds and the dialect's interfaces --------===//

#include "ir/FuseDialect.h"

namespace fuse {

const char *fusionKindName(FusionKind kind) {
  switch (kind) {
  case FusionKind::Elementwise:
    return "elementwise";
  case FusionKind::Broadcast:
    return "broadcast";
  case FusionKind::View:
    return "view";
  case FusionKind::Reduction:
    return "reduction";
  case FusionKind::Layout:
    return "layout";
  case FusionKind::Library:
    return "library";
  case FusionKind::Composite:
    return "composite";
  }
  return "unknown";
}

const char *combinerName(ReductionCombiner combiner) {
  switch (combiner) {
  case ReductionCombiner::Sum:
    return "sum";
  case ReductionCombiner::Prod:
    return "prod";
  case ReductionCombiner::Max:
    return "max";
  case ReductionCombiner::Min:
    return "min";
  }
  return "unknown";
}

} // namespace fuse

#include "ir/FuseInterfaces.cpp.inc"
