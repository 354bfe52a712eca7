//===- Executable.h - Running a Program ------------------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_EXECUTABLE_H
#define FUSEC_RUNTIME_EXECUTABLE_H

#include "runtime/CudaApi.h"
#include "runtime/KernelCache.h"
#include "runtime/Program.h"
#include "runtime/Tensor.h"

#include <memory>
#include <vector>

namespace fusec {

/// A Program with its kernels compiled and loaded. Buffers are allocated
/// once and reused by every run, so one Executable must not run on several
/// threads at once.
class Executable {
public:
  explicit Executable(Program program) : prog(std::move(program)) {}
  virtual ~Executable() = default;

  /// Runs the program on host tensors. Throws fusec::Error naming the input
  /// whose dtype or shape does not match the graph, or the failing kernel.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// Same, writing into `outputs` (reused when their types already match:
  /// benchmarks avoid paying for fresh output pages on every run).
  virtual void run(const std::vector<Tensor> &inputs,
                   std::vector<Tensor> &outputs) = 0;

  const Program &program() const { return prog; }

protected:
  void checkInputs(const std::vector<Tensor> &inputs) const;
  /// Sizes `outputs` for the program, keeping tensors that already fit.
  void prepareOutputs(std::vector<Tensor> &outputs) const;

  Program prog;
};

/// Kernels compiled by the host compiler, run on this CPU.
class HostExecutable : public Executable {
public:
  HostExecutable(Program program, std::shared_ptr<KernelCache> cache);
  using Executable::run;
  void run(const std::vector<Tensor> &inputs,
           std::vector<Tensor> &outputs) override;

private:
  std::shared_ptr<KernelLibrary> library;
  std::vector<KernelLibrary::KernelFn> kernelFns;
  /// Storage of temporaries that are not graph outputs.
  std::vector<std::vector<uint8_t>> temporaryStorage;
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
};

/// Kernels compiled by NVRTC, run on the GPU. Every buffer lives in device
/// memory from a caching allocator, allocated at construction; a run copies
/// inputs in, launches every kernel on one stream and copies outputs back.
class CudaExecutable : public Executable {
public:
  CudaExecutable(Program program, std::shared_ptr<KernelCache> cache,
                 const CudaOptions &options);
  ~CudaExecutable() override;
  using Executable::run;
  void run(const std::vector<Tensor> &inputs,
           std::vector<Tensor> &outputs) override;

  /// The steps of a run, for benchmarks that time the kernels alone.
  void upload(const std::vector<Tensor> &inputs);
  void launch();
  void download(std::vector<Tensor> &outputs);
  void synchronize();

private:
  struct Launch {
    cuda::CUfunction function;
    LaunchGeometry geometry; ///< the grid clamped for this device
    std::vector<cuda::CUdeviceptr> arguments;
    std::vector<void *> parameters; ///< pointers to `arguments`
  };
  std::vector<cuda::CUdeviceptr> deviceAddress; ///< per buffer
  std::vector<Launch> launches;
};

/// The executable for the program's target.
std::shared_ptr<Executable> makeExecutable(Program program,
                                           std::shared_ptr<KernelCache> cache,
                                           const CudaOptions &cudaOptions);

} // namespace fusec

#endif
