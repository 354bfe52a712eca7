//===- AttentionSchedule.cpp - Fused attention: params --------------------===//

#include "codegen/schedule/AttentionSchedule.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <sstream>
#include <tuple>

namespace fuse {

namespace {

/// C++: a query tile's rows share each key tile's loads (and its transpose
/// to key-major); a key tile's scores stay in L1 with the tiles of q and
/// the output. The query tile is whole blocks of the kernel's 6 rows
/// (device/AttentionCpu.h).
constexpr int64_t kCpuQueryTile = 48, kCpuKeyTile = 128;
/// CUDA: warps per block (tensor cores: 16 query rows each; CUDA cores: a
/// row each).
constexpr int64_t kWarpsPerBlock = 4;

auto fields(const AttentionParams &p) {
  return std::tie(p.target, p.kernel, p.cpuQueryTile, p.cpuKeyTile,
                  p.warpsPerBlock, p.blockM, p.blockN, p.rowTiles,
                  p.queryInRegisters, p.decodeRows, p.splits, p.splitKeys,
                  p.vectorKeys, p.vectorValues, p.stages, p.headsInGridX,
                  p.blockX, p.gridX, p.gridY, p.sharedBytes, p.scratchBytes);
}

/// Whether every row of `layout` starts 16-byte aligned (8 elements).
bool alignedRows(const AttentionOperandLayout &layout) {
  return layout.offset % 8 == 0 && layout.batch % 8 == 0 &&
         layout.head % 8 == 0 && layout.row % 8 == 0;
}

/// Decode: query rows sharing a kv head (group x queries) at most this
/// many, keys at least this many.
constexpr int64_t kMaxDecodeRows = 8, kMinDecodeKeys = 256;
/// Blocks a decode launch aims for: 4 per SM of an H100 or H200 (132)
/// reading into registers, 2 (as many as fit beside each other) staging
/// through shared memory.
constexpr int64_t kSMs = 132, kDecodeBlocks = 4 * kSMs,
                  kStagedDecodeBlocks = 2 * kSMs;
/// Staged decode: a warp's tile holds 4 KiB of keys and 4 KiB of values
/// (32 keys of 128 bytes, 16 of 256, 8 of 512); up to 3 stages, as many as
/// let two blocks share an SM's 228 KiB with their static shared memory.
constexpr int64_t kStageTileBytes = 4096, kMaxStages = 3,
                  kSharedPerTwoBlocks = 113 * 1024;

/// A grid's y holds this many blocks at most.
constexpr int64_t kMaxGridY = 65535;

/// The grid of a tensor-core kernel: query blocks by (batch, head) pairs,
/// the pairs along x when y cannot hold them.
void setQueryBlockGrid(AttentionParams &params, const AttentionShape &shape) {
  int64_t queryBlocks = (shape.queryLen + params.blockM - 1) / params.blockM;
  int64_t pairs = shape.batch * shape.heads;
  params.headsInGridX = pairs > kMaxGridY;
  params.gridX = params.headsInGridX ? pairs : queryBlocks;
  params.gridY =
      static_cast<unsigned>(params.headsInGridX ? queryBlocks : pairs);
}

/// The tensor-core kernel: f16/bf16, head dims equal and 64, 128 or 256
/// (swizzled rows of at least 8 16-byte chunks), rows 16-byte aligned.
bool fitsTensorCores(const AttentionShape &shape) {
  return (shape.dtype == fusec::DType::BF16 ||
          shape.dtype == fusec::DType::F16) &&
         shape.headDim == shape.valueHeadDim &&
         (shape.headDim == 64 || shape.headDim == 128 ||
          shape.headDim == 256) &&
         alignedRows(shape.query) && alignedRows(shape.key) &&
         alignedRows(shape.value) && alignedRows(shape.output);
}

} // namespace

double AttentionShape::flops() const {
  // Visible (query, key) pairs: the causal triangle counted as half, as
  // the FLOP/s of attention kernels are usually quoted.
  double pairs = double(batch) * double(heads) * double(queryLen) *
                 double(keyLen) * (causal ? 0.5 : 1.0);
  return 2.0 * pairs * double(headDim + valueHeadDim);
}

AttentionParams scheduleAttention(const AttentionShape &shape,
                                  fusec::Target target,
                                  const std::string &gpuArch) {
  AttentionParams params;
  params.target = target;
  if (target == fusec::Target::Cpu) {
    params.kernel = "cpu-tiles";
    params.cpuQueryTile = kCpuQueryTile;
    params.cpuKeyTile = kCpuKeyTile;
    return params;
  }
  params.warpsPerBlock = kWarpsPerBlock;
  int64_t decodeRows = shape.heads / shape.kvHeads * shape.queryLen;
  if (decodeRows <= kMaxDecodeRows && shape.keyLen >= kMinDecodeKeys &&
      shape.dtype != fusec::DType::F64 && !shape.symbolicLengths) {
    // Few rows read the whole cache: split the keys so that every SM
    // reads a part (rounds of 128 keys: 32 per warp).
    params.kernel = "split-keys";
    params.decodeRows = decodeRows;
    int64_t width = fusec::dtypeBytes(shape.dtype);
    auto chunkedRows = [&](const AttentionOperandLayout &layout, int64_t dim) {
      return dim * width % 16 == 0 && layout.offset * width % 16 == 0 &&
             layout.batch * width % 16 == 0 && layout.head * width % 16 == 0 &&
             layout.row * width % 16 == 0;
    };
    params.vectorKeys = chunkedRows(shape.key, shape.headDim);
    int64_t valueChunks = shape.valueHeadDim * width / 16;
    params.vectorValues =
        chunkedRows(shape.value, shape.valueHeadDim) &&
        (valueChunks % 32 == 0 || llvm::isPowerOf2_64(valueChunks));
    // Staged: rows of 8, 16 or 32 whole chunks, keys and values alike.
    int64_t keyChunks = shape.headDim * width / 16;
    // q (rows padded by 16 bytes a 128-byte part of a key row), the
    // warps' statistics and sums.
    int64_t queryStride = shape.headDim + shape.headDim / (128 / width) * 4;
    int64_t staticShared = 4 * decodeRows *
                           (queryStride + 3 * kWarpsPerBlock +
                            kWarpsPerBlock * shape.valueHeadDim);
    int64_t stageBytes = kWarpsPerBlock * 2 * kStageTileBytes;
    if (params.vectorKeys && params.vectorValues &&
        shape.headDim == shape.valueHeadDim &&
        (keyChunks == 8 || keyChunks == 16 || keyChunks == 32))
      params.stages = std::min(
          kMaxStages, (kSharedPerTwoBlocks - staticShared) / stageBytes);
    if (params.stages < 2)
      params.stages = 0;
    // Splits: whole rounds of the block's warps (32 keys each, or a
    // tile each when staged).
    int64_t round = params.stages
                        ? kWarpsPerBlock * kStageTileBytes / (keyChunks * 16)
                        : 32 * kWarpsPerBlock;
    // The split count whose launch takes the fewest rounds of keys: waves
    // of `resident` blocks times a block's keys (a last, partial wave
    // costs a whole one), plus a round per block for its start and merge;
    // the fewest splits among equals.
    int64_t resident = params.stages ? kStagedDecodeBlocks : kDecodeBlocks;
    int64_t pairs = shape.batch * shape.kvHeads;
    int64_t rounds = (shape.keyLen + round - 1) / round;
    int64_t bestCost = -1;
    for (int64_t splits = 1; splits <= rounds; ++splits) {
      int64_t perSplit = (rounds + splits - 1) / splits;
      int64_t used = (rounds + perSplit - 1) / perSplit;
      int64_t waves = (pairs * used + resident - 1) / resident;
      int64_t cost = waves * (perSplit + 1);
      if (bestCost < 0 || cost < bestCost) {
        bestCost = cost;
        params.splits = used;
        params.splitKeys = perSplit * round;
      }
    }
    params.sharedBytes = static_cast<unsigned>(params.stages * stageBytes);
    params.blockX = static_cast<unsigned>(32 * kWarpsPerBlock);
    params.gridX = params.splits;
    params.gridY = static_cast<unsigned>(pairs);
    params.scratchBytes =
        (pairs * 4 + 15) / 16 * 16 +
        pairs * params.splits * decodeRows * (shape.valueHeadDim + 2) * 4;
    return params;
  }
  if (fitsTensorCores(shape) && shape.headDim <= 128 && gpuArch == "sm_90a") {
    // A producer warpgroup and two consumers of 64 query rows each (the
    // wgmma's M) against key blocks of 128; q and two stages of k and v in
    // shared memory, the slack that aligns them to the swizzle's 1024
    // bytes, and the stages' mbarriers. On an H200, bf16, B x T = 16k:
    // 543 TFLOP/s at head dim 128, T 4k (446 causal), 347 at 64, T 2k (232
    // causal); without the producer (consumers copying, a block barrier a
    // key block) 342 and 245.
    params.kernel = "wgmma";
    params.warpsPerBlock = 12;
    params.blockM = 128;
    params.blockN = 128;
    params.blockX = static_cast<unsigned>(32 * params.warpsPerBlock);
    setQueryBlockGrid(params, shape);
    params.sharedBytes = static_cast<unsigned>(
        (params.blockM + 4 * params.blockN) * shape.headDim * 2 + 1024 + 128);
    return params;
  }
  if (fitsTensorCores(shape)) {
    // Each warp takes 32 query rows (two 16-row tiles share every k and v
    // fragment it reads from shared memory) against key blocks of 64; at
    // head dim 256 16 rows and 32 keys keep the accumulators in registers.
    // Query fragments stay in registers where they fit beside them (head
    // dim 64). On an H200, bf16, B x T = 16k: one 16-row tile per warp ran
    // 210-225 TFLOP/s at head dims 64 and 128 (T 1k-4k).
    params.kernel = "tensor-cores";
    bool wide = shape.headDim == 256;
    params.rowTiles = wide ? 1 : 2;
    params.blockN = wide ? 32 : 64;
    params.queryInRegisters = shape.headDim == 64;
    params.blockM = 16 * params.rowTiles * kWarpsPerBlock;
    params.blockX = static_cast<unsigned>(32 * kWarpsPerBlock);
    setQueryBlockGrid(params, shape);
    params.sharedBytes = static_cast<unsigned>(
        (params.blockM + 4 * params.blockN) * shape.headDim * 2);
    return params;
  }
  params.kernel = "warp-per-row";
  params.blockX = static_cast<unsigned>(32 * kWarpsPerBlock);
  int64_t rows = shape.batch * shape.heads * shape.queryLen;
  params.gridX = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return params;
}

fusec::LaunchGeometry launchOf(const AttentionParams &params) {
  fusec::LaunchGeometry launch;
  launch.gridX = params.gridX;
  launch.gridY = params.gridY;
  launch.blockX = params.blockX;
  launch.sharedBytes = params.sharedBytes;
  return launch;
}

std::string AttentionParams::toString() const {
  std::ostringstream os;
  os << "kernel=" << kernel;
  if (target == fusec::Target::Cpu) {
    os << " query_tile=" << cpuQueryTile << " key_tile=" << cpuKeyTile;
    return os.str();
  }
  os << " warps=" << warpsPerBlock;
  if (kernel == "wgmma")
    os << " block_m=" << blockM << " block_n=" << blockN;
  else if (blockN)
    os << " block_m=" << blockM << " block_n=" << blockN
       << " row_tiles=" << rowTiles
       << " q_in_registers=" << (queryInRegisters ? 1 : 0);
  if (splits)
    os << " rows=" << decodeRows << " splits=" << splits
       << " split_keys=" << splitKeys << " vector_keys=" << (vectorKeys ? 1 : 0)
       << " vector_values=" << (vectorValues ? 1 : 0) << " stages=" << stages;
  if (headsInGridX)
    os << " heads_in_grid_x=1";
  os << " block=" << blockX << " grid=" << gridX;
  if (gridY > 1)
    os << "x" << gridY;
  if (sharedBytes)
    os << " shared=" << sharedBytes;
  if (scratchBytes)
    os << " scratch=" << scratchBytes;
  return os.str();
}

size_t AttentionParams::hash() const {
  return llvm::hash_combine(static_cast<int>(target), kernel, cpuQueryTile,
                            cpuKeyTile, warpsPerBlock, blockM, blockN, rowTiles,
                            queryInRegisters, decodeRows, splits, splitKeys,
                            vectorKeys, vectorValues, stages, headsInGridX,
                            blockX, gridX, gridY, sharedBytes, scratchBytes);
}

bool AttentionParams::operator==(const AttentionParams &other) const {
  return fields(*this) == fields(other);
}

} // namespace fuse
