//===- FuzzOnnx.cpp - ONNX models, protobuf to generated source ----------===//
//
// The summary the conformance runner reads first, then the whole lowering
// (initializers, Constant nodes and external data included: external data
// resolves inside the harness's private directory).
//
//===----------------------------------------------------------------------===//
#include "FuzzModel.h"

#include "frontends/Onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fusec::fuzz::writeInput(data, size, "summary.onnx");
  try {
    fusec::OnnxModelSummary summary = fusec::summarizeOnnxModel(path);
    (void)summary;
  } catch (const fusec::Error &) {
  }
  fusec::fuzz::lowerModel(data, size, "model.onnx");
  return 0;
}
