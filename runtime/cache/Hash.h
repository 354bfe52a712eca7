//===- Hash.h - Content hashing for the kernel cache -----------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CACHE_HASH_H
#define FUSEC_RUNTIME_CACHE_HASH_H

#include <cstdint>
#include <string>
#include <string_view>

namespace fusec {

/// 64-bit FNV-1a: enough to address cache entries and detect corruption;
/// not a defense against deliberate collisions.
inline uint64_t hashBytes(std::string_view bytes,
                          uint64_t seed = 0xcbf29ce484222325ull) {
  uint64_t hash = seed;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

inline std::string toHex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    text[i] = digits[value & 15];
  return text;
}

} // namespace fusec

#endif
