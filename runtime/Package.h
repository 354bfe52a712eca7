//===- Package.h - Compiled models in one file -----------------*- C++ -*-===//
//
// A package (`fusec MODEL --emit=package -o MODEL.fusec`) is a compiled
// model: its Program, its kernels as compiled code (a shared object for the
// CPU; cubins plus PTX for CUDA) and its weights, so that a process loads
// and runs it with the runtime alone: no MLIR, no NVRTC, no host compiler.
// docs/packages.md describes the format:
//
//   header (64 bytes): magic "FUSECPKG", format version, the writing
//     fusec's version, target, section count, file size, and a checksum
//     of the header and the section table
//   section table: per section its kind, index, offset, size and checksum
//   sections, each at a 64-byte aligned offset: the program, the kernel
//     table, each unit's code (and PTX), each constant's bytes
//
// Checksums are 64-bit FNV-1a (runtime/cache/Hash.h).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_PACKAGE_H
#define FUSEC_RUNTIME_PACKAGE_H

#include "runtime/Executable.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fusec {

/// The package format this runtime writes and reads; bumped by any change
/// to the sections' layouts (ProgramBinary's included).
constexpr uint32_t kPackageFormatVersion = 6;
/// The version of fusec writing packages ("0.4.0"): only the same version
/// reads them.
const char *packageFusecVersion();

/// Writes the program, its compiled kernels (`image`) and weights to
/// `path` (through a temporary file renamed over it). Throws fusec::Error
/// naming the file when it cannot be written.
void savePackage(const Program &program, const ExecutableImage &image,
                 const std::string &path);

/// A package's parts, read and checked.
struct PackageContents {
  Program program;
  std::shared_ptr<ExecutableImage> image;
};

/// Reads a package held in memory; `path` names it in errors. Throws
/// fusec::Error ("PATH: error: REASON") for a file that is not a package,
/// is truncated or corrupt (a checksum does not match), comes from another
/// format or fusec version, or holds an inconsistent program. Without
/// `verifyChecksums` the checksums are not compared (the fuzz harness then
/// reaches the checks behind them).
PackageContents parsePackage(std::string_view bytes, const std::string &path,
                             bool verifyChecksums = true);

/// Reads and checks the package at `path` (mapped, not copied twice).
PackageContents readPackage(const std::string &path);

/// Reads the package at `path` and loads its kernels. Throws fusec::Error
/// naming the file when readPackage does, or when this machine cannot run
/// it: a CUDA package without a usable GPU or for a GPU whose cubins and
/// PTX do not fit this one, a CPU package compiled for CPU features this
/// CPU lacks.
std::shared_ptr<Executable> loadPackage(const std::string &path);

/// Whether `path` names a package (it ends in ".fusec").
bool isPackagePath(const std::string &path);

} // namespace fusec

#endif
