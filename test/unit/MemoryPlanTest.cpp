//===- MemoryPlanTest.cpp - Temporaries placed by liveness ---------------===//

#include "runtime/core/MemoryPlan.h"

#include <catch2/catch.hpp>

using namespace fusec;

namespace {

/// A program of kernels only: each kernel reads `inputs` and writes one
/// new f32 temporary of `elements` elements.
struct ChainBuilder {
  Program program;

  int buffer(const std::string &name, BufferRole role, int64_t elements) {
    BufferDesc desc;
    desc.name = name;
    desc.shape = {elements};
    desc.role = role;
    program.buffers.push_back(desc);
    return static_cast<int>(program.buffers.size()) - 1;
  }
  int kernel(std::vector<int> inputs, int64_t elements) {
    int output = buffer("t" + std::to_string(program.kernels.size()),
                        BufferRole::Temporary, elements);
    KernelDesc desc;
    desc.name = "k" + std::to_string(program.kernels.size());
    desc.inputs = std::move(inputs);
    desc.outputs = {output};
    program.steps.push_back(
        {StepKind::Kernel, static_cast<int>(program.kernels.size())});
    program.kernels.push_back(desc);
    return output;
  }
};

bool overlaps(const MemoryPlan &plan, const Program &program, int a, int b) {
  int64_t aEnd = plan.offset[a] + program.buffers[a].byteSize();
  int64_t bEnd = plan.offset[b] + program.buffers[b].byteSize();
  return plan.offset[a] < bEnd && plan.offset[b] < aEnd;
}

} // namespace

TEST_CASE("a chain of temporaries reuses the bytes of dead ones", "[memory]") {
  ChainBuilder b;
  int x = b.buffer("x", BufferRole::Input, 1024);
  b.program.inputs = {x};
  // t0 -> t1 -> t2 -> t3 (output): t0 dies when t1 is written... at the
  // step that reads it, so t0 and t2 may share, t1 and t3 may not
  // (t3 is an output and keeps its own storage).
  int t0 = b.kernel({x}, 1024);
  int t1 = b.kernel({t0}, 1024);
  int t2 = b.kernel({t1}, 1024);
  int t3 = b.kernel({t2}, 1024);
  b.program.outputs = {t3};
  MemoryPlan plan = planMemory(b.program);
  CHECK(plan.offset[x] == -1);
  CHECK(plan.offset[t3] == -1);
  REQUIRE(plan.offset[t0] >= 0);
  REQUIRE(plan.offset[t1] >= 0);
  REQUIRE(plan.offset[t2] >= 0);
  // Live together at a step: t0 and t1 (step 1), t1 and t2 (step 2).
  CHECK_FALSE(overlaps(plan, b.program, t0, t1));
  CHECK_FALSE(overlaps(plan, b.program, t1, t2));
  // t0 is dead by step 2: t2 takes its place.
  CHECK(plan.offset[t2] == plan.offset[t0]);
  CHECK(plan.arenaBytes == 2 * 4096);
  CHECK(plan.unsharedBytes == 3 * 4096);
  CHECK(plan.peakBytes == 4096 /* x */ + 4096 /* t3 */ + plan.arenaBytes);
}

TEST_CASE("a temporary read late stays live and apart", "[memory]") {
  ChainBuilder b;
  int x = b.buffer("x", BufferRole::Input, 100);
  b.program.inputs = {x};
  int t0 = b.kernel({x}, 100);  // read again by the last kernel
  int t1 = b.kernel({t0}, 300); // dead after t2
  int t2 = b.kernel({t1}, 100);
  int t3 = b.kernel({t2, t0}, 100); // the output
  b.program.outputs = {t3};
  MemoryPlan plan = planMemory(b.program);
  // t0 lives to the end; t1 and t2 meet at step 2: all three apart.
  for (int a : {t0, t1, t2})
    for (int c : {t0, t1, t2})
      if (a != c)
        CHECK_FALSE(overlaps(plan, b.program, a, c));
  // Offsets are aligned for 16-byte vector access and beyond.
  for (int id : {t0, t1, t2})
    CHECK(plan.offset[id] % kArenaAlignment == 0);
}

namespace {

KernelDesc kernelWithSource(const std::string &name,
                            const std::string &source) {
  KernelDesc kernel;
  kernel.name = name;
  kernel.source = source;
  return kernel;
}

} // namespace

TEST_CASE("kernels whose code differs only in their name compile once",
          "[program]") {
  Program program;
  program.prelude = "// prelude\n";
  program.kernels = {
      kernelWithSource("k2", "void k2(float *p) { p[0] = 1; }"),
      kernelWithSource("k3", "void k3(float *p) { p[0] = 1; }"),
      // Only whole identifiers are names: k22 is not "k2" followed by 2.
      kernelWithSource("k4", "void k4(float *p) { int k42 = 2; p[0] = k42; }"),
      kernelWithSource("k5", "void k5(float *p) { int k22 = 2; p[0] = k22; }")};
  CompileUnits units = splitIntoCompileUnits(program, 2);
  REQUIRE(units.sources.size() == 2);
  CHECK(units.functionOf == std::vector<std::string>{"k2", "k2", "k4", "k5"});
  // Longest first to the unit with the least source: k4 and k5 (46
  // characters) apart, then k2 (31) with k4 (the lower unit on a tie); each
  // unit's functions in program order.
  CHECK(units.unitOf == std::vector<size_t>{0, 0, 0, 1});
  CHECK(units.functions[0] == std::vector<std::string>{"k2", "k4"});
  CHECK(units.sources[0] == "// prelude\n\nvoid k2(float *p) { p[0] = 1; }\n"
                            "void k4(float *p) { int k42 = 2; p[0] = k42; }");
  CHECK(units.sources[1] ==
        "// prelude\n\nvoid k5(float *p) { int k22 = 2; p[0] = k22; }");

  SECTION("a long kernel gets a unit of its own") {
    // Round-robin would pair the long kernel with one of the short ones.
    Program balanced;
    balanced.prelude = "//\n";
    balanced.kernels = {
        kernelWithSource("big", "void big(float *p) { p[0] = 1; p[1] = 2; "
                                "p[2] = 3; p[3] = 4; p[4] = 5; p[5] = 6; }"),
        kernelWithSource("s1", "void s1(float *p) { p[0] = 1; }"),
        kernelWithSource("s2", "void s2(float *p) { p[0] = 2; }"),
        kernelWithSource("s3", "void s3(float *p) { p[0] = 3; }")};
    CompileUnits split = splitIntoCompileUnits(balanced, 2);
    CHECK(split.unitOf == std::vector<size_t>{0, 1, 1, 1});
    CHECK(split.functions[1] == std::vector<std::string>{"s1", "s2", "s3"});
  }

  SECTION("one unit when asked for none, or a hand-written program") {
    CHECK(splitIntoCompileUnits(program, 0).sources.size() == 1);
    program.kernels[1].source.clear();
    program.source = "whole";
    CompileUnits whole = splitIntoCompileUnits(program, 4);
    CHECK(whole.sources == std::vector<std::string>{"whole"});
    CHECK(whole.functionOf == std::vector<std::string>{"k2", "k3", "k4", "k5"});
  }
}
