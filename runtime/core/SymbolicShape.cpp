//===- SymbolicShape.cpp - Dims whose sizes come at run time -------------===//

#include "runtime/core/SymbolicShape.h"

#include <algorithm>

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

} // namespace fusec
