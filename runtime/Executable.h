//===- Executable.h - Running a Program ------------------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_EXECUTABLE_H
#define FUSEC_RUNTIME_EXECUTABLE_H

#include "runtime/cache/KernelCache.h"
#include "runtime/core/MemoryPlan.h"
#include "runtime/core/Program.h"
#include "runtime/core/Tensor.h"
#include "runtime/cpu/OpenBlas.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaApi.h"

#include <functional>
#include <memory>
#include <vector>

namespace fusec {

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

  /// Runs the program on tensors already in device memory, writing the
  /// outputs into device memory the caller owns: no host copies. Returns
  /// when the outputs are written (enqueueOnDevice, then synchronize).
  void runOnDevice(const std::vector<DeviceTensor> &inputs,
                   const std::vector<DeviceTensor> &outputs);
  /// The same run, returning once it is queued on fusec's CUDA stream, in
  /// order after earlier runs: the inputs must stay as they are and the
  /// outputs unread until synchronize(). CUDA only: the host executable
  /// throws.
  virtual void enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                               const std::vector<DeviceTensor> &outputs);
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

/// Kernels compiled by the host compiler, run on this CPU.
class HostExecutable : public Executable {
public:
  HostExecutable(Program program, std::shared_ptr<KernelCache> cache);
  using Executable::run;
  void run(const std::vector<Tensor> &inputs,
           std::vector<Tensor> &outputs) override;
  void runTimed(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                std::vector<double> &stepMicros) override;

private:
  /// The parts of a run: where each buffer lives, one step, and the
  /// outputs not written in place.
  void bindBuffers(const std::vector<Tensor> &inputs,
                   std::vector<Tensor> &outputs);
  void runStep(const Step &step);
  void copyOutputs(std::vector<Tensor> &outputs);

  /// The kernels' libraries: kernel k is in libraries[k % size].
  std::vector<std::shared_ptr<KernelLibrary>> libraries;
  std::vector<KernelLibrary::KernelFn> kernelFns;
  std::vector<openblas::HostMatmul> matmulCalls; ///< per Program::matmuls
  openblas::Scratch matmulScratch;
  /// Temporaries that are not graph outputs, placed by `memoryPlan`.
  MemoryPlan memoryPlan;
  std::vector<uint8_t> arena;
  /// The first kArenaAlignment-aligned byte of `arena`.
  uint8_t *arenaBase = nullptr;
  /// Which graph output (index) each buffer is written into directly, or -1.
  std::vector<int> outputSlot;
  /// Scratch of run(): each buffer's address, each launch's arguments.
  std::vector<void *> address;
  std::vector<const void *> kernelInputs;
  std::vector<void *> kernelOutputs;
};

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

/// Kernels compiled by NVRTC and matmuls by cuBLASLt, run on the GPU. Every
/// buffer lives in device memory from a caching allocator, allocated at
/// construction, where every matmul is also prepared; a run copies inputs
/// in, enqueues every step on one stream and copies outputs back.
class CudaExecutable : public Executable {
public:
  CudaExecutable(Program program, std::shared_ptr<KernelCache> cache,
                 const CudaOptions &options);
  ~CudaExecutable() override;
  using Executable::run;
  void run(const std::vector<Tensor> &inputs,
           std::vector<Tensor> &outputs) override;
  void runTimed(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                std::vector<double> &stepMicros) override;
  /// The kernels and library calls read the inputs where they are and
  /// write each output where the caller wants it (an output the steps do
  /// not write itself, a view of an input or a constant, is copied there).
  /// With CUDA graphs on, each binding of addresses (the last
  /// kMaxDeviceGraphs) is captured once and replayed.
  void enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                       const std::vector<DeviceTensor> &outputs) override;

  /// The steps of a run, for benchmarks that time the kernels alone.
  void upload(const std::vector<Tensor> &inputs);
  /// Enqueues every step (kernels and matmuls); allocates nothing.
  void launch();
  void download(std::vector<Tensor> &outputs);
  void synchronize() override;

private:
  struct Launch {
    cuda::CUfunction function;
    /// The grid clamped for this device; the stream is set per launch.
    cuda::LaunchConfig config;
    /// Programmatic stream serialization, where `config` names it.
    cuda::LaunchAttribute overlap;
    std::vector<cuda::CUdeviceptr> arguments;
    std::vector<void *> parameters; ///< pointers to `arguments`
  };
  /// Copies in and out through page-locked staging buffers, which the
  /// GPU reads and writes directly (and a graph can hold).
  void enqueueCopiesIn();
  void enqueueCopiesOut();
  /// Enqueues one step (a kernel or a matmul; a view does nothing) on
  /// `stream` (fusec's, with its StreamLock held).
  void launchStep(const Step &step, cuda::CUstream stream);
  /// Points every kernel argument and library operand at `address` (one
  /// per buffer): deviceAddress, or a device run's binding.
  void bindAddresses(const std::vector<cuda::CUdeviceptr> &address);

  /// A CUDA graph captured from the stream, and its instance.
  struct CapturedGraph {
    cuda::CUgraph graph = nullptr;
    cuda::CUgraphExec exec = nullptr;
  };
  /// enqueueOnDevice's steps, its tensors checked and the stream ordered.
  void enqueueBound(const std::vector<DeviceTensor> &inputs,
                    const std::vector<DeviceTensor> &outputs);
  /// Captures what `enqueue` puts on the stream.
  CapturedGraph capture(const std::function<void()> &enqueue);
  /// Enqueues a captured graph on the stream.
  void replay(const CapturedGraph &captured);
  static void destroy(CapturedGraph &captured);

  bool useGraph = true;
  /// The run from host tensors: copies in, every step, copies out.
  CapturedGraph hostRunGraph;
  /// Device runs, by the addresses of their inputs and then outputs; the
  /// most recently used last.
  static constexpr size_t kMaxDeviceGraphs = 8;
  std::vector<std::pair<std::vector<cuda::CUdeviceptr>, CapturedGraph>>
      deviceRunGraphs;
  /// Page-locked host copies of each graph input and output.
  std::vector<void *> pinnedInputs, pinnedOutputs;
  /// Per buffer: its mapped host memory, when it is zero-copy.
  std::vector<void *> mappedHost;
  std::vector<cuda::CUdeviceptr> deviceAddress; ///< per buffer
  MemoryPlan memoryPlan;
  cuda::CUdeviceptr arena = 0;  ///< the temporaries' shared storage
  std::vector<Launch> launches; ///< per Program::kernels
  /// Per Program::matmuls, sharing one workspace (they run one at a time).
  std::vector<std::unique_ptr<cuda::CublasLtMatmul>> matmulCalls;
  cuda::CUdeviceptr matmulWorkspace = 0;
  size_t matmulWorkspaceBytes = 0;
  /// runTimed()'s events, one before the first step and one after each,
  /// created on first use.
  std::vector<cuda::CUevent> stepEvents;
};

/// The executable for the program's target.
std::shared_ptr<Executable> makeExecutable(Program program,
                                           std::shared_ptr<KernelCache> cache,
                                           const CudaOptions &cudaOptions);

} // namespace fusec

#endif
