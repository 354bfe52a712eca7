#include "frontends/Graph.h"

namespace fusec {

GraphBuilder::GraphBuilder(std::string name) { built.name = std::move(name); }

std::string GraphBuilder::freshName(const char *prefix) {
  return prefix + std::to_string(counter++);
}

std::string GraphBuilder::input(const std::string &name, DType dtype,
                                Shape shape) {
  built.inputs.push_back({name, dtype, std::move(shape), {}});
  return name;
}

std::string GraphBuilder::input(const std::string &name, DType dtype,
                                Shape shape,
                                std::vector<std::string> dimNames) {
  for (size_t d = 0; d < dimNames.size() && d < shape.size(); ++d)
    if (!dimNames[d].empty())
      shape[d] = -1;
  built.inputs.push_back({name, dtype, std::move(shape), std::move(dimNames)});
  return name;
}

void GraphBuilder::symbol(const std::string &name, int64_t min, int64_t max,
                          int64_t multiple) {
  built.symbols.push_back({name, min, max, multiple});
}

std::string GraphBuilder::constant(const std::string &name, Tensor value) {
  built.constants.push_back({name, std::move(value)});
  return name;
}

std::string GraphBuilder::scalar(double value, DType dtype) {
  Tensor tensor(dtype, {});
  tensor.set(0, value);
  return constant(freshName("c"), std::move(tensor));
}

std::string GraphBuilder::op(const std::string &op,
                             const std::vector<std::string> &inputs,
                             std::map<std::string, AttrValue> attrs) {
  std::string node = freshName((op + "_").c_str());
  std::string value = freshName("v");
  built.nodes.push_back({node, op, inputs, {value}, std::move(attrs)});
  return value;
}

void GraphBuilder::output(const std::string &value) {
  built.outputs.push_back(value);
}

} // namespace fusec
