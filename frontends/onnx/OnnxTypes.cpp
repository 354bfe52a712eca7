//===- OnnxTypes.cpp - ONNX element types and TensorProto values ----------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <variant>

namespace fusec::onnx_import {

// ONNX element types newer than Debian's ONNX 1.12 (its enum stops at 16).
constexpr int32_t kOnnxFloat8E4M3FN = 17, kOnnxFloat8E4M3FNUZ = 18,
                  kOnnxFloat8E5M2 = 19, kOnnxFloat8E5M2FNUZ = 20,
                  kOnnxUInt4 = 21, kOnnxInt4 = 22, kOnnxFloat4E2M1 = 23,
                  kOnnxFloat8E8M0 = 24, kOnnxUInt2 = 25, kOnnxInt2 = 26;

std::optional<DType> dtypeOfOnnx(int32_t elemType) {
  switch (elemType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::BOOL:
    return DType::I1;
  case onnx::TensorProto::INT16:
    return DType::I16;
  case onnx::TensorProto::UINT8:
    return DType::U8;
  case onnx::TensorProto::UINT16:
    return DType::U16;
  case onnx::TensorProto::UINT32:
    return DType::U32;
  case onnx::TensorProto::UINT64:
    return DType::U64;
  // Newer than Debian's ONNX (1.12), whose enum stops at BFLOAT16 (16).
  case kOnnxFloat8E4M3FN:
    return DType::F8E4M3FN;
  case kOnnxFloat8E4M3FNUZ:
    return DType::F8E4M3FNUZ;
  case kOnnxFloat8E5M2:
    return DType::F8E5M2;
  case kOnnxFloat8E5M2FNUZ:
    return DType::F8E5M2FNUZ;
  case kOnnxUInt4:
    return DType::U4;
  case kOnnxInt4:
    return DType::I4;
  case kOnnxFloat4E2M1:
    return DType::F4E2M1;
  case kOnnxFloat8E8M0:
    return DType::F8E8M0;
  case kOnnxUInt2:
    return DType::U2;
  case kOnnxInt2:
    return DType::I2;
  default:
    return std::nullopt;
  }
}

/// The ONNX element type of `dtype` (the inverse of dtypeOfOnnx).
int32_t onnxTypeOf(DType dtype) {
  for (int32_t elemType = onnx::TensorProto_DataType_DataType_MIN;
       elemType <= onnx::TensorProto_DataType_DataType_MAX; ++elemType)
    if (dtypeOfOnnx(elemType) == dtype)
      return elemType;
  return onnx::TensorProto::UNDEFINED;
}

std::string onnxTypeName(int32_t elemType) {
  if (onnx::TensorProto_DataType_IsValid(elemType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(elemType));
  static const std::map<int32_t, const char *> kNewerNames = {
      {kOnnxFloat8E4M3FN, "FLOAT8E4M3FN"},
      {kOnnxFloat8E4M3FNUZ, "FLOAT8E4M3FNUZ"},
      {kOnnxFloat8E5M2, "FLOAT8E5M2"},
      {kOnnxFloat8E5M2FNUZ, "FLOAT8E5M2FNUZ"},
      {kOnnxUInt4, "UINT4"},
      {kOnnxInt4, "INT4"},
      {kOnnxFloat4E2M1, "FLOAT4E2M1"},
      {kOnnxFloat8E8M0, "FLOAT8E8M0"},
      {kOnnxUInt2, "UINT2"},
      {kOnnxInt2, "INT2"},
      {27, "FLOAT6E2M3"},
      {28, "FLOAT6E3M2"}};
  if (auto it = kNewerNames.find(elemType); it != kNewerNames.end())
    return it->second;
  return "type " + std::to_string(elemType);
}

/// The bytes of an external-data tensor: the file must stay inside the
/// model's directory and hold `offset + length` bytes.
TensorBytes readExternalData(const onnx::TensorProto &proto,
                             const std::filesystem::path &modelDir,
                             int64_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : proto.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      throw Unsupported{"external data " + entry.key() + " '" + entry.value() +
                        "' is not a number"};
    }
  }
  std::filesystem::path relative(location);
  if (location.empty() || relative.is_absolute())
    throw Unsupported{"external data location '" + location +
                      "' must be a path relative to the model's directory"};
  for (const std::filesystem::path &part : relative)
    if (part == "..")
      throw Unsupported{"external data location '" + location +
                        "' may not leave the model's directory ('..')"};
  std::error_code error;
  std::filesystem::path root = std::filesystem::canonical(modelDir, error);
  std::filesystem::path file =
      std::filesystem::canonical(modelDir / relative, error);
  if (error)
    throw Unsupported{"external data file '" + location +
                      "' cannot be opened: " + error.message()};
  auto [rootEnd, fileIt] =
      std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (rootEnd != root.end())
    throw Unsupported{"external data file '" + location +
                      "' resolves outside the model's directory (a symlink)"};
  uintmax_t size = std::filesystem::file_size(file, error);
  if (length < 0)
    length = expectedBytes;
  if (error || offset < 0 || length != expectedBytes ||
      static_cast<uintmax_t>(offset) + static_cast<uintmax_t>(length) > size)
    throw Unsupported{"external data '" + location + "' (offset " +
                      std::to_string(offset) + ", length " +
                      std::to_string(length) + ") does not hold the " +
                      std::to_string(expectedBytes) + " bytes the dims need"};
  TensorBytes bytes(expectedBytes);
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(reinterpret_cast<char *>(bytes.data()), expectedBytes);
  if (!in)
    throw Unsupported{"external data '" + location + "' could not be read"};
  return bytes;
}

/// A TensorProto as a tensor: raw_data, the typed fields, or external
/// data, each checked against the dims before anything is allocated.
Tensor tensorFromProto(const onnx::TensorProto &proto,
                       const std::filesystem::path &modelDir) {
  std::optional<DType> dtype = dtypeOfOnnx(proto.data_type());
  if (!dtype)
    throw Unsupported{"tensor '" + proto.name() + "' has unsupported dtype " +
                      onnxTypeName(proto.data_type())};
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim > 0 && count > INT64_MAX / dim / 8))
      throw Unsupported{"tensor '" + proto.name() + "' has bad dims"};
    count *= dim;
  }
  int64_t bytes = count * static_cast<int64_t>(dtypeBytes(*dtype));
  // 4- and 2-bit elements come packed, the first in the lowest bits: fusec
  // holds each in a byte of its own.
  const int bits = dtypeInfo(*dtype).bits;
  const int perByte = bits < 8 ? 8 / bits : 1;
  auto unpacked = [&](auto packedByte) {
    Tensor tensor(*dtype, shape);
    for (int64_t i = 0; i < count; ++i) {
      uint32_t field = static_cast<uint8_t>(packedByte(i / perByte));
      uint32_t code = (field >> (bits * (i % perByte))) & ((1u << bits) - 1);
      if (isFloat(*dtype))
        tensor.as<uint8_t>()[i] = static_cast<uint8_t>(code);
      else
        tensor.set(i, code); // the signed ones wrap to negative values
    }
    return tensor;
  };
  auto sizeError = [&](const std::string &field, int64_t have) {
    return Unsupported{"tensor '" + proto.name() + "' dims [" +
                       formatShape(shape) + "] need " + std::to_string(count) +
                       " elements but " + field + " holds " +
                       std::to_string(have)};
  };
  const int64_t packedBytes =
      perByte > 1 ? (count + perByte - 1) / perByte : bytes;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    // The file's size is checked first: nothing is allocated for dims the
    // file cannot hold.
    TensorBytes data = readExternalData(proto, modelDir, packedBytes);
    if (perByte > 1)
      return unpacked([&](int64_t at) { return data[at]; });
    Tensor tensor(*dtype, {});
    tensor.shape = shape;
    tensor.bytes = std::move(data);
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != packedBytes)
      throw sizeError("raw_data (bytes)",
                      static_cast<int64_t>(proto.raw_data().size()));
    if (perByte > 1)
      return unpacked([&](int64_t at) { return proto.raw_data()[at]; });
    Tensor tensor(*dtype, shape);
    if (bytes > 0) // an empty tensor's data() may be null
      std::memcpy(tensor.data(), proto.raw_data().data(), bytes);
    return tensor;
  }
  // Typed fields: f16/bf16 and float8 bits, i8, i16, u8, u16 and bool live
  // in int32_data (4- and 2-bit elements packed as in raw_data), u32 and u64
  // in uint64_data.
  if (perByte > 1) {
    if (static_cast<int64_t>(proto.int32_data_size()) != packedBytes)
      throw sizeError("int32_data (packed bytes)", proto.int32_data_size());
    return unpacked([&](int64_t at) { return proto.int32_data(at); });
  }
  auto fill = [&](const auto &field, const std::string &name) {
    if (static_cast<int64_t>(field.size()) != count)
      throw sizeError(name, field.size());
    Tensor tensor(*dtype, shape);
    for (int64_t i = 0; i < count; ++i) {
      if (*dtype == DType::F16 || *dtype == DType::BF16)
        tensor.as<uint16_t>()[i] = static_cast<uint16_t>(field.Get(i));
      else if (isNarrow(*dtype) && isFloat(*dtype))
        tensor.as<uint8_t>()[i] = static_cast<uint8_t>(field.Get(i));
      else if (*dtype == DType::I64)
        tensor.as<int64_t>()[i] = static_cast<int64_t>(field.Get(i));
      else if (*dtype == DType::U64)
        tensor.as<uint64_t>()[i] = static_cast<uint64_t>(field.Get(i));
      else
        tensor.set(i, static_cast<double>(field.Get(i)));
    }
    return tensor;
  };
  switch (*dtype) {
  case DType::F32:
    return fill(proto.float_data(), "float_data");
  case DType::F64:
    return fill(proto.double_data(), "double_data");
  case DType::I64:
    return fill(proto.int64_data(), "int64_data");
  case DType::U32:
  case DType::U64:
    return fill(proto.uint64_data(), "uint64_data");
  default:
    return fill(proto.int32_data(), "int32_data");
  }
}

} // namespace fusec::onnx_import

namespace fusec {

Tensor readTensorProtoFile(const std::string &path,
                           std::optional<DType> expected) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!in || !proto.ParseFromIstream(&in))
    throw Error(path + ": error: not a serialized ONNX TensorProto");
  if (expected == DType::BF16 && proto.data_type() == onnx::TensorProto::UINT16)
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  try {
    return onnx_import::tensorFromProto(
        proto, std::filesystem::path(path).parent_path());
  } catch (const onnx_import::Unsupported &unsupported) {
    throw Error(path + ": error: " + unsupported.reason);
  }
}

} // namespace fusec
