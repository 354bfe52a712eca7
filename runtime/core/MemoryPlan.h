//===- MemoryPlan.h - Temporaries placed by liveness -----------*- C++ -*-===//
//
// A model's intermediate values live from the step that writes them to the
// last step that reads them; values whose lifetimes do not overlap can
// share bytes. Both executables place their temporaries in one arena laid
// out by this plan.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_MEMORYPLAN_H
#define FUSEC_RUNTIME_CORE_MEMORYPLAN_H

#include "runtime/core/Program.h"

#include <cstdint>
#include <vector>

namespace fusec {

struct MemoryPlan {
  /// Per buffer: its byte offset in the arena, or -1 when it is not there
  /// (inputs, constants, scratch, aliases and graph outputs keep their own
  /// storage).
  std::vector<int64_t> offset;
  /// The arena's size: the most temporary bytes live at once.
  int64_t arenaBytes = 0;
  /// What the arena's buffers would take without reuse.
  int64_t unsharedBytes = 0;
  /// Everything a run holds: inputs, constants, outputs, scratch, arena.
  int64_t peakBytes = 0;
};

/// Offsets are multiples of this (CUDA's widest accesses, cache lines).
constexpr int64_t kArenaAlignment = 256;

/// Lays out the temporaries that are not graph outputs themselves (one
/// that an output views stays live to the end), largest first, each at the
/// lowest offset free of every buffer live at the same time.
MemoryPlan planMemory(const Program &program);

} // namespace fusec

#endif
