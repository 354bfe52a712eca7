//===- Trace.h - A timeline of what one process did ------------*- C++ -*-===//
//
// What `fusec --trace=FILE` records, for a Chrome trace: slices (a start
// and a duration) of the compiler's stages on the thread that ran them,
// instant events (kernel cache hits), and the steps of each run on one
// device track. The library stages report into one process-wide recorder;
// the driver turns it into JSON (tools/lib/TraceFile.h).
//
//   trace::Scope scope("codegen", "codegen");   // a slice until scope ends
//   trace::instant("kernel cache hit", "cache", {{"key", key}});
//
// Off until start(): every call then returns after one relaxed atomic load.
// Thread-safe: each thread records on its own track.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_TRACE_H
#define FUSEC_RUNTIME_CORE_TRACE_H

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace fusec::trace {

/// One argument of an event: text or a number.
struct Arg {
  Arg(std::string key, std::string text)
      : key(std::move(key)), text(std::move(text)) {}
  Arg(std::string key, const char *text) : key(std::move(key)), text(text) {}
  Arg(std::string key, double number)
      : key(std::move(key)), number(number), isNumber(true) {}
  std::string key;
  std::string text;
  double number = 0;
  bool isNumber = false;
};
using Args = std::vector<Arg>;

/// The track of device events: each run's steps, timed by the device.
constexpr int kDeviceTrack = 0;

struct Event {
  std::string name;
  std::string category;
  bool instant = false;
  /// Microseconds since start().
  double startMicros = 0, durationMicros = 0;
  /// The recording thread's number (1 for the thread that called start(),
  /// then 2, 3, ... in order of their first event), or kDeviceTrack.
  int track = 1;
  Args args;
};

namespace detail {
extern std::atomic<bool> recording;
/// This thread's count of open Pause scopes. (A function rather than an
/// extern thread_local: UBSan flags the latter's TLS wrapper across
/// translation units as a null load.)
int &pausedDepth();
} // namespace detail

/// Whether this thread's events are recorded now.
inline bool enabled() {
  return detail::recording.load(std::memory_order_relaxed) &&
         detail::pausedDepth() == 0;
}

/// Starts recording, dropping what an earlier start() recorded; the
/// calling thread becomes track 1, named "main".
void start();
/// Stops recording; the events stay until the next start().
void stop();

/// What was recorded, by start time (a slice before the slices it holds).
std::vector<Event> events();
/// The name of each host track that recorded events, and of the device
/// track when it did.
std::map<int, std::string> trackNames();

/// Microseconds since start() on the steady clock.
double nowMicros();
double toMicros(std::chrono::steady_clock::time_point time);

/// Names the calling thread's track ("nvrtc 2"); "thread N" otherwise.
void nameThisThread(const std::string &name);
/// Names the device track ("NVIDIA H200", "cpu").
void nameDeviceTrack(const std::string &name);

/// A finished slice on the calling thread's track.
void slice(std::string name, const char *category, double startMicros,
           double durationMicros, Args args = {});
/// A slice on the device track.
void deviceSlice(std::string name, const char *category, double startMicros,
                 double durationMicros, Args args = {});
/// An instant event on the calling thread's track.
void instant(std::string name, const char *category, Args args = {});

/// A slice from construction to destruction on the calling thread's track.
/// Scopes nest; annotate() adds to the innermost one.
class Scope {
public:
  Scope(std::string name, const char *category, Args args = {});
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

  /// Adds an argument (when recording).
  void arg(Arg argument);
  /// Ends the slice before the scope does; no scope opened after this one
  /// may still be open.
  void end();
  const std::string &name() const { return sliceName; }
  /// The innermost open scope of the calling thread, or null.
  static Scope *innermost();

private:
  bool active;
  std::string sliceName;
  const char *category;
  double startMicros = 0;
  Args args;
  Scope *outer = nullptr;
};

/// Adds an argument to the calling thread's innermost scope, if any: what a
/// callee learned about its caller's slice (a kernel cache hit).
void annotate(Arg argument);

/// "a, b, c, +5 more": the first `shown` items, for a slice's name.
std::string shortList(const std::vector<std::string> &items, size_t shown = 3);

/// Stops recording on the calling thread while alive: runs that are not
/// worth an event each (a profile's warm-up).
class Pause {
public:
  Pause() { ++detail::pausedDepth(); }
  ~Pause() { --detail::pausedDepth(); }
  Pause(const Pause &) = delete;
  Pause &operator=(const Pause &) = delete;
};

} // namespace fusec::trace

#endif
