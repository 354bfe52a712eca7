#include "runtime/Program.h"

#include <nlohmann/json.hpp>

namespace fusec {

const char *targetName(Target target) {
  switch (target) {
  case Target::Cpu:
    return "cpu";
  case Target::Cuda:
    return "cuda";
  }
  return "?";
}

static const char *roleName(BufferRole role) {
  switch (role) {
  case BufferRole::Input:
    return "input";
  case BufferRole::Constant:
    return "constant";
  case BufferRole::Temporary:
    return "temporary";
  case BufferRole::Alias:
    return "alias";
  case BufferRole::Scratch:
    return "scratch";
  }
  return "?";
}

std::string Program::planJson() const {
  using json = nlohmann::ordered_json;
  auto names = [&](const std::vector<int> &ids) {
    json list = json::array();
    for (int id : ids)
      list.push_back(buffers[id].name);
    return list;
  };
  json plan;
  plan["name"] = name;
  plan["target"] = targetName(target);
  plan["inputs"] = names(inputs);
  plan["outputs"] = outputNames;
  plan["kernels"] = json::array();
  for (const KernelDesc &kernel : kernels)
    plan["kernels"].push_back({{"name", kernel.name},
                               {"schedule", kernel.schedule},
                               {"ops", kernel.ops},
                               {"inputs", names(kernel.inputs)},
                               {"outputs", names(kernel.outputs)}});
  plan["buffers"] = json::array();
  for (const BufferDesc &buffer : buffers) {
    json entry = {{"name", buffer.name},
                  {"dtype", dtypeName(buffer.dtype)},
                  {"shape", buffer.shape},
                  {"role", roleName(buffer.role)}};
    if (buffer.role == BufferRole::Alias)
      entry["alias_of"] = buffers[buffer.aliasOf].name;
    plan["buffers"].push_back(entry);
  }
  return plan.dump(2);
}

} // namespace fusec
