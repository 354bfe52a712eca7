static inline float fusec_expf(float x) {
  const bool zero = x < -104.0f;
  // NaN computes on 0 too (converting it to an integer is undefined).
  const float clamped = x >= -104.0f ? (x > 89.0f ? 89.0f : x) : 0.0f;
  const float n = rintf(clamped * 1.44269504088896341f);
  float r = fmaf(n, -0.693145751953125f, clamped);
  r = fmaf(n, -1.42860682030941723212e-6f, r);
  float p = 1.0f / 5040.0f;
  p = fmaf(p, r, 1.0f / 720.0f);
  p = fmaf(p, r, 1.0f / 120.0f);
  p = fmaf(p, r, 1.0f / 24.0f);
  p = fmaf(p, r, 1.0f / 6.0f);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const int32_t exponent = (int32_t)n, half = exponent >> 1;
  const uint32_t lowBits = (uint32_t)(half + 127) << 23,
                 highBits = (uint32_t)(exponent - half + 127) << 23;
  float low, high;
  memcpy(&low, &lowBits, 4);
  memcpy(&high, &highBits, 4);
  const float result = p * low * high;
  return zero ? 0.0f : (x != x ? x : result);
}
