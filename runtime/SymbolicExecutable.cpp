//===- SymbolicExecutable.cpp - A symbolic Program, run at any size -------===//

#include "runtime/SymbolicExecutable.h"

#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include <algorithm>

namespace fusec {

SymbolicExecutable::SymbolicExecutable(
    Program program, std::function<std::shared_ptr<Executable>(Program)> make)
    : Executable(std::move(program)), make(std::move(make)) {}

const std::shared_ptr<Executable> &
SymbolicExecutable::sharedInstanceFor(const std::vector<int64_t> &sizes) {
  auto found = instances.find(sizes);
  if (found == instances.end()) {
    if (instances.size() >= kMaxInstances) {
      // The least recently used goes; queued work of it must finish first.
      synchronize();
      instances.erase(std::min_element(
          instances.begin(), instances.end(), [](const auto &a, const auto &b) {
            return a.second.lastUse < b.second.lastUse;
          }));
    }
    trace::Scope scope("instantiate " + prog.name, "run");
    found =
        instances
            .emplace(sizes, Instance{make(instantiateProgram(prog, sizes)), 0})
            .first;
  }
  found->second.lastUse = ++uses;
  return found->second.executable;
}

Executable &SymbolicExecutable::instanceFor(const std::vector<int64_t> &sizes) {
  return *sharedInstanceFor(sizes);
}

void SymbolicExecutable::addSpecialization(
    int symbol, int64_t size, std::shared_ptr<Executable> executable) {
  specializations.push_back({symbol, size, std::move(executable)});
}

const std::shared_ptr<Executable> &
SymbolicExecutable::executableForShapes(const std::vector<Shape> &shapes) {
  std::vector<int64_t> sizes;
  try {
    sizes = bindDimSizes(prog, shapes);
  } catch (const Error &error) {
    throw Error("fusec: '" + prog.name + "': " + error.what());
  }
  for (const Specialization &special : specializations)
    if (sizes[special.symbol] == special.size)
      return special.executable;
  return sharedInstanceFor(sizes);
}

template <typename Tensors>
static std::vector<Shape> shapesOf(const std::vector<Tensors> &tensors) {
  std::vector<Shape> shapes;
  for (const Tensors &tensor : tensors)
    shapes.push_back(tensor.shape);
  return shapes;
}

void SymbolicExecutable::run(const std::vector<Tensor> &inputs,
                             std::vector<Tensor> &outputs) {
  executableForShapes(shapesOf(inputs))->run(inputs, outputs);
}

void SymbolicExecutable::runTimed(const std::vector<Tensor> &inputs,
                                  std::vector<Tensor> &outputs,
                                  std::vector<double> &stepMicros) {
  executableForShapes(shapesOf(inputs))->runTimed(inputs, outputs, stepMicros);
}

void SymbolicExecutable::enqueueOnDevice(
    const std::vector<DeviceTensor> &inputs,
    const std::vector<DeviceTensor> &outputs, void *callerStream) {
  std::shared_ptr<Executable> executable =
      executableForShapes(shapesOf(inputs));
  executable->enqueueOnDevice(inputs, outputs, callerStream);
  if (std::find(pending.begin(), pending.end(), executable) == pending.end())
    pending.push_back(std::move(executable));
}

void SymbolicExecutable::synchronize() {
  std::vector<std::shared_ptr<Executable>> queued;
  queued.swap(pending);
  for (const std::shared_ptr<Executable> &instance : queued)
    instance->synchronize();
}

ExecutableImage SymbolicExecutable::image() const {
  // Every instance runs the same kernels (they read the sizes): any
  // instance's compiled code serves the symbolic program.
  if (instances.empty())
    throw Error("fusec: '" + prog.name +
                "' has no compiled instance to take its kernels from");
  return instances.begin()->second.executable->image();
}

} // namespace fusec
