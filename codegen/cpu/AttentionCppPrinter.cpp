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

void printLayout(std::ostream &os, const char *field,
                 const AttentionOperandLayout &layout) {
  os << "  args." << field << " = {" << layout.offset << ", " << layout.batch
     << ", " << layout.head << ", " << layout.row << "};\n";
}

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
  os << "  fusec_attention_args args;\n";
  os << "  args.query = fusec_inputs[" << signature.query << "];\n";
  os << "  args.key = fusec_inputs[" << signature.key << "];\n";
  os << "  args.value = fusec_inputs[" << signature.value << "];\n";
  os << "  args.bias = "
     << (signature.bias >= 0
             ? "fusec_inputs[" + std::to_string(signature.bias) + "]"
             : std::string("0"))
     << ";\n";
  os << "  args.output = fusec_outputs[0];\n";
  os << "  args.batch = " << shape.batch << ";\n";
  os << "  args.heads = " << shape.heads << ";\n";
  os << "  args.kv_heads = " << shape.kvHeads << ";\n";
  os << "  args.query_len = " << shape.queryLen << ";\n";
  os << "  args.key_len = " << shape.keyLen << ";\n";
  printLayout(os, "q", shape.query);
  printLayout(os, "k", shape.key);
  printLayout(os, "v", shape.value);
  printLayout(os, "o", shape.output);
  const AttentionBiasLayout &bias = shape.biasLayout;
  os << "  args.b = {" << bias.offset << ", " << bias.batch << ", " << bias.head
     << ", " << bias.row << ", " << bias.column << "};\n";
  os << "  args.bias_kind = "
     << (shape.bias == AttentionBias::None       ? 0
         : shape.bias == AttentionBias::Additive ? 1
                                                 : 2)
     << ";\n";
  os << "  args.scale = "
     << ScalarExprPrinter::literal(shape.scale, fusec::DType::F64) << ";\n";
  os << "  args.causal = " << (shape.causal ? 1 : 0) << ";\n";
  os << "  args.causal_offset = " << shape.causalOffset << ";\n";
  os << "  args.window_left = " << shape.windowLeft << ";\n";
  os << "  args.zero_masked_rows = " << (shape.zeroMaskedRows ? 1 : 0) << ";\n";
  os << "  args.parallel = " << (shape.flops() >= kParallelFlops ? 1 : 0)
     << ";\n";
  os << "  fusec_attention_cpu<" << name << "_traits, " << params.cpuQueryTile
     << ", " << params.cpuKeyTile << ", " << shape.headDim << ", "
     << shape.valueHeadDim << ">(args);\n";
  os << "}\n";
  return os.str();
}

} // namespace fuse
