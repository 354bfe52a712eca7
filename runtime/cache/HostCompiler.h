//===- HostCompiler.h - Running the host C++ compiler -----------*- C++ -*-===//
//
// Internal to the kernel cache (KernelCache::hostCompileCommand is the
// command, KernelCache::hostKernelCodeFlags its code-generation flags).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CACHE_HOSTCOMPILER_H
#define FUSEC_RUNTIME_CACHE_HOSTCOMPILER_H

#include <string>
#include <vector>

namespace fusec::cache {

/// The absolute path of `program` found through $PATH, or `program`.
std::string resolveProgram(const std::string &program);

/// The host CPU's feature flags: entries built with -march=native on one CPU
/// must not be loaded on another.
std::string cpuFlags();

/// Runs `argv` with stdout and stderr sent to `logPath` and TMPDIR set to
/// `tmpDir`; the exit status. The compiler runs in a process group of its
/// own, watched by a small process that kills the whole group if this
/// process dies first (e.g. by SIGKILL mid-compile), so no orphaned
/// compiler keeps writing into the cache after its owner is gone.
int runCompiler(const std::vector<std::string> &argv,
                const std::string &logPath, const std::string &tmpDir);

} // namespace fusec::cache

#endif
