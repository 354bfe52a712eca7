#include "runtime/KernelCache.h"

#include "runtime/CudaApi.h"
#include "runtime/Error.h"
#include "runtime/Hash.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace fusec {

namespace {

/// Bumped whenever the entry format or the kernel ABI changes.
constexpr const char *kCacheFormat = "fusec-host-cache-v1";
/// Trailer after the library bytes: payload size, payload hash, magic.
constexpr char kTrailerMagic[8] = {'F', 'U', 'S', 'E', 'C', 'S', 'O', '1'};
constexpr size_t kTrailerBytes = 24;

const std::vector<std::string> kHostFlags = {
    "-O3",     "-march=native",   "-fopenmp",   "-shared", "-fPIC",
    "-fwrapv", "-fno-math-errno", "-std=c++17", "-lmvec"};

std::string readFile(const std::string &path, bool *ok = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (ok)
    *ok = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void makeDirectories(const std::string &path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error("fusec: cannot create cache directory '" + partial +
                  "': " + std::strerror(errno));
  }
}

/// The absolute path of `program` found through $PATH, or `program`.
std::string resolveProgram(const std::string &program) {
  if (program.find('/') != std::string::npos)
    return program;
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (access((dir + "/" + program).c_str(), X_OK) == 0)
      return dir + "/" + program;
  return program;
}

/// The host CPU's feature flags: entries built with -march=native on one CPU
/// must not be loaded on another.
std::string cpuFlags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0)
      return line;
  return "unknown-cpu";
}

std::string uniqueSuffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(getpid()) + "." + std::to_string(counter++);
}

/// The trailer that makes an entry self-validating.
std::string trailerFor(const std::string &payload) {
  uint64_t size = payload.size(), hash = hashBytes(payload);
  std::string trailer(kTrailerBytes, '\0');
  std::memcpy(trailer.data(), &size, 8);
  std::memcpy(trailer.data() + 8, &hash, 8);
  std::memcpy(trailer.data() + 16, kTrailerMagic, 8);
  return trailer;
}

/// Why the entry at `path` cannot be trusted, or "" when it is valid.
std::string validateEntry(const std::string &bytes) {
  if (bytes.size() < kTrailerBytes)
    return "it is truncated";
  const char *trailer = bytes.data() + bytes.size() - kTrailerBytes;
  if (std::memcmp(trailer + 16, kTrailerMagic, 8) != 0)
    return "its trailer is missing";
  uint64_t size, hash;
  std::memcpy(&size, trailer, 8);
  std::memcpy(&hash, trailer + 8, 8);
  if (size != bytes.size() - kTrailerBytes)
    return "its size does not match its trailer";
  if (hashBytes(std::string_view(bytes.data(), size)) != hash)
    return "its content hash does not match";
  return "";
}

/// Runs `argv` with stdout and stderr sent to `logPath`; the exit status.
int runLogged(const std::vector<std::string> &argv,
              const std::string &logPath) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int spawnError =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawnError != 0)
    throw Error("fusec: cannot run the host compiler '" + argv[0] +
                "': " + std::strerror(spawnError) +
                " (set $CXX to a C++ compiler with OpenMP)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

KernelLibrary::KernelFn KernelLibrary::lookup(const std::string &name) const {
  void *symbol = dlsym(handle, name.c_str());
  if (!symbol)
    throw Error("fusec: kernel '" + name + "' is missing from " + libraryPath);
  return reinterpret_cast<KernelFn>(symbol);
}

std::vector<std::string> KernelCache::hostCompileCommand() {
  std::vector<std::string> command;
  const char *cxx = std::getenv("CXX");
  std::stringstream words(cxx && *cxx ? cxx : "c++");
  std::string word;
  while (words >> word)
    command.push_back(word);
  command.insert(command.end(), kHostFlags.begin(), kHostFlags.end());
  return command;
}

std::string KernelCache::defaultDirectory() {
  if (const char *dir = std::getenv("FUSEC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/fusec";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fusec";
}

std::shared_ptr<KernelCache> KernelCache::forDirectory(const std::string &dir) {
  static std::mutex registryMutex;
  static std::map<std::string, std::shared_ptr<KernelCache>> registry;
  std::string resolved = dir.empty() ? defaultDirectory() : dir;
  std::lock_guard<std::mutex> lock(registryMutex);
  auto &cache = registry[resolved];
  if (!cache)
    cache = std::make_shared<KernelCache>(resolved);
  return cache;
}

KernelCache::KernelCache(std::string directory)
    : cacheDirectory(directory.empty() ? defaultDirectory()
                                       : std::move(directory)) {
  // The compiler's identity: the command, and the resolved binary's size and
  // modification time (cheap, and changes when the compiler is upgraded).
  std::vector<std::string> command = hostCompileCommand();
  std::string identity;
  for (const std::string &word : command)
    identity += word + " ";
  std::string binary = resolveProgram(command.front());
  struct stat info;
  if (stat(binary.c_str(), &info) == 0)
    identity += binary + ":" + std::to_string(info.st_size) + ":" +
                std::to_string(info.st_mtime);
  compilerIdentity = identity + "\n" + cpuFlags();
}

void KernelCache::setWarningHandler(
    std::function<void(const std::string &)> handler) {
  std::lock_guard<std::mutex> lock(mutex);
  warningHandler = std::move(handler);
}

void KernelCache::warn(const std::string &message) {
  if (warningHandler)
    warningHandler(message);
  else
    std::cerr << message << "\n";
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

std::string KernelCache::keyFor(const std::string &toolchain,
                                const std::string &source) const {
  uint64_t hash = hashBytes(kCacheFormat);
  hash = hashBytes(toolchain, hash);
  hash = hashBytes(source, hash);
  return toHex(hash);
}

std::shared_ptr<KernelLibrary>
KernelCache::loadHostLibrary(const std::string &source) {
  std::string key = keyFor(compilerIdentity, source);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) {
    ++counters.memoryHits;
    return it->second;
  }
  std::shared_ptr<KernelLibrary> library = loadOrCompile(key, source);
  loaded[key] = library;
  return library;
}

bool KernelCache::readEntry(const std::string &path, std::string &payload) {
  bool exists = false;
  std::string bytes = readFile(path, &exists);
  if (!exists)
    return false;
  std::string problem = validateEntry(bytes);
  if (problem.empty()) {
    payload = bytes.substr(0, bytes.size() - kTrailerBytes);
    return true;
  }
  ++counters.corruptEntries;
  warn("fusec: warning: cache entry " + path + " is corrupt (" + problem +
       "); recompiling it");
  return false;
}

void KernelCache::failCompile(const std::string &key, const std::string &ext,
                              const std::string &source,
                              const std::string &message) {
  makeDirectories(cacheDirectory + "/failed");
  std::string saved = cacheDirectory + "/failed/" + key + ext;
  std::ofstream(saved, std::ios::binary) << source;
  throw Error(message + "\nthe kernel source is saved at " + saved);
}

std::shared_ptr<KernelLibrary>
KernelCache::loadOrCompile(const std::string &key, const std::string &source) {
  std::string entryPath = cacheDirectory + "/host/" + key + ".so";
  std::string payload;
  if (readEntry(entryPath, payload)) {
    if (void *handle = dlopen(entryPath.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      ++counters.diskHits;
      return std::make_shared<KernelLibrary>(handle, entryPath);
    }
    ++counters.corruptEntries;
    warn("fusec: warning: cache entry " + entryPath +
         " is corrupt (it "
         "cannot be loaded: " +
         dlerror() + "); recompiling it");
  }
  return compileAndLoad(key, source, entryPath);
}

std::shared_ptr<const std::string>
KernelCache::loadCubin(const std::string &source, const std::string &arch,
                       const std::vector<std::string> &options) {
  std::string toolchain = "nvrtc " + cuda::nvrtcVersion() + " " + arch;
  for (const std::string &option : options)
    toolchain += " " + option;
  std::string key = keyFor(toolchain, source);

  std::string entryPath = cacheDirectory + "/cuda/" + key + ".cubin";
  std::string cubin;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cubins.find(key); it != cubins.end()) {
      ++counters.memoryHits;
      return it->second;
    }
    if (readEntry(entryPath, cubin)) {
      ++counters.diskHits;
      auto shared = std::make_shared<const std::string>(std::move(cubin));
      cubins[key] = shared;
      return shared;
    }
  }
  // Compiling happens unlocked, so that the groups of one program compile
  // in parallel; two threads compiling the same source each publish an
  // identical entry by an atomic rename.
  {
    try {
      cubin = cuda::compileCuda(source, arch, options, /*ptx=*/false);
    } catch (const Error &error) {
      failCompile(key, ".cu", source, error.what());
    }
    makeDirectories(cacheDirectory + "/cuda");
    makeDirectories(cacheDirectory + "/tmp");
    std::string temp = cacheDirectory + "/tmp/" + key + "." + uniqueSuffix();
    {
      std::ofstream out(temp, std::ios::binary);
      out << cubin << trailerFor(cubin);
      if (!out)
        throw Error("fusec: cannot write cache entry " + temp);
    }
    if (std::rename(temp.c_str(), entryPath.c_str()) != 0)
      throw Error("fusec: cannot publish cache entry " + entryPath + ": " +
                  std::strerror(errno));
  }
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.compiles;
  auto [it, inserted] = cubins.try_emplace(key, nullptr);
  if (inserted)
    it->second = std::make_shared<const std::string>(std::move(cubin));
  return it->second;
}

std::shared_ptr<KernelLibrary>
KernelCache::compileAndLoad(const std::string &key, const std::string &source,
                            const std::string &entryPath) {
  makeDirectories(cacheDirectory + "/host");
  makeDirectories(cacheDirectory + "/tmp");
  std::string stem = cacheDirectory + "/tmp/" + key + "." + uniqueSuffix();
  std::string sourcePath = stem + ".cpp", libraryPath = stem + ".so",
              logPath = stem + ".log";
  {
    std::ofstream out(sourcePath, std::ios::binary);
    out << source;
    if (!out)
      throw Error("fusec: cannot write kernel source to " + sourcePath);
  }
  std::vector<std::string> argv = hostCompileCommand();
  argv.insert(argv.end(), {"-o", libraryPath, sourcePath});
  int status = runLogged(argv, logPath);
  ++counters.compiles;
  if (status != 0) {
    std::string log = readFile(logPath);
    for (const std::string &path : {sourcePath, logPath, libraryPath})
      std::remove(path.c_str());
    std::string command;
    for (const std::string &arg : argv)
      command += (command.empty() ? "" : " ") + arg;
    failCompile(key, ".cpp", source,
                "fusec: the host compiler failed (exit " +
                    std::to_string(status) + ")\ncommand: " + command + "\n" +
                    log);
  }
  {
    std::ofstream out(libraryPath, std::ios::binary | std::ios::app);
    out << trailerFor(readFile(libraryPath));
    if (!out)
      throw Error("fusec: cannot write cache entry " + libraryPath);
  }
  // Load the new file before publishing it: the mapping then belongs to
  // its own inode, never to an older library this process loaded under the
  // entry's name.
  void *handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw Error("fusec: cannot load freshly compiled kernels " + libraryPath +
                ": " + dlerror());
  // Atomic publish: readers see the old entry or the whole new one.
  if (std::rename(libraryPath.c_str(), entryPath.c_str()) != 0)
    throw Error("fusec: cannot publish cache entry " + entryPath + ": " +
                std::strerror(errno));
  std::remove(sourcePath.c_str());
  std::remove(logPath.c_str());
  return std::make_shared<KernelLibrary>(handle, entryPath);
}

} // namespace fusec
