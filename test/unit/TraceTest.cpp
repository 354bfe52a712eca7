//===- TraceTest.cpp - The trace recorder and traced runs ----------------===//
//
// The [gpu] case traces a CUDA run; it skips (exit 77 under ctest) without
// a usable GPU.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/CompileProgress.h"
#include "runtime/core/Trace.h"
#include "runtime/cuda/CudaApi.h"
#include "tools/lib/TraceFile.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>
#include <thread>

using namespace fusec;

namespace {

/// Stops recording when a test ends, also when it fails.
struct Recording {
  Recording() { trace::start(); }
  ~Recording() { trace::stop(); }
};

std::vector<trace::Event> named(const std::vector<trace::Event> &events,
                                const std::string &name) {
  std::vector<trace::Event> found;
  for (const trace::Event &event : events)
    if (event.name == name)
      found.push_back(event);
  return found;
}

bool inside(const trace::Event &inner, const trace::Event &outer) {
  return inner.startMicros >= outer.startMicros &&
         inner.startMicros + inner.durationMicros <=
             outer.startMicros + outer.durationMicros;
}

const trace::Arg *argOf(const trace::Event &event, const std::string &key) {
  for (const trace::Arg &arg : event.args)
    if (arg.key == key)
      return &arg;
  return nullptr;
}

/// A JSON trace event's (pid, tid).
std::pair<int, int> trackOf(const nlohmann::json &event) {
  return {event["pid"].get<int>(), event["tid"].get<int>()};
}

/// sin(x) + y, a matmul, tanh, a transpose: kernels around a library call.
Graph kernelsAndCallGraph() {
  GraphBuilder b("traced");
  std::string x = b.input("x", DType::F32, {64});
  std::string y = b.input("y", DType::F32, {32, 64});
  std::string w = b.input("w", DType::F32, {64, 48});
  std::string t = b.op("add", {b.op("sin", {x}), y});
  std::string m = b.op("matmul", {t, w});
  b.output(b.op("transpose", {b.op("tanh", {m})},
                {{"perm", std::vector<int64_t>{1, 0}}}));
  return b.build();
}

/// Compiles and runs the graph on `target` while tracing; checks that each
/// run's kernels and library calls are on the device track, in step order,
/// inside the run's slice, and returns the events.
std::vector<trace::Event> checkTracedRun(Target target) {
  Recording recording;
  CompiledModel model =
      compile(kernelsAndCallGraph(), test::testOptions(true, target));
  const Program &program = model.program();
  std::mt19937_64 rng(7);
  std::vector<Tensor> inputs;
  for (int id : program.inputs)
    inputs.push_back(randomTensor(program.buffers[id].dtype,
                                  program.buffers[id].shape, rng));
  model.run(inputs);
  model.run(inputs);
  trace::stop();
  std::vector<trace::Event> events = trace::events();

  std::vector<std::string> stepNames;
  for (const Step &step : program.steps)
    if (step.kind == StepKind::Kernel)
      stepNames.push_back(program.kernels[step.index].name);
    else if (step.kind == StepKind::Matmul)
      stepNames.push_back("matmul");
  REQUIRE(program.matmuls.size() == 1);
  REQUIRE(program.kernels.size() >= 2);

  std::vector<trace::Event> runs = named(events, "run");
  REQUIRE(runs.size() == 2);
  for (const trace::Event &run : runs) {
    CHECK(run.track == 1);
    std::vector<std::string> onDevice;
    for (const trace::Event &event : events)
      if (event.track == trace::kDeviceTrack && inside(event, run))
        onDevice.push_back(event.name);
    CHECK(onDevice == stepNames);
  }
  size_t deviceEvents = 0;
  for (const trace::Event &event : events)
    if (event.track == trace::kDeviceTrack) {
      ++deviceEvents;
      INFO(event.name);
      CHECK((event.category == "kernel" || event.category == "library"));
      CHECK(event.durationMicros >= 0);
      CHECK(argOf(event, "step"));
    }
  CHECK(deviceEvents == 2 * stepNames.size());
  CHECK(trace::trackNames().count(trace::kDeviceTrack) == 1);
  for (const char *stage : {"import", "passes", "codegen", "load"}) {
    INFO(stage);
    CHECK(named(events, stage).size() == 1);
  }
  return events;
}

} // namespace

TEST_CASE("the recorder records nothing unless started", "[trace]") {
  trace::start();
  trace::stop();
  CHECK_FALSE(trace::enabled());
  {
    trace::Scope scope("ignored", "test");
    trace::instant("ignored", "test");
    trace::annotate({"ignored", 1.0});
  }
  CHECK(trace::events().empty());
}

TEST_CASE("scopes nest on their thread's track; threads get their own",
          "[trace]") {
  {
    Recording recording;
    {
      trace::Scope outer("outer", "test", {{"size", 3.0}});
      {
        trace::Scope inner("inner", "test");
        trace::annotate({"found", "yes"});
        trace::instant("moment", "test");
      }
      {
        trace::Pause pause;
        trace::Scope hidden("hidden", "test");
      }
      std::vector<std::thread> threads;
      for (int t = 0; t < 2; ++t)
        threads.emplace_back([t] {
          trace::nameThisThread("worker " + std::to_string(t));
          trace::Scope work("work", "test", {{"worker", double(t)}});
        });
      for (std::thread &thread : threads)
        thread.join();
    }
    trace::deviceSlice("step", "kernel", 1.0, 2.0);
  }
  std::vector<trace::Event> events = trace::events();
  REQUIRE(named(events, "outer").size() == 1);
  REQUIRE(named(events, "inner").size() == 1);
  CHECK(named(events, "hidden").empty());
  const trace::Event outer = named(events, "outer")[0];
  const trace::Event inner = named(events, "inner")[0];
  CHECK(outer.track == 1);
  CHECK(inner.track == 1);
  CHECK(inside(inner, outer));
  REQUIRE(argOf(inner, "found"));
  CHECK(argOf(inner, "found")->text == "yes");
  REQUIRE(argOf(outer, "size"));
  CHECK(argOf(outer, "size")->number == 3.0);
  REQUIRE(named(events, "moment").size() == 1);
  CHECK(named(events, "moment")[0].instant);
  CHECK(inside(named(events, "moment")[0], inner));

  std::vector<trace::Event> work = named(events, "work");
  REQUIRE(work.size() == 2);
  CHECK(work[0].track != work[1].track);
  std::map<int, std::string> tracks = trace::trackNames();
  CHECK(tracks[1] == "main");
  for (const trace::Event &event : work) {
    CHECK(event.track > 1);
    int worker = static_cast<int>(argOf(event, "worker")->number);
    CHECK(tracks[event.track] == "worker " + std::to_string(worker));
  }
  REQUIRE(named(events, "step").size() == 1);
  CHECK(named(events, "step")[0].track == trace::kDeviceTrack);
}

TEST_CASE("the trace file is Chrome's trace event format", "[trace]") {
  {
    Recording recording;
    trace::Scope scope("stage \"quoted\"", "test", {{"bytes", 4096.0}});
    trace::instant("hit", "cache");
    trace::nameDeviceTrack("cpu");
    trace::deviceSlice("kernel_0", "kernel", 5.0, 1.5);
  }
  nlohmann::json json = nlohmann::json::parse(traceJson("fusec model.json"));
  REQUIRE(json["traceEvents"].is_array());
  CHECK(json["otherData"]["command"] == "fusec model.json");
  std::map<std::string, nlohmann::json> byName;
  std::set<std::pair<int, int>> namedTracks;
  for (const nlohmann::json &event : json["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name")
      namedTracks.insert(trackOf(event));
    else if (event["ph"] != "M")
      byName[event["name"]] = event;
  }
  REQUIRE(byName.count("stage \"quoted\""));
  const nlohmann::json &stage = byName["stage \"quoted\""];
  CHECK(stage["ph"] == "X");
  CHECK(stage["cat"] == "test");
  for (const char *field : {"ts", "dur", "pid", "tid"})
    CHECK(stage[field].is_number());
  CHECK(stage["args"]["bytes"] == 4096);
  CHECK(byName["hit"]["ph"] == "i");
  const nlohmann::json &kernel = byName["kernel_0"];
  CHECK(kernel["ts"] == 5.0);
  CHECK(kernel["dur"] == 1.5);
  CHECK(kernel["pid"] != stage["pid"]);
  CHECK(namedTracks.count(trackOf(stage)));
  CHECK(namedTracks.count(trackOf(kernel)));
}

TEST_CASE("a traced CPU run puts each step on the device track", "[trace]") {
  checkTracedRun(Target::Cpu);
}

TEST_CASE("a traced CUDA run puts each launch on the device track, timed by "
          "CUDA events",
          "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  std::vector<trace::Event> events = checkTracedRun(Target::Cuda);
  for (const trace::Event &event : events)
    if (event.track == trace::kDeviceTrack) {
      INFO(event.name);
      CHECK(event.durationMicros > 0);
    }
  // Kernels compile beside the upload, each unit on a thread and track of
  // its own ("nvrtc 0", "nvrtc 1", ...).
  std::map<int, std::string> tracks = trace::trackNames();
  size_t compileTracks = 0;
  for (const trace::Event &event : events)
    if (event.category == "compile" && event.track > 1 &&
        tracks[event.track].rfind("nvrtc ", 0) == 0 &&
        event.name.rfind("kernels ", 0) == 0) {
      ++compileTracks;
      CHECK(argOf(event, "cache"));
    }
  CHECK(compileTracks >= 1);
  CHECK(named(events, "allocate buffers, upload weights").size() == 1);
}

namespace {
/// What a CompileProgress wrote into a temporary file, all of it.
template <typename Drive> std::string progressOutput(Drive drive) {
  std::FILE *file = std::tmpfile();
  REQUIRE(file);
  drive(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;)
    text += static_cast<char>(c);
  std::fclose(file);
  return text;
}
} // namespace

TEST_CASE("a long compile shows its progress only on a terminal", "[trace]") {
  using std::chrono::milliseconds;
  // A terminal, past the quiet time: one line rewritten in place per group,
  // ended by a newline.
  CHECK(progressOutput([](std::FILE *out) {
          CompileProgress progress("3 kernels for sm_90a", 2, out, true,
                                   milliseconds(0));
          progress.groupDone();
          progress.groupDone();
        }) == "\rfusec: compiling 3 kernels for sm_90a in 2 groups: 1/2"
              "\rfusec: compiling 3 kernels for sm_90a in 2 groups: 2/2\n");
  CHECK(progressOutput([](std::FILE *out) {
          CompileProgress progress("1 kernel for the host", 1, out, true,
                                   milliseconds(0));
          progress.groupDone();
        }) == "\rfusec: compiling 1 kernel for the host in 1 group: 1/1\n");
  // A file or pipe: nothing, however long it takes.
  CHECK(progressOutput([](std::FILE *out) {
          CompileProgress progress("3 kernels", 2, out, false, milliseconds(0));
          progress.groupDone();
          progress.groupDone();
        }).empty());
  // A compile quicker than the quiet time (a cache hit): nothing either.
  CHECK(progressOutput([](std::FILE *out) {
          CompileProgress progress("3 kernels", 2, out, true,
                                   milliseconds(3600 * 1000));
          progress.groupDone();
          progress.groupDone();
        }).empty());
  // Groups finishing on several threads count each once.
  std::string threaded = progressOutput([](std::FILE *out) {
    CompileProgress progress("8 kernels", 8, out, true, milliseconds(0));
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&] { progress.groupDone(); });
    for (std::thread &thread : threads)
      thread.join();
  });
  for (int done = 1; done <= 8; ++done)
    CHECK(threaded.find("8 groups: " + std::to_string(done) + "/8") !=
          std::string::npos);
  CHECK(threaded.back() == '\n');
}
