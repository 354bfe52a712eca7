//===- KernelRepro.h - Standalone programs of single kernels ---*- C++ -*-===//
//
// `fusec --dump-kernels=DIR` writes, next to each kernel's source, a program
// that runs that kernel alone: it fills the kernel's inputs from a fixed
// seed, runs the kernel as the runtime does (same entry point, argument
// order and, on the GPU, launch geometry), checks every output against a
// scalar reference evaluated op by op in double precision from the
// region's fuse ops, and times it. See docs/kernel-repros.md.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_LIB_KERNELREPRO_H
#define FUSEC_TOOLS_LIB_KERNELREPRO_H

#include "runtime/core/Program.h"

#include <memory>
#include <string>

namespace fuse {

class KernelReproWriter {
public:
  /// `fusedIR` is the module `program` was generated from, as text (the
  /// fused IR of `fusec --emit=fused`): its i-th fuse.fusion is kernel i.
  /// With IR that does not parse or match, repros are still written; they
  /// build, run and time their kernel and say that they have no reference.
  /// `fastMath`: CUDA kernels were generated for --fast-math (NVRTC then
  /// compiles them with --use_fast_math, as the runtime does).
  KernelReproWriter(const fusec::Program &program, const std::string &fusedIR,
                    bool fastMath = false);
  ~KernelReproWriter();
  KernelReproWriter(const KernelReproWriter &) = delete;
  KernelReproWriter &operator=(const KernelReproWriter &) = delete;

  /// The file `kernelSource(index)` is written to: "<kernel>.cpp" or
  /// "<kernel>.cu".
  std::string sourceFileName(size_t index) const;
  /// The kernel as the runtime compiles it: the prelude, then the kernel.
  std::string kernelSource(size_t index) const;
  /// The file the repro is written to: "<kernel>.repro.cpp" (CPU) or
  /// "<kernel>.repro.cu" (CUDA).
  std::string reproFileName(size_t index) const;
  /// The repro program of kernel `index` (a kernel of the program, in
  /// launch order). A CPU repro includes `sourceFileName(index)`; a CUDA
  /// repro holds the kernel's source and compiles it with NVRTC.
  std::string repro(size_t index) const;
  /// DIR/README.md: how to build and run each repro, and the library calls
  /// that have none.
  std::string readme() const;
  /// Why the repros have no references (the IR did not parse or does not
  /// match the program); empty when they have.
  const std::string &referenceProblem() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace fuse

#endif
