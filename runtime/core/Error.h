//===- Error.h - The error fusec reports to users --------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CORE_ERROR_H
#define FUSEC_RUNTIME_CORE_ERROR_H

#include <stdexcept>
#include <string>

namespace fusec {

/// Every user-facing failure: bad models, failed compiles, bad inputs. The
/// message is complete and printable as is (it names the file, the node or
/// the kernel involved).
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

} // namespace fusec

#endif
