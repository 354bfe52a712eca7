//===- RegionKind.h - Which schedule a fusion region gets ------*- C++ -*-===//
#ifndef FUSE_CODEGEN_REGIONKIND_H
#define FUSE_CODEGEN_REGIONKIND_H

#include "ir/FuseDialect.h"

#include <string>
#include <vector>

namespace fuse {

/// The kind of a region, read from its ops' fusion kinds: a region with a
/// reduction is scheduled around it, a layout op or a contraction (the
/// int8 GEMV, attention) runs alone, anything else is pointwise.
enum class RegionKind { Pointwise, Reduction, Layout, Contraction, Attention };

RegionKind regionKindOf(FusionOp fusion);

/// Some value of the region (argument, intermediate, result) is f16, bf16
/// or narrow: the C++ prelude then needs the conversion helpers.
bool regionUsesHalfTypes(FusionOp fusion);

/// Mnemonics of the region's ops in order, constants left out.
std::vector<std::string> regionOpNames(FusionOp fusion);

/// "fused_sin_exp_reduce_sum_3": a prefix, the first ops, the index.
std::string kernelName(const std::string &prefix,
                       const std::vector<std::string> &ops, unsigned index);

} // namespace fuse

#endif
