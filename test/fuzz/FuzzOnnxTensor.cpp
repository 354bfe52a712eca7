//===- FuzzOnnxTensor.cpp - Serialized TensorProtos (input_N.pb) ---------===//
#include "FuzzUtil.h"

#include "frontends/Onnx.h"
#include "runtime/core/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fusec::fuzz::writeInput(data, size, "tensor.pb");
  for (std::optional<fusec::DType> expected :
       {std::optional<fusec::DType>(), std::optional(fusec::DType::BF16)}) {
    try {
      fusec::Tensor tensor = fusec::readTensorProtoFile(path, expected);
      (void)tensor;
    } catch (const fusec::Error &) {
    }
  }
  return 0;
}
