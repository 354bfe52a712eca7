//===- AttentionCudaPrinter.cpp - Fused attention as CUDA -----------------===//
//
// The kernels are device/FlashAttention.cuh's and FlashAttentionSm90.cuh's
// templates; this prints the `extern "C"` entry: the signature, a traits
// struct for the dtype (storage conversions, exp) and the args with every
// size and stride a literal (shapes are static).
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/AttentionCudaPrinter.h"

#include "codegen/PointwiseKernel.h"

#include <sstream>

namespace fuse {

std::string printCudaAttentionKernel(const std::string &name,
                                     const AttentionShape &shape,
                                     const AttentionParams &params,
                                     const AttentionSignature &signature) {
  std::ostringstream os;
  std::string traits = printAttentionTraits(
      os, name, shape, params, "__device__ __forceinline__", "expf");
  // The wgmma kernel's warpgroups trade registers (setmaxnreg), which
  // needs the registers per thread known at entry: one block per SM.
  os << "extern \"C\" __global__ void __launch_bounds__(" << params.blockX
     << (params.kernel == "wgmma" ? ", 1" : "") << ") " << name << "(";
  for (size_t i = 0; i < signature.inputs.size(); ++i)
    os << "const " << storageType(signature.inputs[i]) << " *__restrict__ in"
       << i << ", ";
  os << storageType(shape.dtype) << " *__restrict__ out0"
     << (params.scratchBytes ? ", unsigned char *__restrict__ scratch" : "")
     << (signature.readsDimSizes() ? cudaDimParameters(signature.dimCount) : "")
     << ") {\n";
  if (signature.readsDimSizes())
    os << "  " << cudaDimArray(signature.dimCount);
  printAttentionArguments(
      os, shape, signature,
      [](int input) { return "in" + std::to_string(input); }, "out0");
  os << "  args.heads_in_grid_x = " << (params.headsInGridX ? 1 : 0) << ";\n";
  if (params.kernel == "split-keys")
    os << "  fusec_attention_split_keys<" << traits << ", " << shape.headDim
       << ", " << shape.valueHeadDim << ", " << params.decodeRows << ", "
       << (params.vectorKeys ? "true" : "false") << ", "
       << (params.vectorValues ? "true" : "false") << ", " << params.stages
       << ">(args, " << params.splits << ", " << params.splitKeys
       << ", scratch);\n";
  else if (params.kernel == "wgmma")
    os << "#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#error \"the wgmma "
          "attention kernel needs sm_90a\"\n#else\n  fusec_attention_wgmma<"
       << (shape.dtype == fusec::DType::BF16 ? "true" : "false") << ", "
       << shape.headDim << ", " << (shape.causal ? "true" : "false")
       << ">(args);\n#endif\n";
  else if (params.kernel == "tensor-cores")
    os << "  fusec_attention_tensor_cores<"
       << (shape.dtype == fusec::DType::BF16 ? "true" : "false") << ", "
       << shape.headDim << ", " << params.blockN << ", " << params.warpsPerBlock
       << ", " << params.rowTiles << ", "
       << (params.queryInRegisters ? "true" : "false") << ", "
       << (shape.causal ? "true" : "false") << ">(args);\n";
  else
    os << "  fusec_attention_warp_row<" << traits << ", " << shape.headDim
       << ", " << shape.valueHeadDim << ">(args);\n";
  os << "}\n";
  return os.str();
}

} // namespace fuse
