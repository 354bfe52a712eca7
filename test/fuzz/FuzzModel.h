//===- FuzzModel.h - One harness body for every model format ---*- C++ -*-===//
//
// A model file goes through what `fusec FILE --emit=source` does: loading,
// import, verification, the default pipeline (decomposition, canonicalize,
// CSE, fusion) and code generation for both targets, with the dims named
// "batch" and "seq" symbolic. Nothing is compiled or run.
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
  // Dims named "batch" or "seq" (ONNX dim_params, JSON named dims) stay
  // symbolic, so that mutated models reach the symbolic-dims paths too.
  options.dimRanges["batch"] = {"batch", 1, 8};
  options.dimRanges["seq"] = {"seq", 1, 64};
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
