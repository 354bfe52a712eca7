//===- PipelineOptions.h - Compile options as pass options -----*- C++ -*-===//
//
// For the compiler and the tools that run the pass pipeline themselves
// (the fusion graph): one mapping from CompileOptions to the pipeline's.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_COMPILER_PIPELINEOPTIONS_H
#define FUSEC_COMPILER_PIPELINEOPTIONS_H

#include "compiler/Compiler.h"
#include "passes/Passes.h"

namespace fusec {

/// The pass pipeline's options for a compile with `options`.
fuse::PipelineOptions pipelineOptionsFor(const CompileOptions &options);

} // namespace fusec

#endif
