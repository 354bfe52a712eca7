#include "runtime/core/Program.h"

#include "runtime/core/MemoryPlan.h"

#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

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

const char *epilogueName(Epilogue epilogue) {
  switch (epilogue) {
  case Epilogue::None:
    return "none";
  case Epilogue::Relu:
    return "relu";
  case Epilogue::GeluTanh:
    return "gelu_tanh";
  }
  return "?";
}

/// The shortest spelling that reads back as `value`: "1", "0.1", "1e-30".
static std::string formatNumber(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

static std::string bufferName(const std::vector<BufferDesc> &buffers, int id) {
  return id >= 0 && static_cast<size_t>(id) < buffers.size() ? buffers[id].name
                                                             : "?";
}

std::string MatmulCall::describe(const std::vector<BufferDesc> &buffers) const {
  bool batched = batch != 1;
  auto matrix = [&](int id, bool transposed, bool hasBatch, int64_t rows,
                    int64_t cols) {
    std::string text = bufferName(buffers, id) + (transposed ? "^T[" : "[");
    if (hasBatch)
      text += std::to_string(batch) + "x";
    return text + std::to_string(rows) + "x" + std::to_string(cols) + "]";
  };
  std::string text =
      std::string("matmul ") + dtypeName(dtype) +
      (resultDType() != dtype ? std::string(" -> ") + dtypeName(resultDType())
                              : std::string()) +
      ": " + matrix(output, false, batched, m, n) + " = " +
      matrix(a, transposeA, batched && batchStrideA != 0, m, k) + " @ " +
      matrix(b, transposeB, batched && batchStrideB != 0, k, n);
  if (batched)
    text += ", batch " + std::to_string(batch) + " (strides " +
            std::to_string(batchStrideA) + " and " +
            std::to_string(batchStrideB) + ")";
  text += ", alpha " + formatNumber(alpha);
  if (bias >= 0)
    text += ", bias " + bufferName(buffers, bias);
  if (epilogue != Epilogue::None)
    text += std::string(", epilogue ") + epilogueName(epilogue);
  return text;
}

std::string matmulStepName(const MatmulCall &call, size_t step) {
  return "matmul step " + std::to_string(step) + " (" + dtypeName(call.dtype) +
         " " + std::to_string(call.m) + "x" + std::to_string(call.n) + "x" +
         std::to_string(call.k) +
         (call.batch != 1 ? ", batch " + std::to_string(call.batch) : "") + ")";
}

static int64_t operandExtent(const MatmulCall &call, int64_t rows, int64_t cols,
                             int64_t batchStride) {
  if (rows * cols == 0 || call.batch == 0)
    return 0;
  if (call.batch == 1 || batchStride == 0)
    return rows * cols;
  return (call.batch - 1) * batchStride + rows * cols;
}

int64_t matmulExtentA(const MatmulCall &call) {
  return operandExtent(call, call.m, call.k, call.batchStrideA);
}

int64_t matmulExtentB(const MatmulCall &call) {
  return operandExtent(call, call.k, call.n, call.batchStrideB);
}

void checkMatmulCall(const MatmulCall &call,
                     const std::vector<BufferDesc> &buffers, size_t step) {
  auto fail = [&](const std::string &why) {
    throw Error("fusec: internal error: " + matmulStepName(call, step) + ": " +
                why);
  };
  if (call.dtype != DType::F32 && call.dtype != DType::F64 &&
      call.dtype != DType::F16 && call.dtype != DType::BF16)
    fail(std::string("no matmul on ") + dtypeName(call.dtype));
  if (call.resultDType() != call.dtype &&
      (call.resultDType() != DType::F32 ||
       (call.dtype != DType::F16 && call.dtype != DType::BF16)))
    fail(std::string("no ") + dtypeName(call.resultDType()) +
         " result of a matmul on " + dtypeName(call.dtype));
  if (call.batch < 0 || call.m < 0 || call.n < 0 || call.k < 0 ||
      call.batchStrideA < 0 || call.batchStrideB < 0)
    fail("a negative size or stride");
  if (call.k == 0 && (call.bias >= 0 || call.epilogue != Epilogue::None))
    fail("a bias or an epilogue with k == 0");
  auto operand = [&](int id, const char *role, int64_t elements, DType dtype) {
    if (id < 0 || static_cast<size_t>(id) >= buffers.size())
      fail(std::string("no buffer ") + std::to_string(id) + " for " + role);
    const BufferDesc &buffer = buffers[id];
    if (buffer.dtype != dtype)
      fail(std::string(role) + " '" + buffer.name + "' is " +
           dtypeName(buffer.dtype));
    if (numElements(buffer.shape) < elements)
      fail(std::string(role) + " '" + buffer.name + "' holds " +
           std::to_string(numElements(buffer.shape)) + " elements, the call " +
           "reaches " + std::to_string(elements));
  };
  operand(call.a, "A", matmulExtentA(call), call.dtype);
  operand(call.b, "B", matmulExtentB(call), call.dtype);
  operand(call.output, "the output", call.batch * call.m * call.n,
          call.resultDType());
  if (call.bias >= 0)
    operand(call.bias, "the bias", call.n, call.resultDType());
  BufferRole role = buffers[call.output].role;
  if (role == BufferRole::Input || role == BufferRole::Constant)
    fail("the output '" + buffers[call.output].name + "' is read-only");
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
  for (const KernelDesc &kernel : kernels) {
    json entry = {{"name", kernel.name}, {"schedule", kernel.schedule}};
    if (!kernel.scheduleParams.empty())
      entry["schedule_params"] = kernel.scheduleParams;
    entry["ops"] = kernel.ops;
    entry["inputs"] = names(kernel.inputs);
    entry["outputs"] = names(kernel.outputs);
    // It may start while the kernel before it ends (LaunchGeometry).
    if (kernel.launch.waitsForPredecessor)
      entry["waits_for_predecessor"] = true;
    if (kernel.flops > 0)
      entry["flops"] = kernel.flops;
    plan["kernels"].push_back(entry);
  }
  if (isSymbolic()) {
    // The kernels read these sizes at run time; the memory plan below and
    // each buffer's "shape" are at the symbols' maxima.
    plan["symbols"] = json::array();
    for (const DimSymbol &symbol : symbols) {
      json entry = {
          {"name", symbol.name}, {"min", symbol.min}, {"max", symbol.max}};
      if (symbol.multiple != 1)
        entry["multiple"] = symbol.multiple;
      if (symbol.isDerived())
        entry["derived"] = true; // computed from the others, not bound
      plan["symbols"].push_back(entry);
    }
  }
  MemoryPlan memory = planMemory(*this);
  plan["memory"] = {{"peak_bytes", memory.peakBytes},
                    {"temporary_arena_bytes", memory.arenaBytes},
                    {"temporary_bytes_unshared", memory.unsharedBytes}};
  plan["buffers"] = json::array();
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    json entry = {{"name", buffer.name},
                  {"dtype", dtypeName(buffer.dtype)},
                  {"shape", buffer.shape},
                  {"role", roleName(buffer.role)}};
    if (buffer.role == BufferRole::Alias)
      entry["alias_of"] = buffers[buffer.aliasOf].name;
    if (buffer.updatesInput >= 0)
      entry["updates_input"] = buffers[buffer.updatesInput].name;
    if (!buffer.symbolicShape.empty())
      entry["symbolic_shape"] =
          formatSymbolicShape(buffer.symbolicShape, symbols);
    if (memory.offset[id] >= 0)
      entry["arena_offset"] = memory.offset[id];
    plan["buffers"].push_back(entry);
  }
  // A matmul's size: its expression of the symbols, else the number.
  auto size = [&](const std::optional<SymbolicSize> &symbolic, int64_t value) {
    return symbolic ? json(symbolic->format(symbols)) : json(value);
  };
  plan["steps"] = json::array();
  for (const Step &step : steps) {
    switch (step.kind) {
    case StepKind::Kernel:
      plan["steps"].push_back({{"kernel", kernels[step.index].name}});
      break;
    case StepKind::Matmul: {
      const MatmulCall &call = matmuls[step.index];
      std::vector<int> operands = {call.a, call.b};
      if (call.bias >= 0)
        operands.push_back(call.bias);
      plan["steps"].push_back(
          {{"matmul", call.describe(buffers)},
           {"inputs", names(operands)},
           {"outputs", names({call.output})},
           {"dtype", dtypeName(call.dtype)},
           {"output_dtype", dtypeName(call.resultDType())},
           {"m", size(call.symbolicM, call.m)},
           {"n", size(call.symbolicN, call.n)},
           {"k", size(call.symbolicK, call.k)},
           {"batch", size(call.symbolicBatch, call.batch)},
           {"batch_stride_a", call.batchStrideA},
           {"batch_stride_b", call.batchStrideB},
           {"transpose_a", call.transposeA},
           {"transpose_b", call.transposeB},
           {"alpha", call.alpha},
           {"epilogue", epilogueName(call.epilogue)},
           {"bias", call.bias >= 0 ? json(buffers[call.bias].name) : json()}});
      break;
    }
    case StepKind::View: {
      int root = step.index;
      while (buffers[root].role == BufferRole::Alias &&
             buffers[root].aliasOf >= 0)
        root = buffers[root].aliasOf;
      plan["steps"].push_back(
          {{"view", buffers[step.index].name}, {"of", buffers[root].name}});
      break;
    }
    }
  }
  return plan.dump(2);
}

/// `source` with each whole identifier `name` replaced by `placeholder`.
static std::string replaceIdentifier(const std::string &source,
                                     const std::string &name,
                                     const std::string &placeholder) {
  auto isIdentifierChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  std::string result;
  size_t done = 0;
  for (size_t at = source.find(name); at != std::string::npos;
       at = source.find(name, at + name.size())) {
    bool whole = (at == 0 || !isIdentifierChar(source[at - 1])) &&
                 (at + name.size() == source.size() ||
                  !isIdentifierChar(source[at + name.size()]));
    if (!whole)
      continue;
    result.append(source, done, at - done).append(placeholder);
    done = at + name.size();
  }
  return result.append(source, done, std::string::npos);
}

CompileUnits splitIntoCompileUnits(const Program &program, size_t maxUnits) {
  CompileUnits units;
  const std::vector<KernelDesc> &kernels = program.kernels;
  if (kernels.empty())
    return units;
  bool ownSources =
      std::none_of(kernels.begin(), kernels.end(),
                   [](const KernelDesc &k) { return k.source.empty(); });
  if (!ownSources) {
    units.sources = {program.source};
    units.functions.resize(1);
    for (const KernelDesc &kernel : kernels) {
      units.functions[0].push_back(kernel.name);
      units.unitOf.push_back(0);
      units.functionOf.push_back(kernel.name);
    }
    return units;
  }
  // Kernel names are identifiers no generated code uses otherwise.
  std::map<std::string, size_t> firstWithCode; // code without name -> kernel
  std::vector<size_t> distinct;                // kernels defining a function
  std::vector<size_t> owner(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::string code = replaceIdentifier(kernels[k].source, kernels[k].name,
                                         "fusec_kernel_name");
    auto [it, inserted] = firstWithCode.try_emplace(std::move(code), k);
    if (inserted)
      distinct.push_back(k);
    owner[k] = it->second;
  }
  size_t count = std::clamp<size_t>(maxUnits, 1, distinct.size());
  units.sources.assign(count, program.prelude);
  units.functions.resize(count);
  // Longest first, each to the unit with the least source so far (the
  // lowest index on a tie): the units compile at once, so the largest one
  // sets the time, and a kernel's compile time grows with its source.
  std::vector<size_t> byLength = distinct;
  std::stable_sort(byLength.begin(), byLength.end(), [&](size_t a, size_t b) {
    return kernels[a].source.size() > kernels[b].source.size();
  });
  std::vector<size_t> unitOfKernel(kernels.size()), load(count, 0);
  for (size_t k : byLength) {
    size_t unit = std::min_element(load.begin(), load.end()) - load.begin();
    load[unit] += kernels[k].source.size();
    unitOfKernel[k] = unit;
  }
  // Each unit's functions in program order.
  for (size_t k : distinct) {
    units.sources[unitOfKernel[k]] += "\n" + kernels[k].source;
    units.functions[unitOfKernel[k]].push_back(kernels[k].name);
  }
  for (size_t k = 0; k < kernels.size(); ++k) {
    units.unitOf.push_back(unitOfKernel[owner[k]]);
    units.functionOf.push_back(kernels[owner[k]].name);
  }
  return units;
}

std::vector<int64_t> bindDimSizes(const Program &program,
                                  const std::vector<Shape> &inputShapes) {
  // Runs bind on every call: messages are written only for an error.
  constexpr int64_t kUnbound = -1;
  std::vector<int64_t> sizes(program.symbols.size(), kUnbound);
  std::vector<std::pair<size_t, size_t>> boundBy(program.symbols.size());
  std::vector<std::pair<size_t, size_t>> checkedLater;
  if (inputShapes.size() != program.inputs.size())
    throw Error("the model takes " + std::to_string(program.inputs.size()) +
                " inputs, " + std::to_string(inputShapes.size()) +
                " were given");
  auto where = [&](size_t input, size_t dim) {
    return "input '" + program.buffers[program.inputs[input]].name + "' dim " +
           std::to_string(dim);
  };
  for (size_t i = 0; i < inputShapes.size(); ++i) {
    const BufferDesc &input = program.buffers[program.inputs[i]];
    const Shape &shape = inputShapes[i];
    if (input.symbolicShape.empty())
      continue; // static: the executable checks it
    auto declared = [&] {
      return formatSymbolicShape(input.symbolicShape, program.symbols);
    };
    if (shape.size() != input.symbolicShape.size())
      throw Error("input '" + input.name + "' has shape " + formatShape(shape) +
                  ", the model takes rank " +
                  std::to_string(input.symbolicShape.size()) + " (" +
                  declared() + ")");
    for (size_t d = 0; d < shape.size(); ++d) {
      const SymbolicSize &dim = input.symbolicShape[d];
      if (dim.isStatic()) {
        if (shape[d] != dim.factor)
          throw Error(where(i, d) + " is " + std::to_string(shape[d]) +
                      ", the model takes " + std::to_string(dim.factor) +
                      " (shape " + declared() + ")");
        continue;
      }
      // A product or a sum binds nothing: checked once its symbols are.
      if (dim.factor != 1 || dim.symbols.size() != 1 ||
          program.symbols[dim.symbols[0]].isDerived()) {
        checkedLater.push_back({i, d});
        continue;
      }
      int symbol = dim.symbols[0];
      const DimSymbol &named = program.symbols[symbol];
      auto label = [&] { return where(i, d) + " ('" + named.name + "')"; };
      if (shape[d] < named.min || shape[d] > named.max)
        throw Error(label() + " is " + std::to_string(shape[d]) +
                    ", outside its range " + std::to_string(named.min) + ".." +
                    std::to_string(named.max));
      if (shape[d] % named.multiple != 0)
        throw Error(label() + " is " + std::to_string(shape[d]) +
                    ", not a multiple of " + std::to_string(named.multiple) +
                    " as its range declares");
      if (sizes[symbol] != kUnbound && sizes[symbol] != shape[d])
        throw Error(label() + " is " + std::to_string(shape[d]) + ", but " +
                    where(boundBy[symbol].first, boundBy[symbol].second) +
                    " made '" + named.name + "' " +
                    std::to_string(sizes[symbol]));
      sizes[symbol] = shape[d];
      boundBy[symbol] = {i, d};
    }
  }
  for (size_t s = 0; s < sizes.size(); ++s)
    if (sizes[s] == kUnbound && !program.symbols[s].isDerived())
      throw Error("no input's shape binds dim '" + program.symbols[s].name +
                  "'");
  evaluateDerivedSymbols(program.symbols, sizes);
  for (auto [i, d] : checkedLater) {
    const SymbolicSize &dim =
        program.buffers[program.inputs[i]].symbolicShape[d];
    int64_t size = dim.evaluate(sizes);
    if (inputShapes[i][d] != size)
      throw Error(where(i, d) + " ('" + dim.format(program.symbols) + "') is " +
                  std::to_string(inputShapes[i][d]) +
                  ", but the sizes bound make it " + std::to_string(size));
  }
  return sizes;
}

Program instantiateProgram(const Program &program,
                           const std::vector<int64_t> &sizes) {
  Program instance = program;
  instance.symbols.clear();
  instance.dimSizes = sizes;
  for (BufferDesc &buffer : instance.buffers) {
    if (buffer.symbolicShape.empty())
      continue;
    buffer.shape = evaluateShape(buffer.symbolicShape, sizes);
    buffer.symbolicShape.clear();
  }
  // At most the grid at the maxima: a grid-stride kernel's cap holds.
  auto blocks = [&](const KernelDesc::DynamicGrid &grid, int64_t atMaxima) {
    int64_t items = grid.items.evaluate(sizes);
    return std::clamp<int64_t>((items + grid.itemsPerBlock - 1) /
                                   grid.itemsPerBlock,
                               1, std::max<int64_t>(1, atMaxima));
  };
  for (KernelDesc &kernel : instance.kernels) {
    if (kernel.dynamicGrid)
      kernel.launch.gridX = blocks(*kernel.dynamicGrid, kernel.launch.gridX);
    if (kernel.dynamicGridY)
      kernel.launch.gridY = static_cast<unsigned>(
          blocks(*kernel.dynamicGridY, kernel.launch.gridY));
    kernel.dynamicGrid.reset();
    kernel.dynamicGridY.reset();
  }
  for (MatmulCall &call : instance.matmuls) {
    for (auto [symbolic, size] : {std::pair{&call.symbolicM, &call.m},
                                  {&call.symbolicN, &call.n},
                                  {&call.symbolicK, &call.k},
                                  {&call.symbolicBatch, &call.batch}}) {
      if (*symbolic)
        *size = (*symbolic)->evaluate(sizes);
      symbolic->reset();
    }
    // A batch stride is 0 (one matrix for every batch) or a whole matrix.
    if (call.batchStrideA != 0)
      call.batchStrideA = call.m * call.k;
    if (call.batchStrideB != 0)
      call.batchStrideB = call.k * call.n;
  }
  return instance;
}

} // namespace fusec
