//===- ProgramBinary.cpp - A Program as bytes -----------------------------===//

#include "runtime/core/ProgramBinary.h"

#include "runtime/core/ByteStream.h"

namespace fusec {

namespace {

/// The most elements a buffer may have (the compiler's limit on tensors).
constexpr int64_t kMaxElements = int64_t(1) << 48;
/// The most bytes all of a program's buffers may hold together: far from
/// int64 overflow in the memory plan's sums.
constexpr int64_t kMaxTotalBytes = int64_t(1) << 56;

void putDType(ByteWriter &out, DType dtype) { out.putString(dtypeName(dtype)); }

DType getDType(ByteReader &in) {
  std::string name = in.getString();
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    in.fail("unknown dtype '" + name + "'");
  return *dtype;
}

/// An enum stored as one byte, checked against its last value.
template <typename Enum>
Enum getEnum(ByteReader &in, Enum last, const char *what) {
  uint8_t value = in.get<uint8_t>();
  if (value > static_cast<uint8_t>(last))
    in.fail(std::string("unknown ") + what + " " + std::to_string(value));
  return static_cast<Enum>(value);
}

template <typename Enum> void putEnum(ByteWriter &out, Enum value) {
  out.put<uint8_t>(static_cast<uint8_t>(value));
}

void putSize(ByteWriter &out, const SymbolicSize &size) {
  out.put<int64_t>(size.factor);
  out.putList(size.symbols);
}

SymbolicSize getSize(ByteReader &in) {
  SymbolicSize size;
  size.factor = in.get<int64_t>();
  size.symbols = in.getList<int>();
  return size;
}

void putOptionalSize(ByteWriter &out, const std::optional<SymbolicSize> &size) {
  out.put<uint8_t>(size.has_value());
  if (size)
    putSize(out, *size);
}

std::optional<SymbolicSize> getOptionalSize(ByteReader &in) {
  if (!in.getBool())
    return std::nullopt;
  return getSize(in);
}

void putGrid(ByteWriter &out,
             const std::optional<KernelDesc::DynamicGrid> &grid) {
  out.put<uint8_t>(grid.has_value());
  if (!grid)
    return;
  putSize(out, grid->items);
  out.put<int64_t>(grid->itemsPerBlock);
}

std::optional<KernelDesc::DynamicGrid> getGrid(ByteReader &in) {
  if (!in.getBool())
    return std::nullopt;
  KernelDesc::DynamicGrid grid;
  grid.items = getSize(in);
  grid.itemsPerBlock = in.get<int64_t>();
  return grid;
}

} // namespace

std::string encodeProgram(const Program &program) {
  ByteWriter out;
  out.putString(program.name);
  putEnum(out, program.target);
  out.putString(program.prelude);
  out.putString(program.source);
  out.put<uint64_t>(program.symbols.size());
  for (const DimSymbol &symbol : program.symbols) {
    out.putString(symbol.name);
    out.put<int64_t>(symbol.min);
    out.put<int64_t>(symbol.max);
    out.put<int64_t>(symbol.multiple);
    out.put<uint64_t>(symbol.sumOf.size());
    for (const SymbolicSize &term : symbol.sumOf)
      putSize(out, term);
  }
  out.putList(program.dimSizes);
  out.put<uint64_t>(program.buffers.size());
  for (const BufferDesc &buffer : program.buffers) {
    out.putString(buffer.name);
    putDType(out, buffer.dtype);
    out.putList(buffer.shape);
    putEnum(out, buffer.role);
    out.put<int32_t>(buffer.aliasOf);
    out.put<int32_t>(buffer.updatesInput);
    out.put<uint64_t>(buffer.symbolicShape.size());
    for (const SymbolicSize &dim : buffer.symbolicShape)
      putSize(out, dim);
  }
  out.put<uint64_t>(program.kernels.size());
  for (const KernelDesc &kernel : program.kernels) {
    out.putString(kernel.name);
    out.putStrings(kernel.ops);
    out.putString(kernel.source);
    out.putList(kernel.inputs);
    out.putList(kernel.outputs);
    out.putString(kernel.schedule);
    out.putString(kernel.scheduleParams);
    const LaunchGeometry &launch = kernel.launch;
    out.put<int64_t>(launch.gridX);
    out.put<uint32_t>(launch.gridY);
    out.put<uint32_t>(launch.blockX);
    out.put<uint32_t>(launch.blockY);
    out.put<uint32_t>(launch.sharedBytes);
    out.put<uint32_t>(launch.maxBlocksPerMultiprocessor);
    out.put<uint8_t>(launch.waitsForPredecessor);
    out.put<int64_t>(kernel.scratchBytes);
    out.put<int32_t>(kernel.scratch);
    out.put<double>(kernel.flops);
    out.put<uint8_t>(kernel.readsDimSizes);
    putGrid(out, kernel.dynamicGrid);
    putGrid(out, kernel.dynamicGridY);
  }
  out.put<uint64_t>(program.matmuls.size());
  for (const MatmulCall &call : program.matmuls) {
    for (int id : {call.a, call.b, call.output, call.bias})
      out.put<int32_t>(id);
    putDType(out, call.dtype);
    putDType(out, call.resultDType());
    for (int64_t size : {call.batch, call.m, call.n, call.k, call.batchStrideA,
                         call.batchStrideB})
      out.put<int64_t>(size);
    out.put<uint8_t>(call.transposeA);
    out.put<uint8_t>(call.transposeB);
    out.put<double>(call.alpha);
    putEnum(out, call.epilogue);
    for (const auto *size : {&call.symbolicM, &call.symbolicN, &call.symbolicK,
                             &call.symbolicBatch})
      putOptionalSize(out, *size);
  }
  out.put<uint64_t>(program.steps.size());
  for (const Step &step : program.steps) {
    putEnum(out, step.kind);
    out.put<int32_t>(step.index);
  }
  out.putList(program.inputs);
  out.putList(program.outputs);
  out.putStrings(program.outputNames);
  return std::move(out.data());
}

Program decodeProgram(std::string_view bytes, const std::string &what) {
  ByteReader in(bytes, what);
  Program program;
  program.name = in.getString();
  program.target = getEnum(in, Target::Cuda, "target");
  program.prelude = in.getString();
  program.source = in.getString();
  // The smallest encoding of each item bounds its count.
  program.symbols.resize(in.getCount(8 + 8 + 8 + 8 + 8));
  for (DimSymbol &symbol : program.symbols) {
    symbol.name = in.getString();
    symbol.min = in.get<int64_t>();
    symbol.max = in.get<int64_t>();
    symbol.multiple = in.get<int64_t>();
    symbol.sumOf.resize(in.getCount(8 + 8));
    for (SymbolicSize &term : symbol.sumOf)
      term = getSize(in);
  }
  program.dimSizes = in.getList<int64_t>();
  program.buffers.resize(in.getCount(8 + 8 + 8 + 1 + 4 + 4 + 8));
  for (BufferDesc &buffer : program.buffers) {
    buffer.name = in.getString();
    buffer.dtype = getDType(in);
    buffer.shape = in.getList<int64_t>();
    buffer.role = getEnum(in, BufferRole::Scratch, "buffer role");
    buffer.aliasOf = in.get<int32_t>();
    buffer.updatesInput = in.get<int32_t>();
    buffer.symbolicShape.resize(in.getCount(8 + 8));
    for (SymbolicSize &dim : buffer.symbolicShape)
      dim = getSize(in);
  }
  program.kernels.resize(
      in.getCount(7 * 8 + 8 + 5 * 4 + 1 + 8 + 4 + 8 + 1 + 1 + 1));
  for (KernelDesc &kernel : program.kernels) {
    kernel.name = in.getString();
    kernel.ops = in.getStrings();
    kernel.source = in.getString();
    kernel.inputs = in.getList<int>();
    kernel.outputs = in.getList<int>();
    kernel.schedule = in.getString();
    kernel.scheduleParams = in.getString();
    LaunchGeometry &launch = kernel.launch;
    launch.gridX = in.get<int64_t>();
    launch.gridY = in.get<uint32_t>();
    launch.blockX = in.get<uint32_t>();
    launch.blockY = in.get<uint32_t>();
    launch.sharedBytes = in.get<uint32_t>();
    launch.maxBlocksPerMultiprocessor = in.get<uint32_t>();
    launch.waitsForPredecessor = in.getBool();
    kernel.scratchBytes = in.get<int64_t>();
    kernel.scratch = in.get<int32_t>();
    kernel.flops = in.get<double>();
    kernel.readsDimSizes = in.getBool();
    kernel.dynamicGrid = getGrid(in);
    kernel.dynamicGridY = getGrid(in);
  }
  program.matmuls.resize(
      in.getCount(4 * 4 + 2 * 8 + 6 * 8 + 2 + 8 + 1 + 1 + 1));
  for (MatmulCall &call : program.matmuls) {
    for (int *id : {&call.a, &call.b, &call.output, &call.bias})
      *id = in.get<int32_t>();
    call.dtype = getDType(in);
    DType resultDType = getDType(in);
    if (resultDType != call.dtype)
      call.outputDType = resultDType;
    for (int64_t *size : {&call.batch, &call.m, &call.n, &call.k,
                          &call.batchStrideA, &call.batchStrideB})
      *size = in.get<int64_t>();
    call.transposeA = in.getBool();
    call.transposeB = in.getBool();
    call.alpha = in.get<double>();
    call.epilogue = getEnum(in, Epilogue::GeluTanh, "epilogue");
    for (auto *size : {&call.symbolicM, &call.symbolicN, &call.symbolicK,
                       &call.symbolicBatch})
      *size = getOptionalSize(in);
  }
  program.steps.resize(in.getCount(1 + 4));
  for (Step &step : program.steps) {
    step.kind = getEnum(in, StepKind::View, "step kind");
    step.index = in.get<int32_t>();
  }
  program.inputs = in.getList<int>();
  program.outputs = in.getList<int>();
  program.outputNames = in.getStrings();
  if (in.remaining() != 0)
    in.fail(std::to_string(in.remaining()) + " bytes after the program");
  checkProgram(program, what);
  return program;
}

void checkProgram(const Program &program, const std::string &what) {
  auto fail = [&](const std::string &why) { throw Error(what + ": " + why); };
  const std::vector<BufferDesc> &buffers = program.buffers;
  auto checkId = [&](int id, const std::string &user) {
    if (id < 0 || static_cast<size_t>(id) >= buffers.size())
      fail(user + " names buffer " + std::to_string(id) + " of " +
           std::to_string(buffers.size()));
  };
  // Symbols: ranges within the compiler's limit; every size names them,
  // with a factor that keeps it positive and below 2^48 at the maxima (so
  // that evaluating it cannot overflow).
  constexpr int64_t kMaxSymbol = int64_t(1) << 48;
  for (const DimSymbol &symbol : program.symbols)
    if (symbol.name.empty() || symbol.min < 0 || symbol.max < 1 ||
        symbol.max < symbol.min || symbol.max > kMaxSymbol ||
        symbol.multiple < 1 ||
        symbol.max / symbol.multiple * symbol.multiple < symbol.min)
      fail("symbol '" + symbol.name + "' has the range " +
           std::to_string(symbol.min) + ".." + std::to_string(symbol.max) +
           " (multiples of " + std::to_string(symbol.multiple) + ")");
  // A derived symbol sums products of the bound symbols before it, with
  // positive factors, and has the range and multiple that sum gives.
  for (size_t s = 0; s < program.symbols.size(); ++s) {
    const DimSymbol &symbol = program.symbols[s];
    if (!symbol.isDerived())
      continue;
    std::vector<DimSymbol> before(program.symbols.begin(),
                                  program.symbols.begin() + s);
    std::optional<SymbolicSize> sum = SymbolicSize::constant(0);
    for (const SymbolicSize &term : symbol.sumOf) {
      bool bound = term.factor >= 1 && term.factor <= kMaxElements &&
                   term.symbols.size() <= 8;
      for (int named : term.symbols)
        bound &= named >= 0 && static_cast<size_t>(named) < s &&
                 !program.symbols[named].isDerived();
      if (!bound)
        fail("symbol '" + symbol.name + "' sums terms out of range");
      sum = addSymbolicSizes(*sum, term, /*subtract=*/false, before);
      if (!sum)
        fail("symbol '" + symbol.name + "' sums to sizes out of range");
    }
    const DimSymbol *named = sum->symbols.size() == 1 && sum->factor == 1
                                 ? &before[static_cast<size_t>(sum->symbols[0])]
                                 : nullptr;
    if (!named || named->name != symbol.name || named->sumOf != symbol.sumOf ||
        named->min != symbol.min || named->max != symbol.max ||
        named->multiple != symbol.multiple)
      fail("symbol '" + symbol.name +
           "' is not the sum it names, or has another range");
  }
  if (!program.dimSizes.empty() && !program.symbols.empty())
    fail("a program with symbols holds no sizes of its own");
  auto checkSize = [&](const SymbolicSize &size, const std::string &user) {
    if (size.factor < 0 || size.factor > kMaxElements ||
        size.symbols.size() > 8)
      fail(user + " has a size out of range");
    int64_t atMaxima = size.factor;
    for (int symbol : size.symbols) {
      if (symbol < 0 || static_cast<size_t>(symbol) >= program.symbols.size())
        fail(user + " names symbol " + std::to_string(symbol) + " of " +
             std::to_string(program.symbols.size()));
      int64_t max = program.symbols[symbol].max;
      if (atMaxima > 0 && max > kMaxElements / atMaxima)
        fail(user + " has a size above 2^48 at the symbols' maxima");
      atMaxima *= max;
    }
  };
  for (const KernelDesc &kernel : program.kernels) {
    std::string user = "kernel '" + kernel.name + "'";
    for (const auto *grid : {&kernel.dynamicGrid, &kernel.dynamicGridY})
      if (*grid) {
        checkSize((*grid)->items, user);
        if ((*grid)->itemsPerBlock < 1)
          fail(user + " has a grid of no items per block");
      }
    if (kernel.readsDimSizes && program.symbols.empty() &&
        program.dimSizes.empty())
      fail(user + " reads sizes the program does not have");
  }
  std::vector<int64_t> maxima;
  for (const DimSymbol &symbol : program.symbols)
    maxima.push_back(symbol.max);
  for (size_t i = 0; i < program.matmuls.size(); ++i) {
    const MatmulCall &call = program.matmuls[i];
    std::string user = "matmul " + std::to_string(i);
    // The call is checked against its buffers at the maxima: no run's
    // sizes may reach further.
    for (auto [symbolic, size] : {std::pair{&call.symbolicM, call.m},
                                  {&call.symbolicN, call.n},
                                  {&call.symbolicK, call.k},
                                  {&call.symbolicBatch, call.batch}})
      if (*symbolic) {
        checkSize(**symbolic, user);
        if ((*symbolic)->evaluate(maxima) != size)
          fail(user + " has a size other than its symbolic one at the "
                      "symbols' maxima");
      }
  }

  int64_t totalBytes = 0;
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    if (!buffer.symbolicShape.empty() &&
        buffer.symbolicShape.size() != buffer.shape.size())
      fail("buffer '" + buffer.name + "' has a symbolic shape of another rank");
    for (const SymbolicSize &dim : buffer.symbolicShape)
      checkSize(dim, "buffer '" + buffer.name + "'");
    int64_t elements = 1;
    for (int64_t dim : buffer.shape) {
      if (dim < 0)
        fail("buffer '" + buffer.name + "' has a negative dim");
      if (dim > 0 && elements > kMaxElements / dim)
        fail("buffer '" + buffer.name + "' has more than 2^48 elements");
      elements *= dim;
    }
    // Each buffer is at most 2^51 bytes: the sum cannot overflow before
    // it passes the limit.
    totalBytes += buffer.byteSize();
    if (totalBytes > kMaxTotalBytes)
      fail("its buffers hold more than 2^56 bytes");
    if (buffer.updatesInput != -1 &&
        (buffer.updatesInput < 0 ||
         static_cast<size_t>(buffer.updatesInput) >= buffers.size() ||
         buffers[buffer.updatesInput].role != BufferRole::Input ||
         buffers[buffer.updatesInput].byteSize() != buffer.byteSize()))
      fail("buffer '" + buffer.name +
           "' updates something other than an input of its size");
    if (buffer.role != BufferRole::Alias)
      continue;
    if (buffer.aliasOf < 0 || static_cast<size_t>(buffer.aliasOf) >= id)
      fail("alias '" + buffer.name + "' does not name an earlier buffer");
    if (buffer.byteSize() > buffers[buffer.aliasOf].byteSize())
      fail("alias '" + buffer.name + "' is larger than '" +
           buffers[buffer.aliasOf].name + "'");
  }
  for (const KernelDesc &kernel : program.kernels) {
    std::string user = "kernel '" + kernel.name + "'";
    for (int id : kernel.inputs)
      checkId(id, user);
    for (int id : kernel.outputs)
      checkId(id, user);
    if (kernel.scratch != -1) {
      checkId(kernel.scratch, user);
      if (buffers[kernel.scratch].role != BufferRole::Scratch ||
          buffers[kernel.scratch].byteSize() < kernel.scratchBytes)
        fail(user + "'s scratch is not a scratch buffer of its size");
    }
  }
  for (size_t i = 0; i < program.matmuls.size(); ++i) {
    const MatmulCall &call = program.matmuls[i];
    std::string user = "matmul " + std::to_string(i);
    for (int id : {call.a, call.b, call.output})
      checkId(id, user);
    if (call.bias != -1)
      checkId(call.bias, user);
  }
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step &step = program.steps[i];
    size_t count = step.kind == StepKind::Kernel   ? program.kernels.size()
                   : step.kind == StepKind::Matmul ? program.matmuls.size()
                                                   : buffers.size();
    if (step.index < 0 || static_cast<size_t>(step.index) >= count ||
        (step.kind == StepKind::View &&
         buffers[step.index].role != BufferRole::Alias))
      fail("step " + std::to_string(i) + " names nothing it can run");
  }
  std::vector<bool> bound(buffers.size(), false);
  for (int id : program.inputs) {
    checkId(id, "a graph input");
    if (buffers[id].role != BufferRole::Input || bound[id])
      fail("graph input '" + buffers[id].name +
           "' is not an input buffer of its own");
    bound[id] = true;
  }
  for (size_t id = 0; id < buffers.size(); ++id)
    if (buffers[id].role == BufferRole::Input && !bound[id])
      fail("input buffer '" + buffers[id].name + "' is no graph input");
  for (int id : program.outputs)
    checkId(id, "a graph output");
  if (program.outputNames.size() != program.outputs.size())
    fail(std::to_string(program.outputs.size()) + " outputs but " +
         std::to_string(program.outputNames.size()) + " output names");
}

} // namespace fusec
