//===- TraceFile.cpp - `fusec --trace` as a Chrome trace -----------------===//

#include "tools/lib/TraceFile.h"

#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <iostream>

namespace fusec {

namespace {

constexpr int kHostProcess = 1, kDeviceProcess = 2;
/// The device track's thread id in the device process.
constexpr int kDeviceThread = 1;

int processOf(int track) {
  return track == trace::kDeviceTrack ? kDeviceProcess : kHostProcess;
}
int threadOf(int track) {
  return track == trace::kDeviceTrack ? kDeviceThread : track;
}

/// Microseconds with nanosecond digits and no more.
void writeMicros(llvm::json::OStream &json, llvm::StringRef key,
                 double micros) {
  json.attributeBegin(key);
  json.rawValue(
      [&](llvm::raw_ostream &os) { os << llvm::format("%.3f", micros); });
  json.attributeEnd();
}

void writeMetadata(llvm::json::OStream &json, const char *what, int process,
                   int thread, const std::string &name) {
  json.object([&] {
    json.attribute("name", what);
    json.attribute("ph", "M");
    json.attribute("pid", process);
    json.attribute("tid", thread);
    json.attributeObject("args", [&] { json.attribute("name", name); });
  });
}

} // namespace

std::string traceJson(const std::string &command) {
  std::vector<trace::Event> events = trace::events();
  std::map<int, std::string> trackNames = trace::trackNames();
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/0);
  json.object([&] {
    json.attributeArray("traceEvents", [&] {
      writeMetadata(json, "process_name", kHostProcess, 0, command);
      writeMetadata(json, "process_name", kDeviceProcess, 0, "device");
      for (const auto &[track, name] : trackNames)
        writeMetadata(json, "thread_name", processOf(track), threadOf(track),
                      name);
      for (const trace::Event &event : events)
        json.object([&] {
          json.attribute("name", event.name);
          json.attribute("cat", event.category);
          json.attribute("ph", event.instant ? "i" : "X");
          writeMicros(json, "ts", event.startMicros);
          if (event.instant)
            json.attribute("s", "t"); // an instant of its thread
          else
            writeMicros(json, "dur", event.durationMicros);
          json.attribute("pid", processOf(event.track));
          json.attribute("tid", threadOf(event.track));
          if (event.args.empty())
            return;
          json.attributeObject("args", [&] {
            for (const trace::Arg &arg : event.args)
              if (arg.isNumber)
                json.attribute(arg.key, arg.number);
              else
                json.attribute(arg.key, arg.text);
          });
        });
    });
    json.attribute("displayTimeUnit", "ms");
    json.attributeObject("otherData",
                         [&] { json.attribute("command", command); });
  });
  os << "\n";
  return text;
}

TraceFile::TraceFile(std::string path, std::string command)
    : path(std::move(path)), command(std::move(command)) {
  if (!this->path.empty())
    trace::start();
}

TraceFile::~TraceFile() {
  if (path.empty() || written)
    return;
  try {
    write();
  } catch (const Error &error) {
    std::cerr << error.what() << "\n";
  }
}

void TraceFile::write() {
  if (path.empty())
    return;
  written = true;
  trace::stop();
  std::ofstream out(path, std::ios::binary);
  out << traceJson(command);
  if (!out.flush())
    throw Error(path + ": error: cannot write the trace");
}

} // namespace fusec
