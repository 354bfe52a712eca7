//===- ProfileReport.h - `fusec --profile` as a table or JSON --*- C++ -*-===//
#ifndef FUSEC_TOOLS_LIB_PROFILEREPORT_H
#define FUSEC_TOOLS_LIB_PROFILEREPORT_H

#include "runtime/Profile.h"

#include <string>

namespace fusec {

/// One row per kernel and library call (time, bytes, GB/s, FLOPs, TFLOP/s,
/// the fraction of the device's limit and whether memory or compute bounds
/// the step), then the totals with each step's share of time.
std::string formatProfileTable(const Profile &profile);

/// The same as a JSON document (see docs/inspection.md).
std::string profileJson(const Profile &profile);

} // namespace fusec

#endif
