#include "runtime/core/Npy.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fusec {

static const char kMagic[] = "\x93NUMPY";

/// The largest element count a .npy file may declare: index computations
/// stay far from int64 overflow (the JSON reader's limit).
constexpr int64_t kMaxElements = int64_t(1) << 48;
constexpr uint32_t kMaxHeaderBytes = 65536;

Tensor readNpy(const std::string &path, std::optional<DType> expected) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error(path + ": error: cannot open .npy file");
  auto fail = [&](const std::string &reason) -> Error {
    return Error(path + ": error: " + reason);
  };
  // Every declared size (header length, shape) is checked against the bytes
  // the file holds before anything is allocated. A pipe (--inputs
  // <(command)) has no size to ask for: it is read whole first.
  std::istream *stream = &file;
  std::istringstream piped;
  file.seekg(0, std::ios::end);
  std::streamoff fileSize = file.tellg();
  if (fileSize < 0) {
    file.clear();
    std::ostringstream bytes;
    bytes << file.rdbuf();
    piped.str(bytes.str());
    stream = &piped;
    fileSize = static_cast<std::streamoff>(piped.str().size());
  } else {
    file.seekg(0);
  }
  std::istream &in = *stream;
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 6) != 0)
    throw fail("not a .npy file (bad magic)");
  // Version 1.0 has a 2-byte header length; 2.0 and 3.0 a 4-byte one.
  uint32_t headerLength = 0;
  int lengthBytes = magic[6] == 1 ? 2 : 4;
  if (magic[6] < 1 || magic[6] > 3)
    throw fail("unsupported .npy format version " +
               std::to_string(static_cast<unsigned char>(magic[6])));
  unsigned char length[4] = {0, 0, 0, 0};
  if (!in.read(reinterpret_cast<char *>(length), lengthBytes))
    throw fail("truncated .npy header");
  headerLength = length[0] | length[1] << 8 | uint32_t(length[2]) << 16 |
                 uint32_t(length[3]) << 24;
  std::streamoff dataOffset = 8 + lengthBytes + std::streamoff(headerLength);
  if (dataOffset > fileSize)
    throw fail("truncated .npy header: it declares " +
               std::to_string(headerLength) + " bytes but the file has " +
               std::to_string(fileSize) + " in all");
  // NumPy itself reads no header over 10,000 bytes unless told to.
  if (headerLength > kMaxHeaderBytes)
    throw fail("the .npy header is " + std::to_string(headerLength) +
               " bytes long; at most " + std::to_string(kMaxHeaderBytes) +
               " are read");
  std::string header(headerLength, '\0');
  if (!in.read(header.data(), headerLength))
    throw fail("truncated .npy header");

  // The header is a Python dict literal:
  //   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
  auto valueOf = [&](const char *key) -> std::optional<size_t> {
    size_t at = header.find(std::string("'") + key + "'");
    if (at == std::string::npos)
      return std::nullopt;
    at = header.find_first_not_of(" \t", at + std::strlen(key) + 2);
    if (at == std::string::npos || header[at] != ':')
      return std::nullopt;
    at = header.find_first_not_of(" \t", at + 1);
    if (at == std::string::npos)
      return std::nullopt;
    return at;
  };
  std::optional<size_t> at = valueOf("descr");
  size_t close = at && header[*at] == '\'' ? header.find('\'', *at + 1)
                                           : std::string::npos;
  if (close == std::string::npos)
    throw fail("the .npy header has no 'descr'");
  std::string descr = header.substr(*at + 1, close - *at - 1);
  at = valueOf("fortran_order");
  if (at && header.compare(*at, 4, "True") == 0)
    throw fail("Fortran-order arrays are not supported; save in C order");
  at = valueOf("shape");
  close = at && header[*at] == '(' ? header.find(')', *at) : std::string::npos;
  if (close == std::string::npos)
    throw fail("the .npy header has no 'shape'");
  std::string shapeText = header.substr(*at + 1, close - *at - 1);
  Shape shape;
  int64_t elements = 1;
  std::stringstream dims(shapeText);
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    size_t first = dim.find_first_not_of(" \t\n");
    if (first == std::string::npos)
      continue;
    size_t last = dim.find_last_not_of(" \t\n");
    std::string digits = dim.substr(first, last - first + 1);
    if (digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw fail("bad .npy shape (" + shapeText +
                 "): dims must be non-negative integers");
    shape.push_back(std::stoll(digits));
    if (shape.back() > kMaxElements / std::max<int64_t>(elements, 1))
      throw fail("the .npy shape (" + shapeText +
                 ") has more than 2^48 elements");
    elements *= std::max<int64_t>(shape.back(), 1);
  }

  // bf16 and the narrow dtypes borrow an integer's descriptor: they are
  // read as such where that is the dtype expected.
  std::optional<DType> dtype;
  if (expected && descr == dtypeInfo(*expected).npyDescr)
    dtype = expected;
  for (const DType *it = allDTypesBegin(); !dtype && it != allDTypesEnd(); ++it)
    if (descr == dtypeInfo(*it).npyDescr && *it != DType::BF16 &&
        !isNarrow(*it))
      dtype = *it;
  if (descr == "<i1")
    dtype = DType::I8;
  if (!dtype)
    throw fail("unsupported .npy dtype '" + descr + "'");
  if (expected && *dtype != *expected)
    throw fail(std::string("holds ") + dtypeName(*dtype) + " but " +
               dtypeName(*expected) + " is expected");
  int64_t needed =
      numElements(shape) * static_cast<int64_t>(dtypeBytes(*dtype));
  if (needed > fileSize - dataOffset)
    throw fail("truncated .npy data: expected " + std::to_string(needed) +
               " bytes for " + dtypeName(*dtype) + "[" + formatShape(shape) +
               "] but the file holds " + std::to_string(fileSize - dataOffset));
  Tensor tensor(*dtype, shape);
  if (!in.read(reinterpret_cast<char *>(tensor.data()), tensor.bytes.size()))
    throw fail("truncated .npy data: expected " +
               std::to_string(tensor.bytes.size()) + " bytes for " +
               tensor.typeString());
  // The 4- and 2-bit integers travel a byte each: every byte must hold one.
  if (isInteger(*dtype) && isNarrow(*dtype)) {
    const int bits = dtypeInfo(*dtype).bits;
    const int64_t low = isUnsigned(*dtype) ? 0 : -(int64_t(1) << (bits - 1));
    const int64_t high = low + (int64_t(1) << bits) - 1;
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      if (tensor.at(i) < low || tensor.at(i) > high)
        throw fail("element " + std::to_string(i) + " (" +
                   std::to_string(static_cast<int64_t>(tensor.at(i))) +
                   ") is outside " + dtypeName(*dtype) + "'s range [" +
                   std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return tensor;
}

void writeNpy(const std::string &path, const Tensor &tensor) {
  std::string shape = "(";
  for (int64_t dim : tensor.shape)
    shape += std::to_string(dim) + ", ";
  if (tensor.shape.size() > 1)
    shape.erase(shape.size() - 2);
  else if (tensor.shape.size() == 1)
    shape.erase(shape.size() - 1);
  shape += ")";
  std::string header = std::string("{'descr': '") +
                       dtypeInfo(tensor.dtype).npyDescr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw Error(path + ": error: cannot write .npy file");
  out.write(kMagic, 6);
  out.put(1);
  out.put(0);
  uint16_t length = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char *>(&length), 2);
  out << header;
  out.write(reinterpret_cast<const char *>(tensor.data()), tensor.bytes.size());
  if (!out)
    throw Error(path + ": error: failed writing .npy file");
}

} // namespace fusec
