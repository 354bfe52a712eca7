//===- Program.h - What codegen hands the runtime --------------*- C++ -*-===//
//
// A compiled graph with no MLIR in it: the kernels' source, which buffers
// each kernel reads and writes, in launch order, and which buffers are the
// graph's inputs, constants and outputs. Serializable as JSON (the plan).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_PROGRAM_H
#define FUSEC_RUNTIME_CORE_PROGRAM_H

#include "runtime/core/DType.h"
#include "runtime/core/Shape.h"
#include "runtime/core/SymbolicShape.h"

#include <cstddef>
#include <cstdint>
#include <optional>
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
  /// A graph output that may be given the memory of graph input
  /// `updatesInput` (a buffer id): the step writing it reads that input only
  /// at the element it writes and nothing else reads the input, so the
  /// output can update the input in place (a KV cache, ONNX TensorScatter).
  /// -1: an output given memory overlapping an input is refused.
  int updatesInput = -1;
  std::vector<uint8_t> data;
  /// In a symbolic program (Program::symbols), the dims of a buffer whose
  /// size varies; `shape` then holds its sizes at the symbols' maxima.
  /// Empty: `shape` is exact.
  SymbolicShape symbolicShape;

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
  /// The kernel orders itself after the kernel before it in the stream: it
  /// runs `griddepcontrol.wait` before it reads anything an earlier step
  /// wrote and before it writes anything. On sm_90 it is then launched
  /// with programmatic stream serialization, so its blocks start (and may
  /// load constants) while the previous kernel's last blocks still run.
  bool waitsForPredecessor = false;
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
  /// Its schedule's decisions as `key=value` text (tiles, splits, launch),
  /// for --emit=plan and --emit=schedule.
  std::string scheduleParams;
  /// GPU targets only.
  LaunchGeometry launch;
  /// Zero-initialized device memory the kernel keeps between its blocks
  /// (partial results, counters): `scratch` is its buffer, passed after
  /// the outputs; -1 when the kernel needs none.
  int64_t scratchBytes = 0;
  int scratch = -1;
  /// Floating-point operations of one launch where the kernel knows them
  /// (attention's products); 0: profiles estimate them from the ops.
  double flops = 0;
  /// Symbolic programs: the kernel takes the symbols' values
  /// (Program::dimSizes) after its buffers, as int64 arguments (CUDA) or an
  /// array (C++).
  bool readsDimSizes = false;
  /// GPU, symbolic programs: gridX is ceil(items / itemsPerBlock) at the
  /// run's sizes (then clamped as `launch` says).
  struct DynamicGrid {
    SymbolicSize items;
    int64_t itemsPerBlock = 1;
  };
  std::optional<DynamicGrid> dynamicGrid;
  /// The same for gridY.
  std::optional<DynamicGrid> dynamicGridY;
};

/// The activation a library call applies to its result: the cuBLASLt
/// epilogues fusec uses (cuBLASLt's GELU is the tanh approximation).
enum class Epilogue { None, Relu, GeluTanh };
const char *epilogueName(Epilogue epilogue);

/// out = epilogue(alpha * op(A) @ op(B) + bias), for every batch: row-major
/// operands, op(A) is [m, k] and op(B) is [k, n]. A is stored [m, k], or
/// [k, m] when `transposeA`; B is stored [k, n], or [n, k] when
/// `transposeB`. The output is [m, n] per batch, batches m * n apart.
struct MatmulCall {
  int a = -1, b = -1, output = -1; ///< buffers
  /// A vector of n elements added to every row; -1 for none.
  int bias = -1;
  /// Of A and B: f32, f64, f16 or bf16; also of the bias and the output
  /// unless `outputDType` says otherwise.
  DType dtype = DType::F32;
  /// The output's and the bias's dtype when it is not `dtype`: f32 for
  /// f16/bf16 operands (accumulated in f32, never rounded to 16 bits).
  std::optional<DType> outputDType;
  DType resultDType() const { return outputDType.value_or(dtype); }
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool transposeA = false, transposeB = false;
  /// Elements between consecutive batches of A and B; 0 repeats the same
  /// matrix for every batch (a broadcast batch).
  int64_t batchStrideA = 0, batchStrideB = 0;
  double alpha = 1.0;
  Epilogue epilogue = Epilogue::None;
  /// Symbolic programs: m, n, k and the batch count at the run's sizes
  /// (the fields above hold their maxima). Operands are stored compactly,
  /// so a batch stride that is not 0 is its matrix at the run's sizes.
  std::optional<SymbolicSize> symbolicM, symbolicN, symbolicK, symbolicBatch;

  /// One readable line: "matmul bf16 [8192x4096] = A[8192x4096] @
  /// B^T[4096x4096] (batch 1), alpha 1, bias, epilogue gelu_tanh".
  std::string describe(const std::vector<BufferDesc> &buffers) const;
};

/// "matmul step 3 (bf16 8192x4096x4096, batch 2)": a call in messages.
std::string matmulStepName(const MatmulCall &call, size_t step);
/// Elements of A (of B) the call reads, over every batch.
int64_t matmulExtentA(const MatmulCall &call);
int64_t matmulExtentB(const MatmulCall &call);
/// Throws an internal fusec::Error when `call` does not fit its buffers
/// (ids, dtypes, sizes, strides) or has a bias or an epilogue with k == 0.
void checkMatmulCall(const MatmulCall &call,
                     const std::vector<BufferDesc> &buffers, size_t step);

/// One step of a run, in order: a generated kernel, a library call, or a
/// view (an alias buffer: no work, listed so the plan shows every value).
enum class StepKind { Kernel, Matmul, View };
struct Step {
  StepKind kind = StepKind::Kernel;
  /// Into `Program::kernels`, `Program::matmuls`, or (views) `buffers`.
  int index = 0;
};

struct Program {
  std::string name;
  Target target = Target::Cpu;
  /// What every kernel's source needs before it (includes, helpers).
  std::string prelude;
  /// One translation unit defining every kernel: the prelude, then each
  /// kernel's source. The host compiler compiles the prelude with each
  /// group of kernels (one group per core), or this whole unit when the
  /// kernels carry no source of their own (a Program written by hand).
  std::string source;
  std::vector<BufferDesc> buffers;
  std::vector<KernelDesc> kernels; ///< in launch order
  std::vector<MatmulCall> matmuls;
  /// Every kernel, library call and view in run order.
  std::vector<Step> steps;
  std::vector<int> inputs, outputs;
  /// The graph's name for each output (one buffer may back several).
  std::vector<std::string> outputNames;
  /// The dims that vary between runs; none for a static program. A
  /// symbolic program runs instantiated (instantiateProgram) at the sizes
  /// its inputs bind (bindDimSizes).
  std::vector<DimSymbol> symbols;
  /// An instantiated program: each symbol's size, which kernels that read
  /// dim sizes receive.
  std::vector<int64_t> dimSizes;

  bool isSymbolic() const { return !symbols.empty(); }

  /// The plan as JSON: kernels with their ops, inputs and outputs (by buffer
  /// name), buffers, graph inputs and outputs, and every step in run order
  /// (kernels by name, matmuls described, views with their root). Constant
  /// data is left out.
  std::string planJson() const;
};

/// The translation units a program's kernels are compiled in. Kernels
/// whose code differs only in their name (a layer's norm, repeated per
/// layer) are compiled once: the first one's function runs them all. The
/// distinct functions are dealt into at most `maxUnits` units of about equal
/// source (longest first, each to the unit with the least so far), each the
/// prelude and its functions in program order. A program whose kernels carry no
/// source of their own (written by hand) is one unit, its `source`.
struct CompileUnits {
  std::vector<std::string> sources;
  /// The functions each unit defines, for progress and traces.
  std::vector<std::vector<std::string>> functions;
  /// Per kernel: the unit defining the function that runs it, and its name.
  std::vector<size_t> unitOf;
  std::vector<std::string> functionOf;
};
CompileUnits splitIntoCompileUnits(const Program &program, size_t maxUnits);

/// The sizes of a symbolic program's symbols that inputs of `inputShapes`
/// bind. Throws fusec::Error naming the input and the dim for a rank or
/// static dim that does not match, a symbol bound to two sizes, or a size
/// outside its symbol's range.
std::vector<int64_t> bindDimSizes(const Program &program,
                                  const std::vector<Shape> &inputShapes);
/// The static program a symbolic one is at `sizes`: buffers, matmuls and
/// grids at those sizes, `dimSizes` set, no symbols left.
Program instantiateProgram(const Program &program,
                           const std::vector<int64_t> &sizes);

} // namespace fusec

#endif
