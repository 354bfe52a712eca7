//===- Executable.h - Running a Program ------------------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_EXECUTABLE_H
#define FUSEC_RUNTIME_EXECUTABLE_H

#include "runtime/KernelCache.h"
#include "runtime/Program.h"
#include "runtime/Tensor.h"

#include <memory>
#include <vector>

namespace fusec {

/// A Program with its kernels compiled and loaded. Temporary buffers are
/// allocated once and reused by every run, so one Executable must not run
/// on several threads at once.
class Executable {
public:
  Executable(Program program, std::shared_ptr<KernelCache> cache);

  /// Runs the program. Throws fusec::Error naming the input whose dtype or
  /// shape does not match the graph.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// Same, writing into `outputs` (reused when their types already match:
  /// benchmarks avoid paying for fresh output pages on every run).
  void run(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs);

  const Program &program() const { return prog; }

private:
  void checkInputs(const std::vector<Tensor> &inputs) const;

  Program prog;
  std::shared_ptr<KernelLibrary> library;
  std::vector<KernelLibrary::KernelFn> kernelFns;
  /// Storage of temporaries that are not graph outputs.
  std::vector<std::vector<uint8_t>> temporaryStorage;
  /// Which graph output (index) each buffer is written into directly, or -1.
  std::vector<int> outputSlot;
};

} // namespace fusec

#endif
