//===- LayoutCudaPrinter.cpp - A layout kernel as CUDA -------------------===//
//
// A grid-stride loop over the output elements, a thread per element, with
// 32- or 64-bit indices as the LayoutParams say, around the per-element
// body of LayoutEmitter.
//
//===----------------------------------------------------------------------===//

#include "codegen/LayoutEmitter.h"

#include "codegen/PointwiseKernel.h"
#include "ir/TypeUtils.h"

using namespace mlir;
using fusec::DType;

namespace fuse::layout {

namespace {

class CudaEmitter : public LayoutEmitter {
public:
  CudaEmitter(FusionOp fusion, Operation *op, const LayoutParams &params,
              const std::string &name)
      : LayoutEmitter(fusion, op, params, name) {}

private:
  void printSignature(DType resultType) override {
    os << "extern \"C\" __global__ void __launch_bounds__("
       << kPointwiseThreadsPerBlock << ") " << name << "(";
    for (BlockArgument arg : fusion.getBody().front().getArguments())
      os << "const " << storageType(dtypeOf(arg.getType()))
         << " *__restrict__ in" << arg.getArgNumber() << ", ";
    os << storageType(resultType) << " *__restrict__ out0) {\n";
  }

  void printLoopHead(int64_t count, DType resultType) override {
    os << "const " << index << " stride = (" << index
       << ")gridDim.x * blockDim.x;\n";
    // Rolled, as the pointwise kernels' loops (printCudaLoops): it mostly
    // runs once, and unrolling it only costs NVRTC time.
    os << "#pragma unroll 1\n";
    os << "for (" << index << " i = (" << index
       << ")blockIdx.x * blockDim.x + threadIdx.x; i < " << count
       << "; i += stride) {\n";
  }
};

} // namespace

FailureOr<std::string> printCudaLayout(FusionOp fusion, Operation *op,
                                       const LayoutParams &params,
                                       const std::string &name) {
  return CudaEmitter(fusion, op, params, name).print();
}

} // namespace fuse::layout
