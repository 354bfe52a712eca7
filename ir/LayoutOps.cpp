//===- LayoutOps.cpp - Verifiers of the layout ops -----------------------===//

#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {} // namespace fuse
