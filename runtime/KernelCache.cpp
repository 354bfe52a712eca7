#include "runtime/KernelCache.h"

#include "runtime/CudaApi.h"
#include "runtime/Error.h"
#include "runtime/Hash.h"
#include "runtime/Trace.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace fusec {

namespace {

/// Bumped whenever the entry format or the kernel ABI changes.
constexpr const char *kCacheFormat = "fusec-host-cache-v1";
/// Trailer after the library bytes: payload size, payload hash, magic.
constexpr char kTrailerMagic[8] = {'F', 'U', 'S', 'E', 'C', 'S', 'O', '1'};
constexpr size_t kTrailerBytes = 24;
/// The `stats` file: magic, six counters, a hash of the counters.
constexpr char kStatsMagic[8] = {'F', 'U', 'S', 'E', 'C', 'S', 'T', '1'};
constexpr size_t kStatsCounters = 6;
constexpr size_t kStatsBytes = 8 + 8 * kStatsCounters + 8;
/// The counters' size when it must be recounted (they were lost).
constexpr uint64_t kUnknownBytes = ~0ull;
/// How long a compile waits for another process compiling the same key
/// before compiling it too.
constexpr auto kCompileLockWait = std::chrono::minutes(10);

/// A cache hit on the trace: an instant event naming the slice it lies in
/// (the caller's, named after the kernels), which is told the outcome.
void traceHit(const char *where, const std::string &key) {
  if (!trace::enabled())
    return;
  trace::Scope *caller = trace::Scope::innermost();
  trace::instant(std::string("kernel cache hit (") + where + ")", "cache",
                 {{"key", key}, {"for", caller ? caller->name() : ""}});
  trace::annotate({"cache", std::string(where) + " hit"});
}

/// How kernels are linked into a shared library (hostKernelCodeFlags says
/// how they compile).
const std::vector<std::string> kHostLinkFlags = {"-shared", "-fPIC", "-lmvec"};

std::string readFile(const std::string &path, bool *ok = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (ok)
    *ok = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// All of `fd` from its start; false on a read error.
bool readAll(int fd, std::string &bytes) {
  bytes.clear();
  char buffer[1 << 16];
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      return true;
    bytes.append(buffer, n);
    offset += n;
  }
}

bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= n;
  }
  return true;
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

/// The names in `dir` (not . and ..); empty when it does not exist.
std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *handle = opendir(dir.c_str())) {
    while (dirent *entry = readdir(handle))
      if (std::strcmp(entry->d_name, ".") != 0 &&
          std::strcmp(entry->d_name, "..") != 0)
        names.push_back(entry->d_name);
    closedir(handle);
  }
  return names;
}

/// Removes a file or a directory tree; a name already gone is fine.
void removeTree(const std::string &path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return;
  if (S_ISDIR(info.st_mode)) {
    for (const std::string &name : listDirectory(path))
      removeTree(path + "/" + name);
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
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

//===----------------------------------------------------------------------===//
// Owners of work files
//===----------------------------------------------------------------------===//

/// This boot and PID namespace: PIDs and start times are only comparable
/// between processes with the same tag.
const std::string &namespaceTag() {
  static const std::string tag = [] {
    std::string id = readFile("/proc/sys/kernel/random/boot_id");
    char link[256];
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link);
    if (n > 0)
      id.append(link, n);
    return toHex(hashBytes(id)).substr(0, 8);
  }();
  return tag;
}

/// The start time of process `pid` (clock ticks since boot), "" when there
/// is no such process.
std::string startTimeOf(long pid) {
  std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos)
    return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  // Field 22 of the file; the first after the command is field 3.
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field))
      return "";
  return field;
}

/// Whether the work file or directory `name` in tmp/ belongs to a process
/// that is gone (or, for a foreign or unknown owner, is old enough).
bool isStaleTemp(const std::string &name, time_t modified) {
  auto foreignRule = [&] {
    return std::time(nullptr) - modified > KernelCache::kForeignTempSeconds;
  };
  // <key>.<pid>-<start>-<namespace>.<n>[.<ext>]
  size_t first = name.find('.');
  size_t second =
      first == std::string::npos ? first : name.find('.', first + 1);
  if (second == std::string::npos)
    return foreignRule();
  std::string owner = name.substr(first + 1, second - first - 1);
  size_t dash1 = owner.find('-');
  size_t dash2 =
      dash1 == std::string::npos ? dash1 : owner.find('-', dash1 + 1);
  if (dash2 == std::string::npos)
    return foreignRule();
  std::string pidText = owner.substr(0, dash1);
  std::string start = owner.substr(dash1 + 1, dash2 - dash1 - 1);
  if (owner.substr(dash2 + 1) != namespaceTag() || pidText.empty() ||
      pidText.find_first_not_of("0123456789") != std::string::npos ||
      pidText.size() > 9)
    return foreignRule();
  return startTimeOf(std::stol(pidText)) != start;
}

/// Whether nobody holds the lock file at `path` (then it is stale).
bool lockIsFree(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

//===----------------------------------------------------------------------===//
// Entries
//===----------------------------------------------------------------------===//

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

/// Writes `bytes` to a new file `path`; with `durable`, flushes it to the
/// disk (entries, before they are published: a crash of the machine then
/// leaves the old entry or the whole new one).
bool writeFile(const std::string &path, const std::string &bytes,
               bool durable) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  bool ok = writeAll(fd, bytes.data(), bytes.size()) &&
            (!durable || fdatasync(fd) == 0);
  return close(fd) == 0 && ok;
}

/// The size of the file at `path`, if there is one.
bool fileSize(const std::string &path, uint64_t &size) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return false;
  size = info.st_size;
  return true;
}

struct EntryFile {
  std::string path;
  uint64_t size;
  struct timespec modified;
};

/// Every entry and failed source, with its size and modification time.
std::vector<EntryFile> listEntries(const std::string &dir) {
  std::vector<EntryFile> files;
  for (const char *sub : {"/host", "/cuda", "/failed"}) {
    std::string folder = dir + sub;
    for (const std::string &name : listDirectory(folder)) {
      std::string path = folder + "/" + name;
      struct stat info;
      if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        continue;
      files.push_back(
          {path, static_cast<uint64_t>(info.st_size), info.st_mtim});
    }
  }
  return files;
}

//===----------------------------------------------------------------------===//
// The shared counters
//===----------------------------------------------------------------------===//

std::string encodeCounters(const CacheCounters &c) {
  uint64_t values[kStatsCounters] = {c.bytes,  c.entries,        c.hits,
                                     c.misses, c.corruptEntries, c.evictions};
  std::string bytes(kStatsBytes, '\0');
  std::memcpy(bytes.data(), kStatsMagic, 8);
  std::memcpy(bytes.data() + 8, values, sizeof values);
  uint64_t hash = hashBytes(std::string_view(bytes.data(), 8 + sizeof values));
  std::memcpy(bytes.data() + 8 + sizeof values, &hash, 8);
  return bytes;
}

bool decodeCounters(const std::string &bytes, CacheCounters &c) {
  if (bytes.size() != kStatsBytes ||
      std::memcmp(bytes.data(), kStatsMagic, 8) != 0)
    return false;
  uint64_t values[kStatsCounters], hash;
  std::memcpy(values, bytes.data() + 8, sizeof values);
  std::memcpy(&hash, bytes.data() + 8 + sizeof values, 8);
  if (hashBytes(std::string_view(bytes.data(), 8 + sizeof values)) != hash)
    return false;
  c = {values[0], values[1], values[2], values[3], values[4], values[5]};
  return true;
}

/// Runs `update(counters, known)` on the directory's counters under the
/// stats file's lock and writes them back; `known` is false when the file
/// was missing or damaged (the counters then start from zero). False when
/// the file cannot be used at all (the cache still works, uncounted).
bool updateCounters(const std::string &dir,
                    const std::function<void(CacheCounters &, bool)> &update) {
  int fd = open((dir + "/stats").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      close(fd);
      return false;
    }
  std::string bytes;
  CacheCounters counters;
  bool known = readAll(fd, bytes) && decodeCounters(bytes, counters);
  if (!known)
    counters = CacheCounters();
  update(counters, known);
  std::string encoded = encodeCounters(counters);
  bool ok = pwrite(fd, encoded.data(), encoded.size(), 0) ==
            static_cast<ssize_t>(encoded.size());
  close(fd);
  return ok;
}

CacheCounters readCounters(const std::string &dir) {
  CacheCounters counters;
  std::string bytes = readFile(dir + "/stats");
  if (!decodeCounters(bytes, counters))
    counters = CacheCounters();
  return counters;
}

/// An flock on `path` held for this object's lifetime.
class FileLock {
public:
  /// Blocks until the lock is held when `wait`; otherwise held() says.
  FileLock(const std::string &path, bool wait) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return;
    int result;
    while ((result = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 &&
           errno == EINTR) {
    }
    if (result != 0) {
      close(fd);
      fd = -1;
    }
  }
  ~FileLock() {
    if (fd >= 0)
      close(fd);
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  bool held() const { return fd >= 0; }

private:
  int fd = -1;
};

/// The lock a process holds while it compiles one key: others wanting the
/// same key wait, then find the entry published. It only saves work — two
/// processes compiling one key at once each publish an identical entry —
/// so a lock that cannot be had in time (or at all) is given up on.
class CompileLock {
public:
  explicit CompileLock(std::string lockPath) : path(std::move(lockPath)) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return;
    auto deadline = std::chrono::steady_clock::now() + kCompileLockWait;
    auto pause = std::chrono::milliseconds(1);
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) ||
          std::chrono::steady_clock::now() > deadline) {
        close(fd);
        fd = -1;
        return;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }
  ~CompileLock() {
    if (fd < 0)
      return;
    // Whoever opened this file before the unlink still waits on it and
    // then finds the entry; newcomers create a fresh lock file.
    unlink(path.c_str());
    close(fd);
  }
  CompileLock(const CompileLock &) = delete;
  CompileLock &operator=(const CompileLock &) = delete;

private:
  std::string path;
  int fd = -1;
};

//===----------------------------------------------------------------------===//
// Running the host compiler
//===----------------------------------------------------------------------===//

/// Runs `argv` with stdout and stderr sent to `logPath` and TMPDIR set to
/// `tmpDir`; the exit status. The compiler runs in a process group of its
/// own, watched by a small process that kills the whole group if this
/// process dies first (e.g. by SIGKILL mid-compile), so no orphaned
/// compiler keeps writing into the cache after its owner is gone.
int runCompiler(const std::vector<std::string> &argv,
                const std::string &logPath, const std::string &tmpDir) {
  // Everything the children need is built before fork: after it they only
  // make async-signal-safe calls.
  std::string program = resolveProgram(argv[0]);
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment;
  for (char **var = environ; var && *var; ++var)
    if (std::strncmp(*var, "TMPDIR=", 7) != 0)
      environment.push_back(*var);
  environment.push_back("TMPDIR=" + tmpDir);
  std::vector<char *> envp;
  for (std::string &var : environment)
    envp.push_back(var.data());
  envp.push_back(nullptr);
  static const char kExecFailed[] = "fusec: cannot run the host compiler\n";

  int logFd =
      open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int nullFd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pipeFds[2] = {-1, -1};
  if (logFd < 0 || nullFd < 0 || pipe2(pipeFds, O_CLOEXEC) != 0) {
    int error = errno;
    for (int fd : {logFd, nullFd, pipeFds[0], pipeFds[1]})
      if (fd >= 0)
        close(fd);
    throw Error("fusec: cannot start the host compiler: " +
                std::string(std::strerror(error)));
  }
  pid_t parent = getpid();
  pid_t compiler = fork();
  if (compiler == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(nullFd, 0);
    dup2(logFd, 1);
    dup2(logFd, 2);
    execve(program.c_str(), args.data(), envp.data());
    ssize_t ignored = write(2, kExecFailed, sizeof kExecFailed - 1);
    (void)ignored;
    _exit(127);
  }
  int forkError = errno;
  close(logFd);
  close(nullFd);
  if (compiler < 0) {
    close(pipeFds[0]);
    close(pipeFds[1]);
    throw Error("fusec: cannot run the host compiler '" + argv[0] +
                "': " + std::strerror(forkError));
  }
  setpgid(compiler, compiler);
  pid_t watcher = fork();
  if (watcher == 0) {
    // Terminal signals meant for fusec's group must not stop the watcher
    // before it has killed the compiler's group.
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    if (pipeFds[0] != 3) {
      dup2(pipeFds[0], 3);
    }
    close_range(4, ~0u, 0);
    char byte;
    ssize_t n;
    while ((n = read(3, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n <= 0)
      kill(-compiler, SIGKILL);
    _exit(0);
  }
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(compiler, &status, 0) < 0 && errno == EINTR) {
  }
  ssize_t written = write(pipeFds[1], "x", 1);
  (void)written;
  close(pipeFds[1]);
  if (watcher > 0)
    while (waitpid(watcher, nullptr, 0) < 0 && errno == EINTR) {
    }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
      readFile(logPath).find(kExecFailed) != std::string::npos)
    throw Error("fusec: cannot run the host compiler '" + argv[0] +
                "' (set $CXX to a C++ compiler with OpenMP)");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

//===----------------------------------------------------------------------===//
// KernelCache
//===----------------------------------------------------------------------===//

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
  const std::vector<std::string> &code = hostKernelCodeFlags();
  command.insert(command.end(), code.begin(), code.end());
  command.insert(command.end(), kHostLinkFlags.begin(), kHostLinkFlags.end());
  return command;
}

const std::vector<std::string> &KernelCache::hostKernelCodeFlags() {
  // -fwrapv: integers wrap as the reference does; -ffp-contract=off: a
  // multiply and an add round separately, as ONNX's ops do (GCC would
  // otherwise contract them into an fma under -march).
  static const std::vector<std::string> flags = {
      "-O3",       "-march=native",   "-fopenmp",
      "-fwrapv",   "-fno-math-errno", "-ffp-contract=off",
      "-std=c++17"};
  return flags;
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

uint64_t KernelCache::parseSize(const std::string &text) {
  auto invalid = [&](const std::string &why) {
    return Error("fusec: '" + text + "' is not a cache size (" + why +
                 "; e.g. 500M, 2G, 64Ki or 0 for no limit)");
  };
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  if (begin == std::string::npos)
    throw invalid("it is empty");
  std::string trimmed = text.substr(begin, end - begin + 1);
  size_t digits = trimmed.find_first_not_of("0123456789.");
  std::string number = trimmed.substr(0, digits);
  std::string suffix =
      digits == std::string::npos ? std::string() : trimmed.substr(digits);
  if (number.empty() || number == "." ||
      std::count(number.begin(), number.end(), '.') > 1)
    throw invalid("it does not start with a number");
  std::string unit;
  for (char c : suffix)
    if (c != ' ')
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'b')
    unit.pop_back();
  else if (unit == "b")
    unit.clear();
  static const std::map<std::string, double> kUnits = {
      {"", 1},           {"k", 1e3},           {"m", 1e6},
      {"g", 1e9},        {"t", 1e12},          {"ki", 1024.0},
      {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end())
    throw invalid("unknown unit '" + suffix + "'");
  double bytes = std::strtod(number.c_str(), nullptr) * it->second;
  if (!(bytes < 9.2e18))
    throw invalid("it is too large");
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string KernelCache::formatSize(uint64_t bytes) {
  if (bytes < 1000)
    return std::to_string(bytes) + " bytes";
  static const char *const kUnits[] = {"kB", "MB", "GB", "TB", "PB"};
  double value = bytes / 1000.0;
  int unit = 0;
  while (value >= 999.95 && unit < 4) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string KernelCache::ownerTag(int pid) {
  return std::to_string(pid) + "-" + startTimeOf(pid) + "-" + namespaceTag();
}

std::string KernelCache::ownerTag() { return ownerTag(getpid()); }

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

  if (const char *limit = std::getenv("FUSEC_CACHE_MAX_SIZE");
      limit && *limit) {
    try {
      sizeLimit = parseSize(limit);
    } catch (const Error &error) {
      std::string why = error.what();
      if (why.rfind("fusec: ", 0) == 0)
        why = why.substr(7);
      sizeLimitProblem = "$FUSEC_CACHE_MAX_SIZE: " + why +
                         "; using the default, " + formatSize(kDefaultMaxSize);
    }
  }
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

std::string KernelCache::workStem(const std::string &key) const {
  static std::atomic<unsigned> counter{0};
  return cacheDirectory + "/tmp/" + key + "." + ownerTag() + "." +
         std::to_string(counter++);
}

//===----------------------------------------------------------------------===//
// Counters, eviction and cleanup
//===----------------------------------------------------------------------===//

void KernelCache::recordHit() {
  updateCounters(cacheDirectory, [](CacheCounters &counters, bool known) {
    ++counters.hits;
    if (!known)
      counters.bytes = kUnknownBytes; // the next write recounts
  });
}

void KernelCache::recordCorrupt() {
  ++counters.corruptEntries;
  updateCounters(cacheDirectory, [](CacheCounters &counters, bool known) {
    ++counters.corruptEntries;
    if (!known)
      counters.bytes = kUnknownBytes;
  });
}

void KernelCache::recordWrite(uint64_t bytes, bool replaced,
                              uint64_t oldBytes) {
  if (!sizeLimitProblem.empty()) {
    warn("fusec: warning: " + sizeLimitProblem);
    sizeLimitProblem.clear();
  }
  bool unknown = false, overLimit = false;
  updateCounters(cacheDirectory, [&](CacheCounters &c, bool known) {
    unknown = !known || c.bytes == kUnknownBytes;
    ++c.misses;
    if (unknown) {
      c.bytes = kUnknownBytes;
    } else if (replaced) {
      c.bytes = c.bytes + bytes > oldBytes ? c.bytes + bytes - oldBytes : 0;
    } else {
      c.bytes += bytes;
      ++c.entries;
    }
    overLimit = sizeLimit != 0 && c.bytes > sizeLimit;
  });
  // A scan when the counters were lost (a new or an older cache: it also
  // recounts them) or when the cache may be over its limit; evicting to
  // 90% of the limit leaves room for the next writes before another scan.
  // A process already cleaning up does it for everyone.
  if (unknown || overLimit)
    counters.evictions += static_cast<int>(
        cleanUpTo(sizeLimit, sizeLimit - sizeLimit / 10, /*wait=*/false));
}

uint64_t KernelCache::removeStaleTemps() const {
  std::string tmp = cacheDirectory + "/tmp";
  uint64_t removed = 0;
  for (const std::string &name : listDirectory(tmp)) {
    std::string path = tmp + "/" + name;
    if (endsWith(name, ".lock")) {
      // Unheld lock files only; one opened meanwhile by a process about
      // to wait on it costs at most a duplicate compile.
      if (lockIsFree(path) && unlink(path.c_str()) == 0)
        ++removed;
      continue;
    }
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !isStaleTemp(name, info.st_mtime))
      continue;
    removeTree(path);
    ++removed;
  }
  return removed;
}

uint64_t KernelCache::cleanUp() {
  return cleanUpTo(sizeLimit, sizeLimit, /*wait=*/true);
}

uint64_t KernelCache::cleanUp(uint64_t targetBytes) {
  return cleanUpTo(targetBytes, targetBytes, /*wait=*/true);
}

uint64_t KernelCache::cleanUpTo(uint64_t trigger, uint64_t target, bool wait) {
  makeDirectories(cacheDirectory);
  FileLock lock(cacheDirectory + "/cleanup.lock", wait);
  if (!lock.held())
    return 0;
  removeStaleTemps();
  CacheCounters before = readCounters(cacheDirectory);
  std::vector<EntryFile> files = listEntries(cacheDirectory);
  uint64_t total = 0;
  for (const EntryFile &file : files)
    total += file.size;
  uint64_t removed = 0, remaining = files.size();
  if (trigger != 0 && total > trigger) {
    // Least recently used first: a disk hit renews an entry's mtime.
    std::sort(files.begin(), files.end(),
              [](const EntryFile &a, const EntryFile &b) {
                if (a.modified.tv_sec != b.modified.tv_sec)
                  return a.modified.tv_sec < b.modified.tv_sec;
                if (a.modified.tv_nsec != b.modified.tv_nsec)
                  return a.modified.tv_nsec < b.modified.tv_nsec;
                return a.path < b.path;
              });
    for (const EntryFile &file : files) {
      if (total <= target)
        break;
      // Unlinking is safe for readers: one holding the file open or mapped
      // keeps its inode; one arriving later misses and recompiles.
      if (unlink(file.path.c_str()) == 0 || errno == ENOENT) {
        total -= file.size;
        --remaining;
        ++removed;
      }
    }
  }
  // What was written while scanning is added back to the recount.
  updateCounters(cacheDirectory, [&](CacheCounters &c, bool known) {
    bool counted =
        known && c.bytes != kUnknownBytes && before.bytes != kUnknownBytes;
    uint64_t addedBytes =
        counted && c.bytes > before.bytes ? c.bytes - before.bytes : 0;
    uint64_t addedEntries =
        counted && c.entries > before.entries ? c.entries - before.entries : 0;
    c.bytes = total + addedBytes;
    c.entries = remaining + addedEntries;
    c.evictions += removed;
  });
  return removed;
}

void KernelCache::clear() {
  makeDirectories(cacheDirectory);
  FileLock lock(cacheDirectory + "/cleanup.lock", /*wait=*/true);
  for (const EntryFile &file : listEntries(cacheDirectory))
    unlink(file.path.c_str());
  removeStaleTemps();
  updateCounters(cacheDirectory, [](CacheCounters &c, bool) {
    c.bytes = 0;
    c.entries = 0;
  });
}

CacheReport KernelCache::report(bool verify) const {
  CacheReport report;
  report.directory = cacheDirectory;
  report.maxSize = sizeLimit;
  report.maxSizeProblem = sizeLimitProblem;
  for (const EntryFile &file : listEntries(cacheDirectory)) {
    report.bytes += file.size;
    bool failed = file.path.compare(cacheDirectory.size(), 8, "/failed/") == 0;
    if (failed) {
      ++report.failedSources;
      continue;
    }
    ++(endsWith(file.path, ".cubin") ? report.cudaEntries : report.hostEntries);
    if (!verify)
      continue;
    int fd = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue; // evicted meanwhile
    std::string bytes;
    if (!readAll(fd, bytes) || !validateEntry(bytes).empty())
      ++report.invalidEntries;
    close(fd);
  }
  std::string tmp = cacheDirectory + "/tmp";
  for (const std::string &name : listDirectory(tmp)) {
    std::string path = tmp + "/" + name;
    bool stale;
    if (endsWith(name, ".lock")) {
      stale = lockIsFree(path);
    } else {
      struct stat info;
      if (lstat(path.c_str(), &info) != 0)
        continue;
      stale = isStaleTemp(name, info.st_mtime);
    }
    ++(stale ? report.staleTemps : report.liveTemps);
  }
  report.counters = readCounters(cacheDirectory);
  return report;
}

//===----------------------------------------------------------------------===//
// Lookups
//===----------------------------------------------------------------------===//

std::shared_ptr<KernelLibrary>
KernelCache::loadHostLibrary(const std::string &source) {
  std::string key = keyFor(compilerIdentity, source);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) {
    ++counters.memoryHits;
    traceHit("memory", key);
    return it->second;
  }
  std::shared_ptr<KernelLibrary> library = loadOrCompile(key, source);
  loaded[key] = library;
  return library;
}

bool KernelCache::readEntry(const std::string &path, std::string &payload,
                            int *keepFd) {
  if (keepFd)
    *keepFd = -1;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  std::string bytes;
  std::string problem =
      readAll(fd, bytes) ? validateEntry(bytes) : "it cannot be read";
  if (!problem.empty()) {
    close(fd);
    recordCorrupt();
    warn("fusec: warning: cache entry " + path + " is corrupt (" + problem +
         "); recompiling it");
    return false;
  }
  // Least recently used: a hit renews the entry's modification time (for
  // a library, once it is loaded).
  if (!keepFd)
    futimens(fd, nullptr);
  bytes.resize(bytes.size() - kTrailerBytes);
  payload = std::move(bytes);
  if (keepFd)
    *keepFd = fd;
  else
    close(fd);
  return true;
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
  return std::make_shared<KernelLibrary>(handle, entryPath);
}

std::shared_ptr<KernelLibrary>
KernelCache::loadOrCompile(const std::string &key, const std::string &source) {
  std::string entryPath = cacheDirectory + "/host/" + key + ".so";
  makeDirectories(cacheDirectory + "/tmp");
  struct stat before;
  bool existed = stat(entryPath.c_str(), &before) == 0;
  if (auto library = loadEntry(entryPath)) {
    ++counters.diskHits;
    traceHit("disk", key);
    return library;
  }
  // A process's first miss removes what dead processes left in tmp/.
  if (!sweptTemps) {
    sweptTemps = true;
    removeStaleTemps();
  }
  // Another process compiling this key may publish it meanwhile; a corrupt
  // entry already reported is not read again.
  CompileLock compileLock(cacheDirectory + "/tmp/" + key + ".lock");
  struct stat after;
  if (stat(entryPath.c_str(), &after) == 0 &&
      (!existed || after.st_ino != before.st_ino ||
       after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
       after.st_mtim.tv_nsec != before.st_mtim.tv_nsec))
    if (auto library = loadEntry(entryPath)) {
      ++counters.diskHits;
      traceHit("disk", key);
      return library;
    }
  return compileAndLoad(key, source, entryPath);
}

void KernelCache::failCompile(const std::string &key, const std::string &ext,
                              const std::string &source,
                              const std::string &message) {
  makeDirectories(cacheDirectory + "/failed");
  makeDirectories(cacheDirectory + "/tmp");
  std::string saved = cacheDirectory + "/failed/" + key + ext;
  std::string temp = workStem(key) + ext;
  if (!writeFile(temp, source, /*durable=*/false) ||
      std::rename(temp.c_str(), saved.c_str()) != 0) {
    std::remove(temp.c_str());
    throw Error(message + "\n(the kernel source could not be saved at " +
                saved + ")");
  }
  throw Error(message + "\nthe kernel source is saved at " + saved);
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
      traceHit("memory", key);
      return it->second;
    }
    if (readEntry(entryPath, cubin)) {
      ++counters.diskHits;
      traceHit("disk", key);
      recordHit();
      auto shared = std::make_shared<const std::string>(std::move(cubin));
      cubins[key] = shared;
      return shared;
    }
  }
  // Compiling happens unlocked, so that the groups of one program compile
  // in parallel; two threads compiling the same source each publish an
  // identical entry by an atomic rename.
  try {
    trace::Scope scope("nvrtc compile", "compile",
                       {{"key", key}, {"arch", arch}});
    cubin = cuda::compileCuda(source, arch, options, /*ptx=*/false);
  } catch (const Error &error) {
    trace::annotate({"cache", "compile failed"});
    failCompile(key, ".cu", source, error.what());
  }
  trace::annotate({"cache", "compiled"});
  makeDirectories(cacheDirectory + "/cuda");
  makeDirectories(cacheDirectory + "/tmp");
  std::string temp = workStem(key) + ".cubin";
  std::string entry = cubin + trailerFor(cubin);
  uint64_t oldBytes = 0;
  bool replaced = fileSize(entryPath, oldBytes);
  bool published = writeFile(temp, entry, /*durable=*/true) &&
                   std::rename(temp.c_str(), entryPath.c_str()) == 0;
  int publishError = errno;
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.compiles;
  if (published) {
    recordWrite(entry.size(), replaced, oldBytes);
  } else {
    // The cubin is in memory: this process goes on uncached.
    std::remove(temp.c_str());
    warn("fusec: warning: cannot publish cache entry " + entryPath + ": " +
         std::strerror(publishError));
  }
  auto [it, inserted] = cubins.try_emplace(key, nullptr);
  if (inserted)
    it->second = std::make_shared<const std::string>(std::move(cubin));
  return it->second;
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
  return std::make_shared<KernelLibrary>(handle, entryPath);
}

} // namespace fusec
