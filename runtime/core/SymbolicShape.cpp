//===- SymbolicShape.cpp - Dims whose sizes come at run time -------------===//

#include "runtime/core/SymbolicShape.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

namespace fusec {

int64_t SymbolicSize::evaluate(const std::vector<int64_t> &values) const {
  int64_t size = factor;
  for (int symbol : symbols)
    size *= values.at(symbol);
  return size;
}

std::string SymbolicSize::format(const std::vector<DimSymbol> &names) const {
  std::string text;
  for (int symbol : symbols)
    text += (text.empty() ? "" : "*") + names.at(symbol).name;
  if (factor != 1 || text.empty())
    text += (text.empty() ? "" : "*") + std::to_string(factor);
  return text;
}

std::string SymbolicSize::cExpression(const std::string &values) const {
  std::string text;
  for (int symbol : symbols)
    text += (text.empty() ? "" : " * ") + values + "[" +
            std::to_string(symbol) + "]";
  if (text.empty())
    return std::to_string(factor);
  if (factor == 1)
    return symbols.size() == 1 ? text : "(" + text + ")";
  return "((int64_t)" + std::to_string(factor) + " * " + text + ")";
}

SymbolicSize SymbolicSize::operator*(const SymbolicSize &other) const {
  if (factor == 0 || other.factor == 0)
    return constant(0);
  SymbolicSize product{factor * other.factor, symbols};
  product.symbols.insert(product.symbols.end(), other.symbols.begin(),
                         other.symbols.end());
  std::sort(product.symbols.begin(), product.symbols.end());
  return product;
}

int64_t SymbolicSize::knownDivisor(const std::vector<DimSymbol> &names) const {
  int64_t divisor = factor;
  for (int symbol : symbols)
    if (__builtin_mul_overflow(divisor, names[symbol].multiple, &divisor))
      return factor;
  return divisor;
}

SymbolicSize symbolicElements(const SymbolicShape &shape) {
  SymbolicSize elements = SymbolicSize::constant(1);
  for (const SymbolicSize &dim : shape)
    elements = elements * dim;
  return elements;
}

Shape evaluateShape(const SymbolicShape &shape,
                    const std::vector<int64_t> &values) {
  Shape sizes;
  for (const SymbolicSize &dim : shape)
    sizes.push_back(dim.evaluate(values));
  return sizes;
}

std::string formatSymbolicShape(const SymbolicShape &shape,
                                const std::vector<DimSymbol> &names) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (const SymbolicSize &dim : shape)
    text += (text.empty() ? "" : "x") + dim.format(names);
  return text;
}

Shape maximalShape(const SymbolicShape &shape,
                   const std::vector<DimSymbol> &symbols) {
  std::vector<int64_t> maxima;
  for (const DimSymbol &symbol : symbols)
    maxima.push_back(symbol.max);
  return evaluateShape(shape, maxima);
}

bool isStaticShape(const SymbolicShape &shape) {
  return std::all_of(shape.begin(), shape.end(),
                     [](const SymbolicSize &dim) { return dim.isStatic(); });
}

SymbolicShape rowMajorStrides(const SymbolicShape &shape) {
  SymbolicShape strides(shape.size(), SymbolicSize::constant(1));
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

SymbolicShape broadcastStrides(const SymbolicShape &from,
                               const SymbolicShape &to) {
  SymbolicShape fromStrides = rowMajorStrides(from);
  SymbolicShape strides(to.size(), SymbolicSize::constant(0));
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != SymbolicSize::constant(1))
      strides[offset + i] = fromStrides[i];
  return strides;
}

SymbolicShape symbolicShapeOf(const Shape &shape) {
  SymbolicShape symbolic;
  for (int64_t dim : shape)
    symbolic.push_back(SymbolicSize::constant(dim));
  return symbolic;
}

namespace {

/// A sum of products over non-derived symbols: each product's symbols and
/// its factor.
using Terms = std::map<std::vector<int>, int64_t>;

constexpr int64_t kMaxSize = int64_t(1) << 48;

int64_t saturatedProduct(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                              : std::numeric_limits<int64_t>::max();
  return product;
}

int64_t saturatedSum(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    return a < 0 ? std::numeric_limits<int64_t>::min()
                 : std::numeric_limits<int64_t>::max();
  return sum;
}

/// Adds `sign * size` to `terms`, each derived symbol multiplied out into
/// its sum; false on overflow.
bool addTerms(Terms &terms, const SymbolicSize &size, int64_t sign,
              const std::vector<DimSymbol> &symbols) {
  SymbolicSize bound{0, {}};
  if (__builtin_mul_overflow(size.factor, sign, &bound.factor))
    return false;
  std::vector<SymbolicSize> products;
  std::vector<int> derived;
  for (int symbol : size.symbols)
    (symbols.at(symbol).isDerived() ? derived : bound.symbols)
        .push_back(symbol);
  products.push_back(bound);
  for (int symbol : derived) {
    std::vector<SymbolicSize> expanded;
    for (const SymbolicSize &product : products)
      for (const SymbolicSize &term : symbols[symbol].sumOf) {
        int64_t factor = 0;
        if (__builtin_mul_overflow(product.factor, term.factor, &factor))
          return false;
        SymbolicSize next = product * term;
        next.factor = factor;
        expanded.push_back(next);
      }
    products = std::move(expanded);
  }
  for (const SymbolicSize &product : products) {
    int64_t &factor = terms[product.symbols];
    if (__builtin_add_overflow(factor, product.factor, &factor))
      return false;
  }
  return true;
}

/// The least and greatest value of one term over the symbols' ranges.
std::pair<int64_t, int64_t> termBounds(const std::vector<int> &product,
                                       int64_t factor,
                                       const std::vector<DimSymbol> &symbols) {
  int64_t low = factor, high = factor;
  for (int symbol : product) {
    low = saturatedProduct(low, symbols[symbol].min);
    high = saturatedProduct(high, symbols[symbol].max);
  }
  return {std::min(low, high), std::max(low, high)};
}

} // namespace

std::optional<SymbolicSize> addSymbolicSizes(const SymbolicSize &a,
                                             const SymbolicSize &b,
                                             bool subtract,
                                             std::vector<DimSymbol> &symbols) {
  Terms terms;
  if (!addTerms(terms, a, 1, symbols) ||
      !addTerms(terms, b, subtract ? -1 : 1, symbols))
    return std::nullopt;
  std::vector<SymbolicSize> sum;
  for (const auto &[product, factor] : terms)
    if (factor != 0)
      sum.push_back({factor, product});
  if (sum.empty())
    return SymbolicSize::constant(0);
  if (sum.size() == 1)
    return sum[0].isStatic() || sum[0].factor > 0 ? std::optional(sum[0])
                                                  : std::nullopt;
  // Sizes of every run: positive terms only (a difference that does not
  // cancel could be negative somewhere in range).
  DimSymbol derived;
  derived.min = derived.max = 0;
  derived.multiple = 0;
  for (const SymbolicSize &term : sum) {
    if (term.factor < 1)
      return std::nullopt;
    auto [low, high] = termBounds(term.symbols, term.factor, symbols);
    derived.min = saturatedSum(derived.min, low);
    derived.max = saturatedSum(derived.max, high);
    derived.multiple = std::gcd(derived.multiple, term.knownDivisor(symbols));
  }
  if (derived.max > kMaxSize)
    return std::nullopt;
  // The constant last: "(seq+1)".
  std::rotate(sum.begin(), sum.begin() + (sum[0].isStatic() ? 1 : 0),
              sum.end());
  for (const SymbolicSize &term : sum)
    derived.name += (derived.name.empty() ? "(" : "+") + term.format(symbols);
  derived.name += ")";
  derived.sumOf = std::move(sum);
  for (size_t s = 0; s < symbols.size(); ++s)
    if (symbols[s].isDerived() && symbols[s].sumOf == derived.sumOf)
      return SymbolicSize::symbol(static_cast<int>(s));
  symbols.push_back(std::move(derived));
  return SymbolicSize::symbol(static_cast<int>(symbols.size() - 1));
}

std::pair<int64_t, int64_t>
differenceBounds(const SymbolicSize &a, const SymbolicSize &b,
                 const std::vector<DimSymbol> &symbols) {
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min(),
                    kHighest = std::numeric_limits<int64_t>::max();
  Terms terms;
  if (!addTerms(terms, a, 1, symbols) || !addTerms(terms, b, -1, symbols))
    return {kLowest, kHighest};
  int64_t low = 0, high = 0;
  for (const auto &[product, factor] : terms) {
    auto [termLow, termHigh] = termBounds(product, factor, symbols);
    low = saturatedSum(low, termLow);
    high = saturatedSum(high, termHigh);
  }
  return {low, high};
}

void evaluateDerivedSymbols(const std::vector<DimSymbol> &symbols,
                            std::vector<int64_t> &values) {
  for (size_t s = 0; s < symbols.size(); ++s) {
    if (!symbols[s].isDerived())
      continue;
    int64_t sum = 0;
    for (const SymbolicSize &term : symbols[s].sumOf)
      sum += term.evaluate(values);
    values[s] = sum;
  }
}

} // namespace fusec
