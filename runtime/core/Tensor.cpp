#include "runtime/core/Tensor.h"

#include "runtime/core/HalfFloat.h"
#include "runtime/core/NarrowTypes.h"

#include <cmath>
#include <cstring>

namespace fusec {

namespace {
template <typename T> T load(const TensorBytes &bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}
template <typename T> void store(TensorBytes &bytes, int64_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}
/// Integers wrap like the kernels' two's-complement arithmetic.
/// (Values from 2^63, which only a u64 holds, convert directly.)
template <typename T> T wrapInteger(double value) {
  if (value >= 9223372036854775808.0)
    return static_cast<T>(static_cast<uint64_t>(value));
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(value)));
}
/// The saturating code of `value` in a narrow float dtype.
uint8_t narrowFloatCode(DType dtype, float value) {
  switch (dtype) {
  case DType::F8E4M3FN:
    return fusec_f32_to_f8e4m3fn(value, 1);
  case DType::F8E4M3FNUZ:
    return fusec_f32_to_f8e4m3fnuz(value, 1);
  case DType::F8E5M2:
    return fusec_f32_to_f8e5m2(value, 1);
  case DType::F8E5M2FNUZ:
    return fusec_f32_to_f8e5m2fnuz(value, 1);
  case DType::F8E8M0:
    return fusec_f32_to_f8e8m0fnu(value, 1);
  default:
    return fusec_f32_to_f4e2m1fn(value, 1);
  }
}
} // namespace

double Tensor::at(int64_t i) const {
  switch (dtype) {
  case DType::F64:
    return load<double>(bytes, i);
  case DType::F32:
    return load<float>(bytes, i);
  case DType::F16:
    return fusec_f16_to_f32(load<uint16_t>(bytes, i));
  case DType::BF16:
    return fusec_bf16_to_f32(load<uint16_t>(bytes, i));
  case DType::I8:
    return load<int8_t>(bytes, i);
  case DType::I32:
    return load<int32_t>(bytes, i);
  case DType::I64:
    return static_cast<double>(load<int64_t>(bytes, i));
  case DType::I1:
    return load<uint8_t>(bytes, i) != 0;
  case DType::I16:
    return load<int16_t>(bytes, i);
  case DType::U8:
    return load<uint8_t>(bytes, i);
  case DType::U16:
    return load<uint16_t>(bytes, i);
  case DType::U32:
    return load<uint32_t>(bytes, i);
  case DType::U64:
    return static_cast<double>(load<uint64_t>(bytes, i));
  case DType::F8E4M3FN:
    return fusec_f8e4m3fn_to_f32(load<uint8_t>(bytes, i));
  case DType::F8E4M3FNUZ:
    return fusec_f8e4m3fnuz_to_f32(load<uint8_t>(bytes, i));
  case DType::F8E5M2:
    return fusec_f8e5m2_to_f32(load<uint8_t>(bytes, i));
  case DType::F8E5M2FNUZ:
    return fusec_f8e5m2fnuz_to_f32(load<uint8_t>(bytes, i));
  case DType::F4E2M1:
    return fusec_f4e2m1fn_to_f32(load<uint8_t>(bytes, i));
  case DType::F8E8M0:
    return fusec_f8e8m0fnu_to_f32(load<uint8_t>(bytes, i));
  case DType::I4:
  case DType::I2:
    return load<int8_t>(bytes, i);
  case DType::U4:
  case DType::U2:
    return load<uint8_t>(bytes, i);
  }
  return 0;
}

void Tensor::set(int64_t i, double value) {
  switch (dtype) {
  case DType::F64:
    return store<double>(bytes, i, value);
  case DType::F32:
    return store<float>(bytes, i, static_cast<float>(value));
  case DType::F16:
    return store<uint16_t>(bytes, i, fusec_f64_to_f16(value));
  case DType::BF16:
    return store<uint16_t>(bytes, i, fusec_f64_to_bf16(value));
  case DType::I8:
    return store<int8_t>(bytes, i, wrapInteger<int8_t>(value));
  case DType::I32:
    return store<int32_t>(bytes, i, wrapInteger<int32_t>(value));
  case DType::I64:
    return store<int64_t>(bytes, i, static_cast<int64_t>(value));
  case DType::I1:
    return store<uint8_t>(bytes, i, value != 0 ? 1 : 0);
  case DType::I16:
    return store<int16_t>(bytes, i, wrapInteger<int16_t>(value));
  case DType::U8:
    return store<uint8_t>(bytes, i, wrapInteger<uint8_t>(value));
  case DType::U16:
    return store<uint16_t>(bytes, i, wrapInteger<uint16_t>(value));
  case DType::U32:
    return store<uint32_t>(bytes, i, wrapInteger<uint32_t>(value));
  case DType::U64:
    return store<uint64_t>(bytes, i, wrapInteger<uint64_t>(value));
  // The narrow floats saturate, ONNX's default for them.
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F4E2M1:
  case DType::F8E8M0:
    return store<uint8_t>(
        bytes, i, narrowFloatCode(dtype, fusec_f64_to_f32_round_odd(value)));
  case DType::I4:
  case DType::I2:
    return store<int8_t>(
        bytes, i,
        fusec_wrap_signed(wrapInteger<int64_t>(value), dtypeInfo(dtype).bits));
  case DType::U4:
  case DType::U2:
    return store<uint8_t>(bytes, i,
                          fusec_wrap_unsigned(wrapInteger<int64_t>(value),
                                              dtypeInfo(dtype).bits));
  }
}

std::string Tensor::typeString() const {
  return std::string(dtypeName(dtype)) + "[" + formatShape(shape) + "]";
}

} // namespace fusec
