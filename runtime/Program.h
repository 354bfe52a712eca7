//===- Program.h - What codegen hands the runtime --------------*- C++ -*-===//
//
// A compiled graph with no MLIR in it: the kernels' source, which buffers
// each kernel reads and writes, in launch order, and which buffers are the
// graph's inputs, constants and outputs. Serializable as JSON (the plan).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_PROGRAM_H
#define FUSEC_RUNTIME_PROGRAM_H

#include "runtime/DType.h"
#include "runtime/Shape.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusec {

enum class Target { Cpu, Cuda };
const char *targetName(Target target);

enum class BufferRole {
  Input,     ///< bound to a graph input at run time
  Constant,  ///< holds `data`
  Temporary, ///< written by a kernel
  Alias,     ///< shares the storage of `aliasOf` (a reshape)
  Scratch,   ///< a kernel's own working memory, zeroed once
};

struct BufferDesc {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  BufferRole role = BufferRole::Temporary;
  int aliasOf = -1;
  std::vector<uint8_t> data;

  int64_t byteSize() const { return numElements(shape) * dtypeBytes(dtype); }
};

/// How a GPU kernel is launched; codegen decides, the runtime only launches.
struct LaunchGeometry {
  int64_t gridX = 1;
  unsigned gridY = 1;
  unsigned blockX = 1, blockY = 1;
  unsigned sharedBytes = 0;
  /// Grid-stride kernels cover any grid: gridX is clamped to this many
  /// blocks per multiprocessor of the device (0: launch gridX as it is).
  unsigned maxBlocksPerMultiprocessor = 0;
};

struct KernelDesc {
  std::string name;
  /// Mnemonics of the fused ops in program order (constants left out).
  std::vector<std::string> ops;
  /// This kernel's function in `Program::source`.
  std::string source;
  std::vector<int> inputs, outputs;
  /// The fusion kind of the region: "pointwise", "row-reduction", ...
  std::string schedule;
  /// GPU targets only.
  LaunchGeometry launch;
  /// Zero-initialized device memory the kernel keeps between its blocks
  /// (partial results, counters): `scratch` is its buffer, passed after
  /// the outputs; -1 when the kernel needs none.
  int64_t scratchBytes = 0;
  int scratch = -1;
};

struct Program {
  std::string name;
  Target target = Target::Cpu;
  /// What every kernel's source needs before it (includes, helpers).
  std::string prelude;
  /// One translation unit defining every kernel: the prelude, then each
  /// kernel's source. This is what the host compiler compiles.
  std::string source;
  std::vector<BufferDesc> buffers;
  std::vector<KernelDesc> kernels; ///< in launch order
  std::vector<int> inputs, outputs;
  /// The graph's name for each output (one buffer may back several).
  std::vector<std::string> outputNames;

  /// The plan as JSON: kernels with their ops, inputs and outputs (by buffer
  /// name), buffers, graph inputs and outputs. Constant data is left out.
  std::string planJson() const;
};

} // namespace fusec

#endif
