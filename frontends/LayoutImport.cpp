//===- LayoutImport.cpp - Layout nodes into fuse ops ---------------------===//

#include "frontends/NodeImport.h"

using namespace mlir;

namespace fuse {

std::optional<FailureOr<Value>> importLayout(NodeImport &) {
  return std::nullopt;
}

} // namespace fuse
