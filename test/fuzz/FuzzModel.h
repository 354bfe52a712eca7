//===- FuzzModel.h - One harness body for every model format ---*- C++ -*-===//
//
// A model file goes through what `fusec FILE --emit=source` does: loading,
// import, verification, the default pipeline (decomposition, canonicalize,
// CSE, fusion) and code generation for both targets. Nothing is compiled
// or run.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_FUZZ_FUZZMODEL_H
#define FUSEC_TEST_FUZZ_FUZZMODEL_H

#include "FuzzUtil.h"

#include "compiler/Driver.h"

namespace fusec::fuzz {

inline void lowerModel(const uint8_t *data, size_t size,
                       const std::string &fileName) {
  std::string path = writeInput(data, size, fileName);
  CompileOptions options;
  options.cacheDir = workDirectory() + "/cache"; // never written: no compile
  for (Target target : {Target::Cpu, Target::Cuda}) {
    options.target = target;
    try {
      Lowering lowering = lowerFile(path, options);
      (void)lowering;
    } catch (const Error &) {
      return; // a diagnosed bad model: the same for both targets
    }
  }
}

} // namespace fusec::fuzz

#endif
