#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
static inline void fusec_stream_store(void *to, const void *from, int64_t bytes) {
  if ((uintptr_t)to & 63) {
    memcpy(to, from, (size_t)bytes);
    return;
  }
  const int64_t lines = bytes & ~(int64_t)63;
  for (int64_t at = 0; at < lines; at += 16)
    _mm_stream_si128((__m128i *)((char *)to + at),
                     _mm_loadu_si128((const __m128i *)((const char *)from + at)));
  memcpy((char *)to + lines, (const char *)from + lines, (size_t)(bytes - lines));
}
static inline void fusec_stream_fence(void) { _mm_sfence(); }
#else
static inline void fusec_stream_store(void *to, const void *from, int64_t bytes) {
  memcpy(to, from, (size_t)bytes);
}
static inline void fusec_stream_fence(void) {}
#endif
