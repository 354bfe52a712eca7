#include "runtime/Npy.h"

#include "runtime/Error.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace fusec {

static const char kMagic[] = "\x93NUMPY";

Tensor readNpy(const std::string &path, std::optional<DType> expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": error: cannot open .npy file");
  auto fail = [&](const std::string &reason) -> Error {
    return Error(path + ": error: " + reason);
  };
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 6) != 0)
    throw fail("not a .npy file (bad magic)");
  uint32_t headerLength = 0;
  if (magic[6] == 1) {
    uint16_t length;
    in.read(reinterpret_cast<char *>(&length), 2);
    headerLength = length;
  } else {
    in.read(reinterpret_cast<char *>(&headerLength), 4);
  }
  std::string header(headerLength, '\0');
  if (!in.read(header.data(), headerLength))
    throw fail("truncated .npy header");

  std::smatch match;
  if (!std::regex_search(header, match,
                         std::regex("'descr'\\s*:\\s*'([^']*)'")))
    throw fail("the .npy header has no 'descr'");
  std::string descr = match[1];
  if (std::regex_search(header, match,
                        std::regex("'fortran_order'\\s*:\\s*True")))
    throw fail("Fortran-order arrays are not supported; save in C order");
  if (!std::regex_search(header, match,
                         std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    throw fail("the .npy header has no 'shape'");
  Shape shape;
  std::stringstream dims(match[1].str());
  std::string dim;
  while (std::getline(dims, dim, ','))
    if (dim.find_first_not_of(" ") != std::string::npos)
      shape.push_back(std::stoll(dim));

  std::optional<DType> dtype;
  for (const DType *it = allDTypesBegin(); it != allDTypesEnd(); ++it)
    if (descr == dtypeInfo(*it).npyDescr && *it != DType::BF16)
      dtype = *it;
  if (descr == "<u2" && expected == DType::BF16)
    dtype = DType::BF16;
  if (descr == "<i1")
    dtype = DType::I8;
  if (!dtype)
    throw fail("unsupported .npy dtype '" + descr + "'");
  if (expected && *dtype != *expected)
    throw fail(std::string("holds ") + dtypeName(*dtype) + " but " +
               dtypeName(*expected) + " is expected");
  Tensor tensor(*dtype, shape);
  if (!in.read(reinterpret_cast<char *>(tensor.data()), tensor.bytes.size()))
    throw fail("truncated .npy data: expected " +
               std::to_string(tensor.bytes.size()) + " bytes for " +
               tensor.typeString());
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
