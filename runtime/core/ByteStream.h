//===- ByteStream.h - Little-endian binary writing and reading -*- C++ -*-===//
//
// The encoding of compiled-model packages (runtime/Package.h) and of the
// Program inside them: fixed-width little-endian integers and doubles,
// length-prefixed strings and lists. The reader checks every length against
// the bytes that remain before it allocates anything, so a corrupt or
// hostile file gives a fusec::Error, never a crash or a huge allocation.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_BYTESTREAM_H
#define FUSEC_RUNTIME_CORE_BYTESTREAM_H

#include "runtime/core/Error.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fusec {

// Values are stored as this host lays them out: only little-endian hosts
// (x86-64, AArch64) read and write packages.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "fusec's binary formats are little-endian");

class ByteWriter {
public:
  template <typename T> void put(T value) {
    static_assert(std::is_arithmetic_v<T>);
    bytes.append(reinterpret_cast<const char *>(&value), sizeof value);
  }
  void putString(std::string_view text) {
    put<uint64_t>(text.size());
    bytes.append(text);
  }
  template <typename T> void putList(const std::vector<T> &values) {
    put<uint64_t>(values.size());
    for (const T &value : values)
      put<T>(value);
  }
  void putStrings(const std::vector<std::string> &texts) {
    put<uint64_t>(texts.size());
    for (const std::string &text : texts)
      putString(text);
  }
  /// Zero bytes up to the next multiple of `alignment`.
  void align(size_t alignment) {
    bytes.append((alignment - bytes.size() % alignment) % alignment, '\0');
  }
  std::string &data() { return bytes; }

private:
  std::string bytes;
};

class ByteReader {
public:
  /// `what` starts every error ("model.fusec: the program section").
  ByteReader(std::string_view bytes, std::string what)
      : bytes(bytes), what(std::move(what)) {}

  template <typename T> T get() {
    static_assert(std::is_arithmetic_v<T>);
    T value;
    std::memcpy(&value, take(sizeof value).data(), sizeof value);
    return value;
  }
  bool getBool() {
    uint8_t value = get<uint8_t>();
    if (value > 1)
      fail("a flag is " + std::to_string(value) + ", not 0 or 1");
    return value == 1;
  }
  std::string getString() {
    uint64_t size = get<uint64_t>();
    if (size > remaining())
      fail("a string of " + std::to_string(size) + " bytes runs past the end");
    return std::string(take(size));
  }
  template <typename T> std::vector<T> getList() {
    uint64_t count = getCount(sizeof(T));
    std::vector<T> values;
    values.reserve(count);
    for (uint64_t i = 0; i < count; ++i)
      values.push_back(get<T>());
    return values;
  }
  std::vector<std::string> getStrings() {
    uint64_t count = getCount(sizeof(uint64_t));
    std::vector<std::string> texts;
    texts.reserve(count);
    for (uint64_t i = 0; i < count; ++i)
      texts.push_back(getString());
    return texts;
  }
  /// A count of items, each at least `minBytes` long, that must fit in what
  /// remains (checked before anything is allocated for them).
  uint64_t getCount(size_t minBytes) {
    uint64_t count = get<uint64_t>();
    if (count > remaining() / minBytes)
      fail("a count of " + std::to_string(count) + " runs past the end");
    return count;
  }

  size_t remaining() const { return bytes.size() - offset; }
  size_t position() const { return offset; }
  [[noreturn]] void fail(const std::string &why) const {
    throw Error(what + ": " + why + " (at byte " + std::to_string(offset) +
                ")");
  }

private:
  std::string_view take(size_t size) {
    if (size > remaining())
      fail("truncated");
    std::string_view taken = bytes.substr(offset, size);
    offset += size;
    return taken;
  }

  std::string_view bytes;
  std::string what;
  size_t offset = 0;
};

} // namespace fusec

#endif
