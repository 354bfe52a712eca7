//===- HostLibrary.cpp - Compiling and loading host kernels ---------------===//
//
// A host entry's library is loaded with dlopen through a private name; a
// miss compiles the source with the host compiler, loads the new library
// and publishes it.
//
//===----------------------------------------------------------------------===//

#include "runtime/cache/CacheFiles.h"
#include "runtime/cache/CacheStore.h"
#include "runtime/cache/HostCompiler.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fusec {

using namespace cache;

KernelLibrary::KernelFn KernelLibrary::lookup(const std::string &name) const {
  void *symbol = dlsym(handle, name.c_str());
  if (!symbol)
    throw Error("fusec: kernel '" + name + "' is missing from " + libraryPath);
  return reinterpret_cast<KernelFn>(symbol);
}

std::shared_ptr<KernelLibrary>
loadLibraryFromMemory(std::shared_ptr<const std::string> code,
                      const std::string &path) {
  int fd = memfd_create("fusec-kernels", MFD_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": error: cannot create a file for its kernels: " +
                std::strerror(errno));
  bool written = writeAll(fd, code->data(), code->size());
  int writeError = errno;
  void *handle = nullptr;
  std::string why;
  if (written) {
    handle = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(),
                    RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      why = dlerror();
  } else {
    why = std::strerror(writeError);
  }
  // The descriptor stays open as long as the library stays loaded (for
  // good): dlopen knows the library by its path, so a later library loaded
  // through a reused descriptor number would be taken for this one.
  if (!handle) {
    close(fd);
    throw Error(path + ": error: its kernels do not load: " + why);
  }
  return std::make_shared<KernelLibrary>(handle, path, std::move(code));
}

std::shared_ptr<KernelLibrary>
KernelCache::loadEntry(const std::string &entryPath) {
  std::string payload;
  int fd;
  if (!readEntry(entryPath, payload, &fd))
    return nullptr;
  // Map exactly the bytes just validated, through a private name: a hard
  // link to the validated inode, or where the system cannot link through
  // /proc, a private copy of the bytes. An entry replaced or evicted
  // between the check and dlopen can then never slip in.
  std::string key = entryPath.substr(entryPath.rfind('/') + 1);
  key = key.substr(0, key.find('.'));
  std::string privatePath = workStem(key) + ".so";
  std::string fdPath = "/proc/self/fd/" + std::to_string(fd);
  bool privateCopy = linkat(AT_FDCWD, fdPath.c_str(), AT_FDCWD,
                            privatePath.c_str(), AT_SYMLINK_FOLLOW) == 0;
  if (!privateCopy) {
    int out = open(privatePath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                   0644);
    if (out >= 0) {
      privateCopy = writeAll(out, payload.data(), payload.size());
      privateCopy &= close(out) == 0;
      if (!privateCopy)
        unlink(privatePath.c_str());
    }
  }
  if (!privateCopy) {
    close(fd); // no room for a private name: compile instead
    return nullptr;
  }
  void *handle = dlopen(privatePath.c_str(), RTLD_NOW | RTLD_LOCAL);
  unlink(privatePath.c_str());
  if (handle)
    futimens(fd, nullptr);
  close(fd);
  if (!handle) {
    recordCorrupt();
    warn("fusec: warning: cache entry " + entryPath +
         " is corrupt (it cannot be loaded: " + dlerror() +
         "); recompiling it");
    return nullptr;
  }
  recordHit();
  return std::make_shared<KernelLibrary>(
      handle, entryPath,
      std::make_shared<const std::string>(std::move(payload)));
}

std::shared_ptr<KernelLibrary>
KernelCache::compileAndLoad(const std::string &key, const std::string &source,
                            const std::string &entryPath) {
  makeDirectories(cacheDirectory + "/host");
  // One work directory per compile, holding the source, the log, the
  // library and (through TMPDIR) the compiler's own temporaries.
  std::string work = workStem(key);
  if (mkdir(work.c_str(), 0755) != 0)
    throw Error("fusec: cannot create " + work + ": " + std::strerror(errno));
  std::string sourcePath = work + "/kernels.cpp",
              libraryPath = work + "/kernels.so", logPath = work + "/log";
  if (!writeFile(sourcePath, source, /*durable=*/false)) {
    removeTree(work);
    throw Error("fusec: cannot write kernel source to " + sourcePath);
  }
  std::vector<std::string> argv = hostCompileCommand();
  argv.insert(argv.end(), {"-o", libraryPath, sourcePath});
  int status;
  try {
    trace::Scope scope("host compile", "compile",
                       {{"key", key}, {"compiler", argv[0]}});
    status = runCompiler(argv, logPath, work);
  } catch (...) {
    removeTree(work);
    throw;
  }
  ++counters.compiles;
  trace::annotate({"cache", status == 0 ? "compiled" : "compile failed"});
  if (status != 0) {
    std::string log = readFile(logPath);
    removeTree(work);
    std::string command;
    for (const std::string &arg : argv)
      command += (command.empty() ? "" : " ") + arg;
    failCompile(key, ".cpp", source,
                "fusec: the host compiler failed (exit " +
                    std::to_string(status) + ")\ncommand: " + command + "\n" +
                    log);
  }
  // The trailer, then the bytes on disk before the entry is published.
  std::string library = readFile(libraryPath);
  std::string trailer = trailerFor(library);
  int fd = open(libraryPath.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  bool written = fd >= 0 && writeAll(fd, trailer.data(), trailer.size()) &&
                 fdatasync(fd) == 0;
  if (fd >= 0)
    written &= close(fd) == 0;
  if (!written) {
    removeTree(work);
    throw Error("fusec: cannot write cache entry " + libraryPath);
  }
  // Load the new file before publishing it: the mapping then belongs to
  // its own inode, never to an older library this process loaded under the
  // entry's name.
  void *handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string why = dlerror();
    removeTree(work);
    throw Error("fusec: cannot load freshly compiled kernels " + libraryPath +
                ": " + why);
  }
  // Atomic publish: readers see the old entry or the whole new one.
  uint64_t oldBytes = 0;
  bool replaced = fileSize(entryPath, oldBytes);
  if (std::rename(libraryPath.c_str(), entryPath.c_str()) == 0)
    recordWrite(library.size() + kTrailerBytes, replaced, oldBytes);
  else // loaded already: this process goes on uncached
    warn("fusec: warning: cannot publish cache entry " + entryPath + ": " +
         std::strerror(errno));
  removeTree(work);
  return std::make_shared<KernelLibrary>(
      handle, entryPath,
      std::make_shared<const std::string>(std::move(library)));
}

} // namespace fusec
