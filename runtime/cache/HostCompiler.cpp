//===- HostCompiler.cpp - Running the host C++ compiler -------------------===//

#include "runtime/cache/HostCompiler.h"

#include "runtime/cache/CacheFiles.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Error.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace fusec {

namespace {

/// How kernels are linked into a shared library (hostKernelCodeFlags says
/// how they compile).
const std::vector<std::string> kHostLinkFlags = {"-shared", "-fPIC", "-lmvec"};

} // namespace

namespace cache {

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

std::string cpuFlags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0)
      return line;
  return "unknown-cpu";
}

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

} // namespace cache

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
  // otherwise contract them into an fma under -march); -fno-trapping-math:
  // no kernel reads the floating-point exception flags, and without it
  // GCC 12 does not if-convert (so does not vectorize) a loop around a
  // float-to-int conversion: fusec_expf ran scalar in every softmax and
  // attention (the values are the same either way).
  static const std::vector<std::string> flags = {"-O3",
                                                 "-march=native",
                                                 "-fopenmp",
                                                 "-fwrapv",
                                                 "-fno-math-errno",
                                                 "-fno-trapping-math",
                                                 "-ffp-contract=off",
                                                 "-std=c++17"};
  return flags;
}

} // namespace fusec
