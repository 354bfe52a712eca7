//===- ReductionKernel.cpp - Reduction regions as kernels ----------------===//

#include "codegen/ReductionKernel.h"

using namespace mlir;

namespace fuse {

FailureOr<fusec::KernelDesc> buildReductionKernel(FusionOp fusion, unsigned,
                                                  fusec::Target,
                                                  const MathFunctionMap *) {
  return fusion.emitError("codegen: reduction kernels are not implemented yet");
}

} // namespace fuse
