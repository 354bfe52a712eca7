//===- Executable.h - Running a Program ------------------------*- C++ -*-===//
//
// The interface of a compiled Program, and makeExecutable, which picks the
// target's: cpu/HostExecutable.h runs it on this CPU, cuda/CudaExecutable.h
// on the GPU.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_EXECUTABLE_H
#define FUSEC_RUNTIME_EXECUTABLE_H

#include "runtime/cache/KernelCache.h"
#include "runtime/core/Program.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/CudaApi.h"

#include <functional>
#include <memory>
#include <vector>

namespace fusec {

/// What a compiled-model package (runtime/Package.h) holds beside the
/// Program: the kernels as compiled code and the options the executable
/// runs with, so that it is built again with no compiler.
struct ExecutableImage {
  /// Per kernel: the compile unit whose code defines its function, and the
  /// function's name (kernels differing only in name share one).
  std::vector<size_t> unitOf;
  std::vector<std::string> functionOf;
  /// Per unit: a shared object (cpu) or a cubin for `arch` (cuda).
  std::vector<std::shared_ptr<const std::string>> code;
  /// CUDA, per unit: PTX for `ptxArch`, which the driver compiles for a
  /// GPU the cubin does not run on; "" where NVRTC could not emit it.
  std::vector<std::string> ptx;
  /// CUDA: the cubins' architecture ("sm_90a") and the PTX's ("sm_90").
  std::string arch, ptxArch;
  /// cpu: the /proc/cpuinfo flags of the CPU the kernels were compiled for
  /// (with -march=native, so they need every one).
  std::string cpuFlags;
  /// CUDA: tf32, CUDA graphs, kernel overlap and zero-copy, as compiled.
  bool tf32 = false, cudaGraph = true, kernelOverlap = true;
  int64_t zeroCopyMaxBytes = 0;
  /// Where the image came from, for messages ("model.fusec").
  std::string origin;
};

/// A Program with its kernels compiled and loaded and its library calls
/// prepared. A run performs `Program::steps` in order. Buffers are allocated
/// once and reused by every run, so one Executable must not run on several
/// threads at once.
class Executable {
public:
  /// Throws an internal fusec::Error when the steps do not name every
  /// kernel and matmul once, or a matmul does not fit its buffers.
  explicit Executable(Program program);
  virtual ~Executable() = default;

  /// Runs the program on host tensors. Throws fusec::Error naming the input
  /// whose dtype or shape does not match the graph, or the failing kernel.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// Same, writing into `outputs` (reused when their types already match:
  /// benchmarks avoid paying for fresh output pages on every run).
  virtual void run(const std::vector<Tensor> &inputs,
                   std::vector<Tensor> &outputs) = 0;

  const Program &program() const { return prog; }
  /// The kernels' compiled code and the run options, for a package. A CUDA
  /// executable compiled here adds each unit's PTX (compiled now, by NVRTC;
  /// compileCudaImage).
  virtual ExecutableImage image() const = 0;

  /// Runs the program on tensors already in device memory, writing the
  /// outputs into device memory the caller owns: no host copies. Returns
  /// when the outputs are written (enqueueOnDevice, then synchronize).
  void runOnDevice(const std::vector<DeviceTensor> &inputs,
                   const std::vector<DeviceTensor> &outputs);
  /// The same run, returning once it is queued on fusec's CUDA stream, in
  /// order after earlier runs: the inputs must stay as they are and the
  /// outputs unread until synchronize(). The run is ordered after the work
  /// queued so far on `callerStream` (a CUstream; null: the legacy default
  /// stream), and the work queued there next after the run (events
  /// between the two streams), so a caller on that stream needs no
  /// synchronize(). CUDA only: the host executable throws.
  virtual void enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                               const std::vector<DeviceTensor> &outputs,
                               void *callerStream = nullptr);
  /// Waits for every queued run; reports the errors of asynchronous work.
  virtual void synchronize() {}

  /// Like run(), timing each step on its own, for `fusec --profile`:
  /// `stepMicros[i]` is step i's time in microseconds (0 for views). On the
  /// GPU the steps are launched one by one (no CUDA graph) with an event
  /// recorded between consecutive steps.
  virtual void runTimed(const std::vector<Tensor> &inputs,
                        std::vector<Tensor> &outputs,
                        std::vector<double> &stepMicros) = 0;

protected:
  void checkInputs(const std::vector<Tensor> &inputs) const;
  /// Sizes `outputs` for the program, keeping tensors that already fit.
  void prepareOutputs(std::vector<Tensor> &outputs) const;
  /// The index in `prog.steps` of each matmul's step.
  std::vector<size_t> matmulSteps() const;

  Program prog;
};

/// Compiles each of `units` with `compileUnit(u)`, on up to `maxThreads`
/// threads that take the next unit as they finish one (named `threadName`
/// and a number; a trace slice per unit), showing progress as `what`; once
/// all have finished, rethrows the first unit's failure.
void compileUnitsInParallel(const CompileUnits &units,
                            const std::string &threadName,
                            const std::string &what, size_t maxThreads,
                            const std::function<void(size_t)> &compileUnit);

struct CudaOptions {
  /// NVRTC architecture; "" for the device's own (sm_90a on H100/H200).
  std::string arch;
  /// --use_fast_math: __sinf, __expf, ... and flush-to-zero.
  bool fastMath = false;
  /// f32 matmuls may round their inputs to TF32 (cuBLASLt's
  /// CUBLAS_COMPUTE_32F_FAST_TF32): faster, about 1e-3 relative error.
  bool tf32 = false;
  /// run() replays the whole run (copies in, every step, copies out) as
  /// one CUDA graph, captured on the first run: one launch instead of one
  /// per step and copy.
  bool cudaGraph = true;
  /// Kernels that wait for the kernel before them themselves (the
  /// tensor-core int8 GEMV, f16/bf16) start while it ends, on sm_90:
  /// programmatic stream serialization. Off, every kernel starts after the
  /// one before it has finished.
  bool kernelOverlap = true;
  /// In a program whose buffers (constants aside) are all at most this
  /// many bytes, graph inputs and outputs live in mapped, page-locked host
  /// memory that kernels read and write directly: a run of a small model
  /// copies nothing between host and device (each copy costs microseconds;
  /// reading a few KiB over PCIe costs less).
  int64_t zeroCopyMaxBytes = 16 * 1024;
};

/// The executable for the program's target.
std::shared_ptr<Executable> makeExecutable(Program program,
                                           std::shared_ptr<KernelCache> cache,
                                           const CudaOptions &cudaOptions);
/// The same from compiled code (a package's): nothing is compiled.
std::shared_ptr<Executable>
makeExecutable(Program program, std::shared_ptr<const ExecutableImage> image);

} // namespace fusec

#endif
