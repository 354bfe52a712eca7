
// ---- Repro support: the same in every repro --------------------------------
// (Few headers: they are most of a repro's build time.)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace repro {

using Shape = std::vector<int64_t>;

struct Options {
  int runs = 100;   // timed runs
  int warmup = 10;  // untimed runs before them
  uint64_t seed = 1;
  const char *kernelFile = nullptr; // CUDA: compile this file instead
};

inline Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char *flag) -> const char * {
      size_t length = std::strlen(flag);
      return std::strncmp(argv[i], flag, length) == 0 ? argv[i] + length
                                                      : nullptr;
    };
    if (const char *v = value("--runs="))
      options.runs = std::atoi(v) > 1 ? std::atoi(v) : 1;
    else if (const char *v = value("--warmup="))
      options.warmup = std::atoi(v) > 0 ? std::atoi(v) : 0;
    else if (const char *v = value("--seed="))
      options.seed = std::strtoull(v, nullptr, 10);
    else if (const char *v = value("--kernel="))
      options.kernelFile = v;
    else {
      std::fprintf(stderr,
                   "usage: %s [--runs=N] [--warmup=N] [--seed=N] "
                   "[--kernel=FILE (CUDA)]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return options;
}

// SplitMix64: the same numbers on every machine and compiler.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [low, high).
  double uniform(double low, double high) {
    return low + (high - low) * (double)(next() >> 11) * 0x1.0p-53;
  }
  // Uniform in [low, high].
  int64_t integer(int64_t low, int64_t high) {
    return low + (int64_t)(next() % (uint64_t)(high - low + 1));
  }
};

// Zeroed host memory, 64-byte aligned like the runtime's buffers.
struct HostBuffer {
  void *data = nullptr;
  int64_t bytes = 0;
  explicit HostBuffer(int64_t bytes) : bytes(bytes) {
    size_t rounded = ((size_t)(bytes > 1 ? bytes : 1) + 63) / 64 * 64;
    data = std::aligned_alloc(64, rounded);
    std::memset(data, 0, rounded);
  }
  ~HostBuffer() { std::free(data); }
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

// Row-major coordinates of element `index` of `shape`, and back.
inline void coordinates(int64_t index, const Shape &shape, int64_t *coords) {
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = index % shape[d];
    index /= shape[d];
  }
}
inline int64_t offset(const int64_t *coords, const Shape &shape) {
  int64_t result = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    result = result * shape[d] + coords[d];
  return result;
}

// The element of an operand of shape `from` that NumPy broadcasting reads
// for element `index` of shape `to` (dims aligned at the right).
inline int64_t broadcastOffset(int64_t index, const Shape &to,
                               const Shape &from) {
  int64_t result = 0, stride = 1;
  size_t lead = to.size() - from.size();
  for (size_t d = to.size(); d-- > 0;) {
    int64_t coord = index % to[d];
    index /= to[d];
    if (d < lead)
      continue;
    if (from[d - lead] != 1)
      result += coord * stride;
    stride *= from[d - lead];
  }
  return result;
}

// The element of a reduction's result that element `index` of its operand
// (of `shape`) is combined into: its coordinates on the dims kept.
inline int64_t reducedOffset(int64_t index, const Shape &shape,
                             const std::vector<bool> &reduced) {
  int64_t result = 0, stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t coord = index % shape[d];
    index /= shape[d];
    if (reduced[d])
      continue;
    result += coord * stride;
    stride *= shape[d];
  }
  return result;
}

// Compares one output with its reference: |got - want| <= atol + rtol *
// |want|; NaN equals NaN, infinities equal infinities of their sign; exact
// for integers and bools. Remembers the worst element.
struct Checker {
  const char *name;
  Shape shape;
  double atol, rtol;
  int digits; // significant digits of the dtype, for printing
  int64_t mismatches = 0, worst = -1;
  double maxAbsError = 0, worstExcess = 0;
  char worstGot[64] = "", worstWant[64] = "";

  Checker(const char *name, Shape shape, double atol, double rtol, int digits)
      : name(name), shape(shape), atol(atol), rtol(rtol), digits(digits) {}

  void floating(int64_t index, double got, double want) {
    if ((std::isnan(got) && std::isnan(want)) || got == want)
      return;
    // NaN against a number (either way) is an infinite error.
    double error = std::fabs(got - want);
    double bound = atol + rtol * std::fabs(want);
    if (std::isnan(error) || std::isnan(bound))
      error = INFINITY;
    maxAbsError = error > maxAbsError ? error : maxAbsError;
    if (!(error <= bound))
      ++mismatches;
    double excess = std::isnan(bound) ? INFINITY : error - bound;
    if (isWorst(index, excess)) {
      std::snprintf(worstGot, sizeof worstGot, "%.*g", digits, got);
      std::snprintf(worstWant, sizeof worstWant, "%.*g", digits, want);
    }
  }
  void exact(int64_t index, long long got, long long want) {
    if (got == want)
      return;
    ++mismatches;
    double error = std::fabs((double)got - (double)want);
    maxAbsError = error > maxAbsError ? error : maxAbsError;
    if (isWorst(index, error)) {
      std::snprintf(worstGot, sizeof worstGot, "%lld", got);
      std::snprintf(worstWant, sizeof worstWant, "%lld", want);
    }
  }
  bool isWorst(int64_t index, double excess) {
    if (worst >= 0 && !(excess > worstExcess))
      return false;
    worst = index;
    worstExcess = excess;
    return true;
  }
  bool report() const {
    std::printf("output %s: max_abs_err=%.3g (atol=%g rtol=%g)", name,
                maxAbsError, atol, rtol);
    if (worst >= 0) {
      std::vector<int64_t> coords(shape.size());
      coordinates(worst, shape, coords.data());
      std::printf(", worst element %lld [", (long long)worst);
      for (size_t d = 0; d < coords.size(); ++d)
        std::printf("%s%lld", d ? ", " : "", (long long)coords[d]);
      std::printf("]: got %s, expected %s", worstGot, worstWant);
    }
    if (mismatches > 0)
      std::printf(": %lld mismatches\n", (long long)mismatches);
    else
      std::printf(": ok\n");
    return mismatches == 0;
  }
};

inline double nowMicros() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1e6 + now.tv_nsec * 1e-3;
}

inline double median(std::vector<double> values) {
  std::qsort(values.data(), values.size(), sizeof(double),
             [](const void *a, const void *b) {
               double x = *(const double *)a, y = *(const double *)b;
               return x < y ? -1 : x > y ? 1 : 0;
             });
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

inline void printTiming(const std::vector<double> &micros, int warmup,
                        double bytes) {
  double us = median(micros);
  std::printf("time: median %.3f us over %zu runs (%d warm-up), %.2f GB/s "
              "(%.0f bytes read and written)\n",
              us, micros.size(), warmup, us > 0 ? bytes / us / 1e3 : 0.0,
              bytes);
}

} // namespace repro
// ---- End of the repro support ----------------------------------------------
