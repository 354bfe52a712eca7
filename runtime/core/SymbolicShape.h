//===- SymbolicShape.h - Dims whose sizes come at run time -----*- C++ -*-===//
//
// A model compiled once for a range of sizes names its varying dims
// (`batch`, `seq`): its symbols, each with a range. A dim of a tensor is then
// a SymbolicSize, a constant times a product of symbols (`batch*seq*768`
// after a reshape merges dims). A Program whose buffers have such dims is
// symbolic: each run binds the symbols from its inputs' shapes and runs the
// Program instantiated at those sizes (instantiateProgram), whose kernels
// read the sizes as arguments.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_SYMBOLICSHAPE_H
#define FUSEC_RUNTIME_CORE_SYMBOLICSHAPE_H

#include "runtime/core/Shape.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusec {

struct DimSymbol;

/// `factor` times the product of `symbols` (indices into the program's
/// symbols, sorted, repeats allowed); a static size has no symbols.
struct SymbolicSize {
  int64_t factor = 1;
  std::vector<int> symbols;

  static SymbolicSize constant(int64_t size) { return {size, {}}; }
  static SymbolicSize symbol(int index) { return {1, {index}}; }
  bool isStatic() const { return symbols.empty(); }
  /// -seq: a symbolic size negated, which only a Slice's bound can be.
  bool isNegated() const { return !isStatic() && factor < 0; }
  SymbolicSize negated() const { return {-factor, symbols}; }
  int64_t evaluate(const std::vector<int64_t> &values) const;
  /// "768", "batch", "batch*seq*768".
  std::string format(const std::vector<DimSymbol> &names) const;
  /// A C expression of int64_t value over an array of the symbols' values
  /// named `values`: "768", "fusec_dims[0]", "(int64_t)768 * fusec_dims[0]".
  std::string cExpression(const std::string &values) const;
  SymbolicSize operator*(const SymbolicSize &other) const;
  /// What every value of the size is a multiple of: the factor times the
  /// symbols' declared multiples (the factor alone where that overflows).
  int64_t knownDivisor(const std::vector<DimSymbol> &names) const;
  bool operator==(const SymbolicSize &other) const {
    return factor == other.factor && symbols == other.symbols;
  }
  bool operator!=(const SymbolicSize &other) const { return !(*this == other); }
};

/// A named dim size that varies between runs, within [min, max], and a
/// multiple of `multiple` (declared, `--dim seq=8..1024:8`, so that kernels
/// may rely on it: vector widths, aligned rows).
///
/// A derived symbol is a sum (`sumOf`, products of the other, bound symbols
/// with positive factors, and a positive constant): a cache grown by
/// concatenation is `past + seq` long, a mask one wider than the sequence
/// `seq + 1`. Its value is computed from theirs at each run, never bound
/// from an input; its name is the sum, "(past+seq)", and its range and
/// multiple follow from theirs. Sizes stay products of symbols, so equal
/// sums are one symbol and compare equal.
struct DimSymbol {
  std::string name;
  int64_t min = 1, max = 1;
  int64_t multiple = 1;
  std::vector<SymbolicSize> sumOf = {};

  bool isDerived() const { return !sumOf.empty(); }
};

/// One SymbolicSize per dim.
using SymbolicShape = std::vector<SymbolicSize>;

SymbolicSize symbolicElements(const SymbolicShape &shape);
Shape evaluateShape(const SymbolicShape &shape,
                    const std::vector<int64_t> &values);
/// "batchx4096".
std::string formatSymbolicShape(const SymbolicShape &shape,
                                const std::vector<DimSymbol> &names);
/// The shape with every symbol at its maximum.
Shape maximalShape(const SymbolicShape &shape,
                   const std::vector<DimSymbol> &symbols);
bool isStaticShape(const SymbolicShape &shape);
/// Row-major strides of `shape`: products of the dims after each.
SymbolicShape rowMajorStrides(const SymbolicShape &shape);
/// The strides that read `from` (right-aligned) at each point of `to`: 0
/// along the dims `from` has as a fixed 1 or lacks (Shape.h's
/// broadcastStrides, with symbolic sizes).
SymbolicShape broadcastStrides(const SymbolicShape &from,
                               const SymbolicShape &to);
/// The shape with fixed sizes: what a static shape is as a SymbolicShape.
SymbolicShape symbolicShapeOf(const Shape &shape);

/// `a + b`, or `a - b` when `subtract`, as one SymbolicSize over `symbols`:
/// a product where the terms combine into one (`seq + seq`, `(past+seq) -
/// past`), else the derived symbol of their sum, appended to `symbols` when
/// it is new. nullopt where the result is no size over the whole range: a
/// negative term left over, a value below 1, or a maximum above 2^48.
std::optional<SymbolicSize> addSymbolicSizes(const SymbolicSize &a,
                                             const SymbolicSize &b,
                                             bool subtract,
                                             std::vector<DimSymbol> &symbols);
/// The least and greatest value of `a - b` over the symbols' ranges, with
/// derived symbols expanded into their terms (so that `(past+seq) - past`
/// is seq's range), saturated at int64's bounds.
std::pair<int64_t, int64_t>
differenceBounds(const SymbolicSize &a, const SymbolicSize &b,
                 const std::vector<DimSymbol> &symbols);
/// Sets each derived symbol's value in `values` from the bound ones'.
void evaluateDerivedSymbols(const std::vector<DimSymbol> &symbols,
                            std::vector<int64_t> &values);

} // namespace fusec

#endif
