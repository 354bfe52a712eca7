//===- HostExecutable.h - Running a Program on the CPU ---------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CPU_HOSTEXECUTABLE_H
#define FUSEC_RUNTIME_CPU_HOSTEXECUTABLE_H

#include "runtime/Executable.h"
#include "runtime/core/MemoryPlan.h"
#include "runtime/cpu/OpenBlas.h"

#include <memory>
#include <vector>

namespace fusec {

/// Kernels compiled by the host compiler, run on this CPU.
class HostExecutable : public Executable {
public:
  HostExecutable(Program program, std::shared_ptr<KernelCache> cache);
  /// From a package's shared objects: nothing is compiled.
  HostExecutable(Program program, std::shared_ptr<const ExecutableImage> image);
  using Executable::run;
  void run(const std::vector<Tensor> &inputs,
           std::vector<Tensor> &outputs) override;
  void runTimed(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                std::vector<double> &stepMicros) override;
  ExecutableImage image() const override;

private:
  /// What both constructors do once the libraries are loaded: look up the
  /// kernels, prepare the library calls and the memory.
  void prepare();
  /// The parts of a run: where each buffer lives, one step, and the
  /// outputs not written in place.
  void bindBuffers(const std::vector<Tensor> &inputs,
                   std::vector<Tensor> &outputs);
  void runStep(const Step &step);
  void copyOutputs(std::vector<Tensor> &outputs);

  /// The kernels' libraries, one per compile unit: kernel k runs
  /// functionOf[k] of libraries[unitOf[k]].
  std::vector<std::shared_ptr<KernelLibrary>> libraries;
  std::vector<size_t> unitOf;
  std::vector<std::string> functionOf;
  /// The package's image this executable was loaded from, if it was.
  std::shared_ptr<const ExecutableImage> packaged;
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

} // namespace fusec

#endif
