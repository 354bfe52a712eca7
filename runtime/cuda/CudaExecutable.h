//===- CudaExecutable.h - Running a Program on the GPU ---------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CUDA_CUDAEXECUTABLE_H
#define FUSEC_RUNTIME_CUDA_CUDAEXECUTABLE_H

#include "runtime/Executable.h"
#include "runtime/core/MemoryPlan.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaApi.h"

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace fusec {

/// Kernels compiled by NVRTC and matmuls by cuBLASLt, run on the GPU. Every
/// buffer lives in device memory from a caching allocator, allocated at
/// construction, where every matmul is also prepared; a run copies inputs
/// in, enqueues every step on one stream and copies outputs back.
class CudaExecutable : public Executable {
public:
  CudaExecutable(Program program, std::shared_ptr<KernelCache> cache,
                 const CudaOptions &options);
  /// From a package's cubins, or its PTX where they do not run on this
  /// GPU; throws fusec::Error naming the package when neither does.
  CudaExecutable(Program program, std::shared_ptr<const ExecutableImage> image);
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
                       const std::vector<DeviceTensor> &outputs,
                       void *callerStream = nullptr) override;

  /// The steps of a run, for benchmarks that time the kernels alone.
  void upload(const std::vector<Tensor> &inputs);
  /// Enqueues every step (kernels and matmuls); allocates nothing.
  void launch();
  void download(std::vector<Tensor> &outputs);
  void synchronize() override;
  ExecutableImage image() const override;

private:
  /// The constructors' parts, with the StreamLock held (the weights'
  /// uploads queue on the shared stream): the buffers, the weights' upload
  /// and the library calls; then each kernel's launch, from the modules.
  void allocateAndUpload(const CudaOptions &options);
  void prepareLaunches(const std::vector<cuda::CUmodule> &modules,
                       const std::vector<size_t> &unitOf,
                       const std::vector<std::string> &functionOf,
                       bool kernelOverlap);
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
  /// Throws for an output overlapping an input in device memory, unless it
  /// is the in-place update the compiler marked, at the input's own
  /// address (BufferDesc::updatesInput).
  void checkOverlaps(const std::vector<DeviceTensor> &inputs,
                     const std::vector<DeviceTensor> &outputs) const;
  /// Captures what `enqueue` puts on the stream.
  CapturedGraph capture(const std::function<void()> &enqueue);
  /// Enqueues a captured graph on the stream.
  void replay(const CapturedGraph &captured);
  static void destroy(CapturedGraph &captured);

  /// Compiled here: the cache and the options (arch resolved). Loaded
  /// from a package: its image.
  std::shared_ptr<KernelCache> cache;
  CudaOptions compiledWith;
  std::shared_ptr<const ExecutableImage> packaged;

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

/// A program's CUDA kernels compiled for `options.arch` (through `cache`)
/// with each unit's PTX, as a package holds them: needs NVRTC, not a GPU.
ExecutableImage compileCudaImage(const Program &program, KernelCache &cache,
                                 const CudaOptions &options);

} // namespace fusec

#endif
