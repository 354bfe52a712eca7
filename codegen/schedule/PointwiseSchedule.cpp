//===- PointwiseSchedule.cpp - Pointwise kernels: params -----------------===//

#include "codegen/schedule/PointwiseSchedule.h"

#include "ir/ElementwiseOps.h"

#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace fuse {

namespace {

constexpr int kMaxVectorWidth = 8;

/// Elements per tile of a staged C++ kernel: a few vectors of each width,
/// small enough that the tile's intermediates stay in L1.
constexpr int64_t kCpuStageTile = 64;

/// Elements per thread and step of the CUDA kernel: 16-byte accesses for
/// the widest contiguous dtype (4 x f32, 8 x bf16), at most 8; one for
/// kernels of at most a block's threads.
int cudaVectorWidth(const PointwiseKernel &kernel) {
  // Elements that one block covers one per thread gain nothing from
  // vectors, and a vector plus a tail costs a second access: on mapped host
  // memory (a small program's inputs and outputs) an H200 ran sin^4 over 6
  // floats in 7.8-8.1 us as a vector and a tail, in 7.1 us one element per
  // thread (graph launch to host flag, median of 3000).
  if (kernel.numElements() <= kPointwiseThreadsPerBlock)
    return 1;
  size_t widest = 1;
  for (const KernelInput &input : kernel.inputs)
    if (input.access == InputAccess::Contiguous)
      widest = std::max(widest, fusec::dtypeBytes(input.dtype));
  for (const KernelOutput &output : kernel.outputs)
    widest = std::max(widest, fusec::dtypeBytes(output.dtype));
  return std::min<int>(kMaxVectorWidth, 16 / static_cast<int>(widest));
}

/// The thread that takes the first tail element: the first of the warp after
/// the vectors' warps. Threads of one warp that take different loops run
/// them one after the other, so a tail in the last vector's warp would wait
/// for that vector's loads before issuing its own (on mapped host memory,
/// two PCIe round trips instead of one).
int64_t cudaTailFirstThread(const PointwiseKernel &kernel, int64_t width) {
  int64_t vectors = width > 1 ? kernel.numElements() / width : 0;
  return (vectors + kWarpSize - 1) / kWarpSize * kWarpSize;
}

/// Whether a C++ kernel writes its outputs with streaming (non-temporal)
/// stores: outputs this large do not stay in cache for their reader
/// anyway, and a plain store first reads each line it writes.
bool streamsOutputs(const PointwiseKernel &kernel) {
  int64_t bytes = 0;
  for (const KernelOutput &output : kernel.outputs)
    bytes += kernel.numElements() * fusec::dtypeBytes(output.dtype);
  return bytes >= kCpuStreamingStoreMinBytes;
}

/// Whether an op's C expression calls a libm function that has a libmvec
/// variant (a call the loop makes once per vector, not inlined code).
bool callsVectorMath(const ScalarExpr &expr) {
  if (expr.kind == ScalarExpr::Kind::Apply) {
    std::string pattern = expr.op->cExpression(expr.operands[0]->dtype);
    for (const auto &entry : kLibmvecFunctions) {
      std::string call = std::string(entry[0]) + "(";
      for (size_t at = pattern.find(call); at != std::string::npos;
           at = pattern.find(call, at + 1))
        if (at == 0 ||
            !(std::isalnum(static_cast<unsigned char>(pattern[at - 1])) ||
              pattern[at - 1] == '_'))
          return true;
    }
  }
  return llvm::any_of(expr.operands, [](const ScalarExpr *operand) {
    return callsVectorMath(*operand);
  });
}

/// Lets split into stages, each ending at a vector math call (trailing lets
/// without one join the last stage); empty unless there are two or more
/// calls. A chain like sin(sin(sin(sin(x)))) makes each element's calls
/// depend on each other: run one call at a time over a tile, and the calls
/// of the tile's vectors are independent and overlap in the core (16-core
/// host: 1.4x faster than one element's whole chain at a time).
std::vector<std::vector<const ScalarLet *>>
vectorMathStages(const ScalarLets &lets) {
  std::vector<std::vector<const ScalarLet *>> stages(1);
  int calls = 0;
  for (const ScalarLet &let : lets) {
    stages.back().push_back(&let);
    if (callsVectorMath(*let.value)) {
      ++calls;
      stages.emplace_back();
    }
  }
  if (calls < 2)
    return {};
  std::vector<const ScalarLet *> trailing = std::move(stages.back());
  stages.pop_back();
  stages.back().insert(stages.back().end(), trailing.begin(), trailing.end());
  return stages;
}

} // namespace

ScheduledPointwise schedulePointwise(const PointwiseKernel &kernel,
                                     fusec::Target target) {
  ScheduledPointwise s;
  PointwiseParams &p = s.params;
  p.target = target;
  const int64_t count = kernel.numElements();
  p.elements = count;
  if (target == fusec::Target::Cuda) {
    const int width = cudaVectorWidth(kernel);
    p.vectorWidth = width;
    p.index64 = count > kMax32BitElements;
    if (width > 1 && count % width != 0)
      p.tailFirstThread = cudaTailFirstThread(kernel, width);
    // Threads: without vectors, one per element; with them, one per vector,
    // then the tail's from the warp after the vectors'.
    int64_t steps = count;
    if (width > 1)
      steps = count % width == 0 ? count / width
                                 : p.tailFirstThread + count % width;
    p.blockX = kPointwiseThreadsPerBlock;
    p.gridX = std::max<int64_t>(1, (steps + kPointwiseThreadsPerBlock - 1) /
                                       kPointwiseThreadsPerBlock);
    p.maxBlocksPerMultiprocessor = kGridStrideBlocksPerMultiprocessor;
    return s;
  }
  if (count == 0)
    return s;
  p.parallel = count >= kCpuParallelThreshold;
  // Broadcast inputs read in the iteration shape: a loop over rows computes
  // each input's row offset once, and the inner loop is contiguous.
  // (Rows of a fixed length: a symbolic one would need a run-time count.)
  p.rowLoop = kernel.hasBroadcastInput() &&
              kernel.broadcastsInIterationShape() &&
              kernel.symbolicIterationShape.back().isStatic() &&
              !kernel.readsElementIndex;
  // (Kernels of one tile or less keep the plain loop: nothing to overlap.)
  if (!p.rowLoop && count > kCpuStageTile && !kernel.readsElementIndex) {
    s.stages = vectorMathStages(kernel.lets);
    bool streaming = streamsOutputs(kernel);
    if (s.stages.empty() && streaming) { // one stage: the tiles to stream
      s.stages.emplace_back();
      for (const ScalarLet &let : kernel.lets)
        s.stages.back().push_back(&let);
    }
    if (!s.stages.empty()) {
      p.stages = s.stages.size();
      p.stageTile = kCpuStageTile;
      p.streamingStores = streaming;
    }
  }
  return s;
}

fusec::LaunchGeometry launchOf(const PointwiseParams &params) {
  fusec::LaunchGeometry launch;
  launch.blockX = params.blockX;
  launch.gridX = params.gridX;
  launch.maxBlocksPerMultiprocessor = params.maxBlocksPerMultiprocessor;
  return launch;
}

std::string PointwiseParams::toString() const {
  std::string text = "elements=" + std::to_string(elements);
  auto field = [&](const std::string &key, const std::string &value) {
    text += " " + key + "=" + value;
  };
  auto flag = [&](const std::string &key, bool value) {
    field(key, value ? "yes" : "no");
  };
  if (target == fusec::Target::Cuda) {
    field("vector", std::to_string(vectorWidth));
    field("tail-first-thread", std::to_string(tailFirstThread));
    field("index", index64 ? "64" : "32");
    field("block", std::to_string(blockX));
    field("grid", std::to_string(gridX));
    field("max-blocks-per-sm", std::to_string(maxBlocksPerMultiprocessor));
    return text;
  }
  flag("parallel", parallel);
  flag("row-loop", rowLoop);
  field("stages", std::to_string(stages));
  if (stages > 0) {
    field("stage-tile", std::to_string(stageTile));
    flag("streaming-stores", streamingStores);
  }
  return text;
}

size_t PointwiseParams::hash() const {
  return llvm::hash_combine(static_cast<int>(target), elements, parallel,
                            rowLoop, stages, stageTile, streamingStores,
                            vectorWidth, tailFirstThread, index64, blockX,
                            gridX, maxBlocksPerMultiprocessor);
}

bool PointwiseParams::operator==(const PointwiseParams &other) const {
  auto fields = [](const PointwiseParams &p) {
    return std::tie(p.target, p.elements, p.parallel, p.rowLoop, p.stages,
                    p.stageTile, p.streamingStores, p.vectorWidth,
                    p.tailFirstThread, p.index64, p.blockX, p.gridX,
                    p.maxBlocksPerMultiprocessor);
  };
  return fields(*this) == fields(other);
}

} // namespace fuse
