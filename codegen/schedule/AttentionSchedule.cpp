// PROVISIONAL
#include "codegen/schedule/AttentionSchedule.h"
namespace fuse {
double AttentionShape::flops() const {
  double pairs = double(queryLen) * double(keyLen);
  if (causal) pairs /= 2;
  return 2.0 * double(batch) * double(heads) * pairs * double(headDim + valueHeadDim);
}
std::string AttentionParams::toString() const { return "cpu_query_tile=" + std::to_string(cpuQueryTile) + " cpu_key_tile=" + std::to_string(cpuKeyTile); }
AttentionParams scheduleAttention(const AttentionShape &, fusec::Target target) { AttentionParams p; p.target = target; return p; }
fusec::LaunchGeometry launchOf(const AttentionParams &) { return {}; }
}
