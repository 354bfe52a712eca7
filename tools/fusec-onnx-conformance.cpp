//===- fusec-onnx-conformance.cpp - fusec over the ONNX backend tests ----===//
//
// Runs every case of the ONNX backend test data (model.onnx plus
// test_data_set_*/input_N.pb and output_N.pb): converts, compiles, runs and
// compares with the suite's outputs (rtol 1e-3, atol 1e-7), and classifies
// each case as pass, fail (wrong numbers, or a compile or run error after
// the model was read) or unsupported (the reader's reason). Inputs that a
// model uses as shapes, axes or bounds are bound as constants, as a user
// would with static shapes; symbolic dims take the test data's sizes (as
// --input-shape). Cases whose data contradicts their model or the ONNX
// spec say so in their reason (disputedCases).
//
//   fusec-onnx-conformance [--target=cpu|cuda] [--data=DIR]... [--filter=S]
//                          [--markdown=FILE] [--expect=FILE]
//                          [--write-expect=FILE] [--cache-dir=DIR]
//
// --expect: the cases listed there must pass (exit 1 otherwise); a pass not
// listed is reported as unexpected, so the list is kept exact.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver.h"
#include "frontends/Onnx.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

using namespace fusec;
namespace fs = std::filesystem;

namespace {

enum class Outcome { Pass, Fail, Unsupported };

struct CaseResult {
  std::string name; ///< "node/test_add"
  Outcome outcome = Outcome::Unsupported;
  std::string reason;
  std::vector<std::string> opTypes;
  bool opsetSupported = false;
};

/// The suite's comparison: NaN matches NaN, infinities match exactly,
/// |got - expected| <= atol + rtol * |expected| otherwise; integers and
/// booleans exactly.
std::string compareOutput(const Tensor &got, const Tensor &expected,
                          const std::string &name) {
  if (got.dtype != expected.dtype)
    return "output " + name + " is " + dtypeName(got.dtype) + ", expected " +
           dtypeName(expected.dtype);
  if (got.shape != expected.shape)
    return "output " + name + " has shape [" + formatShape(got.shape) +
           "], expected [" + formatShape(expected.shape) + "]";
  const double rtol = 1e-3, atol = 1e-7;
  bool isFloat = dtypeInfo(got.dtype).kind == DTypeKind::Float;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double a = got.at(i), b = expected.at(i);
    bool ok = isFloat ? (std::isnan(b) ? std::isnan(a)
                         : std::isinf(b)
                             ? a == b
                             : std::fabs(a - b) <= atol + rtol * std::fabs(b))
                      : a == b;
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "output %s element %lld: got %.9g, expected %.9g",
                    name.c_str(), static_cast<long long>(i), a, b);
      return text;
    }
  }
  return "";
}

/// Cases whose expected data contradicts the ONNX spec as ONNX's own
/// reference evaluator (onnx 1.23's onnx.reference) computes it. They still
/// count as failures; the reason says why fusec's output differs.
const std::map<std::string, std::string> &disputedCases() {
  static const std::map<std::string, std::string> cases = [] {
    std::map<std::string, std::string> disputed = {
        {"node/test_cast_FLOAT_to_BFLOAT16",
         "ONNX 1.12's data truncates f32 to bf16 (0.48033667 -> "
         "0.478515625); onnx 1.23's reference evaluator rounds to nearest "
         "even (-> 0.48046875), as fusec does (docs/semantics.md)"}};
    // ONNX 1.23's data.
    for (const char *name :
         {"test_attention_3d_causal_bf16", "test_attention_4d_causal_bf16",
          "test_attention_4d_attn_mask_causal_bf16",
          "test_attention_4d_causal_fp16",
          "test_attention_4d_causal_padded_kv_bf16",
          "test_attention_4d_padded_kv_bf16"})
      for (const char *suffix : {"", "_expanded"})
        disputed[std::string("node/") + name + suffix] =
            "the reference computes softmax and matmul op by op in 16-bit "
            "NumPy arithmetic (each partial sum rounded to bf16/f16); fusec "
            "accumulates in f32 and rounds once: one unit in the last place "
            "apart, past rtol 1e-3 (the expanded graph, op by op in fusec, "
            "gives fusec's value)";
    for (const char *name : {"test_dft_inverse", "test_dft_inverse_opset19"})
      disputed[std::string("node/") + name] =
          "the reference's FFT keeps complex64 (NumPy 2): an element whose "
          "exact value is 0 (-7e-16 in f64) is 1.9e-7 there, past atol 1e-7; "
          "fusec's transform runs in f64";
    return disputed;
  }();
  return cases;
}

std::string formatDims(const std::vector<int64_t> &dims) {
  std::string text;
  for (int64_t dim : dims)
    text += (text.empty() ? "" : "x") + (dim < 0 ? "?" : std::to_string(dim));
  return text;
}

std::string firstLine(const std::string &text) {
  return text.substr(0, text.find('\n'));
}

/// The reason of a reader error, without the "FILE: " prefix.
std::string reasonOf(const std::string &message, const std::string &path) {
  std::string line = firstLine(message);
  if (line.rfind(path + ": ", 0) == 0)
    line = line.substr(path.size() + 2);
  return line;
}

CaseResult runDataSets(const fs::path &dir, const std::string &name,
                       const CompileOptions &options) {
  CaseResult result;
  result.name = name;
  std::string model = (dir / "model.onnx").string();
  try {
    OnnxModelSummary summary = summarizeOnnxModel(model);
    result.opTypes = summary.opTypes;
    result.opsetSupported = summary.opsetSupported;
    std::vector<fs::path> sets;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir))
      if (entry.is_directory() &&
          entry.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(entry.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) {
      result.reason = "no test data sets";
      return result;
    }
    for (const fs::path &set : sets) {
      // Test data fusec cannot hold (uint8, strings, sequences) makes the
      // case unsupported, whatever the model's ops.
      std::map<std::string, Tensor> inputs;
      std::vector<Tensor> expected;
      try {
        for (size_t i = 0; i < summary.inputNames.size(); ++i) {
          fs::path file = set / ("input_" + std::to_string(i) + ".pb");
          if (fs::exists(file))
            inputs[summary.inputNames[i]] =
                readTensorProtoFile(file.string(), summary.inputTypes[i]);
        }
        for (size_t i = 0;; ++i) {
          fs::path file = set / ("output_" + std::to_string(i) + ".pb");
          if (!fs::exists(file))
            break;
          expected.push_back(
              readTensorProtoFile(file.string(), i < summary.outputTypes.size()
                                                     ? summary.outputTypes[i]
                                                     : std::nullopt));
        }
      } catch (const Error &error) {
        result.outcome = Outcome::Unsupported;
        // An input of a type fusec lacks: the reader names it.
        if (std::count(summary.inputTypes.begin(), summary.inputTypes.end(),
                       std::nullopt))
          try {
            readOnnxGraph(model);
          } catch (const Error &readError) {
            result.reason = reasonOf(readError.what(), model);
            return result;
          }
        std::string line = firstLine(error.what());
        result.reason = "test data: " +
                        line.substr(line.find("error: ") == std::string::npos
                                        ? 0
                                        : line.find("error: ") + 7);
        return result;
      }
      OnnxOptions onnx;
      onnx.staticInputValues = inputs;
      // Symbolic dims take the data's sizes, as --input-shape gives them; a
      // static dim the data contradicts is a defect of the case (ONNX 1.12's
      // castlike cases feed a `like` of [1] to a model declaring [3x4]).
      for (size_t i = 0; i < summary.inputNames.size(); ++i) {
        auto data = inputs.find(summary.inputNames[i]);
        if (data == inputs.end())
          continue;
        const Shape &shape = data->second.shape;
        const std::optional<std::vector<int64_t>> &dims = summary.inputDims[i];
        bool symbolic = !dims,
             contradicts = dims && dims->size() != shape.size();
        for (size_t d = 0; dims && !contradicts && d < dims->size(); ++d) {
          symbolic |= (*dims)[d] < 0;
          contradicts |= (*dims)[d] >= 0 && (*dims)[d] != shape[d];
        }
        if (contradicts) {
          result.outcome = Outcome::Unsupported;
          result.reason = "test data: input '" + summary.inputNames[i] +
                          "' is [" + formatShape(shape) +
                          "] but the model declares [" + formatDims(*dims) +
                          "]";
          return result;
        }
        if (symbolic)
          onnx.inputShapes[summary.inputNames[i]] = shape;
      }
      Graph graph;
      try {
        graph = readOnnxGraph(model, onnx);
      } catch (const Error &error) {
        result.outcome = Outcome::Unsupported;
        result.reason = reasonOf(error.what(), model);
        return result;
      }
      result.outcome = Outcome::Fail;
      CompiledModel compiled = compile(graph, options);
      std::vector<Tensor> runInputs;
      for (const GraphInput &input : graph.inputs) {
        auto it = inputs.find(input.name);
        if (it == inputs.end()) {
          result.reason = "no data for input '" + input.name + "'";
          return result;
        }
        runInputs.push_back(it->second);
      }
      std::vector<Tensor> outputs = compiled.run(runInputs);
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (i >= expected.size()) {
          result.reason = "no expected data for output " + std::to_string(i);
          return result;
        }
        std::string mismatch =
            compareOutput(outputs[i], expected[i], graph.outputName(i));
        if (!mismatch.empty()) {
          result.reason = set.filename().string() + ": " + mismatch;
          return result;
        }
      }
    }
    result.outcome = Outcome::Pass;
  } catch (const std::exception &error) {
    result.outcome = Outcome::Fail;
    result.reason = firstLine(error.what());
  }
  return result;
}

CaseResult runCase(const fs::path &dir, const std::string &name,
                   const CompileOptions &options) {
  CaseResult result = runDataSets(dir, name, options);
  auto disputed = disputedCases().find(name);
  if (disputed != disputedCases().end() && result.outcome != Outcome::Pass)
    result.reason += " (disputed data: " + disputed->second + ")";
  return result;
}

std::set<std::string> readList(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": error: cannot read the expected-pass list");
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      names.insert(line);
  return names;
}

const char *outcomeName(Outcome outcome) {
  switch (outcome) {
  case Outcome::Pass:
    return "pass";
  case Outcome::Fail:
    return "fail";
  case Outcome::Unsupported:
    return "unsupported";
  }
  return "?";
}

/// A case of a supported opset whose ops are all supported: the cases the
/// pass rate is measured on.
bool isCovered(const CaseResult &result,
               const std::set<std::string> &supported) {
  return result.opsetSupported && !result.opTypes.empty() &&
         std::all_of(
             result.opTypes.begin(), result.opTypes.end(),
             [&](const std::string &op) { return supported.count(op); });
}

/// `source` says which test cases ran ("Debian's libonnx-testdata ...").
void writeMarkdown(const std::string &path, const std::string &source,
                   const std::vector<CaseResult> &results,
                   const std::set<std::string> &supported) {
  std::map<std::string, std::array<int, 3>> perOp;
  int counts[3] = {0, 0, 0}, covered = 0, coveredPass = 0, unheld = 0,
      inconsistent = 0;
  for (const CaseResult &result : results) {
    ++counts[static_cast<int>(result.outcome)];
    if (isCovered(result, supported)) {
      ++covered;
      coveredPass += result.outcome == Outcome::Pass;
      if (result.outcome != Outcome::Pass) {
        bool contradicts = disputedCases().count(result.name) ||
                           result.reason.rfind("test data: input", 0) == 0;
        inconsistent += contradicts;
        unheld += !contradicts && (result.reason.rfind("test data:", 0) == 0 ||
                                   result.reason.rfind("input '", 0) == 0);
      }
    }
    for (const std::string &op : result.opTypes)
      ++perOp[op][static_cast<int>(result.outcome)];
  }
  std::ofstream out(path);
  out << "# ONNX conformance\n\n"
      << "Generated by `build/tools/fusec-onnx-conformance --markdown=" << path
      << "` over " << source
      << " on the CPU target: each case converted, compiled, run on every "
         "test data set and compared with the suite's outputs (rtol 1e-3, "
         "atol 1e-7).\n\n"
      << "| cases | pass | fail | unsupported |\n|---|---|---|---|\n"
      << "| " << results.size() << " | " << counts[0] << " | " << counts[1]
      << " | " << counts[2] << " |\n\n"
      << "Cases of an opset fusec reads whose ops are all in `fusec "
         "--list-ops`: "
      << covered << ", of which " << coveredPass << " pass ("
      << (covered ? 100.0 * coveredPass / covered : 0.0) << "%). Of the "
      << covered - coveredPass << " that do not pass, " << unheld
      << " stop at an input or test data of a type fusec does not have and "
      << inconsistent
      << " have test data that contradicts their model or the ONNX spec; "
         "each is listed below with its reason.\n\n"
      << "| op | pass | fail | unsupported |\n|---|---|---|---|\n";
  for (const auto &[op, tally] : perOp)
    out << "| " << op << (supported.count(op) ? "" : " (not supported)")
        << " | " << tally[0] << " | " << tally[1] << " | " << tally[2]
        << " |\n";
  out << "\n## Cases of supported ops and opsets that do not pass\n\n";
  for (const CaseResult &result : results)
    if (isCovered(result, supported) && result.outcome != Outcome::Pass)
      out << "- `" << result.name << "` (" << outcomeName(result.outcome)
          << "): " << result.reason << "\n";
  out << "\n## Other failures\n\n";
  for (const CaseResult &result : results)
    if (!isCovered(result, supported) && result.outcome == Outcome::Fail)
      out << "- `" << result.name << "`: " << result.reason << "\n";
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> dataDirs;
  std::string filter, markdown, expectPath, writeExpect;
  CompileOptions options;
  options.target = Target::Cpu;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> std::optional<std::string> {
      std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0)
        return arg.substr(prefix.size());
      return std::nullopt;
    };
    if (auto v = value("--data"))
      dataDirs.push_back(*v);
    else if (auto v = value("--filter"))
      filter = *v;
    else if (auto v = value("--markdown"))
      markdown = *v;
    else if (auto v = value("--expect"))
      expectPath = *v;
    else if (auto v = value("--write-expect"))
      writeExpect = *v;
    else if (auto v = value("--cache-dir"))
      options.cacheDir = *v;
    else if (arg == "--target=cuda")
      options.target = Target::Cuda;
    else if (arg == "--target=cpu")
      options.target = Target::Cpu;
    else {
      std::fprintf(stderr,
                   "usage: fusec-onnx-conformance [--target=cpu|cuda] "
                   "[--data=DIR]... [--filter=S] [--markdown=FILE] "
                   "[--expect=FILE] [--write-expect=FILE] [--cache-dir=DIR]\n");
      return 2;
    }
  }
  // What the markdown says ran: Debian's suite, or the folders given
  // (test/onnx/write_node_tests.py writes ONNX 1.23's node tests).
  std::string source =
      "Debian's libonnx-testdata (ONNX 1.12's backend test cases)";
  if (!dataDirs.empty()) {
    source = "the backend test cases in";
    for (const std::string &dir : dataDirs)
      source += " `" + dir + "`";
  }
  if (dataDirs.empty())
    for (const char *suite :
         {"node", "simple", "pytorch-converted", "pytorch-operator"})
      dataDirs.push_back(std::string("/usr/share/libonnx-testdata/data/") +
                         suite);
  std::vector<CaseResult> results;
  for (const std::string &dataDir : dataDirs) {
    if (!fs::is_directory(dataDir)) {
      std::fprintf(stderr,
                   "fusec-onnx-conformance: %s is not a directory "
                   "(install libonnx-testdata)\n",
                   dataDir.c_str());
      return 2;
    }
    std::vector<fs::path> cases;
    for (const fs::directory_entry &entry : fs::directory_iterator(dataDir))
      if (fs::exists(entry.path() / "model.onnx"))
        cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    std::string suite = fs::path(dataDir).filename().string();
    for (const fs::path &dir : cases) {
      std::string name = suite + "/" + dir.filename().string();
      if (!filter.empty() && name.find(filter) == std::string::npos)
        continue;
      results.push_back(runCase(dir, name, options));
      const CaseResult &result = results.back();
      std::printf("%-60s %s%s%s\n", result.name.c_str(),
                  outcomeName(result.outcome),
                  result.reason.empty() ? "" : ": ", result.reason.c_str());
      std::fflush(stdout);
    }
  }
  int counts[3] = {0, 0, 0};
  for (const CaseResult &result : results)
    ++counts[static_cast<int>(result.outcome)];
  std::printf("summary: %zu cases, %d pass, %d fail, %d unsupported\n",
              results.size(), counts[0], counts[1], counts[2]);

  std::set<std::string> supported;
  for (const std::string &line : supportedOnnxOps())
    supported.insert(line.substr(0, line.find(' ')));
  if (!markdown.empty())
    writeMarkdown(markdown, source, results, supported);
  if (!writeExpect.empty()) {
    std::ofstream out(writeExpect);
    out << "# Cases fusec-onnx-conformance must pass on the CPU "
           "(regenerate with --write-expect).\n";
    for (const CaseResult &result : results)
      if (result.outcome == Outcome::Pass)
        out << result.name << "\n";
  }
  if (expectPath.empty())
    return 0;
  std::set<std::string> expected = readList(expectPath);
  int regressions = 0, unexpected = 0;
  std::set<std::string> seen;
  for (const CaseResult &result : results) {
    seen.insert(result.name);
    bool listed = expected.count(result.name);
    if (listed && result.outcome != Outcome::Pass) {
      ++regressions;
      std::printf("REGRESSION: %s no longer passes: %s\n", result.name.c_str(),
                  result.reason.c_str());
    } else if (!listed && result.outcome == Outcome::Pass) {
      ++unexpected;
      std::printf("UNEXPECTED PASS: %s (add it to %s)\n", result.name.c_str(),
                  expectPath.c_str());
    }
  }
  for (const std::string &name : expected)
    if (!seen.count(name) && filter.empty()) {
      ++regressions;
      std::printf("REGRESSION: %s is listed but was not found\n", name.c_str());
    }
  std::printf("expected passes: %zu, regressions: %d, unexpected passes: %d\n",
              expected.size(), regressions, unexpected);
  return regressions || unexpected ? 1 : 0;
}
