//===- FuzzJson.cpp - JSON models, loader to generated source ------------===//
#include "FuzzModel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::fuzz::lowerModel(data, size, "model.json");
  return 0;
}
