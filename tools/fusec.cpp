//===- fusec.cpp - The fusec command line --------------------------------===//

#include "compiler/Driver.h"
#include "frontends/Onnx.h"
#include "runtime/Package.h"
#include "runtime/Profile.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Compare.h"
#include "runtime/core/MemoryPlan.h"
#include "runtime/core/Npy.h"
#include "runtime/cuda/CudaApi.h"
#include "tools/lib/FusionGraph.h"
#include "tools/lib/KernelRepro.h"
#include "tools/lib/ProfileReport.h"
#include "tools/lib/TraceFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>

using namespace fusec;

namespace {

namespace cl = llvm::cl;

const char *kOverview =
    R"(compiles a model (.json, .mlir or .onnx), fusing its pointwise work
into kernels. With no action, prints the kernels (name and fused ops) and
library calls.

  fusec MODEL [options]
  fusec MODEL.fusec --run [--inputs ...]   (a package: --emit=package)
  fusec --cache-stats | --cache-clear | --cache-cleanup [--cache-dir=DIR]
)";

cl::OptionCategory compileCategory("Compiling");
cl::OptionCategory inspectCategory("Inspecting");
cl::OptionCategory runCategory("Running");
cl::OptionCategory cacheCategory("Kernel cache (no MODEL needed)");

// Values are read as text and checked by cliOptionsFromFlags, which keeps
// fusec's own error messages (naming the flag and the expected form).

/// The model, and the files of --inputs and --expect (see claimFileLists).
cl::list<std::string> positionalArguments(cl::Positional, cl::desc("MODEL"),
                                          cl::cat(compileCategory));
/// Unknown flags, reported in fusec's words rather than cl's.
cl::list<std::string> unknownFlags(cl::Sink);
cl::opt<bool> shortHelp("h", cl::desc("Alias for --help"), cl::Hidden);

cl::opt<std::string>
    targetFlag("target", cl::value_desc("cpu|cuda"),
               cl::desc("backend (default: cuda when a usable GPU is present,\n"
                        "cpu otherwise)"),
               cl::cat(compileCategory));
cl::opt<std::string>
    gpuArchFlag("gpu-arch", cl::value_desc("sm_XY"),
                cl::desc("CUDA architecture to compile for (default: the "
                         "GPU's own,\nor sm_90a without a GPU)"),
                cl::cat(compileCategory));
cl::opt<bool> fastMathFlag("fast-math",
                           cl::desc("CUDA: fast intrinsics (__sinf, __expf, "
                                    "...)"),
                           cl::cat(compileCategory));
cl::opt<bool> tf32Flag("tf32",
                       cl::desc("CUDA: f32 matmuls on TF32 tensor cores "
                                "(faster, 10-bit\nmantissa inputs; off by "
                                "default)"),
                       cl::cat(compileCategory));
cl::opt<std::string> precisionFlag(
    "precision", cl::value_desc("bf16|f16"),
    cl::desc("run the model's f32 tensors in bf16 or f16 (matmuls with\n"
             "f32 accumulation; reductions and norm statistics in f32;\n"
             "inputs and outputs keep their dtypes; docs/precision.md)"),
    cl::cat(compileCategory));
cl::list<std::string>
    keepF32Flags("keep-f32", cl::value_desc("NODE"),
                 cl::desc("with --precision: the node named NODE stays in f32\n"
                          "(repeatable)"),
                 cl::cat(compileCategory));
cl::opt<bool>
    noCudaGraphFlag("no-cuda-graph",
                    cl::desc("CUDA: launch each step of a run on its own "
                             "rather than\nreplaying the run as one captured "
                             "graph"),
                    cl::cat(compileCategory));
cl::opt<bool> noKernelOverlapFlag(
    "no-kernel-overlap",
    cl::desc("CUDA: start every kernel after the one before it has\n"
             "finished (by default an f16/bf16 int8-weight GEMV starts\n"
             "while it ends, streaming its constant weights)"),
    cl::cat(compileCategory));
cl::opt<bool> noFuseFlag("no-fuse",
                         cl::desc("one kernel per op (the eager-like "
                                  "baseline)"),
                         cl::cat(compileCategory));
cl::opt<bool> noFusedAttentionFlag(
    "no-fused-attention",
    cl::desc("run attention as its matmul, softmax and matmul kernels\n"
             "rather than one fused attention kernel (its baseline)"),
    cl::cat(compileCategory));
cl::list<std::string> inputShapeFlags(
    "input-shape", cl::value_desc("NAME=D0,D1,..."),
    cl::desc("ONNX and JSON: the shape of an input with symbolic or named\n"
             "dims (repeatable)"),
    cl::cat(compileCategory));

cl::list<std::string> dimFlags(
    "dim", cl::value_desc("NAME=MIN..MAX[:MULTIPLE]"),
    cl::desc("ONNX and JSON: keep the named dim NAME symbolic, for any\n"
             "size from MIN to MAX: one compile serves them all, each\n"
             "run binds the size from its inputs; :MULTIPLE declares\n"
             "every size a multiple of it (kernels then use it: vector\n"
             "widths, aligned rows); NAME=SIZE fixes it in every input\n"
             "(repeatable)"),
    cl::cat(compileCategory));
cl::list<std::string> specializeFlags(
    "specialize", cl::value_desc("NAME=S1,S2,..."),
    cl::desc("with --dim NAME=MIN..MAX: also compile the model with NAME\n"
             "fixed to each size given; a run at that size runs it\n"
             "(repeatable)"),
    cl::cat(compileCategory));

cl::opt<std::string> emitFlag(
    "emit", cl::value_desc("STAGE"),
    cl::desc("print a stage: ir (imported fuse IR), fused (after\n"
             "fusion), plan (JSON steps, kernels and buffers),\n"
             "schedule (each kernel's schedule parameters for the\n"
             "target, a line per kernel), source (generated kernels,\n"
             "then the library calls), ptx (CUDA only), dot (the\n"
             "fusion graph in Graphviz DOT: a cluster per kernel,\n"
             "unfused edges labelled with the reason), svg (that graph\n"
             "rendered by Graphviz's dot, which must be on PATH),\n"
             "package (the compiled model in one file, with -o\n"
             "MODEL.fusec: run it with `fusec MODEL.fusec --run`)"),
    cl::cat(inspectCategory));
cl::opt<std::string> outputPathFlag("o", cl::value_desc("PATH"),
                                    cl::desc("write --emit's output to PATH "
                                             "instead of stdout"),
                                    cl::cat(inspectCategory));
cl::opt<std::string> dumpKernelsFlag(
    "dump-kernels", cl::value_desc("DIR"),
    cl::desc("write each kernel's source to DIR/<kernel>.cpp (.cu for\n"
             "cuda) and a standalone repro program that checks and\n"
             "times it, DIR/<kernel>.repro.cpp (.repro.cu);\n"
             "DIR/README.md says how to build them"),
    cl::cat(inspectCategory));
cl::opt<std::string> listOpsFlag(
    "list-ops", cl::ValueOptional, cl::value_desc("markdown"),
    cl::desc("print the supported ONNX ops and their opsets; =markdown:\n"
             "the same by family, with each op's attributes and constant\n"
             "inputs (docs/onnx-ops.md)"),
    cl::cat(inspectCategory));
cl::opt<bool> remarksFlag("remarks", cl::desc("print why ops were not fused"),
                          cl::cat(inspectCategory));
cl::opt<std::string> traceFlag(
    "trace", cl::value_desc("FILE"),
    cl::desc("write a Chrome trace (Perfetto, chrome://tracing) of this\n"
             "invocation to FILE: import, each pass, codegen, each\n"
             "kernel compile or cache hit, upload, and each kernel and\n"
             "library call of every run on a device track (runs then go\n"
             "step by step); also written when a stage fails"),
    cl::cat(inspectCategory));

cl::opt<bool> runFlag("run",
                      cl::desc("run the model and print each output's shape, "
                               "dtype and\nchecksum; inputs are seeded random "
                               "unless given"),
                      cl::cat(runCategory));
// --inputs F... and --expect F...: their files are the positional arguments
// that follow them (see claimFileLists).
cl::list<bool> inputsFlags("inputs", cl::ValueDisallowed,
                           cl::desc("F...: .npy or ONNX TensorProto .pb files, "
                                    "one per graph\ninput, in order; an ONNX "
                                    "input's symbolic dims take its\nfile's "
                                    "shape (unless --input-shape gives one)"),
                           cl::cat(runCategory));
cl::list<bool> expectFlags(
    "expect", cl::ValueDisallowed,
    cl::desc("F...: with --run, .npy or .pb files of the expected\n"
             "outputs, in order; prints each output's worst error and\n"
             "exits 1 past --rtol/--atol"),
    cl::cat(runCategory));
cl::opt<std::string> rtolFlag("rtol", cl::value_desc("R"),
                              cl::desc("--expect's relative bound (default "
                                       "1e-3; with --atol 0:\nidentical, the "
                                       "sign of zero included)"),
                              cl::cat(runCategory));
cl::opt<std::string> atolFlag("atol", cl::value_desc("A"),
                              cl::desc("--expect's absolute bound (default "
                                       "1e-7)"),
                              cl::cat(runCategory));
cl::opt<std::string> expectRelL2Flag(
    "expect-rel-l2", cl::value_desc("E"),
    cl::desc("hold each --expect output to ||y - expected|| <= E *\n"
             "||expected|| (L2 norms) instead of --rtol/--atol: a run in\n"
             "reduced precision against an f32 reference"),
    cl::cat(runCategory));
cl::opt<std::string> expectTop1Flag(
    "expect-top1", cl::value_desc("F"),
    cl::desc("also require each --expect output's largest element\n"
             "along its last dim (a logit's token) at the expected\n"
             "position in at least the fraction F of rows"),
    cl::cat(runCategory));
cl::opt<std::string> outputsDirFlag("outputs-dir", cl::value_desc("DIR"),
                                    cl::desc("with --run, write DIR/<output "
                                             "name>.npy"),
                                    cl::cat(runCategory));
cl::opt<std::string> profileFlag(
    "profile", cl::ValueOptional, cl::value_desc("N"),
    cl::desc("with --run: run N more times (default 20) after a warm-up,\n"
             "timing each kernel and library call, and print a table:\n"
             "median time, bytes moved, GB/s, FLOPs, TFLOP/s, the\n"
             "fraction of the device's copy ceiling or peak FLOP rate,\n"
             "memory- or compute-bound"),
    cl::cat(runCategory));
cl::opt<std::string> profileJsonFlag(
    "profile-json", cl::value_desc("FILE"),
    cl::desc("with --run: write the profile as JSON to FILE (implies\n"
             "--profile)"),
    cl::cat(runCategory));
cl::opt<bool> checkFlag("check",
                        cl::desc("run fused and unfused; print max abs/rel "
                                 "error per output;\nexit 1 past the dtype's "
                                 "tolerance"),
                        cl::cat(runCategory));
cl::opt<std::string> seedFlag("seed", cl::value_desc("N"),
                              cl::desc("seed of the random inputs (default 0)"),
                              cl::cat(runCategory));

cl::opt<std::string> cacheDirFlag(
    "cache-dir", cl::value_desc("DIR"),
    cl::desc("kernel cache (default $FUSEC_CACHE_DIR, else\n"
             "$XDG_CACHE_HOME/fusec, else ~/.cache/fusec); its size\n"
             "limit is $FUSEC_CACHE_MAX_SIZE (e.g. 500M, 2G; 0 for none;\n"
             "default 1G), least recently used entries evicted first"),
    cl::cat(cacheCategory));
cl::opt<bool> cacheStatsFlag(
    "cache-stats",
    cl::desc("print the cache's entries, size, limit, hit and miss\n"
             "counts, and work files left by dead processes; verifies\n"
             "every entry"),
    cl::cat(cacheCategory));
cl::opt<bool> cacheClearFlag("cache-clear",
                             cl::desc("remove every cache entry"),
                             cl::cat(cacheCategory));
cl::opt<bool> cacheCleanupFlag("cache-cleanup",
                               cl::desc("remove work files of dead processes "
                                        "and evict down to the\nsize limit"),
                               cl::cat(cacheCategory));

const cl::OptionCategory *const kFusecCategories[] = {
    &compileCategory, &inspectCategory, &runCategory, &cacheCategory};

/// --profile's runs when no N is given.
constexpr int kDefaultProfileRuns = 20;

struct CliOptions {
  std::string model;
  std::string emit;
  std::string outputPath;
  std::string dumpKernelsDir;
  std::string outputsDir;
  std::vector<std::string> inputFiles;
  /// --expect: files of the expected outputs, and the bound they are held
  /// to (ONNX's test suite tolerances by default).
  std::vector<std::string> expectFiles;
  double rtol = 1e-3, atol = 1e-7;
  /// --expect-rel-l2 (replaces rtol/atol) and --expect-top1, when given.
  std::optional<double> relL2Bound, topOneBound;
  bool run = false, check = false;
  /// --profile: timed runs (0: no profile); --profile-json: where to write it.
  int profileRuns = 0;
  std::string profileJsonPath;
  /// --trace: where to write the Chrome trace ("": no trace).
  std::string tracePath;
  /// --cache-stats, --cache-clear, --cache-cleanup: run instead of a model.
  bool cacheStats = false, cacheClear = false, cacheCleanup = false;
  uint64_t seed = 0;
  CompileOptions compile;
};

/// A usage error: printed with a hint, exit code 2.
struct UsageError {
  /// "": cl has printed the error.
  std::string message;
};

/// Only fusec's options and --help are accepted: the options LLVM and MLIR
/// register in this process would otherwise parse (HideUnrelatedOptions
/// only hides them from --help).
void removeForeignOptions() {
  std::vector<cl::Option *> foreign;
  for (const auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    bool ours = entry.first == "help" || entry.first == "help-hidden" ||
                llvm::any_of(option->Categories, [](cl::OptionCategory *c) {
                  return llvm::is_contained(kFusecCategories, c);
                });
    if (!ours && option != &shortHelp && !llvm::is_contained(foreign, option))
      foreign.push_back(option);
  }
  for (cl::Option *option : foreign)
    option->removeArgument();
}

/// cl gives --inputs and --expect no value: their files are the positional
/// arguments right after them. A positional belongs to the list whose flag
/// or file directly precedes it on the command line; the rest are models.
std::vector<std::string> claimFileLists(CliOptions &options) {
  std::map<unsigned, std::vector<std::string> *> listAt;
  for (unsigned i = 0; i < inputsFlags.size(); ++i)
    listAt[inputsFlags.getPosition(i)] = &options.inputFiles;
  for (unsigned i = 0; i < expectFlags.size(); ++i)
    listAt[expectFlags.getPosition(i)] = &options.expectFiles;
  std::set<unsigned> flagsWithoutFiles;
  for (const auto &[position, list] : listAt)
    flagsWithoutFiles.insert(position);
  std::vector<std::string> models;
  for (unsigned i = 0; i < positionalArguments.size(); ++i) {
    unsigned position = positionalArguments.getPosition(i);
    auto list = listAt.find(position - 1);
    if (list == listAt.end()) {
      models.push_back(positionalArguments[i]);
      continue;
    }
    list->second->push_back(positionalArguments[i]);
    listAt[position] = list->second;
    flagsWithoutFiles.erase(position - 1);
  }
  for (unsigned position : flagsWithoutFiles) {
    if (listAt[position] == &options.inputFiles)
      throw UsageError{"--inputs needs one .npy file per graph input"};
    throw UsageError{"--expect needs one .npy or .pb file per output"};
  }
  return models;
}

/// The command line's options: cl reads the flags, this checks their values.
CliOptions parseArguments(int argc, char **argv) {
  removeForeignOptions();
  cl::HideUnrelatedOptions(kFusecCategories);
  // With an error stream cl returns false on an error rather than exiting 1,
  // so a usage error exits 2 as the others do. cl writes a bad value's error
  // to stderr itself, the others to this stream.
  std::string clErrors;
  llvm::raw_string_ostream clErrorStream(clErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &clErrorStream)) {
    std::cerr << clErrors;
    throw UsageError{/*message=*/""};
  }
  if (!unknownFlags.empty())
    throw UsageError{"unknown option '" + unknownFlags.front() + "'"};
  if (shortHelp) {
    cl::PrintHelpMessage();
    std::exit(0);
  }
  if (listOpsFlag.getNumOccurrences()) {
    if (listOpsFlag == "markdown") {
      std::cout << supportedOnnxOpsMarkdown();
    } else if (listOpsFlag.empty()) {
      for (const std::string &line : supportedOnnxOps())
        std::cout << line << "\n";
    } else {
      throw UsageError{"unknown --list-ops format '" + listOpsFlag +
                       "' (expected --list-ops or --list-ops=markdown)"};
    }
    std::exit(0);
  }

  CliOptions options;
  if (targetFlag.getNumOccurrences()) {
    if (targetFlag == "cpu")
      options.compile.target = Target::Cpu;
    else if (targetFlag == "cuda")
      options.compile.target = Target::Cuda;
    else
      throw UsageError{"unknown --target '" + targetFlag +
                       "' (expected cpu or cuda)"};
  }
  if (gpuArchFlag.getNumOccurrences()) {
    options.compile.gpuArch = gpuArchFlag;
    if (!llvm::StringRef(gpuArchFlag).starts_with("sm_"))
      throw UsageError{"--gpu-arch expects sm_XY (e.g. sm_90a), got '" +
                       gpuArchFlag + "'"};
  }
  if (precisionFlag.getNumOccurrences()) {
    if (precisionFlag == "bf16")
      options.compile.precision = DType::BF16;
    else if (precisionFlag == "f16")
      options.compile.precision = DType::F16;
    else
      throw UsageError{"unknown --precision '" + precisionFlag +
                       "' (expected bf16 or f16)"};
  }
  if (keepF32Flags.getNumOccurrences() && !options.compile.precision)
    throw UsageError{"--keep-f32 needs --precision"};
  options.compile.keepF32Nodes.assign(keepF32Flags.begin(), keepF32Flags.end());
  options.compile.fastMath = fastMathFlag;
  options.compile.tf32 = tf32Flag;
  options.compile.cudaGraph = !noCudaGraphFlag;
  options.compile.kernelOverlap = !noKernelOverlapFlag;
  options.compile.fuse = !noFuseFlag;
  options.compile.attention = !noFusedAttentionFlag;
  if (remarksFlag)
    options.compile.onRemark = [](const std::string &remark) {
      std::cerr << remark << "\n";
    };
  for (const std::string &spec : inputShapeFlags) {
    size_t equals = spec.find('=');
    Shape shape;
    std::istringstream dims(
        equals == std::string::npos ? std::string() : spec.substr(equals + 1));
    for (std::string dim; std::getline(dims, dim, ',');) {
      char *end = nullptr;
      long long value = std::strtoll(dim.c_str(), &end, 10);
      if (dim.empty() || *end || value < 0)
        throw UsageError{"--input-shape expects NAME=D0,D1,... with "
                         "non-negative dims, got '" +
                         spec + "'"};
      shape.push_back(value);
    }
    if (equals == std::string::npos || equals == 0)
      throw UsageError{"--input-shape expects NAME=D0,D1,..., got '" + spec +
                       "'"};
    options.compile.inputShapes[spec.substr(0, equals)] = shape;
  }
  for (const std::string &spec : dimFlags) {
    size_t equals = spec.find('='), dots = spec.find("..");
    // A range may start at 0 (an empty cache before the first step).
    auto number = [&](size_t from, size_t to, int64_t least = 1) -> int64_t {
      std::string text = spec.substr(from, to - from);
      char *end = nullptr;
      long long value = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end || value < least)
        throw UsageError{"--dim expects NAME=MIN..MAX[:MULTIPLE] with MIN at "
                         "least 0, or NAME=SIZE with SIZE at least 1, got '" +
                         spec + "'"};
      return value;
    };
    if (equals == std::string::npos || equals == 0 ||
        (dots != std::string::npos && dots < equals))
      throw UsageError{"--dim expects NAME=MIN..MAX or NAME=SIZE, got '" +
                       spec + "'"};
    DimSymbol symbol{spec.substr(0, equals), 0, 0};
    // NAME=MIN..MAX:MULTIPLE: every size a multiple (a fact kernels use).
    size_t colon = spec.find(':');
    size_t rangeEnd = colon == std::string::npos ? spec.size() : colon;
    if (colon != std::string::npos && dots == std::string::npos)
      throw UsageError{"--dim " + spec +
                       ": a multiple goes with a range, NAME=MIN..MAX:M"};
    if (dots == std::string::npos) { // NAME=SIZE: fixed by name
      symbol.min = symbol.max = number(equals + 1, spec.size());
    } else {
      symbol.min = number(equals + 1, dots, 0);
      symbol.max = number(dots + 2, rangeEnd);
      if (colon != std::string::npos)
        symbol.multiple = number(colon + 1, spec.size());
    }
    if (symbol.max < symbol.min)
      throw UsageError{"--dim " + spec + ": MAX is below MIN"};
    if (symbol.max / symbol.multiple * symbol.multiple < symbol.min)
      throw UsageError{"--dim " + spec + ": no size in the range is a " +
                       "multiple of " + std::to_string(symbol.multiple)};
    options.compile.dimRanges[symbol.name] = symbol;
  }
  for (const std::string &spec : specializeFlags) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0)
      throw UsageError{"--specialize expects NAME=S1,S2,..., got '" + spec +
                       "'"};
    std::istringstream sizes(spec.substr(equals + 1));
    std::vector<int64_t> &list =
        options.compile.specializations[spec.substr(0, equals)];
    for (std::string size; std::getline(sizes, size, ',');) {
      char *end = nullptr;
      long long value = std::strtoll(size.c_str(), &end, 10);
      if (size.empty() || *end || value < 1)
        throw UsageError{"--specialize expects NAME=S1,S2,... with sizes of "
                         "at least 1, got '" +
                         spec + "'"};
      list.push_back(value);
    }
    if (list.empty())
      throw UsageError{"--specialize expects NAME=S1,S2,..., got '" + spec +
                       "'"};
  }
  options.compile.cacheDir = cacheDirFlag;

  options.emit = emitFlag;
  if (emitFlag.getNumOccurrences() && options.emit != "ir" &&
      options.emit != "fused" && options.emit != "plan" &&
      options.emit != "schedule" && options.emit != "source" &&
      options.emit != "ptx" && options.emit != "dot" && options.emit != "svg" &&
      options.emit != "package")
    throw UsageError{"unknown --emit stage '" + options.emit +
                     "' (expected ir, fused, plan, schedule, source, "
                     "ptx, dot, svg or package)"};
  options.outputPath = outputPathFlag;
  options.dumpKernelsDir = dumpKernelsFlag;
  options.tracePath = traceFlag;
  if (traceFlag.getNumOccurrences() && options.tracePath.empty())
    throw UsageError{"--trace needs a file name"};

  options.run = runFlag;
  options.check = checkFlag;
  options.outputsDir = outputsDirFlag;
  options.profileJsonPath = profileJsonFlag;
  if (profileFlag.getNumOccurrences() || profileJsonFlag.getNumOccurrences())
    options.profileRuns = kDefaultProfileRuns;
  if (!profileFlag.empty()) {
    char *end = nullptr;
    long count = std::strtol(profileFlag.c_str(), &end, 10);
    if (*end || count < 1 || count > 1000000)
      throw UsageError{"--profile=N needs a positive number of runs, got '" +
                       profileFlag + "'"};
    options.profileRuns = static_cast<int>(count);
  }
  if (seedFlag.getNumOccurrences()) {
    char *end = nullptr;
    options.seed = std::strtoull(seedFlag.c_str(), &end, 10);
    if (seedFlag.empty() || *end)
      throw UsageError{"--seed needs a non-negative integer, got '" + seedFlag +
                       "'"};
  }
  // The comparison bounds: non-negative numbers (a fraction for top-1).
  auto bound = [](const cl::opt<std::string> &flag, double most,
                  const char *range) -> std::optional<double> {
    if (!flag.getNumOccurrences())
      return std::nullopt;
    const std::string &text = flag;
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(value >= 0 && value <= most))
      throw UsageError{"--" + flag.ArgStr.str() + " needs " + range +
                       ", got '" + text + "'"};
    return value;
  };
  const double unbounded = std::numeric_limits<double>::infinity();
  options.rtol = bound(rtolFlag, unbounded, "a non-negative number")
                     .value_or(options.rtol);
  options.atol = bound(atolFlag, unbounded, "a non-negative number")
                     .value_or(options.atol);
  options.relL2Bound =
      bound(expectRelL2Flag, unbounded, "a non-negative number");
  options.topOneBound = bound(expectTop1Flag, 1, "a number in [0, 1]");
  options.cacheStats = cacheStatsFlag;
  options.cacheClear = cacheClearFlag;
  options.cacheCleanup = cacheCleanupFlag;

  std::vector<std::string> models = claimFileLists(options);
  if (models.size() > 1)
    throw UsageError{"more than one model given: '" + models[0] + "' and '" +
                     models[1] + "'"};
  if (!models.empty())
    options.model = models.front();
  bool cacheCommand =
      options.cacheStats || options.cacheClear || options.cacheCleanup;
  if (cacheCommand && !options.model.empty())
    throw UsageError{"--cache-stats, --cache-clear and --cache-cleanup take "
                     "no model"};
  if (cacheCommand)
    return options;
  if (options.model.empty())
    throw UsageError{"no model file given"};
  if (!options.outputsDir.empty() && !options.run)
    throw UsageError{"--outputs-dir needs --run"};
  if (options.profileRuns > 0 && !options.run)
    throw UsageError{"--profile and --profile-json need --run"};
  if (!options.expectFiles.empty() && !options.run)
    throw UsageError{"--expect needs --run"};
  if ((options.relL2Bound || options.topOneBound) &&
      options.expectFiles.empty())
    throw UsageError{"--expect-rel-l2 and --expect-top1 need --expect"};
  if (!options.inputFiles.empty() && !options.run && !options.check)
    throw UsageError{"--inputs needs --run or --check"};
  if (options.emit == "ptx" && options.compile.target != Target::Cuda)
    throw UsageError{"--emit=ptx needs --target=cuda"};
  if (options.emit == "package" && options.outputPath.empty())
    throw UsageError{"--emit=package needs -o FILE.fusec"};
  if (isPackagePath(options.model) &&
      (!options.run || !options.emit.empty() || options.check ||
       !options.dumpKernelsDir.empty()))
    throw UsageError{"a package (" + options.model +
                     ") is compiled already: it runs with --run; --emit, "
                     "--check and --dump-kernels need a model"};
  return options;
}

void writeText(const std::string &path, const std::string &text) {
  if (path.empty()) {
    std::cout << text;
    if (!text.empty() && text.back() != '\n')
      std::cout << "\n";
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out)
    throw Error(path + ": error: cannot write output file");
}

void makeDirectory(const std::string &dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(dir + ": error: cannot create directory");
}

std::string emitStage(const CliOptions &options, const Lowering &lowering) {
  if (options.emit == "ir")
    return lowering.importedIR;
  if (options.emit == "fused")
    return lowering.fusedIR;
  if (options.emit == "plan")
    return lowering.program.planJson();
  if (options.emit == "schedule")
    return lowering.schedules;
  if (options.emit == "dot" || options.emit == "svg") {
    std::string dot =
        fusionGraphDot(options.model, options.compile, lowering.program);
    return options.emit == "dot" ? dot : renderDot(dot, "svg");
  }
  if (options.emit == "ptx") {
    return cuda::compileCuda(lowering.program.source,
                             resolveGpuArch(options.compile),
                             cuda::nvrtcOptions(options.compile.fastMath),
                             /*ptx=*/true);
  }
  // Library calls are not source: each is listed as the call it makes.
  std::string source = lowering.program.source;
  const Program &program = lowering.program;
  if (!program.matmuls.empty()) {
    source +=
        "\n// Library calls (" +
        std::string(program.target == Target::Cuda ? "cuBLASLt" : "BLAS") +
        "), in run order:\n";
    for (const MatmulCall &call : program.matmuls)
      source += "// " + call.describe(program.buffers) + "\n";
  }
  return source;
}

/// The tensor in an --inputs file (.pb: an ONNX TensorProto, else .npy).
Tensor readInputFile(const std::string &file,
                     std::optional<DType> expected = std::nullopt) {
  return llvm::StringRef(file).ends_with(".pb") ? readTensorProtoFile(file)
                                                : readNpy(file, expected);
}

/// ONNX and JSON models: the symbolic (ONNX) or named (JSON) dims of graph
/// input i, those --input-shape leaves open, are bound from the shape of
/// the tensor in --inputs file i, so that the given tensors fix the shapes
/// the model is compiled for.
void bindSymbolicDimsFromInputs(CliOptions &options) {
  // With a --dim range the dims stay symbolic: each run binds them.
  bool symbolic =
      llvm::any_of(options.compile.dimRanges, [](const auto &entry) {
        return entry.second.min != entry.second.max;
      });
  if (options.inputFiles.empty() || symbolic)
    return;
  // The inputs as declared, a dim below 0 open; an ONNX input without a
  // shape has no dims here (nothing to bind).
  std::vector<std::string> names;
  std::vector<std::optional<DType>> dtypes;
  std::vector<Shape> declared;
  if (llvm::StringRef(options.model).ends_with(".json")) {
    for (const GraphInput &input : readJsonInputs(options.model)) {
      names.push_back(input.name);
      dtypes.push_back(input.dtype);
      declared.push_back(input.shape);
    }
  } else if (isOnnxModelPath(options.model)) {
    OnnxModelSummary summary = summarizeOnnxModel(options.model);
    names = summary.inputNames;
    dtypes = summary.inputTypes;
    for (const std::optional<std::vector<int64_t>> &dims : summary.inputDims)
      declared.push_back(dims ? Shape(dims->begin(), dims->end()) : Shape());
  }
  for (size_t i = 0; i < names.size() && i < options.inputFiles.size(); ++i)
    if (!options.compile.inputShapes.count(names[i]) &&
        llvm::any_of(declared[i], [](int64_t dim) { return dim < 0; }))
      options.compile.inputShapes[names[i]] =
          readInputFile(options.inputFiles[i], dtypes[i]).shape;
}

std::vector<Tensor> modelInputs(const CliOptions &options,
                                const Program &program) {
  return programInputs(program, options.inputFiles, options.seed, options.model,
                       [](const std::string &file, DType dtype) {
                         return readInputFile(file, dtype);
                       });
}

/// --cache-clear, then --cache-cleanup, then --cache-stats.
int runCacheCommands(const CliOptions &options) {
  KernelCache cache(options.compile.cacheDir);
  if (options.cacheClear) {
    cache.clear();
    std::printf("cleared %s\n", cache.directory().c_str());
  }
  if (options.cacheCleanup) {
    uint64_t stale = cache.removeStaleTemps();
    uint64_t evicted = cache.cleanUp();
    std::printf("cleaned up %s: %llu stale work file%s, %llu entr%s evicted\n",
                cache.directory().c_str(),
                static_cast<unsigned long long>(stale), stale == 1 ? "" : "s",
                static_cast<unsigned long long>(evicted),
                evicted == 1 ? "y" : "ies");
  }
  if (!options.cacheStats)
    return 0;
  CacheReport report = cache.report(/*verify=*/true);
  auto count = [](uint64_t n) { return static_cast<unsigned long long>(n); };
  std::printf("cache directory     %s\n", report.directory.c_str());
  std::printf("entries             %llu (%llu host, %llu cuda)\n",
              count(report.hostEntries + report.cudaEntries),
              count(report.hostEntries), count(report.cudaEntries));
  std::printf("corrupt entries     %llu\n", count(report.invalidEntries));
  std::printf("failed sources      %llu\n", count(report.failedSources));
  std::printf("size                %s\n",
              report.bytes < 1000
                  ? KernelCache::formatSize(report.bytes).c_str()
                  : (KernelCache::formatSize(report.bytes) + " (" +
                     std::to_string(report.bytes) + " bytes)")
                        .c_str());
  std::printf("size limit          %s\n",
              report.maxSize == 0
                  ? "none"
                  : (KernelCache::formatSize(report.maxSize) + " (" +
                     std::to_string(report.maxSize) + " bytes)")
                        .c_str());
  if (!report.maxSizeProblem.empty())
    std::printf("warning: %s\n", report.maxSizeProblem.c_str());
  std::printf("hits                %llu\n", count(report.counters.hits));
  std::printf("misses              %llu\n", count(report.counters.misses));
  std::printf("corrupt rebuilt     %llu\n",
              count(report.counters.corruptEntries));
  std::printf("evictions           %llu\n", count(report.counters.evictions));
  std::printf("work files          %llu of running compiles, %llu stale\n",
              count(report.liveTemps), count(report.staleTemps));
  return 0;
}

/// --run: runs the model, prints (and writes) its outputs, the memory plan
/// and the profile, and compares them with --expect's files; false when one
/// does not match.
bool runAndReport(const CliOptions &options, CompiledModel &model,
                  const std::vector<Tensor> &inputs,
                  std::vector<Tensor> &outputs) {
  const Program &program = model.program();
  outputs = model.run(inputs);
  if (options.run) {
    if (!options.outputsDir.empty())
      makeDirectory(options.outputsDir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string &name = program.outputNames[i];
      std::printf("%s\n", describeOutput(name, outputs[i]).c_str());
      if (!options.outputsDir.empty())
        writeNpy(options.outputsDir + "/" + name + ".npy", outputs[i]);
    }
  }
  if (options.run) {
    MemoryPlan memory = planMemory(program);
    std::printf("memory: peak %lld bytes; temporaries in an arena of %lld "
                "bytes (%lld without reuse)\n",
                static_cast<long long>(memory.peakBytes),
                static_cast<long long>(memory.arenaBytes),
                static_cast<long long>(memory.unsharedBytes));
  }
  if (options.profileRuns > 0) {
    DeviceLimits limits = deviceLimits(
        program.target,
        KernelCache::forDirectory(options.compile.cacheDir)->directory(),
        options.compile.tf32);
    Profile profile = profileExecutable(executableOf(model), inputs,
                                        options.profileRuns, limits);
    std::cout << formatProfileTable(profile) << std::flush;
    if (!options.profileJsonPath.empty())
      writeText(options.profileJsonPath, profileJson(profile));
  }
  bool expectedOk = true;
  if (!options.expectFiles.empty()) {
    if (options.expectFiles.size() != outputs.size())
      throw Error(options.model + ": error: the model has " +
                  std::to_string(outputs.size()) + " outputs but " +
                  std::to_string(options.expectFiles.size()) +
                  " --expect files were given");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string &file = options.expectFiles[i];
      Tensor expected = llvm::StringRef(file).ends_with(".pb")
                            ? readTensorProtoFile(file)
                            : readNpy(file, outputs[i].dtype);
      if (expected.dtype != outputs[i].dtype ||
          expected.shape != outputs[i].shape)
        throw Error(file + ": error: output '" + program.outputNames[i] +
                    "' is " + outputs[i].typeString() + " but " +
                    expected.typeString() + " was expected");
      const std::string &name = program.outputNames[i];
      if (options.relL2Bound || options.topOneBound) {
        std::string verdicts;
        if (options.relL2Bound) {
          double error = relativeL2Error(outputs[i], expected);
          bool ok = error <= *options.relL2Bound;
          expectedOk &= ok;
          char verdict[96];
          std::snprintf(verdict, sizeof verdict, " rel_l2=%.3g (bound %g) %s",
                        error, *options.relL2Bound, ok ? "ok" : "FAILED");
          verdicts += verdict;
        }
        if (options.topOneBound) {
          double agreement = topOneAgreement(outputs[i], expected);
          bool ok = agreement >= *options.topOneBound;
          expectedOk &= ok;
          char verdict[96];
          std::snprintf(verdict, sizeof verdict, " top1=%.4f (bound %g) %s",
                        agreement, *options.topOneBound, ok ? "ok" : "FAILED");
          verdicts += verdict;
        }
        std::printf("expect %s:%s\n", name.c_str(), verdicts.c_str());
        continue;
      }
      Comparison comparison =
          compareTensors(outputs[i], expected, {options.atol, options.rtol});
      expectedOk &= comparison.ok();
      std::string worst;
      if (!comparison.ok())
        worst = " first mismatch at element " +
                std::to_string(comparison.firstMismatch) + ": got " +
                std::to_string(outputs[i].at(comparison.firstMismatch)) +
                ", expected " +
                std::to_string(expected.at(comparison.firstMismatch));
      std::printf("expect %s: max_abs_err=%.3g max_rel_err=%.3g (atol=%g "
                  "rtol=%g) %s%s\n",
                  program.outputNames[i].c_str(), comparison.maxAbsError,
                  comparison.maxRelError, options.atol, options.rtol,
                  comparison.ok() ? "ok" : "FAILED", worst.c_str());
    }
  }
  return expectedOk;
}

/// `fusec MODEL.fusec --run`: a package, loaded with no compiler.
int runPackage(const CliOptions &options) {
  CompiledModel model = load(options.model);
  std::vector<Tensor> inputs = modelInputs(options, model.program());
  std::vector<Tensor> outputs;
  return runAndReport(options, model, inputs, outputs) ? 0 : 1;
}

int runCli(const CliOptions &options) {
  if (options.cacheStats || options.cacheClear || options.cacheCleanup)
    return runCacheCommands(options);
  if (isPackagePath(options.model))
    return runPackage(options);
  bool wantsIR = options.emit == "ir" || options.emit == "fused";
  // --emit=ir and --emit=fused stop there: a later stage that fails does
  // not hide them.
  bool needsProgram =
      options.run || options.check || !options.dumpKernelsDir.empty();
  Stage stopAfter = needsProgram              ? Stage::Program
                    : options.emit == "ir"    ? Stage::Imported
                    : options.emit == "fused" ? Stage::Fused
                                              : Stage::Program;
  // Kernel repros (--dump-kernels) read the fused IR back for references;
  // schedules are described only when asked for. The plan needs neither:
  // printing a model's IR prints its weights (seconds for GPT-2 small).
  bool captureIR =
      wantsIR || options.emit == "schedule" || !options.dumpKernelsDir.empty();
  if ((options.run || options.check) &&
      resolveTarget(options.compile) == Target::Cuda)
    cuda::startInitializingInBackground(); // beside the import and passes
  Lowering lowering =
      lowerFile(options.model, options.compile, captureIR, stopAfter);
  const Program &program = lowering.program;

  if (options.emit == "package")
    compileToPackage(program, options.compile, options.outputPath);
  else if (!options.emit.empty())
    writeText(options.outputPath, emitStage(options, lowering));
  if (!options.dumpKernelsDir.empty()) {
    makeDirectory(options.dumpKernelsDir);
    fuse::KernelReproWriter repros(program, lowering.fusedIR,
                                   options.compile.fastMath);
    const std::string &dir = options.dumpKernelsDir;
    for (size_t k = 0; k < program.kernels.size(); ++k) {
      writeText(dir + "/" + repros.sourceFileName(k), repros.kernelSource(k));
      writeText(dir + "/" + repros.reproFileName(k), repros.repro(k));
    }
    writeText(dir + "/README.md", repros.readme());
  }
  if (options.emit.empty() && !options.run && !options.check) {
    std::cout << program.kernels.size() << " kernel"
              << (program.kernels.size() == 1 ? "" : "s");
    if (!program.matmuls.empty())
      std::cout << " and " << program.matmuls.size() << " library call"
                << (program.matmuls.size() == 1 ? "" : "s");
    std::cout << " for '" << program.name << "'";
    if (isOnnxModelPath(options.model))
      std::cout << " from " << summarizeOnnxModel(options.model).nodeCount
                << " ONNX nodes";
    std::cout << "\n";
    for (const Step &step : program.steps) {
      if (step.kind == StepKind::Matmul) {
        std::cout << "  "
                  << program.matmuls[step.index].describe(program.buffers)
                  << "\n";
        continue;
      }
      if (step.kind != StepKind::Kernel)
        continue;
      const KernelDesc &kernel = program.kernels[step.index];
      std::cout << "  " << kernel.name << ":";
      for (const std::string &op : kernel.ops)
        std::cout << " " << op;
      std::cout << "\n";
    }
  }
  if (!options.run && !options.check)
    return 0;

  std::vector<Tensor> inputs = modelInputs(options, program);
  CompileOptions general = options.compile;
  general.specializations.clear();
  CompiledModel model = load(program, general);
  addSpecializations(model, options.compile, [&](const CompileOptions &fixed) {
    return lowerFile(options.model, fixed).program;
  });
  std::vector<Tensor> outputs;
  bool expectedOk = runAndReport(options, model, inputs, outputs);
  if (!options.check)
    return expectedOk ? 0 : 1;

  // The reference: unfused execution on the CPU backend.
  CompileOptions unfusedOptions = options.compile;
  unfusedOptions.fuse = false;
  unfusedOptions.onRemark = nullptr;
  unfusedOptions.target = Target::Cpu;
  CompiledModel unfused =
      load(lowerFile(options.model, unfusedOptions).program, unfusedOptions);
  std::vector<Tensor> expected = unfused.run(inputs);
  bool allOk = true;
  std::string calls;
  if (!program.matmuls.empty())
    calls = " and " + std::to_string(program.matmuls.size()) + " library call" +
            (program.matmuls.size() == 1 ? "" : "s");
  std::printf("check: %zu %s kernel%s%s vs %zu unfused on cpu\n",
              program.kernels.size(), targetName(program.target),
              program.kernels.size() == 1 ? "" : "s", calls.c_str(),
              unfused.program().kernels.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tolerance tolerance = toleranceFor(outputs[i].dtype);
    Comparison comparison = compareTensors(outputs[i], expected[i], tolerance);
    allOk &= comparison.ok();
    std::printf("check %s: max_abs_err=%.3g max_rel_err=%.3g (atol=%g "
                "rtol=%g) %s\n",
                program.outputNames[i].c_str(), comparison.maxAbsError,
                comparison.maxRelError, tolerance.atol, tolerance.rtol,
                comparison.ok() ? "ok" : "FAILED");
  }
  return allOk && expectedOk ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  // However main ends, the process exits only after the CUDA libraries'
  // background initialization (cuda::waitForBackgroundInitialization).
  struct WaitForBackgroundInitialization {
    ~WaitForBackgroundInitialization() {
      cuda::waitForBackgroundInitialization();
    }
  } waitBeforeExit;
  try {
    CliOptions options = parseArguments(argc, argv);
    bindSymbolicDimsFromInputs(options);
    std::string command = "fusec";
    for (int i = 1; i < argc; ++i)
      command += std::string(" ") + argv[i];
    TraceFile trace(options.tracePath, command);
    int status = runCli(options);
    trace.write();
    return status;
  } catch (const UsageError &error) {
    if (!error.message.empty())
      std::cerr << "fusec: error: " << error.message << "\n";
    std::cerr << "(run 'fusec --help' for usage)\n";
    return 2;
  } catch (const Error &error) {
    std::cerr << error.what() << "\n";
    return 1;
  } catch (const std::bad_alloc &) {
    std::cerr << "fusec: error: out of host memory (the model's tensors do "
                 "not fit)\n";
    return 1;
  } catch (const std::exception &error) {
    std::cerr << "fusec: error: " << error.what() << "\n";
    return 1;
  }
}
