//===- InferenceCopy.h - Newer opsets through ONNX 1.12's inference -===//
//
// fusec reads ONNX models up to the newest opset of the ONNX release it
// tracks, but its shape inference is Debian's libonnx (ONNX 1.12), which
// knows opsets up to 17: its checker refuses an op it has no schema for,
// and it would infer a newer version of an op by its older schema (a
// ReduceMean-18's axes input ignored). The model's inference copy is
// therefore rewritten to opset 17 first: each node of a version ONNX 1.12
// does not know becomes an opset-17 node with the same output shapes and
// types, and a node that has none is left out (the values computed from it
// are not inferred; the converters that need their shapes say so).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTENDS_ONNX_INFERENCECOPY_H
#define FUSEC_FRONTENDS_ONNX_INFERENCECOPY_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fusec {

/// The newest default-domain opset ONNX 1.12's schemas define.
constexpr int64_t kOnnx112Opset = 17;

/// Rewrites `copy` (a model of default-domain opset `opset`) into one that
/// ONNX 1.12's checker and shape inference read with the same output shapes
/// and types; nothing changes for opset 17 and older. Returns the outputs
/// of the nodes left out: where the converter learns their shapes (from
/// converting those nodes), inference can run again with them declared as
/// inputs of the copy, so the values computed from them are inferred too.
std::vector<std::string> rewriteForOnnx112Inference(onnx::ModelProto &copy,
                                                    int64_t opset);

} // namespace fusec

#endif
