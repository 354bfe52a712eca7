//===- Trace.cpp - A timeline of what one process did --------------------===//

#include "runtime/core/Trace.h"

#include <algorithm>
#include <mutex>

namespace fusec::trace {

namespace detail {
std::atomic<bool> recording{false};
int &pausedDepth() {
  static thread_local int depth = 0;
  return depth;
}
} // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

/// Everything recorded since the last start().
struct Recorder {
  std::mutex mutex;
  std::vector<Event> events;
  std::map<int, std::string> trackNames;
  /// Bumped by start(): a thread's number belongs to one recording.
  uint64_t generation = 0;
  int nextTrack = 2;
};

Recorder &recorder() {
  // Never destroyed: background threads may still record while the
  // process exits (cuda::startInitializingInBackground joins them late).
  static Recorder &instance = *new Recorder;
  return instance;
}

/// The clock's reading at start(), in its own ticks (read by every thread).
std::atomic<Clock::rep> origin{0};

/// The calling thread's track in the current recording.
struct ThreadTrack {
  uint64_t generation = 0;
  int number = 0;
};
thread_local ThreadTrack threadTrack;
thread_local Scope *innermostScope = nullptr;

/// The calling thread's track number, given one on its first event; the
/// recorder's mutex is held.
int trackLocked(Recorder &state) {
  if (threadTrack.generation != state.generation) {
    threadTrack.generation = state.generation;
    threadTrack.number = state.nextTrack++;
  }
  auto [name, inserted] = state.trackNames.try_emplace(threadTrack.number);
  if (inserted)
    name->second = "thread " + std::to_string(threadTrack.number);
  return threadTrack.number;
}

void record(Event event, bool onDevice) {
  Recorder &state = recorder();
  std::lock_guard<std::mutex> lock(state.mutex);
  event.track = onDevice ? kDeviceTrack : trackLocked(state);
  state.events.push_back(std::move(event));
}

} // namespace

void start() {
  Recorder &state = recorder();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.events.clear();
    state.trackNames.clear();
    ++state.generation;
    state.nextTrack = 2;
    threadTrack = {state.generation, 1};
    state.trackNames[1] = "main";
  }
  origin.store(Clock::now().time_since_epoch().count());
  detail::recording.store(true);
}

void stop() { detail::recording.store(false); }

std::vector<Event> events() {
  Recorder &state = recorder();
  std::vector<Event> sorted;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    sorted = state.events;
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Event &a, const Event &b) {
                     if (a.startMicros != b.startMicros)
                       return a.startMicros < b.startMicros;
                     return a.durationMicros > b.durationMicros;
                   });
  return sorted;
}

std::map<int, std::string> trackNames() {
  Recorder &state = recorder();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.trackNames;
}

double toMicros(Clock::time_point time) {
  Clock::duration sinceStart =
      time.time_since_epoch() - Clock::duration(origin.load());
  return std::chrono::duration<double, std::micro>(sinceStart).count();
}

double nowMicros() { return toMicros(Clock::now()); }

void nameThisThread(const std::string &name) {
  if (!enabled())
    return;
  Recorder &state = recorder();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.trackNames[trackLocked(state)] = name;
}

void nameDeviceTrack(const std::string &name) {
  if (!enabled())
    return;
  Recorder &state = recorder();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.trackNames[kDeviceTrack] = name;
}

void slice(std::string name, const char *category, double startMicros,
           double durationMicros, Args args) {
  if (enabled())
    record({std::move(name), category, false, startMicros, durationMicros, 1,
            std::move(args)},
           /*onDevice=*/false);
}

void deviceSlice(std::string name, const char *category, double startMicros,
                 double durationMicros, Args args) {
  if (enabled())
    record({std::move(name), category, false, startMicros, durationMicros,
            kDeviceTrack, std::move(args)},
           /*onDevice=*/true);
}

void instant(std::string name, const char *category, Args args) {
  if (enabled())
    record(
        {std::move(name), category, true, nowMicros(), 0, 1, std::move(args)},
        /*onDevice=*/false);
}

Scope::Scope(std::string name, const char *category, Args args)
    : active(enabled()), category(category) {
  if (!active)
    return;
  sliceName = std::move(name);
  this->args = std::move(args);
  outer = innermostScope;
  innermostScope = this;
  startMicros = nowMicros();
}

Scope::~Scope() { end(); }

void Scope::end() {
  if (!active)
    return;
  active = false;
  innermostScope = outer;
  // Recorded at the end, also when an exception unwinds through the scope:
  // a failing stage still shows how long it ran.
  slice(std::move(sliceName), category, startMicros, nowMicros() - startMicros,
        std::move(args));
}

void Scope::arg(Arg argument) {
  if (active)
    args.push_back(std::move(argument));
}

Scope *Scope::innermost() { return innermostScope; }

void annotate(Arg argument) {
  if (innermostScope)
    innermostScope->arg(std::move(argument));
}

std::string shortList(const std::vector<std::string> &items, size_t shown) {
  std::string list;
  for (size_t i = 0; i < items.size() && i < shown; ++i)
    list += (i ? ", " : "") + items[i];
  if (items.size() > shown)
    list += ", +" + std::to_string(items.size() - shown) + " more";
  return list;
}

} // namespace fusec::trace
