//===- AttentionKernel.cpp - A region's fuse.attention as a kernel --------===//
//
// Reads the region's one fuse.attention as an AttentionShape (each operand
// a strided view of a kernel input), schedules it for the target and
// hands it to that target's printer.
//
//===----------------------------------------------------------------------===//

#include "codegen/AttentionKernel.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/RegionKind.h"
#include "codegen/ScalarExprPrinter.h"
#include "codegen/cuda/AttentionCudaPrinter.h"
#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {

namespace {

/// The layout of q, k, v (heads of `headDim`) or the result: [B, H, T, D]
/// dense, or [B, T, C] with head h at column `column` + h * headDim.
AttentionOperandLayout operandLayout(Value value, int64_t headDim,
                                     int64_t column) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  AttentionOperandLayout layout;
  if (shape.size() == 4) {
    layout.row = shape[3];
    layout.head = shape[2] * shape[3];
    layout.batch = shape[1] * layout.head;
    return layout;
  }
  layout.offset = column;
  layout.row = shape[2];
  layout.head = headDim;
  layout.batch = shape[1] * shape[2];
  return layout;
}

/// The bias, broadcast (right-aligned) to [B, H, Tq, Tk]: its dense strides
/// with 0 for the dims it repeats.
AttentionBiasLayout biasLayout(Value bias) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(bias.getType()).getShape();
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t stride = 1;
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 1, out = 3; dim >= 0;
       --dim, --out) {
    strides[out] = shape[dim] == 1 ? 0 : stride;
    stride *= shape[dim];
  }
  AttentionBiasLayout layout;
  layout.batch = strides[0];
  layout.head = strides[1];
  layout.row = strides[2];
  layout.column = strides[3];
  return layout;
}

} // namespace

FailureOr<AttentionRegion> analyzeAttentionRegion(FusionOp fusion) {
  Block &body = fusion.getBody().front();
  AttentionOp op;
  for (Operation &member : body.without_terminator()) {
    if (auto attention = dyn_cast<AttentionOp>(member)) {
      op = attention;
      continue;
    }
    return member.emitError() << "codegen: " << describeOp(&member)
                              << " shares a region with an attention";
  }
  if (!op)
    return fusion.emitError("codegen: no attention in the region");
  AttentionRegion region;
  for (BlockArgument arg : body.getArguments())
    region.signature.inputs.push_back(dtypeOf(arg.getType()));
  auto inputOf = [&](Value value) -> int {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &body ? static_cast<int>(arg.getArgNumber())
                                          : -1;
  };
  region.signature.query = inputOf(op.getQuery());
  region.signature.key = inputOf(op.getKey());
  region.signature.value = inputOf(op.getValue());
  region.signature.bias = op.getBias() ? inputOf(op.getBias()) : -1;
  if (region.signature.query < 0 || region.signature.key < 0 ||
      region.signature.value < 0 || (op.getBias() && region.signature.bias < 0))
    return op.emitError() << "codegen: " << describeOp(op)
                          << " must read its operands from the region's "
                             "inputs";

  AttentionShape &shape = region.shape;
  shape.dtype = dtypeOf(op.getType());
  shape.batch = op.getBatch();
  shape.heads = static_cast<int64_t>(op.getNumHeads());
  shape.kvHeads = static_cast<int64_t>(op.getKvNumHeads());
  shape.queryLen = op.getQueryLength();
  shape.keyLen = op.getKeyLength();
  shape.headDim = static_cast<int64_t>(op.getHeadDim());
  shape.valueHeadDim = static_cast<int64_t>(op.getValueHeadDim());
  shape.query = operandLayout(op.getQuery(), shape.headDim,
                              static_cast<int64_t>(op.getQueryColumn()));
  shape.key = operandLayout(op.getKey(), shape.headDim,
                            static_cast<int64_t>(op.getKeyColumn()));
  shape.value = operandLayout(op.getValue(), shape.valueHeadDim,
                              static_cast<int64_t>(op.getValueColumn()));
  shape.output = operandLayout(op.getResult(), shape.valueHeadDim, 0);
  if (Value bias = op.getBias()) {
    shape.bias = dtypeOf(bias.getType()) == fusec::DType::I1
                     ? AttentionBias::Keep
                     : AttentionBias::Additive;
    shape.biasLayout = biasLayout(bias);
  }
  shape.scale = op.getScale().convertToDouble();
  shape.causal = op.getCausal();
  shape.causalOffset = static_cast<int64_t>(op.getCausalOffset());
  shape.windowLeft = static_cast<int64_t>(op.getWindowLeft());
  shape.zeroMaskedRows = op.getZeroMaskedRows();
  return region;
}

static void printLayout(std::ostream &os, const char *field,
                        const AttentionOperandLayout &layout) {
  os << "  args." << field << " = {" << layout.offset << ", " << layout.batch
     << ", " << layout.head << ", " << layout.row << "};\n";
}

void printAttentionArguments(std::ostream &os, const AttentionShape &shape,
                             const AttentionSignature &signature,
                             llvm::function_ref<std::string(int)> input,
                             const std::string &output) {
  os << "  fusec_attention_args args;\n";
  os << "  args.query = " << input(signature.query) << ";\n";
  os << "  args.key = " << input(signature.key) << ";\n";
  os << "  args.value = " << input(signature.value) << ";\n";
  os << "  args.bias = "
     << (signature.bias >= 0 ? input(signature.bias) : std::string("0"))
     << ";\n";
  os << "  args.output = " << output << ";\n";
  os << "  args.batch = "
     << (signature.symbolicBatch
             ? signature.symbolicBatch->cExpression("fusec_dims")
             : std::to_string(shape.batch))
     << ";\n";
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
}

std::string printAttentionTraits(std::ostream &os, const std::string &name,
                                 const AttentionShape &shape,
                                 const AttentionParams &params,
                                 const std::string &qualifiers,
                                 const std::string &f32Exp) {
  bool f64 = shape.dtype == fusec::DType::F64;
  os << "// " << name << ": attention, " << shape.batch << " x " << shape.heads
     << " heads (" << shape.kvHeads << " kv) x " << shape.queryLen
     << " queries x " << shape.keyLen << " keys, head dim " << shape.headDim
     << "; " << params.toString() << "\n";
  std::string traits =
      std::string("fusec_attention_traits_") + fusec::dtypeName(shape.dtype);
  std::string guard = llvm::StringRef(traits).upper();
  os << "#ifndef " << guard << "\n#define " << guard << "\n";
  os << "struct " << traits << " {\n";
  os << "  typedef " << storageType(shape.dtype) << " storage;\n";
  os << "  typedef " << (f64 ? "double" : "float") << " acc;\n";
  os << "  static " << qualifiers << " acc load(storage x) { return "
     << fromStorage(shape.dtype, "x") << "; }\n";
  os << "  static " << qualifiers << " storage store(acc x) { return "
     << toStorage(shape.dtype, "x") << "; }\n";
  os << "  static " << qualifiers << " acc exp(acc x) { return "
     << (f64 ? std::string("::exp") : f32Exp) << "(x); }\n";
  os << "};\n#endif\n";
  return traits;
}

FailureOr<fusec::KernelDesc>
buildAttentionKernel(FusionOp fusion, unsigned index, fusec::Target target,
                     std::string *paramsText,
                     std::optional<fusec::SymbolicSize> symbolicBatch,
                     size_t dimCount) {
  FailureOr<AttentionRegion> region = analyzeAttentionRegion(fusion);
  if (failed(region))
    return failure();
  region->signature.symbolicBatch = symbolicBatch;
  region->signature.dimCount = dimCount;
  AttentionParams params = scheduleAttention(region->shape, target);
  if (paramsText)
    *paramsText = params.toString();
  fusec::KernelDesc desc;
  desc.ops = regionOpNames(fusion);
  desc.name = kernelName("fused", desc.ops, index);
  desc.schedule = "attention";
  desc.flops = region->shape.flops();
  if (target == fusec::Target::Cuda) {
    desc.source = printCudaAttentionKernel(desc.name, region->shape, params,
                                           region->signature);
    desc.launch = launchOf(params);
    desc.scratchBytes = params.scratchBytes;
    if (symbolicBatch) {
      // The grids' batch factor per run (the scratch holds the maximum).
      int64_t heads = params.kernel == "split-keys" ? region->shape.kvHeads
                                                    : region->shape.heads;
      if (params.kernel == "warp-per-row")
        desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{
            *symbolicBatch *
                fusec::SymbolicSize::constant(heads * region->shape.queryLen),
            params.blockX / 32};
      else
        desc.dynamicGridY = fusec::KernelDesc::DynamicGrid{
            *symbolicBatch * fusec::SymbolicSize::constant(heads), 1};
    }
  } else {
    desc.source = printCppAttentionKernel(desc.name, region->shape, params,
                                          region->signature);
  }
  desc.readsDimSizes = symbolicBatch.has_value();
  return desc;
}

} // namespace fuse
