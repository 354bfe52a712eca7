//===- LibraryOps.h - Shapes of the library calls --------------*- C++ -*-===//
//
// One place for NumPy's matmul shape rules: the verifier, the importer,
// the pass that folds ops into calls and codegen all read them here.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_IR_LIBRARYOPS_H
#define FUSE_IR_LIBRARYOPS_H

#include "runtime/core/Shape.h"

#include <string>

namespace fuse {

/// A matmul's iteration space: `batch` products of [m, k] @ [k, n].
struct MatmulShape {
  /// Each operand's batch dims (the dims before its last two; none for
  /// ranks 1 and 2) and their broadcast, the result's batch dims.
  fusec::Shape lhsBatch, rhsBatch, batch;
  int64_t m = 1, n = 1, k = 1;
  /// The result: batch dims, then m unless lhs is 1-D, then n unless rhs
  /// is 1-D.
  fusec::Shape result;
};

/// The shape of `lhs @ rhs` with the last two dims of an operand swapped
/// when it is transposed; "" on success, else why the shapes do not fit.
std::string inferMatmulShape(const fusec::Shape &lhs, const fusec::Shape &rhs,
                             bool transposeA, bool transposeB,
                             MatmulShape &shape);

/// Whether the call is one product: no batch, or a batch that only the
/// untransposed lhs has, whose matrices then stack into rows
/// ([batch * m, k] @ [k, n]). Epilogues apply only to such calls.
bool isOneProduct(const MatmulShape &shape, bool transposeA);

/// The epilogues a matmul may carry ("none", "relu", "gelu_tanh").
bool isMatmulEpilogue(const std::string &name);

} // namespace fuse

#endif
