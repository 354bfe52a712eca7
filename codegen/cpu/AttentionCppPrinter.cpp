//===- AttentionCppPrinter.cpp - Fused attention as C++ -------------------===//
//
// The kernel is device/AttentionCpu.h's template; this prints the call: a
// traits struct for the dtype (storage conversions, exp) and the args with
// every size and stride a literal (shapes are static).
//
//===----------------------------------------------------------------------===//

#include "codegen/AttentionKernel.h"
#include "codegen/PointwiseKernel.h"

#include <sstream>

namespace fuse {

namespace {

/// Below this many multiply-adds an attention runs on one thread.
constexpr double kParallelFlops = 1 << 20;

} // namespace

std::string printCppAttentionKernel(const std::string &name,
                                    const AttentionShape &shape,
                                    const AttentionParams &params,
                                    const AttentionSignature &signature) {
  std::ostringstream os;
  std::string traits =
      printAttentionTraits(os, name, shape, params, "inline", "fusec_expf");
  os << cppKernelSignature(name, signature.readsDimSizes()) << " {\n";
  printAttentionArguments(
      os, shape, signature,
      [](int input) { return "fusec_inputs[" + std::to_string(input) + "]"; },
      "fusec_outputs[0]");
  os << "  args.parallel = " << (shape.flops() >= kParallelFlops ? 1 : 0)
     << ";\n";
  os << "  fusec_attention_cpu<" << traits << ", " << params.cpuQueryTile
     << ", " << params.cpuKeyTile << ", " << shape.headDim << ", "
     << shape.valueHeadDim << ">(args);\n";
  os << "}\n";
  return os.str();
}

} // namespace fuse
