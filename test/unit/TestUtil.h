//===- TestUtil.h - Shared helpers of the unit tests -----------*- C++ -*-===//
#ifndef FUSEC_TEST_TESTUTIL_H
#define FUSEC_TEST_TESTUTIL_H

#include "compiler/Driver.h"
#include "runtime/core/Compare.h"

#include <cmath>
#include <string>
#include <vector>

namespace fusec::test {

/// Options whose kernel cache lives in the build tree.
CompileOptions testOptions(bool fuse = true, Target target = Target::Cpu);

/// Ends the test as skipped: exit code 77 under ctest (which reports it as
/// skipped, FUSEC_TEST_SKIP_EXIT set), a warning when run by hand.
void skip(const std::string &reason);
#define FUSEC_SKIP_IF(reasonExpression)                                        \
  do {                                                                         \
    std::string fusecSkipReason = (reasonExpression);                          \
    if (!fusecSkipReason.empty()) {                                            \
      ::fusec::test::skip(fusecSkipReason);                                    \
      return;                                                                  \
    }                                                                          \
  } while (0)

/// Compiles the program's kernels as CUDA (fused and unfused) with NVRTC for
/// sm_90a and sm_80, when NVRTC is present: every kernel the CPU tests
/// generate is also compile-tested for the GPU. Without `everyVariant`, only
/// the fused kernels for sm_90a (for large graphs, where NVRTC dominates the
/// suite's time).
void compileForGpus(const Graph &graph, bool everyVariant = true);

/// Every op of the table on `dtype`, on `target`, against the reference.
void checkAllOps(DType dtype, Target target);
/// Seeded random graphs: fused on `target` against unfused on the CPU.
void checkRandomGraphs(DType dtype, uint64_t firstSeed, int count,
                       Target target);
/// Appends every input, constant, node and output of `graph` to `merged`,
/// each name prefixed with `prefix`: many cases as one graph, so that one
/// compile covers all of them.
void appendRenamedGraph(Graph &merged, const Graph &graph,
                        const std::string &prefix);
/// NaN, infinities, signed zeros, ties of rounding, the edges of the unit
/// interval and values where f32 overflows.
inline const double kSpecialFloats[] = {
    NAN,  INFINITY, -INFINITY, 0.0, -0.0, 0.5,  -0.5, 1.5,  2.5,
    -2.5, 1.0,      -1.0,      3.0, -7.0, 0.75, 100,  -100, 1e-3};
/// The extremes of `dtype` and small values around 0, 1 and -1.
std::vector<int64_t> specialInts(DType dtype);
/// A fresh, empty directory under the system temp dir.
std::string freshTempDir(const std::string &stem);
/// GPU memory holding a copy of a host tensor, freed at scope exit (CUDA
/// tests: the driver must be available).
struct DeviceCopy {
  explicit DeviceCopy(const Tensor &tensor);
  DeviceCopy(const DeviceCopy &) = delete;
  ~DeviceCopy();
  /// Overwrites the copy with `tensor` (of the same size) and waits.
  void upload(const Tensor &tensor);
  Tensor download() const;
  /// The copy as a device tensor, starting `offset` bytes in.
  DeviceTensor tensor(uint64_t offset = 0) const {
    return {dtype, shape, address + offset};
  }
  DType dtype;
  Shape shape;
  uint64_t address = 0;
};
/// "max abs error 0.1 at element 3: got 1.5, expected 1.4" for messages.
std::string describeMismatch(const Tensor &actual, const Tensor &expected,
                             const Comparison &comparison);

} // namespace fusec::test

#endif
