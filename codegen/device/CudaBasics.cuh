// NVRTC provides no standard headers: the few types and helpers kernels use.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define NAN __int_as_float(0x7fffffff)
#define INFINITY __int_as_float(0x7f800000)

// f16 and bf16 are stored as 16 bits and computed in f32; the conversions
// round to nearest even (hardware cvt).
static __device__ __forceinline__ float fusec_f16_to_f32(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
// The cvt gives one NaN for every NaN (the host keeps payload bits): a
// check to keep them cost a bf16 gelu chain 28% (an H200, 2026-11-25).
static __device__ __forceinline__ uint16_t fusec_f32_to_f16(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
static __device__ __forceinline__ float fusec_bf16_to_f32(uint16_t h) {
  return __uint_as_float(((uint32_t)h) << 16);
}
static __device__ __forceinline__ uint16_t fusec_f32_to_bf16(float f) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// An f32 value rounded to f16 or bf16 and widened back (an op's result on
// an f16/bf16 tensor). The packed conversion runs on the ALU at half rate,
// the single one (F2F) at an eighth, which made a bf16 gelu chain of 9 ops
// compute-bound; bf16 rounded into the upper half over a 0 lower half is
// the rounded f32 itself.
static __device__ __forceinline__ float fusec_round_to_f16(float f) {
  uint32_t packed;
  asm("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(packed) : "f"(f));
  return fusec_f16_to_f32((uint16_t)packed);
}
static __device__ __forceinline__ float fusec_round_to_bf16(float f) {
  uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(f), "f"(0.0f));
  return __uint_as_float(packed);
}

// f64 -> f32 rounded to odd (truncated, last bit set when inexact): then
// rounding to f16/bf16 is the correctly rounded f64 -> f16/bf16 conversion,
// as runtime/HalfFloat.h does on the host.
static __device__ __forceinline__ float fusec_f64_to_f32_round_odd(double d) {
  const float truncated = __double2float_rz(d);
  if (d != d || (double)truncated == d)
    return d != d ? (float)d : truncated;
  return __uint_as_float(__float_as_uint(truncated) | 1u);
}

// tanh has no __tanhf: the hardware approximation (sm_75+), for --fast-math.
static __device__ __forceinline__ float fusec_tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// N elements moved as one aligned access (16 bytes at most).
template <typename T, int N> struct alignas(sizeof(T) * N) FusecVector {
  T v[N];
};
