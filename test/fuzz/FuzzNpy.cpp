//===- FuzzNpy.cpp - .npy inputs (fusec --inputs) ------------------------===//
#include "FuzzUtil.h"

#include "runtime/core/Error.h"
#include "runtime/core/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fusec::fuzz::writeInput(data, size, "input.npy");
  // As --inputs reads them: any dtype, then as the model's bf16 input.
  for (std::optional<fusec::DType> expected :
       {std::optional<fusec::DType>(), std::optional(fusec::DType::BF16)}) {
    try {
      fusec::Tensor tensor = fusec::readNpy(path, expected);
      (void)tensor;
    } catch (const fusec::Error &) {
    }
  }
  return 0;
}
