//===- Npy.h - Reading and writing NumPy .npy files ------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CORE_NPY_H
#define FUSEC_RUNTIME_CORE_NPY_H

#include "runtime/core/Tensor.h"

#include <optional>
#include <string>

namespace fusec {

/// Reads a little-endian, C-order .npy file. When `expected` is bf16, a <u2
/// array is read as bf16 bits (NumPy has no bf16). Throws fusec::Error naming
/// the file on anything it cannot read.
Tensor readNpy(const std::string &path, std::optional<DType> expected = {});
/// Writes a tensor as .npy (bf16 as its raw bits, <u2).
void writeNpy(const std::string &path, const Tensor &tensor);

} // namespace fusec

#endif
