//===- LayoutKernel.cpp - Layout regions as kernels ----------------------===//

#include "codegen/LayoutKernel.h"

using namespace mlir;

namespace fuse {

FailureOr<fusec::KernelDesc> buildLayoutKernel(FusionOp fusion, unsigned,
                                               fusec::Target) {
  return fusion.emitError("codegen: layout kernels are not implemented yet");
}

} // namespace fuse
