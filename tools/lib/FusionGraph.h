//===- FusionGraph.h - `fusec --emit=dot` and `--emit=svg` -----*- C++ -*-===//
//
// The fusion graph of a model in Graphviz DOT, for inspection: a debugging
// tool beside the compiler, not part of it (it lowers the model once more
// and runs Graphviz).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_LIB_FUSIONGRAPH_H
#define FUSEC_TOOLS_LIB_FUSIONGRAPH_H

#include "compiler/Compiler.h"

#include <string>

namespace fusec {

/// `fusec --emit=dot`: the fusion graph of a model file in Graphviz DOT.
/// Ops are nodes; each region is a cluster labelled with its kernel's name
/// and coloured by its kind; library calls, views, graph inputs, outputs and
/// constants are nodes of their own; an edge between regions that a fusion
/// remark explains is labelled with the reason. `program` is the file's
/// lowerFile(path, options).program (its kernels name the clusters); call
/// after that lowering.
std::string fusionGraphDot(const std::string &path,
                           const CompileOptions &options,
                           const Program &program);

/// Renders DOT with Graphviz (`dot -T<format>`, the DOT on its stdin);
/// throws fusec::Error when `dot` is not on PATH or fails.
std::string renderDot(const std::string &dot, const std::string &format);

} // namespace fusec

#endif
