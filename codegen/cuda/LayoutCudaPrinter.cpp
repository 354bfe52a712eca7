//===- LayoutCudaPrinter.cpp - A layout kernel as CUDA -------------------===//
//
// A grid-stride loop over the output elements, a few per thread, with
// 32- or 64-bit indices as the LayoutParams say, around the per-element
// body of LayoutEmitter.
//
//===----------------------------------------------------------------------===//

#include "codegen/LayoutEmitter.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/ScalarExprPrinter.h"
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
    os << "extern \"C\" __global__ void __launch_bounds__(" << params.blockX
       << ") " << name << "(";
    for (BlockArgument arg : fusion.getBody().front().getArguments())
      os << "const " << storageType(dtypeOf(arg.getType()))
         << " *__restrict__ in" << arg.getArgNumber() << ", ";
    os << storageType(resultType) << " *__restrict__ out0"
       << (readsDimSizes() ? cudaDimParameters(dimCount()) : "") << ") {\n";
  }

  void printLoopHead(const std::string &count, DType resultType) override {
    if (readsDimSizes())
      os << cudaDimArray(dimCount());
    if (params.blockPerOutput) {
      os << "for (" << index << " i = blockIdx.x; i < " << count
         << "; i += gridDim.x) {\n";
      return;
    }
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

  const char *loopTail() const override {
    return params.blockPerOutput ? "}\n" : "}\n}\n";
  }

  // Each thread scans every blockDim-th element of the row, then the
  // block halves its candidates in shared memory; `beats` breaks ties by
  // index, so the combine order does not change the result.
  void printBlockArgReduction(const char *computeType, DType dtype,
                              const std::string &dim,
                              const BeatsFn &beats) override {
    os << computeType << " best = 0;\n";
    os << "int64_t bestIndex = -1;\n";
    // Unrolled, so that a thread's loads are in flight together.
    os << "#pragma unroll 8\n";
    os << "for (" << index << " k = threadIdx.x; k < " << dim
       << "; k += blockDim.x) {\n";
    {
      auto loop = os.scope("", "}\n");
      os << "const " << computeType
         << " v = " << fromStorage(dtype, load(0, "base + k")) << ";\n";
      os << "if (bestIndex < 0 || " << beats("v", "k", "best", "bestIndex")
         << ") {\n";
      os << "  best = v;\n";
      os << "  bestIndex = k;\n";
      os << "}\n";
    }
    os << "__shared__ " << computeType << " bestValues[" << params.blockX
       << "];\n";
    os << "__shared__ int64_t bestIndices[" << params.blockX << "];\n";
    os << "bestValues[threadIdx.x] = best;\n";
    os << "bestIndices[threadIdx.x] = bestIndex;\n";
    os << "__syncthreads();\n";
    os << "for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {\n";
    {
      auto loop = os.scope("", "}\n");
      os << "if (threadIdx.x < half) {\n";
      {
        auto inside = os.scope("", "}\n");
        os << "const " << computeType
           << " v = bestValues[threadIdx.x + half];\n";
        os << "const int64_t k = bestIndices[threadIdx.x + half];\n";
        os << "if (k >= 0 && (bestIndex < 0 || "
           << beats("v", "k", "best", "bestIndex") << ")) {\n";
        os << "  best = v;\n";
        os << "  bestIndex = k;\n";
        os << "  bestValues[threadIdx.x] = v;\n";
        os << "  bestIndices[threadIdx.x] = k;\n";
        os << "}\n";
      }
      os << "__syncthreads();\n";
    }
    os << "if (threadIdx.x == 0)\n";
    os << "  out0[i] = bestIndices[0];\n";
    os << "__syncthreads(); // the next output reuses the arrays\n";
  }
};

} // namespace

FailureOr<std::string> printCudaLayout(FusionOp fusion, Operation *op,
                                       const LayoutParams &params,
                                       const std::string &name,
                                       const SymbolicDims *symbolic) {
  return printLayoutWith<CudaEmitter>(fusion, op, params, name, symbolic);
}

} // namespace fuse::layout
