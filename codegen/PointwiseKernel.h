//===- PointwiseKernel.h - One fusion region, ready to print ---*- C++ -*-===//
//
// The target-independent schedule of a pointwise region: its iteration
// space, how each input is indexed (contiguous, one scalar, or broadcast
// through strides), and the per-element computation as an expression tree
// (ScalarExpr.h). The C++ and CUDA printers wrap it in their loops.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_POINTWISEKERNEL_H
#define FUSE_CODEGEN_POINTWISEKERNEL_H

#include "codegen/ScalarExprPrinter.h"
#include "ir/FuseDialect.h"
#include "ir/SymbolicDims.h"
#include "runtime/core/DType.h"
#include "runtime/core/Program.h"
#include "runtime/core/Shape.h"

#include "llvm/Support/raw_ostream.h"

#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fuse {

enum class InputAccess {
  Contiguous, ///< same elements as the iteration space
  Scalar,     ///< one element, read once
  Broadcast,  ///< read through `strides` (0 on broadcast dims)
};

struct KernelInput {
  fusec::DType dtype;
  fusec::Shape shape;
  InputAccess access;
  /// The shape this input is broadcast to (the iteration shape unless a
  /// view in the region changes it), in the program's symbols: the linear
  /// index is taken in it. Broadcast inputs are read through `strides`, one
  /// per dim of it (0 on broadcast dims).
  fusec::SymbolicShape symbolicAccessShape, symbolicStrides;
  /// What the access shape's innermost dim is a multiple of at every size
  /// (the dim itself when fixed; its symbols' declared multiples else).
  int64_t innermostDivisor = 1;
  std::string value; ///< the loaded element's variable

  /// The offset of this (broadcast) input's element at linear index
  /// `index` of its access shape, in `indexType` arithmetic.
  std::string offsetAt(const std::string &index,
                       const std::string &indexType) const;
};

struct KernelOutput {
  fusec::DType dtype;
  std::string value; ///< the variable stored
};

struct PointwiseKernel {
  std::string name;
  std::vector<std::string> ops;
  fusec::Shape iterationShape;
  /// `iterationShape` with the program's symbols.
  fusec::SymbolicShape symbolicIterationShape;
  std::vector<KernelInput> inputs;
  std::vector<KernelOutput> outputs;
  /// The per-element computation: one let per computed value, in order.
  ScalarLets lets;
  /// Owns the nodes of `lets`.
  std::shared_ptr<const ScalarExprBuilder> expressions;

  int64_t numElements() const { return fusec::numElements(iterationShape); }
  /// Symbolic programs: the elements as a size of the program's `dimCount`
  /// symbols; `iterationShape` is then at their maxima, and broadcast
  /// inputs' offsets read the sizes (`symbolicAccessShape`).
  std::optional<fusec::SymbolicSize> symbolicElements;
  size_t dimCount = 0;
  bool readsDimSizes() const { return symbolicElements.has_value(); }
  /// The count as C: a literal, or an expression of `fusec_dims`.
  std::string countExpression() const;
  /// An iota's element is the linear index `i`: the loops must define it
  /// (no row loop, no staged tiles; CUDA's vector lanes compute it).
  bool readsElementIndex = false;
  /// Some value of the region (input, intermediate, output) is f16/bf16.
  bool usesHalfTypes = false;
  /// (input, output) pairs whose memory may be one (an output updating a
  /// graph input in place, BufferDesc::updatesInput): their pointers are
  /// not `restrict`. Each element is read before it is written, by the
  /// same thread, so sharing changes no result.
  std::vector<std::pair<unsigned, unsigned>> inPlace;
  bool mayAlias(bool input, unsigned index) const {
    for (auto [in, out] : inPlace)
      if ((input ? in : out) == index)
        return true;
    return false;
  }

  bool hasBroadcastInput() const;
  /// Every broadcast input is read in the iteration shape (no view between
  /// it and the outputs): rows of the iteration shape share offsets.
  bool broadcastsInIterationShape() const;
};

/// Analyzes a region. Emits an error on the op that cannot be generated.
mlir::FailureOr<PointwiseKernel>
analyzePointwiseRegion(FusionOp fusion, unsigned index,
                       const SymbolicDims *symbolic = nullptr);

/// libm functions with vector variants in glibc's libmvec. Declaring them
/// `simd` lets `#pragma omp simd` loops call the 4/8/16-lane versions
/// instead of one scalar call per element (the runtime links -lmvec).
inline constexpr const char *kLibmvecFunctions[][2] = {
    {"sin", "1"},  {"cos", "1"},   {"tan", "1"},   {"asin", "1"},
    {"acos", "1"}, {"atan", "1"},  {"sinh", "1"},  {"cosh", "1"},
    {"tanh", "1"}, {"asinh", "1"}, {"acosh", "1"}, {"atanh", "1"},
    {"exp", "1"},  {"log", "1"},   {"log1p", "1"}, {"erf", "1"},
    {"pow", "2"}};

/// `// NAME: op -> op over SHAPE elements<suffix>`: what both printers put
/// above a kernel.
void printKernelComment(llvm::raw_ostream &os, const PointwiseKernel &kernel,
                        const std::string &suffix);
struct ScheduledPointwise;
struct PointwiseParams;

/// The kernel as C++ with OpenMP: `extern "C" void NAME(const void *const *,
/// void *const *)`, as `schedule` (schedule/PointwiseSchedule.h) says.
std::string printCppKernel(const PointwiseKernel &kernel,
                           const ScheduledPointwise &schedule);
/// What every C++ translation unit of kernels starts with.
std::string cppPrelude(bool withHalfTypes);
/// Every C++ kernel's function: `extern "C" void NAME(const void *const
/// *fusec_inputs, void *const *fusec_outputs)`, the runtime's one calling
/// convention (buffers in the order of the kernel's inputs and outputs).
std::string cppKernelSignature(const std::string &name,
                               bool readsDimSizes = false);
/// Symbolic programs: a CUDA kernel's parameters after its buffers, one
/// int64 per symbol (", const long long fusec_dim0, ..."), and the
/// statement that gathers them into the `fusec_dims` array the count
/// expressions read.
std::string cudaDimParameters(size_t dimCount);
std::string cudaDimArray(size_t dimCount);

/// Threads per block of grid-stride CUDA kernels (pointwise, layout).
constexpr unsigned kPointwiseThreadsPerBlock = 256;
/// Threads of a CUDA warp, which issue each instruction together.
constexpr int64_t kWarpSize = 32;
/// Grid-stride kernels get at most this many blocks per SM (8 waves of
/// resident 256-thread blocks). Measured on an H200 over the benchmark
/// cases: 32 left bf16 cases at 89% of the copy ceiling, an uncapped grid
/// put them at 85% (f32 at 101%); 64 keeps every case at 90% or more.
constexpr unsigned kGridStrideBlocksPerMultiprocessor = 64;
/// CUDA kernels covering more elements than this index in 64 bits: a
/// grid-stride index may run past the last element by up to one grid
/// (< 2^24 threads).
constexpr int64_t kMax32BitElements = INT32_MAX - (int64_t(1) << 24);
/// Below this many elements a C++ kernel runs on one thread: waking the
/// OpenMP team costs more than the work. On a 16-core host, 2^16 left the
/// small models' layout kernels and softmaxes (16k-44k elements) on one
/// core: llama_d256 took 1012-1247 us a run, 2^14 689-760, 2^12 700-727
/// (gpt2_d256 1231-1410, 752-826, 733-793; bert_d128 503-530, 466-476,
/// 345-353).
constexpr int64_t kCpuParallelThreshold = 1 << 12;
/// C++ kernels whose outputs take at least this many bytes write them with
/// streaming stores.
constexpr int64_t kCpuStreamingStoreMinBytes = int64_t(32) << 20;

/// How generated kernels store an element, and compute with it.
inline const char *storageType(fusec::DType dtype) {
  return fusec::dtypeInfo(dtype).storageCType;
}
inline const char *computeType(fusec::DType dtype) {
  return fusec::dtypeInfo(dtype).computeCType;
}
/// `width` stored elements moved as one aligned CUDA access.
std::string cudaVectorType(fusec::DType dtype, int64_t width);
/// The kernel as CUDA C: `extern "C" __global__ void NAME(in0.., out0..)`,
/// a grid-stride loop over vectors of the params' width, then the tail (if
/// the vectors leave one). `f32Functions` renames the math calls of
/// f32-computed expressions (fast-math intrinsics).
std::string printCudaKernel(const PointwiseKernel &kernel,
                            const PointwiseParams &params,
                            const MathFunctionMap *f32Functions = nullptr);
/// What every CUDA translation unit of kernels starts with (NVRTC has no
/// standard headers).
std::string cudaPrelude();
/// CUDA's fast intrinsics for the table's f32 math calls (--fast-math).
const MathFunctionMap &cudaFastMathFunctions();
/// The C++ target's own f32 math (the prelude's fusec_expf), for calls
/// whose libmvec variant is slow on some inputs; as exact as libm's to 1
/// ulp, so it is not a fast-math option.
const MathFunctionMap &cpuMathFunctions();

/// The linear offset into a broadcast input for the linear index `index`
/// of an iteration `shape` (row-major), given the input's strides per
/// iteration dim (0 where it is broadcast). Shared by the C++ (row offsets)
/// and CUDA (element offsets) printers.
std::string broadcastOffsetExpression(const std::string &index,
                                      const fusec::Shape &shape,
                                      const fusec::Shape &strides);
/// The same over sizes that may be symbolic: those print as expressions of
/// the kernel's `fusec_dims`, converted to `indexType`.
std::string broadcastOffsetExpression(const std::string &index,
                                      const fusec::SymbolicShape &shape,
                                      const fusec::SymbolicShape &strides,
                                      const std::string &indexType);
/// A size in a kernel's index arithmetic: a literal, or (symbolic) an
/// expression of `fusec_dims` converted to `indexType`, so that a 32-bit
/// index does not divide in 64 bits.
std::string sizeExpression(const fusec::SymbolicSize &size,
                           const std::string &indexType);

} // namespace fuse

#endif
