//===- PointwiseSchedule.h - Pointwise kernels: params ---------*- C++ -*-===//
//
// The decisions of a pointwise kernel (PointwiseKernel.h holds its
// analysis: iteration space, input access, the per-element expressions),
// per target, as plain data. The printers (cpu/PointwiseCppPrinter.cpp,
// cuda/PointwiseCudaPrinter.cpp) only print them.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCHEDULE_POINTWISESCHEDULE_H
#define FUSE_CODEGEN_SCHEDULE_POINTWISESCHEDULE_H

#include "codegen/PointwiseKernel.h"

#include <string>
#include <vector>

namespace fuse {

/// Every decision of a pointwise kernel: printable, hashable, comparable.
/// Fields the target does not use keep their defaults.
struct PointwiseParams {
  fusec::Target target = fusec::Target::Cpu;
  int64_t elements = 0;

  /// C++: the loop is split among OpenMP threads.
  bool parallel = false;
  /// C++: a loop over rows, each broadcast input's row offset computed once,
  /// around a contiguous simd loop over the columns.
  bool rowLoop = false;
  /// C++: vector math calls in stages over tiles of `stageTile` elements
  /// (0 stages: one loop).
  int64_t stages = 0, stageTile = 0;
  /// C++ stages: outputs written with streaming stores.
  bool streamingStores = false;

  /// CUDA: elements per thread and step (16-byte accesses).
  int vectorWidth = 1;
  /// CUDA: the thread taking the first element of the tail the vectors
  /// leave (0: no vectors, or no tail).
  int64_t tailFirstThread = 0;
  /// CUDA: indices are 64-bit.
  bool index64 = false;
  /// CUDA: the launch of the grid-stride loop.
  unsigned blockX = 1;
  int64_t gridX = 1;
  unsigned maxBlocksPerMultiprocessor = 0;

  /// One line of `key=value` fields, those of this target only.
  std::string toString() const;
  size_t hash() const;
  bool operator==(const PointwiseParams &other) const;
  bool operator!=(const PointwiseParams &other) const {
    return !(*this == other);
  }
};

/// A scheduled pointwise kernel: the params and, for C++ stages, the lets
/// of each stage.
struct ScheduledPointwise {
  PointwiseParams params;
  std::vector<std::vector<const ScalarLet *>> stages;
};

ScheduledPointwise schedulePointwise(const PointwiseKernel &kernel,
                                     fusec::Target target);

/// The CUDA launch of a scheduled kernel.
fusec::LaunchGeometry launchOf(const PointwiseParams &params);

} // namespace fuse

#endif
