//===- LayoutSchedule.h - Layout kernels: params ---------------*- C++ -*-===//
//
// The decisions of a layout kernel (one thread or loop iteration per output
// element) as plain data; cpu/LayoutCppPrinter.cpp and
// cuda/LayoutCudaPrinter.cpp print them.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCHEDULE_LAYOUTSCHEDULE_H
#define FUSE_CODEGEN_SCHEDULE_LAYOUTSCHEDULE_H

#include "runtime/core/Program.h"

#include "mlir/IR/Operation.h"

#include <string>

namespace fuse {

/// Every decision of a layout kernel: printable, hashable, comparable.
struct LayoutParams {
  fusec::Target target = fusec::Target::Cpu;
  /// Output elements.
  int64_t elements = 0;
  /// Indices are 64-bit (always on the CPU; on CUDA past 32-bit sizes).
  bool index64 = true;
  /// C++: the loop is split among OpenMP threads.
  bool parallel = false;
  /// CUDA: the launch of the grid-stride loop, a thread per element.
  unsigned blockX = 1;
  int64_t gridX = 1;
  unsigned maxBlocksPerMultiprocessor = 0;
  /// CUDA: elements a thread moves per pass of the loop, a grid apart.
  unsigned elementsPerThread = 1;
  /// CUDA argmax/argmin over long last-axis rows: a block of `blockX`
  /// threads scans each output's row together (a thread alone would read a
  /// 50k-entry vocabulary serially); false: a thread per output element.
  bool blockPerOutput = false;

  /// One line of `key=value` fields, those of this target only.
  std::string toString() const;
  size_t hash() const;
  bool operator==(const LayoutParams &other) const;
  bool operator!=(const LayoutParams &other) const { return !(*this == other); }
};

/// The params of the kernel of `layoutOp` (transpose, slice, concat,
/// gather, pad, argmax/argmin).
LayoutParams scheduleLayout(mlir::Operation *layoutOp, fusec::Target target);

/// The CUDA launch of a scheduled kernel (a grid of at least one block,
/// also for no elements).
fusec::LaunchGeometry launchOf(const LayoutParams &params);

} // namespace fuse

#endif
