//===- fusec-run.cpp - Runs a package with the runtime alone --------------===//
//
// The deployment side of a package (docs/packages.md): links the runtime
// only (no MLIR, no ONNX, no compiler), loads MODEL.fusec and runs it on
// .npy inputs (random ones, seeded, without them), printing each output
// as `fusec --run` does.
//
//   fusec-run MODEL.fusec [--inputs A.npy B.npy ...] [--outputs-dir DIR]
//             [--seed N] [--time]
//
// --time adds a line with the load time and the first run's, in ms.
//
//===----------------------------------------------------------------------===//

#include "runtime/Package.h"
#include "runtime/core/Compare.h"
#include "runtime/core/Error.h"
#include "runtime/core/Npy.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sys/stat.h>

using namespace fusec;

namespace {

const char *kUsage =
    "usage: fusec-run MODEL.fusec [--inputs A.npy ...] [--outputs-dir DIR] "
    "[--seed N] [--time]\n";

struct Options {
  std::string package;
  std::vector<std::string> inputFiles;
  std::string outputsDir;
  uint64_t seed = 0;
  bool time = false;
};

/// The options, or exits 2 with the usage.
Options parseArguments(int argc, char **argv) {
  Options options;
  auto usage = [](const std::string &why) {
    std::cerr << "fusec-run: error: " << why << "\n" << kUsage;
    std::exit(2);
  };
  bool readingInputs = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg == "--inputs") {
      readingInputs = true;
      continue;
    }
    if (arg == "--outputs-dir" || arg == "--seed") {
      if (i + 1 == argc)
        usage(arg + " needs a value");
      std::string value = argv[++i];
      if (arg == "--outputs-dir") {
        options.outputsDir = value;
      } else {
        char *end = nullptr;
        options.seed = std::strtoull(value.c_str(), &end, 10);
        if (value.empty() || *end)
          usage("--seed needs a non-negative integer, got '" + value + "'");
      }
    } else if (arg == "--time") {
      options.time = true;
    } else if (arg.rfind("--", 0) == 0) {
      usage("unknown option '" + arg + "'");
    } else if (readingInputs) {
      options.inputFiles.push_back(arg);
      continue;
    } else if (options.package.empty()) {
      options.package = arg;
    } else {
      usage("more than one package given");
    }
    readingInputs = false;
  }
  if (options.package.empty())
    usage("no package given");
  return options;
}

std::vector<Tensor> modelInputs(const Options &options,
                                const Program &program) {
  return programInputs(program, options.inputFiles, options.seed,
                       options.package, readNpy);
}

int run(const Options &options) {
  using Clock = std::chrono::steady_clock;
  auto millis = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  Clock::time_point start = Clock::now();
  std::shared_ptr<Executable> executable = loadPackage(options.package);
  Clock::time_point loaded = Clock::now();
  const Program &program = executable->program();
  std::vector<Tensor> inputs = modelInputs(options, program);
  Clock::time_point runStart = Clock::now();
  std::vector<Tensor> outputs = executable->run(inputs);
  Clock::time_point ran = Clock::now();
  if (!options.outputsDir.empty() && mkdir(options.outputsDir.c_str(), 0755) &&
      errno != EEXIST)
    throw Error(options.outputsDir + ": error: cannot create directory");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string &name = program.outputNames[i];
    std::printf("%s\n", describeOutput(name, outputs[i]).c_str());
    if (!options.outputsDir.empty())
      writeNpy(options.outputsDir + "/" + name + ".npy", outputs[i]);
  }
  if (options.time)
    std::printf("time: load %.2f ms, first run %.2f ms\n",
                millis(start, loaded), millis(runStart, ran));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);
  try {
    return run(options);
  } catch (const Error &error) {
    std::cerr << error.what() << "\n";
  } catch (const std::bad_alloc &) {
    std::cerr << "fusec-run: error: out of host memory\n";
  } catch (const std::exception &error) {
    std::cerr << "fusec-run: error: " << error.what() << "\n";
  }
  return 1;
}
