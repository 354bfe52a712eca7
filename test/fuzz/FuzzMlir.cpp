//===- FuzzMlir.cpp - .mlir models, parser to generated source -----------===//
#include "FuzzModel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::fuzz::lowerModel(data, size, "model.mlir");
  return 0;
}
