//===- TraceFile.h - `fusec --trace` as a Chrome trace ---------*- C++ -*-===//
//
// The recorded timeline (runtime/core/Trace.h) in the Trace Event Format that
// Perfetto and chrome://tracing load: process 1 is fusec, one track per
// thread that recorded events; process 2 is the device, one track with each
// run's steps. Times are microseconds since recording started.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_LIB_TRACEFILE_H
#define FUSEC_TOOLS_LIB_TRACEFILE_H

#include <string>

namespace fusec {

/// What was recorded so far, as a JSON object with `traceEvents`;
/// `command` names the process and is kept as `otherData.command`.
std::string traceJson(const std::string &command);

/// Records a trace from construction and writes it to `path` with write(),
/// or in the destructor when a stage threw first: a failing compile still
/// leaves a trace of what it did. An empty path records nothing.
class TraceFile {
public:
  TraceFile(std::string path, std::string command);
  /// Writes the file if write() has not; reports a failure on stderr.
  ~TraceFile();
  TraceFile(const TraceFile &) = delete;
  TraceFile &operator=(const TraceFile &) = delete;

  /// Stops recording and writes the file; throws fusec::Error when it
  /// cannot be written.
  void write();

private:
  std::string path;
  std::string command;
  bool written = false;
};

} // namespace fusec

#endif
