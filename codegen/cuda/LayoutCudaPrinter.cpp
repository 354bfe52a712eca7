//===- LayoutCudaPrinter.cpp - A layout kernel as CUDA -------------------===//
//
// A grid-stride loop over the output elements, a few per thread, with
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
    os << storageType(resultType) << " *__restrict__ out0"
       << (symbolicElements ? cudaDimParameters(dimCount) : "") << ") {\n";
  }

  void printLoopHead(const std::string &count, DType resultType) override {
    if (symbolicElements)
      os << cudaDimArray(dimCount);
    os << "const " << index << " stride = (" << index
       << ")gridDim.x * blockDim.x;\n";
    // The outer loop rolled, as the pointwise kernels' loops
    // (printCudaLoops): it mostly runs once, and unrolling it only costs
    // NVRTC time. Each pass moves `elementsPerThread` elements a grid
    // apart, their loads issued together: one 2- or 4-byte load in flight
    // per thread leaves a resident grid far from the copy ceiling.
    os << "#pragma unroll 1\n";
    os << "for (" << index << " first = (" << index
       << ")blockIdx.x * blockDim.x + threadIdx.x; first < " << count
       << "; first += " << params.elementsPerThread << " * stride) {\n";
    os << "#pragma unroll\n";
    os << "for (int part = 0; part < " << params.elementsPerThread
       << "; ++part) {\n";
    os << "const " << index << " i = first + part * stride;\n";
    os << "if (i >= " << count << ") break;\n";
  }

  const char *loopTail() const override { return "}\n}\n"; }
};

} // namespace

FailureOr<std::string>
printCudaLayout(FusionOp fusion, Operation *op, const LayoutParams &params,
                const std::string &name,
                std::optional<fusec::SymbolicSize> symbolicElements,
                size_t dimCount) {
  return printLayoutWith<CudaEmitter>(fusion, op, params, name,
                                      std::move(symbolicElements), dimCount);
}

} // namespace fuse::layout
