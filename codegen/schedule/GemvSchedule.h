//===- GemvSchedule.h - The int8-weight GEMV: params -----------*- C++ -*-===//
//
// The decisions of the quantized GEMV kernel (cpu/GemvCppPrinter.cpp and
// cuda/GemvCudaPrinter.cpp print it) as plain data: on CUDA the tensor-core
// kernel (f16/bf16) with its pipeline (blocks per SM, steps in flight, the
// weight ring, the lhs staged in shared memory) or the SIMT kernel with its
// split of k among warps; on the CPU the OpenMP split.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCHEDULE_GEMVSCHEDULE_H
#define FUSE_CODEGEN_SCHEDULE_GEMVSCHEDULE_H

#include "runtime/core/DType.h"
#include "runtime/core/Program.h"

#include <cstdint>
#include <string>

namespace fuse {

/// Warps per CUDA block.
constexpr int64_t kWarpsPerBlock = 8;
/// Weights per lane and step: one 16-byte load.
constexpr int64_t kWeightsPerLoad = 16;
/// Channels per warp (and block) of the tensor-core kernel: the M of
/// mma.m16n8k16; its N, 8, holds up to 8 lhs rows.
constexpr int64_t kTensorCoreChannels = 16;
/// Warps per block of the tensor-core kernel (they split k).
constexpr int64_t kTensorCoreWarps = 4;
/// k per load step of the tensor-core kernel: 16 bytes from each of 4
/// lanes per channel.
constexpr int64_t kTensorCoreStep = 64;

struct GemvShape {
  int64_t rows, n, k;
  fusec::DType dtype; ///< of lhs, scale and result
};

/// Every decision of the GEMV kernel: printable, hashable, comparable.
/// Fields the chosen kernel does not use keep their defaults.
struct GemvParams {
  fusec::Target target = fusec::Target::Cpu;
  int64_t rows = 0, n = 0, k = 0;

  /// C++: channels split among OpenMP threads.
  bool parallel = false;

  /// CUDA: the tensor-core kernel (f16/bf16, k a multiple of 64, at most 8
  /// rows), else the SIMT kernel.
  bool tensorCores = false;
  /// CUDA: weights each warp covers.
  int64_t chunk = 0;

  /// SIMT: 16-byte loads (k a multiple of 16); each channel's k split
  /// among `warpsPerChannel` warps, `channelsPerBlock` channels per block.
  bool vectorized = false;
  int64_t warpsPerChannel = 1, channelsPerBlock = 0;

  /// Tensor cores: blocks per SM the launch bounds ask for, steps of loads
  /// a warp keeps in flight in registers, steps per warp and whether their
  /// loop is unrolled whole, the lhs staged in shared memory (bf16), the
  /// stages of the shared-memory weight ring (0: the register ring),
  /// whether the next kernel may launch at the start (else after the main
  /// loop), and whether the weights are constants (read before the wait
  /// for the kernel before).
  int64_t blocksPerMultiprocessor = 0, ahead = 0, steps = 0;
  bool unrolled = false, stagedLhs = false;
  int64_t sharedStages = 0;
  bool earlyDependents = false, constantWeights = false;

  /// CUDA: the launch.
  unsigned blockX = 1;
  int64_t gridX = 1;
  bool waitsForPredecessor = false;

  /// One line of `key=value` fields, those of the chosen kernel only.
  std::string toString() const;
  size_t hash() const;
  bool operator==(const GemvParams &other) const;
  bool operator!=(const GemvParams &other) const { return !(*this == other); }
};

/// `constantWeights`: the weight and scale are constants' buffers.
GemvParams scheduleGemv(const GemvShape &shape, fusec::Target target,
                        bool constantWeights);

/// The CUDA launch of a scheduled kernel.
fusec::LaunchGeometry launchOf(const GemvParams &params);

} // namespace fuse

#endif
