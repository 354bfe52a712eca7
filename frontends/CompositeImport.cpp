//===- CompositeImport.cpp - Reduction and composite nodes ---------------===//

#include "frontends/NodeImport.h"

#include "ir/FuseDialect.h"

using namespace mlir;

namespace fuse {

std::optional<FailureOr<Value>> importReductionOrComposite(NodeImport &) {
  return std::nullopt;
}

} // namespace fuse
