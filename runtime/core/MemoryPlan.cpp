//===- MemoryPlan.cpp - Temporaries placed by liveness -------------------===//

#include "runtime/core/MemoryPlan.h"

#include <algorithm>
#include <numeric>

namespace fusec {

namespace {

/// The buffers a step reads and writes (aliases resolved to their root).
void stepBuffers(const Program &program, const Step &step,
                 std::vector<int> &reads, std::vector<int> &writes) {
  reads.clear();
  writes.clear();
  switch (step.kind) {
  case StepKind::Kernel: {
    const KernelDesc &kernel = program.kernels[step.index];
    reads = kernel.inputs;
    writes = kernel.outputs;
    break;
  }
  case StepKind::Matmul: {
    const MatmulCall &call = program.matmuls[step.index];
    reads = {call.a, call.b};
    if (call.bias >= 0)
      reads.push_back(call.bias);
    writes = {call.output};
    break;
  }
  case StepKind::View:
    break;
  }
  auto root = [&](int id) {
    while (id >= 0 && program.buffers[id].role == BufferRole::Alias)
      id = program.buffers[id].aliasOf;
    return id;
  };
  for (int &id : reads)
    id = root(id);
  for (int &id : writes)
    id = root(id);
}

int64_t aligned(int64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

} // namespace

MemoryPlan planMemory(const Program &program) {
  size_t count = program.buffers.size();
  MemoryPlan plan;
  plan.offset.assign(count, -1);
  // Graph outputs keep their own storage (the host writes them straight
  // into the caller's tensors); an output that is a view of a temporary
  // keeps that temporary live to the end of the run instead.
  std::vector<bool> isOutput(count, false), readAtEnd(count, false);
  for (int id : program.outputs) {
    isOutput[id] = true;
    int root = id;
    while (program.buffers[root].role == BufferRole::Alias)
      root = program.buffers[root].aliasOf;
    readAtEnd[root] = true;
  }
  // Lifetimes in steps: [first write, last read].
  const int64_t never = -1;
  std::vector<int64_t> first(count, never), last(count, never);
  std::vector<int> reads, writes;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    stepBuffers(program, program.steps[s], reads, writes);
    for (int id : writes) {
      if (first[id] == never)
        first[id] = s;
      last[id] = std::max<int64_t>(last[id], s);
    }
    for (int id : reads)
      last[id] = std::max<int64_t>(last[id], s);
  }
  for (size_t id = 0; id < count; ++id)
    if (readAtEnd[id] && first[id] != never)
      last[id] = static_cast<int64_t>(program.steps.size());
  std::vector<int> placed;
  std::vector<int> candidates;
  for (size_t id = 0; id < count; ++id) {
    const BufferDesc &buffer = program.buffers[id];
    if (buffer.role == BufferRole::Alias)
      continue;
    bool inArena = buffer.role == BufferRole::Temporary && !isOutput[id] &&
                   first[id] != never;
    if (inArena)
      candidates.push_back(id);
    else
      plan.peakBytes += buffer.byteSize();
  }
  // Largest first; ties by first use, so the layout is deterministic.
  std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return program.buffers[a].byteSize() > program.buffers[b].byteSize();
  });
  for (int id : candidates) {
    int64_t size =
        aligned(std::max<int64_t>(program.buffers[id].byteSize(), 1));
    plan.unsharedBytes += size;
    // Intervals taken by buffers live at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (int other : placed)
      if (first[other] <= last[id] && first[id] <= last[other])
        taken.push_back(
            {plan.offset[other],
             plan.offset[other] + aligned(std::max<int64_t>(
                                      program.buffers[other].byteSize(), 1))});
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    plan.offset[id] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(id);
  }
  plan.peakBytes += plan.arenaBytes;
  return plan;
}

} // namespace fusec
