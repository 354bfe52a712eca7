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

using fusec::SymbolicShape;
using fusec::SymbolicSize;

/// The layout of q, k, v (heads of `headDim`) or the result: [B, H, T, D]
/// dense, or [B, T, C] with head h at column `column` + h * headDim.
AttentionOperandSizes operandLayout(const SymbolicShape &shape, int64_t headDim,
                                    int64_t column) {
  AttentionOperandSizes layout;
  if (shape.size() == 4) {
    layout.offset = SymbolicSize::constant(0);
    layout.row = shape[3];
    layout.head = shape[2] * shape[3];
    layout.batch = shape[1] * layout.head;
    return layout;
  }
  layout.offset = SymbolicSize::constant(column);
  layout.row = shape[2];
  layout.head = SymbolicSize::constant(headDim);
  layout.batch = shape[1] * shape[2];
  return layout;
}

/// The bias, broadcast (right-aligned) to [B, H, Tq, Tk]: its dense strides
/// with 0 for the dims it repeats.
AttentionBiasSizes biasLayout(const SymbolicShape &shape) {
  SymbolicShape strides(4, SymbolicSize::constant(0));
  SymbolicSize stride = SymbolicSize::constant(1);
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 1, out = 3; dim >= 0;
       --dim, --out) {
    if (shape[dim] != SymbolicSize::constant(1))
      strides[out] = stride;
    stride = stride * shape[dim];
  }
  return {SymbolicSize::constant(0), strides[0], strides[1], strides[2],
          strides[3]};
}

} // namespace

AttentionOperandLayout
AttentionOperandSizes::evaluate(const std::vector<int64_t> &values) const {
  return {offset.evaluate(values), batch.evaluate(values),
          head.evaluate(values), row.evaluate(values)};
}

AttentionBiasLayout
AttentionBiasSizes::evaluate(const std::vector<int64_t> &values) const {
  return {offset.evaluate(values), batch.evaluate(values),
          head.evaluate(values), row.evaluate(values), column.evaluate(values)};
}

FailureOr<AttentionRegion>
analyzeAttentionRegion(FusionOp fusion, const SymbolicDims *symbolic) {
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
  // The lengths: the query's and key's rows (dim 2 of [B, H, T, D], dim 1
  // of [B, T, C]).
  auto lengthOf = [&](Value value) {
    SymbolicShape dims = dimsOf(symbolic, value);
    return dims[dims.size() == 4 ? 2 : 1];
  };
  AttentionSizes &sizes = region.signature.sizes;
  sizes.batch = dimsOf(symbolic, op.getQuery())[0];
  sizes.queryLen = lengthOf(op.getQuery());
  sizes.keyLen = lengthOf(op.getKey());
  sizes.query = operandLayout(dimsOf(symbolic, op.getQuery()), shape.headDim,
                              static_cast<int64_t>(op.getQueryColumn()));
  sizes.key = operandLayout(dimsOf(symbolic, op.getKey()), shape.headDim,
                            static_cast<int64_t>(op.getKeyColumn()));
  sizes.value =
      operandLayout(dimsOf(symbolic, op.getValue()), shape.valueHeadDim,
                    static_cast<int64_t>(op.getValueColumn()));
  sizes.output =
      operandLayout(dimsOf(symbolic, op.getResult()), shape.valueHeadDim, 0);
  // Every symbol at its declared multiple (1 by default): what a stride is
  // a multiple of at every size, which the alignment of rows rests on (a
  // static program's strides as they are).
  std::vector<int64_t> multiples;
  if (symbolic)
    for (const fusec::DimSymbol &symbol : symbolic->symbols())
      multiples.push_back(symbol.multiple);
  shape.query = sizes.query.evaluate(multiples);
  shape.key = sizes.key.evaluate(multiples);
  shape.value = sizes.value.evaluate(multiples);
  shape.output = sizes.output.evaluate(multiples);
  if (Value bias = op.getBias()) {
    shape.bias = dtypeOf(bias.getType()) == fusec::DType::I1
                     ? AttentionBias::Keep
                     : AttentionBias::Additive;
    sizes.bias = biasLayout(dimsOf(symbolic, bias));
    shape.biasLayout = sizes.bias.evaluate(multiples);
  }
  shape.scale = op.getScale().convertToDouble();
  shape.causal = op.getCausal();
  shape.causalOffset = static_cast<int64_t>(op.getCausalOffset());
  shape.windowLeft = static_cast<int64_t>(op.getWindowLeft());
  shape.zeroMaskedRows = op.getZeroMaskedRows();
  shape.zeroNanRows = op.getZeroNanRows();
  shape.symbolicLengths =
      !sizes.queryLen.isStatic() || !sizes.keyLen.isStatic();
  // A causal offset (or window) is fixed: with lengths that vary it holds
  // only when they are the same size.
  if ((shape.causal || shape.windowLeft >= 0) && shape.symbolicLengths &&
      sizes.queryLen != sizes.keyLen)
    return op.emitError() << "codegen: " << describeOp(op)
                          << ": a causal or windowed attention with symbolic "
                             "lengths needs its query and key lengths to be "
                             "the same size";
  return region;
}

/// A size of the kernel's arguments: a literal, or an expression of the
/// `fusec_dims` the kernel takes.
static std::string sizeText(const SymbolicSize &size) {
  return size.cExpression("fusec_dims");
}

static void printLayout(std::ostream &os, const char *field,
                        const AttentionOperandSizes &layout) {
  os << "  args." << field << " = {" << sizeText(layout.offset) << ", "
     << sizeText(layout.batch) << ", " << sizeText(layout.head) << ", "
     << sizeText(layout.row) << "};\n";
}

void printAttentionArguments(std::ostream &os, const AttentionShape &shape,
                             const AttentionSignature &signature,
                             llvm::function_ref<std::string(int)> input,
                             const std::string &output) {
  const AttentionSizes &sizes = signature.sizes;
  os << "  fusec_attention_args args = {};\n";
  os << "  args.query = " << input(signature.query) << ";\n";
  os << "  args.key = " << input(signature.key) << ";\n";
  os << "  args.value = " << input(signature.value) << ";\n";
  os << "  args.bias = "
     << (signature.bias >= 0 ? input(signature.bias) : std::string("0"))
     << ";\n";
  os << "  args.output = " << output << ";\n";
  os << "  args.batch = " << sizeText(sizes.batch) << ";\n";
  os << "  args.heads = " << shape.heads << ";\n";
  os << "  args.kv_heads = " << shape.kvHeads << ";\n";
  os << "  args.query_len = " << sizeText(sizes.queryLen) << ";\n";
  os << "  args.key_len = " << sizeText(sizes.keyLen) << ";\n";
  printLayout(os, "q", sizes.query);
  printLayout(os, "k", sizes.key);
  printLayout(os, "v", sizes.value);
  printLayout(os, "o", sizes.output);
  const AttentionBiasSizes &bias = sizes.bias;
  os << "  args.b = {" << sizeText(bias.offset) << ", " << sizeText(bias.batch)
     << ", " << sizeText(bias.head) << ", " << sizeText(bias.row) << ", "
     << sizeText(bias.column) << "};\n";
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
  os << "  args.zero_nan_rows = " << (shape.zeroNanRows ? 1 : 0) << ";\n";
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
                     const std::string &gpuArch, std::string *paramsText,
                     const SymbolicDims *symbolic) {
  FailureOr<AttentionRegion> region = analyzeAttentionRegion(fusion, symbolic);
  if (failed(region))
    return failure();
  if (symbolic)
    region->signature.dimCount = symbolic->symbols().size();
  AttentionParams params = scheduleAttention(region->shape, target, gpuArch);
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
    if (symbolic) {
      // The grids per run (the scratch holds the maxima's).
      const AttentionSizes &sizes = region->signature.sizes;
      const AttentionShape &shape = region->shape;
      int64_t heads =
          params.kernel == "split-keys" ? shape.kvHeads : shape.heads;
      SymbolicSize pairs = sizes.batch * SymbolicSize::constant(heads);
      if (params.kernel == "warp-per-row") {
        desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{
            pairs * sizes.queryLen, params.blockX / 32};
      } else {
        fusec::KernelDesc::DynamicGrid pairGrid{pairs, 1};
        desc.dynamicGridY = pairGrid;
        if (params.kernel == "tensor-cores" || params.kernel == "wgmma") {
          fusec::KernelDesc::DynamicGrid queryGrid{sizes.queryLen,
                                                   params.blockM};
          desc.dynamicGrid = params.headsInGridX ? pairGrid : queryGrid;
          desc.dynamicGridY = params.headsInGridX ? queryGrid : pairGrid;
        }
      }
    }
  } else {
    desc.source = printCppAttentionKernel(desc.name, region->shape, params,
                                          region->signature);
  }
  desc.readsDimSizes = region->signature.readsDimSizes();
  return desc;
}

} // namespace fuse
