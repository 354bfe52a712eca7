//===- Compiler.cpp - Wiring the stages together -------------------------===//

#include "compiler/Compiler.h"

#include "compiler/Driver.h"
#include "compiler/PipelineOptions.h"
#include "frontends/Onnx.h"

#include <chrono>
#include <functional>

#include "codegen/Codegen.h"
#include "frontends/Importer.h"
#include "ir/FuseDialect.h"
#include "ir/SymbolicDims.h"
#include "passes/Passes.h"
#include "runtime/Package.h"
#include "runtime/SymbolicExecutable.h"
#include "runtime/core/Trace.h"
#include "runtime/cuda/CudaApi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <iostream>
#include <mutex>

using namespace mlir;

namespace fusec {

namespace {

/// The first file:line:col inside a location.
FileLineColLoc fileLocOf(Location loc) {
  FileLineColLoc found;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      found = file;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// "FILE: node 'NAME': error: REASON" for ops of imported graphs,
/// "FILE:LINE:COL: error: REASON" for .mlir files.
std::string formatDiagnostic(Diagnostic &diagnostic) {
  const char *severity = "error";
  if (diagnostic.getSeverity() == DiagnosticSeverity::Remark)
    severity = "remark";
  else if (diagnostic.getSeverity() == DiagnosticSeverity::Warning)
    severity = "warning";
  else if (diagnostic.getSeverity() == DiagnosticSeverity::Note)
    severity = "note";
  std::string where;
  FileLineColLoc file = fileLocOf(diagnostic.getLocation());
  std::string node = fuse::nodeNameOf(diagnostic.getLocation());
  if (file && !node.empty())
    where = file.getFilename().str() + ": node '" + node + "'";
  else if (file && file.getLine() == 0)
    where = file.getFilename().str();
  else if (file)
    where = file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn());
  else
    where = node.empty() ? "<unknown>" : "node '" + node + "'";
  return where + ": " + severity + ": " + diagnostic.str();
}

/// Collects errors while alive; throws them as one fusec::Error on demand.
class DiagnosticCollector {
public:
  DiagnosticCollector(MLIRContext &context,
                      const std::function<void(const std::string &)> &onRemark)
      : handler(&context, [this, &onRemark](Diagnostic &diagnostic) {
          if (diagnostic.getSeverity() == DiagnosticSeverity::Error) {
            errors +=
                (errors.empty() ? "" : "\n") + formatDiagnostic(diagnostic);
            for (Diagnostic &note : diagnostic.getNotes())
              errors += "\n" + formatDiagnostic(note);
          } else if (onRemark) {
            onRemark(formatDiagnostic(diagnostic));
          }
          return success();
        }) {}

  [[noreturn]] void fail(const std::string &fallback) {
    throw Error(errors.empty() ? fallback : errors);
  }

private:
  std::string errors;
  ScopedDiagnosticHandler handler;
};

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Records each pass's wall time (what `fusec-bench` reports for region
/// formation).
class PassTimer : public PassInstrumentation {
public:
  explicit PassTimer(std::vector<std::pair<std::string, double>> &millis)
      : millis(millis) {}
  void runBeforePass(Pass *, Operation *) override {
    start = std::chrono::steady_clock::now();
  }
  void runAfterPass(Pass *pass, Operation *) override { record(pass); }
  void runAfterPassFailed(Pass *pass, Operation *) override { record(pass); }

private:
  void record(Pass *pass) {
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    millis.push_back({pass->getArgument().str(), elapsed.count()});
  }
  std::vector<std::pair<std::string, double>> &millis;
  std::chrono::steady_clock::time_point start;
};

/// Records each pass run as a slice of the trace. Pass runs nest (a
/// pipeline adaptor holds the passes it runs on each function).
class PassTracer : public PassInstrumentation {
public:
  void runBeforePass(Pass *, Operation *) override {
    starts.push_back(trace::nowMicros());
  }
  void runAfterPass(Pass *pass, Operation *op) override { record(pass, op); }
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    record(pass, op, /*failed=*/true);
  }

private:
  void record(Pass *pass, Operation *op, bool failed = false) {
    double start = starts.back();
    starts.pop_back();
    StringRef name = pass->getArgument();
    if (name.empty()) // an adaptor running a nested pipeline on each op
      name = pass->getName();
    name.consume_front("mlir::detail::");
    trace::Args args = {{"op", op->getName().getStringRef().str()}};
    if (failed)
      args.push_back({"failed", "yes"});
    trace::slice(name.str(), "pass", start, trace::nowMicros() - start,
                 std::move(args));
  }
  std::vector<double> starts;
};

/// The most elements a tensor of a model may have: the JSON reader's limit,
/// far from int64 overflow in every size and index computation.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Whether a static shape has more than kMaxElements elements, computed
/// without overflowing (ShapedType::getNumElements would).
bool tooManyElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasRank())
    return false;
  int64_t elements = 1;
  for (int64_t dim : shaped.getShape()) {
    if (ShapedType::isDynamic(dim))
      continue; // the verifiers reject dynamic shapes
    if (dim > kMaxElements / std::max<int64_t>(elements, 1))
      return true;
    elements *= std::max<int64_t>(dim, 1);
  }
  return false;
}

/// A .mlir model's sizes, checked as the JSON and ONNX readers check
/// theirs before anything downstream computes a size from them.
LogicalResult checkTensorSizes(ModuleOp module) {
  WalkResult walked = module.walk([](Operation *op) {
    SmallVector<Type> types(op->getResultTypes());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          types.push_back(argument.getType());
    if (auto function = dyn_cast<func::FuncOp>(op)) {
      llvm::append_range(types, function.getFunctionType().getInputs());
      llvm::append_range(types, function.getFunctionType().getResults());
    }
    for (Type type : types)
      if (tooManyElements(type)) {
        op->emitError() << "type " << type << " has more than 2^48 elements";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walked.wasInterrupted());
}

/// Runs the stages after the frontend on `makeModule`'s module.
template <typename MakeModule>
Lowering lower(const CompileOptions &options, bool captureIR, Stage stopAfter,
               MakeModule makeModule) {
  static std::once_flag registered;
  std::call_once(registered, [] { fuse::registerAllFusePasses(); });
  std::unique_ptr<MLIRContext> ownedContext = fuse::newFuseContext();
  MLIRContext &context = *ownedContext;
  DiagnosticCollector diagnostics(context, options.onRemark);

  OwningOpRef<ModuleOp> module;
  {
    trace::Scope scope("import", "import");
    module = makeModule(context);
  }
  if (!module)
    diagnostics.fail("fusec: the model could not be imported");
  // Every op's symbolic dims are derived before any pass runs, so that an
  // op that cannot take them yet is reported at its node.
  // The sizes of dims taken as data (fuse.dim_of) become constants or
  // symbolic sizes here.
  for (auto function : module->getOps<func::FuncOp>()) {
    FailureOr<fuse::SymbolicDims> dims = fuse::SymbolicDims::analyze(function);
    if (failed(dims) || failed(fuse::resolveDimSizes(function, *dims)))
      diagnostics.fail("fusec: the model's symbolic dims are not supported");
  }
  Lowering lowering;
  if (captureIR)
    lowering.importedIR = printModule(*module);
  if (stopAfter == Stage::Imported)
    return lowering;

  PassManager pm(&context);
  pm.addInstrumentation(std::make_unique<PassTimer>(lowering.passMillis));
  if (trace::enabled())
    pm.addInstrumentation(std::make_unique<PassTracer>());
  if (failed(fuse::buildDefaultPipeline(pm, pipelineOptionsFor(options))))
    diagnostics.fail("fusec: internal error: bad default pipeline");
  {
    trace::Scope passes("passes", "pipeline");
    if (failed(pm.run(*module)))
      diagnostics.fail("fusec: the fusion pipeline failed");
  }
  if (captureIR)
    lowering.fusedIR = printModule(*module);
  if (stopAfter == Stage::Fused)
    return lowering;

  trace::Scope codegen("codegen", "codegen");
  std::vector<fuse::KernelSchedule> schedules;
  FailureOr<Program> program = fuse::buildProgram(
      *module, resolveTarget(options), options.fastMath,
      resolveTarget(options) == Target::Cuda ? resolveGpuArch(options)
                                             : std::string(),
      captureIR ? &schedules : nullptr);
  if (failed(program))
    diagnostics.fail("fusec: code generation failed");
  lowering.program = std::move(*program);
  for (const fuse::KernelSchedule &schedule : schedules)
    lowering.schedules += schedule.kernel + ": " + schedule.kind +
                          (schedule.params.empty() ? "" : " ") +
                          schedule.params + "\n";
  return lowering;
}

} // namespace

CompiledModel::CompiledModel(std::shared_ptr<Executable> executable)
    : executable(std::move(executable)) {}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor> &inputs) {
  return executable->run(inputs);
}

void CompiledModel::run(const std::vector<Tensor> &inputs,
                        std::vector<Tensor> &outputs) {
  executable->run(inputs, outputs);
}

void CompiledModel::runOnDevice(const std::vector<DeviceTensor> &inputs,
                                const std::vector<DeviceTensor> &outputs) {
  executable->runOnDevice(inputs, outputs);
}

void CompiledModel::enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                                    const std::vector<DeviceTensor> &outputs,
                                    void *stream) {
  executable->enqueueOnDevice(inputs, outputs, stream);
}

void CompiledModel::synchronize() { executable->synchronize(); }

const Program &CompiledModel::program() const { return executable->program(); }

Executable &executableOf(CompiledModel &model) { return *model.executable; }
std::shared_ptr<Executable> executableShared(const CompiledModel &model) {
  return model.executable;
}

void CompiledModel::save(const std::string &path) const {
  savePackage(program(), executable->image(), path);
}

CompiledModel load(const std::string &path) {
  return CompiledModel(loadPackage(path));
}

std::vector<KernelInfo> CompiledModel::kernels() const {
  std::vector<KernelInfo> result;
  for (const KernelDesc &kernel : program().kernels)
    result.push_back({kernel.name, kernel.ops, kernel.source});
  return result;
}

Lowering lowerGraph(const Graph &graph, const CompileOptions &options,
                    bool captureIR, Stage stopAfter) {
  // A "shape" attribute (reshape, broadcast_to) is held to the same 2^48
  // elements as every tensor, before the importer multiplies its dims
  // (fuzz-onnx: a Reshape to [8e18, 1e14, -1] overflowed int64).
  for (const GraphNode &node : graph.nodes) {
    auto shape = node.attrs.find("shape");
    if (shape == node.attrs.end() ||
        !std::holds_alternative<std::vector<int64_t>>(shape->second))
      continue;
    int64_t elements = 1;
    for (int64_t dim : std::get<std::vector<int64_t>>(shape->second)) {
      if (dim > 0 && dim > kMaxElements / elements)
        throw Error((graph.sourcePath.empty() ? "" : graph.sourcePath + ": ") +
                    "node '" + node.name +
                    "': error: attr \"shape\" has more than 2^48 elements");
      elements *= std::max<int64_t>(dim, 1);
    }
  }
  return lower(options, captureIR, stopAfter, [&](MLIRContext &context) {
    return fuse::importGraph(graph, &context, options.dimRanges);
  });
}

namespace {

/// Reads a model file into a graph, as a slice of the trace.
template <typename Read> Graph readTraced(const std::string &path, Read read) {
  trace::Scope scope("read " + path, "import");
  return read();
}

} // namespace

void addSpecializations(
    CompiledModel &model, const CompileOptions &options,
    const std::function<Program(const CompileOptions &)> &lower) {
  if (options.specializations.empty())
    return;
  const Program &program = model.program();
  auto *symbolic = dynamic_cast<SymbolicExecutable *>(&executableOf(model));
  CompileOptions general = options;
  general.specializations.clear();
  for (const auto &[name, sizes] : options.specializations) {
    auto symbol = std::find_if(
        program.symbols.begin(), program.symbols.end(),
        [&](const DimSymbol &candidate) { return candidate.name == name; });
    if (!symbolic || symbol == program.symbols.end())
      throw Error("fusec: '" + program.name + "': --specialize names '" + name +
                  "', which is not a symbolic dim of the model");
    if (symbol->isDerived())
      throw Error("fusec: '" + program.name + "': --specialize names '" + name +
                  "', a sum of other dims: specialize those instead");
    for (int64_t size : sizes) {
      if (size < symbol->min || size > symbol->max)
        throw Error("fusec: '" + program.name + "': --specialize " + name +
                    "=" + std::to_string(size) + " is outside its range " +
                    std::to_string(symbol->min) + ".." +
                    std::to_string(symbol->max));
      CompileOptions fixed = general;
      fixed.dimRanges[name] = {name, size, size};
      CompiledModel special = load(lower(fixed), fixed);
      symbolic->addSpecialization(
          static_cast<int>(symbol - program.symbols.begin()), size,
          executableShared(special));
    }
  }
}

namespace {

/// Lowers a .mlir model that `parse` reads, its sizes checked.
template <typename Parse>
Lowering lowerMlir(const CompileOptions &options, bool captureIR,
                   Stage stopAfter, Parse parse) {
  return lower(options, captureIR, stopAfter, [&](MLIRContext &context) {
    OwningOpRef<ModuleOp> module = parse(context);
    if (module && failed(checkTensorSizes(*module)))
      return OwningOpRef<ModuleOp>();
    return module;
  });
}

OnnxOptions onnxOptions(const CompileOptions &options) {
  OnnxOptions onnx;
  onnx.inputShapes = options.inputShapes;
  onnx.dimRanges = options.dimRanges;
  return onnx;
}

} // namespace

std::optional<ModelFormat> modelFormatOf(const std::string &path) {
  if (StringRef(path).ends_with(".json"))
    return ModelFormat::Json;
  if (StringRef(path).ends_with(".mlir"))
    return ModelFormat::Mlir;
  if (isOnnxTextPath(path))
    return ModelFormat::OnnxText;
  if (isOnnxModelPath(path))
    return ModelFormat::Onnx;
  return std::nullopt;
}

Lowering lowerFile(const std::string &path, const CompileOptions &options,
                   bool captureIR, Stage stopAfter) {
  std::optional<ModelFormat> format = modelFormatOf(path);
  if (!format)
    throw Error(path + ": error: unknown model format (expected .json, "
                       ".mlir, .onnx or .onnxtxt)");
  switch (*format) {
  case ModelFormat::Json:
    return lowerGraph(readTraced(path,
                                 [&] {
                                   return readJsonGraph(path,
                                                        options.inputShapes,
                                                        options.dimRanges);
                                 }),
                      options, captureIR, stopAfter);
  case ModelFormat::Mlir:
    return lowerMlir(options, captureIR, stopAfter, [&](MLIRContext &context) {
      return fuse::parseMlirFile(path, &context);
    });
  case ModelFormat::Onnx:
  case ModelFormat::OnnxText:
    return lowerGraph(
        readTraced(path,
                   [&] { return readOnnxGraph(path, onnxOptions(options)); }),
        options, captureIR, stopAfter);
  }
  llvm_unreachable("every model format is handled");
}

Lowering lowerBuffer(const std::string &contents, ModelFormat format,
                     const std::string &name, const CompileOptions &options,
                     bool captureIR, Stage stopAfter) {
  switch (format) {
  case ModelFormat::Json:
    return lowerGraph(
        parseJsonGraph(contents, name, options.inputShapes, options.dimRanges),
        options, captureIR, stopAfter);
  case ModelFormat::Mlir:
    return lowerMlir(options, captureIR, stopAfter, [&](MLIRContext &context) {
      return fuse::parseMlirText(contents, name, &context);
    });
  case ModelFormat::Onnx:
  case ModelFormat::OnnxText:
    return lowerGraph(parseOnnxGraph(contents, name,
                                     format == ModelFormat::OnnxText,
                                     onnxOptions(options)),
                      options, captureIR, stopAfter);
  }
  llvm_unreachable("every model format is handled");
}

/// f32/f64 prefill on CUDA cores (the warp-per-row kernel) loses to its
/// matmul / softmax / matmul chain at every length measured: on an H200,
/// 12 heads of 64, causal, B x T = 4096 (fusec-bench
/// --case=attention_prefill_f32_d64_T*_causal), fused / chain at T = 32:
/// 124 / 62 us, T = 128: 401 / 91, T = 1024: 3029 / 494. Decode (the
/// split-keys kernel, up to 8 query rows) still forms.
constexpr int64_t kCudaWideAttentionMaxQueryRows = 8;

fuse::PipelineOptions pipelineOptionsFor(const CompileOptions &options) {
  fuse::PipelineOptions pipeline;
  pipeline.fuse = options.fuse;
  pipeline.attention = options.attention;
  pipeline.libraryEpilogues =
      options.fuse && resolveTarget(options) == Target::Cuda;
  pipeline.padLibraryColumns = resolveTarget(options) == Target::Cuda;
  if (resolveTarget(options) == Target::Cuda)
    pipeline.maxWideAttentionQueryRows = kCudaWideAttentionMaxQueryRows;
  if (options.precision)
    pipeline.precision = dtypeName(*options.precision);
  pipeline.keepF32Nodes = options.keepF32Nodes;
  return pipeline;
}

Target resolveTarget(const CompileOptions &options) {
  if (options.target)
    return *options.target;
  return cuda::unavailableReason().empty() ? Target::Cuda : Target::Cpu;
}

std::string resolveGpuArch(const CompileOptions &options) {
  if (!options.gpuArch.empty())
    return options.gpuArch;
  return cuda::unavailableReason().empty() ? cuda::deviceArch() : "sm_90a";
}

namespace {

CudaOptions cudaOptionsOf(const CompileOptions &options) {
  CudaOptions cudaOptions;
  cudaOptions.arch = options.gpuArch;
  cudaOptions.fastMath = options.fastMath;
  cudaOptions.tf32 = options.tf32;
  cudaOptions.cudaGraph = options.cudaGraph;
  cudaOptions.kernelOverlap = options.kernelOverlap;
  cudaOptions.zeroCopyMaxBytes = options.zeroCopyMaxBytes;
  return cudaOptions;
}

} // namespace

CompiledModel load(Program program, const CompileOptions &options) {
  trace::Scope scope("load", "load", {{"model", program.name}});
  std::shared_ptr<KernelCache> cache =
      KernelCache::forDirectory(options.cacheDir);
  CudaOptions cudaOptions = cudaOptionsOf(options);
  if (!program.isSymbolic())
    return CompiledModel(
        makeExecutable(std::move(program), std::move(cache), cudaOptions));
  // The kernels serve every size; they compile now, with the instance at the
  // symbols' minima, and each later instance finds them in the cache.
  std::vector<int64_t> minima;
  for (const DimSymbol &symbol : program.symbols)
    minima.push_back(symbol.min);
  evaluateDerivedSymbols(program.symbols, minima);
  auto executable = std::make_shared<SymbolicExecutable>(
      std::move(program), [cache, cudaOptions](Program instance) {
        return makeExecutable(std::move(instance), cache, cudaOptions);
      });
  executable->instanceFor(minima);
  return CompiledModel(std::move(executable));
}

void compileToPackage(Program program, const CompileOptions &options,
                      const std::string &path) {
  if (program.target == Target::Cpu) {
    load(std::move(program), options).save(path);
    return;
  }
  // NVRTC alone: no executable, so no GPU is needed.
  CudaOptions cudaOptions = cudaOptionsOf(options);
  cudaOptions.arch = resolveGpuArch(options);
  savePackage(program,
              compileCudaImage(program,
                               *KernelCache::forDirectory(options.cacheDir),
                               cudaOptions),
              path);
}

namespace {

/// The model `lower` makes with `options` (its specializations aside), and
/// its specializations.
CompiledModel lowerAndLoadSpecialized(
    const CompileOptions &options,
    const std::function<Lowering(const CompileOptions &)> &lower) {
  CompileOptions general = options;
  general.specializations.clear();
  CompiledModel model = load(lower(general).program, general);
  addSpecializations(model, options, [&](const CompileOptions &fixed) {
    return lower(fixed).program;
  });
  return model;
}

/// `lower`'s program, loaded. For CUDA the libraries start initializing in
/// the background beside the lowering, and an error leaves only after they
/// are done: the caller may exit next (cuda::waitForBackgroundInitialization).
CompiledModel
lowerAndLoad(const CompileOptions &options,
             const std::function<Lowering(const CompileOptions &)> &lower) {
  if (resolveTarget(options) != Target::Cuda)
    return lowerAndLoadSpecialized(options, lower);
  cuda::startInitializingInBackground();
  try {
    return lowerAndLoadSpecialized(options, lower);
  } catch (...) {
    cuda::waitForBackgroundInitialization();
    throw;
  }
}

} // namespace

CompiledModel compile(const Graph &graph, const CompileOptions &options) {
  return lowerAndLoad(options, [&](const CompileOptions &variant) {
    return lowerGraph(graph, variant);
  });
}

CompiledModel compileFile(const std::string &path,
                          const CompileOptions &options) {
  return lowerAndLoad(options, [&](const CompileOptions &variant) {
    return lowerFile(path, variant);
  });
}

CompiledModel compileBuffer(const std::string &contents, ModelFormat format,
                            const std::string &name,
                            const CompileOptions &options) {
  return lowerAndLoad(options, [&](const CompileOptions &variant) {
    return lowerBuffer(contents, format, name, variant);
  });
}

} // namespace fusec
