//===- RegionKind.cpp - Which schedule a fusion region gets --------------===//

#include "codegen/RegionKind.h"

#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {

/// Kernel names list at most this many op mnemonics.
static constexpr size_t kMaxOpsInName = 6;

RegionKind regionKindOf(FusionOp fusion) {
  RegionKind kind = RegionKind::Pointwise;
  for (Operation &op : fusion.getBody().front().without_terminator()) {
    auto kindOp = dyn_cast<FusionKindOpInterface>(&op);
    if (!kindOp)
      continue;
    if (kindOp.getFusionKind() == FusionKind::Reduction)
      return RegionKind::Reduction;
    if (kindOp.getFusionKind() == FusionKind::Layout)
      kind = RegionKind::Layout;
    if (kindOp.getFusionKind() == FusionKind::Contraction)
      return isa<AttentionOp>(op) ? RegionKind::Attention
                                  : RegionKind::Contraction;
  }
  return kind;
}

bool regionUsesHalfTypes(FusionOp fusion) {
  auto isHalf = [](Value value) {
    fusec::DType dtype = dtypeOf(value.getType());
    return dtype == fusec::DType::F16 || dtype == fusec::DType::BF16 ||
           fusec::isNarrow(dtype);
  };
  Block &body = fusion.getBody().front();
  bool uses = llvm::any_of(body.getArguments(), isHalf);
  body.walk(
      [&](Operation *op) { uses |= llvm::any_of(op->getResults(), isHalf); });
  return uses;
}

std::vector<std::string> regionOpNames(FusionOp fusion) {
  std::vector<std::string> names;
  for (Operation &op : fusion.getBody().front().without_terminator())
    if (!isa<ConstantOp>(op))
      names.push_back(op.getName().stripDialect().str());
  return names;
}

std::string kernelName(const std::string &prefix,
                       const std::vector<std::string> &ops, unsigned index) {
  std::string name = prefix;
  for (size_t i = 0; i < ops.size() && i < kMaxOpsInName; ++i)
    name += "_" + ops[i];
  return name + "_" + std::to_string(index);
}

} // namespace fuse
