//===- AttentionSchedule.cpp - Fused attention: params --------------------===//

#include "codegen/schedule/AttentionSchedule.h"

#include "llvm/ADT/Hashing.h"

#include <sstream>
#include <tuple>

namespace fuse {

namespace {

/// C++: a query tile's rows share each key tile's loads (and its transpose
/// to key-major); a key tile's scores stay in L1 with the tiles of q and
/// the output.
constexpr int64_t kCpuQueryTile = 32, kCpuKeyTile = 128;
/// CUDA cores: query rows (warps) per block.
constexpr int64_t kWarpsPerBlock = 4;

auto fields(const AttentionParams &p) {
  return std::tie(p.target, p.kernel, p.cpuQueryTile, p.cpuKeyTile,
                  p.warpsPerBlock, p.blockX, p.gridX, p.scratchBytes);
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
                                  fusec::Target target) {
  AttentionParams params;
  params.target = target;
  if (target == fusec::Target::Cpu) {
    params.kernel = "cpu-tiles";
    params.cpuQueryTile = kCpuQueryTile;
    params.cpuKeyTile = kCpuKeyTile;
    return params;
  }
  params.kernel = "warp-per-row";
  params.warpsPerBlock = kWarpsPerBlock;
  params.blockX = static_cast<unsigned>(32 * kWarpsPerBlock);
  int64_t rows = shape.batch * shape.heads * shape.queryLen;
  params.gridX = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return params;
}

fusec::LaunchGeometry launchOf(const AttentionParams &params) {
  fusec::LaunchGeometry launch;
  launch.gridX = params.gridX;
  launch.blockX = params.blockX;
  return launch;
}

std::string AttentionParams::toString() const {
  std::ostringstream os;
  os << "kernel=" << kernel;
  if (target == fusec::Target::Cpu) {
    os << " query_tile=" << cpuQueryTile << " key_tile=" << cpuKeyTile;
    return os.str();
  }
  os << " warps=" << warpsPerBlock << " block=" << blockX << " grid=" << gridX;
  if (scratchBytes)
    os << " scratch=" << scratchBytes;
  return os.str();
}

size_t AttentionParams::hash() const {
  return llvm::hash_combine(static_cast<int>(target), kernel, cpuQueryTile,
                            cpuKeyTile, warpsPerBlock, blockX, gridX,
                            scratchBytes);
}

bool AttentionParams::operator==(const AttentionParams &other) const {
  return fields(*this) == fields(other);
}

} // namespace fuse
