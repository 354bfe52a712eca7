//===- Driver.h - Stage by stage, for tools and benchmarks -----*- C++ -*-===//
//
// What `fusec` and `fusec-bench` need beyond the library API: lowering that
// stops after a chosen stage and keeps its text, loading a Program, and the
// executable behind a model. Users of the library include Compiler.h only.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_COMPILER_DRIVER_H
#define FUSEC_COMPILER_DRIVER_H

#include "compiler/Compiler.h"
#include "runtime/Executable.h"
// executableOf's GPU executable, whose upload/launch/download steps
// benchmarks time apart.
#include "runtime/cuda/CudaExecutable.h"

namespace fusec {

/// The stages of lowering, in order.
enum class Stage {
  Imported, ///< the model in the fuse dialect
  Fused,    ///< after decomposition, canonicalization and fusion
  Program,  ///< kernels generated: plan and sources
};

/// The text of each stage reached, for `fusec --emit`.
struct Lowering {
  std::string importedIR; ///< kept when captureIR
  std::string fusedIR;    ///< kept when captureIR and the stage was reached
  Program program;        ///< when the Program stage was reached
  /// `fusec --emit=schedule`: a line per kernel, "NAME: KIND PARAMS", kept
  /// when captureIR and the Program stage was reached.
  std::string schedules;
  /// Wall time of each pass run, in order: (pass argument, milliseconds).
  std::vector<std::pair<std::string, double>> passMillis;
};

/// Lowers a model through every stage up to `stopAfter`, so a failing later
/// stage does not hide an earlier one's output. `captureIR` keeps the IR
/// text of the stages reached.
Lowering lowerGraph(const Graph &graph, const CompileOptions &options,
                    bool captureIR = false, Stage stopAfter = Stage::Program);
/// Same for a model file: .json or .mlir.
Lowering lowerFile(const std::string &path, const CompileOptions &options,
                   bool captureIR = false, Stage stopAfter = Stage::Program);

/// Same for a model held in memory (compileBuffer).
Lowering lowerBuffer(const std::string &contents, ModelFormat format,
                     const std::string &name, const CompileOptions &options,
                     bool captureIR = false, Stage stopAfter = Stage::Program);

/// Compiles a Program's kernels (through the kernel cache) and loads them.
CompiledModel load(Program program, const CompileOptions &options);

/// Compiles a Program's kernels and writes it as a package (`fusec
/// --emit=package`); a CUDA program's only through NVRTC, with no GPU.
void compileToPackage(Program program, const CompileOptions &options,
                      const std::string &path);

/// Compiles `options.specializations` with `lower` (the model's lowering at
/// other options), each with its dim fixed, and has `model` run each at its
/// size. Throws for a name that is not one of the model's symbols and a
/// size outside its range.
void addSpecializations(
    CompiledModel &model, const CompileOptions &options,
    const std::function<Program(const CompileOptions &)> &lower);

/// The executable behind a model (a CudaExecutable on the GPU).
Executable &executableOf(CompiledModel &model);
/// The same, shared (a specialization's executable joins its model's).
std::shared_ptr<Executable> executableShared(const CompiledModel &model);

} // namespace fusec

#endif
