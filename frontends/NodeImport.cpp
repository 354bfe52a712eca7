//===- NodeImport.cpp - Reading a node's attrs ----------------------------===//

#include "frontends/NodeImport.h"

#include <cmath>

using namespace mlir;

namespace fuse {

InFlightDiagnostic NodeImport::error() {
  return emitError(loc) << "'" << node.op << "' ";
}

FailureOr<int64_t> NodeImport::getInt(const std::string &attr,
                                      std::optional<int64_t> fallback) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) {
    if (fallback)
      return *fallback;
    return error() << "needs attr \"" << attr << "\" (an integer)";
  }
  if (const int64_t *value = std::get_if<int64_t>(&it->second))
    return *value;
  if (const double *value = std::get_if<double>(&it->second))
    if (std::trunc(*value) == *value && std::fabs(*value) < 0x1p63)
      return static_cast<int64_t>(*value);
  return error() << "attr \"" << attr << "\" must be an integer";
}

FailureOr<double> NodeImport::getFloat(const std::string &attr,
                                       std::optional<double> fallback) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) {
    if (fallback)
      return *fallback;
    return error() << "needs attr \"" << attr << "\" (a number)";
  }
  if (const double *value = std::get_if<double>(&it->second))
    return *value;
  if (const int64_t *value = std::get_if<int64_t>(&it->second))
    return static_cast<double>(*value);
  return error() << "attr \"" << attr << "\" must be a number";
}

FailureOr<std::string>
NodeImport::getString(const std::string &attr,
                      std::optional<std::string> fallback) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) {
    if (fallback)
      return *fallback;
    return error() << "needs attr \"" << attr << "\" (a string)";
  }
  if (const std::string *value = std::get_if<std::string>(&it->second))
    return *value;
  return error() << "attr \"" << attr << "\" must be a string";
}

FailureOr<std::vector<int64_t>>
NodeImport::getInts(const std::string &attr,
                    std::optional<std::vector<int64_t>> fallback) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) {
    if (fallback)
      return *fallback;
    return error() << "needs attr \"" << attr << "\" (an array of integers)";
  }
  if (const auto *value = std::get_if<std::vector<int64_t>>(&it->second))
    return *value;
  return error() << "attr \"" << attr << "\" must be an array of integers";
}

LogicalResult NodeImport::expectOperands(unsigned min, unsigned max) {
  if (operands.size() < min || operands.size() > max) {
    InFlightDiagnostic diag = error() << "takes ";
    if (min == max)
      diag << min;
    else
      diag << min << " to " << max;
    return diag << " input" << (max == 1 ? "" : "s") << " but "
                << operands.size() << " were given";
  }
  for (unsigned i = 0; i < min; ++i)
    if (!operands[i])
      return error() << "input #" << i << " is required";
  return success();
}

} // namespace fuse
