//===- LayoutSchedule.cpp - Layout kernels: params -----------------------===//

#include "codegen/schedule/LayoutSchedule.h"

#include "codegen/PointwiseKernel.h"
#include "ir/LayoutOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <tuple>

using namespace mlir;

namespace fuse {

/// Elements a CUDA layout thread moves per pass (their loads in flight
/// together).
constexpr unsigned kLayoutElementsPerThread = 4;
/// Rows at least this long take a block per argmax/argmin output: below
/// it, a thread's serial scan costs less than a block's shared-memory
/// combine.
constexpr int64_t kBlockPerOutputMinRow = 1024;
/// A block per output has the most threads a block may have: one row (a
/// vocabulary's logits) is often the only output, and its scan's latency
/// is what the kernel costs.
constexpr unsigned kBlockPerOutputThreads = 1024;
/// At most this many blocks, each looping over outputs (grid-stride).
constexpr int64_t kBlockPerOutputMaxGrid = 65535;

static int64_t shapeElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

LayoutParams scheduleLayout(Operation *layoutOp, fusec::Target target) {
  LayoutParams params;
  params.target = target;
  const int64_t count = shapeElements(layoutOp->getResult(0));
  params.elements = count;
  int64_t largest = count;
  for (Value operand : layoutOp->getOperands())
    largest = std::max(largest, shapeElements(operand));
  params.index64 = target == fusec::Target::Cpu || largest > kMax32BitElements;
  if (target == fusec::Target::Cpu) {
    params.parallel = count >= kCpuParallelThreshold;
    return params;
  }
  params.blockX = kPointwiseThreadsPerBlock;
  if (isa<ArgMaxOp, ArgMinOp>(layoutOp)) {
    auto shape = cast<ShapedType>(layoutOp->getOperand(0).getType()).getShape();
    std::optional<int64_t> axis = normalizeAxis(
        isa<ArgMaxOp>(layoutOp) ? cast<ArgMaxOp>(layoutOp).getAxis()
                                : cast<ArgMinOp>(layoutOp).getAxis(),
        shape.size());
    if (axis == int64_t(shape.size()) - 1 &&
        shape.back() >= kBlockPerOutputMinRow &&
        !ShapedType::isDynamicShape(shape)) {
      params.blockPerOutput = true;
      params.blockX = kBlockPerOutputThreads;
      params.elementsPerThread = 1;
      params.gridX = std::clamp<int64_t>(count, 1, kBlockPerOutputMaxGrid);
      return params;
    }
  }
  params.elementsPerThread = kLayoutElementsPerThread;
  const int64_t perBlock =
      int64_t(kPointwiseThreadsPerBlock) * kLayoutElementsPerThread;
  params.gridX = std::max<int64_t>(1, (count + perBlock - 1) / perBlock);
  params.maxBlocksPerMultiprocessor = kGridStrideBlocksPerMultiprocessor;
  return params;
}

fusec::LaunchGeometry launchOf(const LayoutParams &params) {
  fusec::LaunchGeometry launch;
  launch.blockX = params.blockX;
  launch.gridX = params.gridX;
  launch.maxBlocksPerMultiprocessor = params.maxBlocksPerMultiprocessor;
  return launch;
}

std::string LayoutParams::toString() const {
  std::string text = "elements=" + std::to_string(elements) +
                     " index=" + (index64 ? "64" : "32");
  if (target == fusec::Target::Cpu)
    return text + " parallel=" + (parallel ? "yes" : "no");
  if (blockPerOutput)
    text += " block-per-output";
  return text + " block=" + std::to_string(blockX) +
         " grid=" + std::to_string(gridX) +
         " per-thread=" + std::to_string(elementsPerThread) +
         " max-blocks-per-sm=" + std::to_string(maxBlocksPerMultiprocessor);
}

size_t LayoutParams::hash() const {
  return llvm::hash_combine(static_cast<int>(target), elements, index64,
                            parallel, blockX, gridX, elementsPerThread,
                            blockPerOutput, maxBlocksPerMultiprocessor);
}

bool LayoutParams::operator==(const LayoutParams &other) const {
  auto fields = [](const LayoutParams &p) {
    return std::tie(p.target, p.elements, p.index64, p.parallel, p.blockX,
                    p.gridX, p.elementsPerThread, p.blockPerOutput,
                    p.maxBlocksPerMultiprocessor);
  };
  return fields(*this) == fields(other);
}

} // namespace fuse
