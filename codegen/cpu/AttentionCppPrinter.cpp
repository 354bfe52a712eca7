//===- AttentionCppPrinter.cpp - Fused attention as C++ -------------------===//
//
// The kernel is device/AttentionCpu.h's template; this prints the call: a
// traits struct for the dtype (storage conversions, exp) and the args with
// every size and stride a literal (shapes are static).
//
//===----------------------------------------------------------------------===//

#include "codegen/AttentionKernel.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/ScalarExprPrinter.h"

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
  const char *storage = storageType(shape.dtype);
  bool f64 = shape.dtype == fusec::DType::F64;
  const char *acc = f64 ? "double" : "float";
  std::ostringstream os;
  os << "// " << name << ": attention, " << shape.batch << " x " << shape.heads
     << " heads (" << shape.kvHeads << " kv) x " << shape.queryLen
     << " queries x " << shape.keyLen << " keys, head dim " << shape.headDim
     << "\n";
  os << "struct " << name << "_traits {\n";
  os << "  typedef " << storage << " storage;\n";
  os << "  typedef " << acc << " acc;\n";
  os << "  static inline acc load(storage x) { return "
     << fromStorage(shape.dtype, "x") << "; }\n";
  os << "  static inline storage store(acc x) { return "
     << toStorage(shape.dtype, "x") << "; }\n";
  os << "  static inline acc exp(acc x) { return "
     << (f64 ? "::exp(x)" : "fusec_expf(x)") << "; }\n";
  os << "};\n";
  os << "extern \"C\" void " << name
     << "(const void *const *fusec_inputs, void *const *fusec_outputs) {\n";
  printAttentionArguments(
      os, shape, signature,
      [](int input) { return "fusec_inputs[" + std::to_string(input) + "]"; },
      "fusec_outputs[0]");
  os << "  args.parallel = " << (shape.flops() >= kParallelFlops ? 1 : 0)
     << ";\n";
  os << "  fusec_attention_cpu<" << name << "_traits, " << params.cpuQueryTile
     << ", " << params.cpuKeyTile << ", " << shape.headDim << ", "
     << shape.valueHeadDim << ">(args);\n";
  os << "}\n";
  return os.str();
}

} // namespace fuse
