//===- FuzzPackage.cpp - Compiled-model packages (fusec MODEL.fusec) ------===//
//
// Each input is a package file: the harness reads it as `fusec
// MODEL.fusec --run` does (readPackage: mapped, every checksum compared),
// then parses the same bytes without comparing checksums, so that mutated
// inputs reach the checks of the structure behind them (the section table,
// the program, the kernel table, the constants). Nothing is loaded or run:
// a package's kernel code is dlopen'ed or handed to the CUDA driver, which
// would test glibc's loader or the driver rather than fusec. The seeds are
// packages of test models whose code sections were cut to a few bytes
// (docs/fuzzing.md).
//
//===----------------------------------------------------------------------===//
#include "FuzzUtil.h"

#include "runtime/Package.h"
#include "runtime/core/Error.h"
#include "runtime/core/MemoryPlan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fusec::fuzz::writeInput(data, size, "input.fusec");
  try {
    fusec::readPackage(path);
  } catch (const fusec::Error &) {
  }
  try {
    fusec::PackageContents contents = fusec::parsePackage(
        std::string_view(reinterpret_cast<const char *>(data), size), path,
        /*verifyChecksums=*/false);
    // What an executable computes first from a checked program.
    fusec::planMemory(contents.program);
  } catch (const fusec::Error &) {
  }
  return 0;
}
