//===- GemvSchedule.cpp - The int8-weight GEMV: params -------------------===//

#include "codegen/schedule/GemvSchedule.h"

#include "codegen/PointwiseKernel.h"

#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <tuple>

using fusec::DType;

namespace fuse {

namespace {

/// A channel's weights are split among up to kWarpsPerBlock warps while
/// each keeps at least this many (two steps of the whole warp: loads to
/// keep in flight, and a partial sum worth its shared-memory exchange).
constexpr int64_t kWeightsPerWarpChunk = 2 * 32 * kWeightsPerLoad;

/// How the CUDA kernel splits the work: each channel's k weights are
/// split among `warpsPerChannel` warps (partial sums meet in shared
/// memory), so a decode-sized layer makes several waves of small blocks
/// rather than one ragged wave of long warps.
struct CudaGemvSplit {
  int64_t warpsPerChannel = 1;
  int64_t channelsPerBlock = kWarpsPerBlock;
  /// Weights each warp covers (a multiple of 16 on the vector path).
  int64_t chunk = 0;
  bool vectorized = false;
};

CudaGemvSplit cudaGemvSplit(const GemvShape &shape) {
  CudaGemvSplit split;
  // 16-byte loads need k % 16 == 0: rows (and the lhs's runs of 16
  // elements) then start 16-byte aligned.
  split.vectorized = shape.k % kWeightsPerLoad == 0;
  if (split.vectorized)
    while (split.warpsPerChannel < kWarpsPerBlock &&
           shape.k / (split.warpsPerChannel * 2) >= kWeightsPerWarpChunk)
      split.warpsPerChannel *= 2;
  split.channelsPerBlock = kWarpsPerBlock / split.warpsPerChannel;
  int64_t chunk = (shape.k + split.warpsPerChannel - 1) / split.warpsPerChannel;
  split.chunk =
      (chunk + kWeightsPerLoad - 1) / kWeightsPerLoad * kWeightsPerLoad;
  return split;
}

/// How the tensor-core kernel pipelines the work: `blocksPerMultiprocessor`
/// the launch bounds ask to fit (which sets the compiler's register budget)
/// and the steps whose weights a warp keeps in flight, `ahead`: it issues
/// step s + ahead's loads before it computes step s, so its loads and its
/// arithmetic overlap. A layer of many channels runs 6 blocks per SM (80
/// registers per thread), 4 steps ahead: all 688 blocks of a 4096x11008
/// layer fit in one wave on 132 SMs (and its shared memory holds more steps
/// than those registers: sharedRingStages). A layer whose blocks fit 2 or 3
/// per SM gives each warp the registers of the blocks that are not there
/// for more steps in flight.
/// Measured on an H200, median of 200 runs: 1x4096x11008, 4 blocks loading
/// 16 steps, then computing them, 18.0-18.7 us; this pipeline as a rolled
/// loop, 16.9-17.4 us; fully unrolled, with every lane loading the lhs (no
/// zeroed registers per step), 15.7-16.3 us; with the bf16 dequantization
/// by logic ops (printBF16Dequantize) and the lhs staged, 13.1-13.6 us (a
/// plain read of the same bytes: 10.8-11.8 us). 1x11008x4096 (256 blocks):
/// 4 steps ahead 15.3-16.2 us, 8 ahead at 3 blocks per SM 14.4-15.1, 12
/// ahead at 2 blocks per SM 13.7-14.1.
///
/// The kernel lets the next kernel in the stream launch (a GEMV after it
/// then streams its constant weights while this one ends) at its start,
/// `earlyDependents`, where the layer fills its SMs (6 per SM): the next
/// layer's blocks take the few free slots. Layers of 2 or 3 blocks per SM
/// leave room for more, and the next layer's blocks crowded in: they let
/// it launch after their main loop. On an H200, GEMVs back to back
/// from DRAM (fusec-bench's streamed_cold_us), against each kernel
/// launched after the one before has finished: 1x4096x11008 14.8 -> 12.6
/// us; 1x4096x4096 8.8-9.0 -> 8.0-8.1 (at the start: 9.1); 1x11008x4096
/// 16.2-16.3 -> 16.5-16.9 (at the start: 23.4).
struct TensorCoreSchedule {
  int64_t blocksPerMultiprocessor, ahead;
  bool earlyDependents;
};
/// The SMs of an H100 or H200, which the schedule assumes; on another count
/// the kernel is as correct, its blocks may take one more wave.
constexpr int64_t kTypicalMultiprocessors = 132;
/// Up to this many steps per warp the loop is unrolled whole: the ring's
/// registers are then named statically, with no copies between rounds.
constexpr int64_t kTensorCoreMaxUnrolledSteps = 64;
/// A bf16 block copies its warps' lhs chunks into shared memory, in the
/// order the mma pairs them with the weights, when they take at most this
/// many bytes (rows x the warps' chunks of k, padded to whole steps, x 2);
/// larger ones are reordered in registers at every step (one byte permute
/// per 4 weights more).
constexpr int64_t kTensorCoreMaxStagedLhsBytes = 32 * 1024;
// A staged lhs is never longer than the unrolled loop: the rolled one reads
// the lhs from memory.
static_assert(kTensorCoreMaxStagedLhsBytes <= kTensorCoreWarps *
                                                  kTensorCoreMaxUnrolledSteps *
                                                  kTensorCoreStep * 2);

/// Shared memory of an sm_90 SM, what the system keeps of it per resident
/// block, and the most a block may declare statically. (An sm_80 SM has
/// less: there the shared ring's blocks fit fewer per SM and may take one
/// more wave, as on a GPU of fewer SMs.)
constexpr int64_t kSharedBytesPerMultiprocessor = 228 * 1024;
constexpr int64_t kSharedBytesReservedPerBlock = 1024;
constexpr int64_t kStaticSharedBytesPerBlock = 48 * 1024;
/// Steps a warp's shared-memory ring of weights holds at most (it keeps
/// all but one in flight): on an H200, 1x4096x11008 with its weights from
/// DRAM (fusec-bench's queued_cold_us), 4 steps ahead in registers 16.8-17.0
/// us, the same with 128-byte L2 fetches 15.8-15.9, a 6-step shared ring
/// with them 14.8-14.9 (a plain read of the 45 MB: 14.2-14.6).
constexpr int64_t kTensorCoreMaxSharedStages = 6;
/// Bytes of one step of a block's weights: 16 channels x 64 k.
constexpr int64_t kTensorCoreStepBytes = kTensorCoreChannels * 64;

/// Stages of the shared-memory weight ring for a block that also declares
/// `otherSharedBytes`, within its share of the SM at the schedule's
/// occupancy; 0 (the register ring) where that keeps fewer steps in flight
/// than the schedule's registers do.
int64_t sharedRingStages(const TensorCoreSchedule &schedule,
                         int64_t otherSharedBytes) {
  int64_t perBlock = std::min(kStaticSharedBytesPerBlock,
                              kSharedBytesPerMultiprocessor /
                                      schedule.blocksPerMultiprocessor -
                                  kSharedBytesReservedPerBlock) -
                     otherSharedBytes;
  int64_t stages =
      std::min(kTensorCoreMaxSharedStages,
               perBlock / (kTensorCoreWarps * kTensorCoreStepBytes));
  return stages - 1 > schedule.ahead ? stages : 0;
}

TensorCoreSchedule tensorCoreSchedule(const GemvShape &shape) {
  int64_t blocks = (shape.n + kTensorCoreChannels - 1) / kTensorCoreChannels;
  if (blocks <= 2 * kTypicalMultiprocessors)
    return {2, 12, false};
  if (blocks <= 3 * kTypicalMultiprocessors)
    return {3, 8, false};
  return {6, 4, true};
}

/// f16/bf16 with k a multiple of 64 run on tensor cores (sm_80+): the mma
/// does the multiply-adds and reads the lhs as it is stored, leaving the
/// dequantization as the only per-weight work.
bool usesTensorCores(const GemvShape &shape) {
  return (shape.dtype == DType::BF16 || shape.dtype == DType::F16) &&
         shape.k % kTensorCoreStep == 0 && shape.rows <= 8;
}

} // namespace

GemvParams scheduleGemv(const GemvShape &shape, fusec::Target target,
                        bool constantWeights) {
  GemvParams p;
  p.target = target;
  p.rows = shape.rows;
  p.n = shape.n;
  p.k = shape.k;
  if (target != fusec::Target::Cuda) {
    p.parallel = shape.n * shape.k >= kCpuParallelThreshold;
    return p;
  }
  p.tensorCores = usesTensorCores(shape);
  if (!p.tensorCores) {
    CudaGemvSplit split = cudaGemvSplit(shape);
    p.vectorized = split.vectorized;
    p.warpsPerChannel = split.warpsPerChannel;
    p.channelsPerBlock = split.channelsPerBlock;
    p.chunk = split.chunk;
    p.gridX = std::max<int64_t>(1, (shape.n + split.channelsPerBlock - 1) /
                                       split.channelsPerBlock);
    p.blockX = kWarpsPerBlock * 32;
    return p;
  }
  const TensorCoreSchedule schedule = tensorCoreSchedule(shape);
  const int64_t warps = kTensorCoreWarps;
  int64_t chunk = (shape.k + warps - 1) / warps;
  chunk = (chunk + kTensorCoreStep - 1) / kTensorCoreStep * kTensorCoreStep;
  p.chunk = chunk;
  p.steps = chunk / kTensorCoreStep;
  p.unrolled = p.steps <= kTensorCoreMaxUnrolledSteps;
  p.blocksPerMultiprocessor = schedule.blocksPerMultiprocessor;
  p.ahead = schedule.ahead;
  p.earlyDependents = schedule.earlyDependents;
  p.stagedLhs = shape.dtype == DType::BF16 &&
                shape.rows * chunk * warps * 2 <= kTensorCoreMaxStagedLhsBytes;
  const int64_t partialBytes = warps * 32 * 4 * 4;
  p.sharedStages = sharedRingStages(
      schedule,
      (p.stagedLhs ? shape.rows * chunk * warps * 2 : 0) + partialBytes);
  p.constantWeights = constantWeights;
  p.gridX = std::max<int64_t>(1, (shape.n + kTensorCoreChannels - 1) /
                                     kTensorCoreChannels);
  p.blockX = kTensorCoreWarps * 32;
  p.waitsForPredecessor = true;
  return p;
}

fusec::LaunchGeometry launchOf(const GemvParams &params) {
  fusec::LaunchGeometry launch;
  launch.gridX = params.gridX;
  launch.blockX = params.blockX;
  launch.waitsForPredecessor = params.waitsForPredecessor;
  return launch;
}

std::string GemvParams::toString() const {
  std::string text = "rows=" + std::to_string(rows) +
                     " n=" + std::to_string(n) + " k=" + std::to_string(k);
  auto field = [&](const std::string &key, const std::string &value) {
    text += " " + key + "=" + value;
  };
  auto flag = [&](const std::string &key, bool value) {
    field(key, value ? "yes" : "no");
  };
  if (target != fusec::Target::Cuda) {
    flag("parallel", parallel);
    return text;
  }
  field("kernel", tensorCores ? "tensor-cores" : "simt");
  field("chunk", std::to_string(chunk));
  if (tensorCores) {
    field("steps", std::to_string(steps));
    flag("unrolled", unrolled);
    field("blocks-per-sm", std::to_string(blocksPerMultiprocessor));
    field("ahead", std::to_string(ahead));
    field("shared-stages", std::to_string(sharedStages));
    flag("staged-lhs", stagedLhs);
    flag("early-dependents", earlyDependents);
    flag("constant-weights", constantWeights);
  } else {
    flag("vectorized", vectorized);
    field("warps-per-channel", std::to_string(warpsPerChannel));
    field("channels-per-block", std::to_string(channelsPerBlock));
  }
  field("block", std::to_string(blockX));
  field("grid", std::to_string(gridX));
  flag("waits-for-predecessor", waitsForPredecessor);
  return text;
}

size_t GemvParams::hash() const {
  return llvm::hash_combine(
      static_cast<int>(target), rows, n, k, parallel, tensorCores, chunk,
      vectorized, warpsPerChannel, channelsPerBlock, blocksPerMultiprocessor,
      ahead, steps, unrolled, stagedLhs, sharedStages, earlyDependents,
      constantWeights, blockX, gridX, waitsForPredecessor);
}

bool GemvParams::operator==(const GemvParams &other) const {
  auto fields = [](const GemvParams &p) {
    return std::tie(p.target, p.rows, p.n, p.k, p.parallel, p.tensorCores,
                    p.chunk, p.vectorized, p.warpsPerChannel,
                    p.channelsPerBlock, p.blocksPerMultiprocessor, p.ahead,
                    p.steps, p.unrolled, p.stagedLhs, p.sharedStages,
                    p.earlyDependents, p.constantWeights, p.blockX, p.gridX,
                    p.waitsForPredecessor);
  };
  return fields(*this) == fields(other);
}

} // namespace fuse
