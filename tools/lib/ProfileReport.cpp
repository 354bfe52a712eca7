//===- ProfileReport.cpp - `fusec --profile` as a table or JSON ----------===//

#include "tools/lib/ProfileReport.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fusec {

namespace {

/// What a row says beyond its measurements.
struct Derived {
  double gbps = 0;
  double tflops = -1;    ///< -1 when the FLOPs are unknown
  double intensity = -1; ///< FLOPs per byte; -1 when unknown
  /// "memory-bound", "compute-bound", or "unknown" (FLOPs known, peak not).
  const char *bound = "memory-bound";
  /// Achieved / the limit that bounds the step: the copy ceiling or the
  /// peak FLOP rate; -1 when that limit is unknown.
  double fraction = -1;
};

Derived derive(const StepProfile &row, const DeviceLimits &limits) {
  Derived d;
  double seconds = row.medianMicros * 1e-6;
  if (seconds > 0) {
    d.gbps = row.bytes / seconds / 1e9;
    if (row.flops >= 0)
      d.tflops = row.flops / seconds / 1e12;
  }
  if (row.flops >= 0 && row.bytes > 0)
    d.intensity = static_cast<double>(row.flops) / row.bytes;
  bool computeBound = false;
  if (row.flops >= 0) {
    if (row.peakTflops <= 0 || limits.copyGBps <= 0) {
      d.bound = "unknown";
    } else {
      // The ridge point: FLOPs per byte where the two roofs meet.
      double ridge = row.peakTflops * 1e12 / (limits.copyGBps * 1e9);
      computeBound = d.intensity >= ridge;
      d.bound = computeBound ? "compute-bound" : "memory-bound";
    }
  }
  if (computeBound && d.tflops >= 0)
    d.fraction = d.tflops / row.peakTflops;
  else if (!computeBound && limits.copyGBps > 0)
    d.fraction = d.gbps / limits.copyGBps;
  return d;
}

/// "sin*4 mul add": repeats counted, cut to `width` characters.
std::string abbreviateOps(const std::vector<std::string> &ops, size_t width) {
  std::string text;
  for (size_t i = 0; i < ops.size();) {
    size_t run = 1;
    while (i + run < ops.size() && ops[i + run] == ops[i])
      ++run;
    text += (text.empty() ? "" : " ") + ops[i];
    if (run > 1)
      text += "*" + std::to_string(run);
    i += run;
  }
  if (text.size() > width)
    text = text.substr(0, width - 3) + "...";
  return text;
}

/// `value` divided by `step` while it reaches it, with the unit reached:
/// "%.<decimals>f <unit>" once scaled, `unscaled` (a format) before.
template <size_t N>
std::string formatScaled(double value, double step,
                         const char *const (&units)[N], int decimals,
                         const char *unscaled) {
  size_t unit = 0;
  while (value >= step && unit + 1 < N)
    value /= step, ++unit;
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, unscaled, value, units[0]);
  else
    std::snprintf(text, sizeof text, "%.*f %s", decimals, value, units[unit]);
  return text;
}

/// 1536 -> "1.5 KiB".
std::string formatBytes(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return formatScaled(bytes, 1024, units, 1, "%.0f %s");
}

/// 2.5e9 -> "2.50 G"; negative -> "-".
std::string formatCount(double count) {
  if (count < 0)
    return "-";
  static const char *const units[] = {"", "k", "M", "G", "T", "P"};
  return formatScaled(count, 1000, units, 2, "%.0f%s");
}

std::string formatNumber(double value, const char *format) {
  if (value < 0)
    return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

} // namespace

std::string formatProfileTable(const Profile &profile) {
  const DeviceLimits &limits = profile.limits;
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line,
                "profile of '%s' on %s (%s): median of %d runs, each step "
                "timed on its own\n",
                profile.model.c_str(), targetName(profile.target),
                limits.device.c_str(), profile.runs);
  os << line;
  std::snprintf(line, sizeof line, "copy ceiling %.1f GB/s (%s)\n",
                limits.copyGBps, limits.copySource.c_str());
  os << line;
  auto rate = [](double peak) {
    return formatNumber(peak > 0 ? peak : -1, "%.3g");
  };
  std::snprintf(line, sizeof line,
                "peak TFLOP/s: kernels f32 %s, f64 %s, f16/bf16 %s; matmuls "
                "f32 %s, f16/bf16 %s (%s)\n",
                rate(limits.kernelTflops(DType::F32)).c_str(),
                rate(limits.kernelTflops(DType::F64)).c_str(),
                rate(limits.kernelTflops(DType::BF16)).c_str(),
                rate(limits.matmulTflops(DType::F32)).c_str(),
                rate(limits.matmulTflops(DType::BF16)).c_str(),
                limits.peakSource.c_str());
  os << line << "\n";

  double total = 0;
  int64_t totalBytes = 0, totalFlops = 0;
  size_t nameWidth = 5;
  for (const StepProfile &row : profile.steps) {
    total += row.medianMicros;
    totalBytes += row.bytes;
    totalFlops += std::max<int64_t>(row.flops, 0);
    nameWidth = std::max(nameWidth, row.name.size());
  }
  const int opsWidth = 30;
  std::snprintf(line, sizeof line,
                "%4s  %-*s  %-*s  %10s  %6s  %10s  %8s  %10s  %8s  %7s  %s\n",
                "step", static_cast<int>(nameWidth), "name", opsWidth,
                "ops / call", "median us", "share", "bytes", "GB/s", "FLOPs",
                "TFLOP/s", "limit", "bound");
  os << line;
  for (const StepProfile &row : profile.steps) {
    Derived d = derive(row, limits);
    std::string what =
        row.kind == StepKind::Matmul ? row.call : abbreviateOps(row.ops, 30);
    if (what.size() > static_cast<size_t>(opsWidth))
      what = what.substr(0, opsWidth - 3) + "...";
    std::snprintf(
        line, sizeof line,
        "%4zu  %-*s  %-*s  %10.2f  %5.1f%%  %10s  %8.1f  %10s  %8s  %6s%%  "
        "%s\n",
        row.step, static_cast<int>(nameWidth), row.name.c_str(), opsWidth,
        what.c_str(), row.medianMicros,
        total > 0 ? 100.0 * row.medianMicros / total : 0.0,
        formatBytes(row.bytes).c_str(), d.gbps,
        formatCount(static_cast<double>(row.flops)).c_str(),
        formatNumber(d.tflops, "%.3f").c_str(),
        formatNumber(d.fraction >= 0 ? 100 * d.fraction : -1, "%.1f").c_str(),
        d.bound);
    os << line;
  }
  size_t kernels = 0, calls = 0;
  for (const StepProfile &row : profile.steps)
    (row.kind == StepKind::Matmul ? calls : kernels) += 1;
  std::string counted =
      std::to_string(kernels) + " kernel" + (kernels == 1 ? "" : "s") + ", " +
      std::to_string(calls) + " call" + (calls == 1 ? "" : "s");
  double seconds = total * 1e-6;
  std::snprintf(
      line, sizeof line,
      "%4s  %-*s  %-*s  %10.2f  %5.1f%%  %10s  %8.1f  %10s  %8s\n", "",
      static_cast<int>(nameWidth), "total", opsWidth, counted.c_str(), total,
      100.0, formatBytes(totalBytes).c_str(),
      seconds > 0 ? totalBytes / seconds / 1e9 : 0.0,
      formatCount(static_cast<double>(totalFlops)).c_str(),
      formatNumber(seconds > 0 ? totalFlops / seconds / 1e12 : -1, "%.3f")
          .c_str());
  os << line;
  std::snprintf(line, sizeof line,
                "whole run (run(), copies in and out included): %.2f us\n",
                profile.runMicros);
  os << line;
  return os.str();
}

std::string profileJson(const Profile &profile) {
  using json = nlohmann::ordered_json;
  const DeviceLimits &limits = profile.limits;
  auto orNull = [](double value) {
    return value < 0 ? json(nullptr) : json(value);
  };
  auto peaks = [&](bool matmul) {
    json table;
    for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      double peak =
          matmul ? limits.matmulTflops(dtype) : limits.kernelTflops(dtype);
      table[dtypeName(dtype)] = peak > 0 ? json(peak) : json(nullptr);
    }
    return table;
  };
  json doc;
  doc["model"] = profile.model;
  doc["target"] = targetName(profile.target);
  doc["device"] = limits.device;
  doc["runs"] = profile.runs;
  doc["limits"] = {
      {"copy_GBps", limits.copyGBps},       {"copy_source", limits.copySource},
      {"kernel_peak_TFLOPs", peaks(false)}, {"matmul_peak_TFLOPs", peaks(true)},
      {"peak_source", limits.peakSource},   {"tf32", limits.tf32}};
  double total = 0;
  int64_t totalBytes = 0, totalFlops = 0;
  for (const StepProfile &row : profile.steps) {
    total += row.medianMicros;
    totalBytes += row.bytes;
    totalFlops += std::max<int64_t>(row.flops, 0);
  }
  json steps = json::array();
  for (const StepProfile &row : profile.steps) {
    Derived d = derive(row, limits);
    json step;
    step["step"] = row.step;
    step["kind"] = row.kind == StepKind::Matmul ? "library" : "kernel";
    step["name"] = row.name;
    if (row.kind == StepKind::Matmul)
      step["call"] = row.call;
    else
      step["ops"] = row.ops;
    step["schedule"] = row.schedule;
    step["dtype"] = dtypeName(row.dtype);
    step["median_us"] = row.medianMicros;
    step["min_us"] = row.minMicros;
    step["share"] = total > 0 ? row.medianMicros / total : 0.0;
    step["bytes"] = row.bytes;
    step["GBps"] = d.gbps;
    step["flops"] = row.flops < 0 ? json(nullptr) : json(row.flops);
    step["TFLOPs"] = orNull(d.tflops);
    step["intensity"] = orNull(d.intensity);
    step["peak_TFLOPs"] = row.peakTflops > 0 ? json(row.peakTflops) : json();
    step["bound"] = d.bound;
    step["fraction_of_limit"] = orNull(d.fraction);
    steps.push_back(std::move(step));
  }
  doc["steps"] = std::move(steps);
  double seconds = total * 1e-6;
  doc["total"] = {{"us", total},
                  {"bytes", totalBytes},
                  {"flops", totalFlops},
                  {"GBps", seconds > 0 ? totalBytes / seconds / 1e9 : 0.0},
                  {"TFLOPs", seconds > 0 ? totalFlops / seconds / 1e12 : 0.0}};
  doc["run_us"] = profile.runMicros;
  return doc.dump(2) + "\n";
}

} // namespace fusec
