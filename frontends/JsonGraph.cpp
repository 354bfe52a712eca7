//===- JsonGraph.cpp - The JSON model format -----------------------------===//
//
// Reads docs/json-format.md into a Graph. Only the syntax and the format's
// own rules are checked here; op semantics (arity, shapes, dtypes, cycles,
// undefined names) are checked once, by the importer, for every frontend.
//
//===----------------------------------------------------------------------===//

#include "frontends/Graph.h"

#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using nlohmann::json;

namespace fusec {

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 48;

class JsonReader {
public:
  explicit JsonReader(std::string path, InputShapes inputShapes = {},
                      bool keepNamedDims = false, DimRanges dimRanges = {})
      : path(std::move(path)), inputShapes(std::move(inputShapes)),
        dimRanges(std::move(dimRanges)), keepNamedDims(keepNamedDims) {}

  Graph readFile() { return read(fileText()); }

  std::vector<GraphInput> readInputs(const std::string &text) {
    json document = parse(text);
    std::vector<GraphInput> inputs;
    for (const json &entry : array(document, "inputs", ""))
      inputs.push_back(readInput(entry));
    return inputs;
  }

  std::string fileText() const {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw Error(path + ": error: cannot open model file");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  /// The document, checked to be a fusec graph.
  json parse(const std::string &text) const {
    json document;
    try {
      document = json::parse(text);
    } catch (const json::exception &e) {
      // parse_error, and out_of_range for a number past double's range.
      throw Error(path + ": error: malformed JSON: " + stripPrefix(e.what()));
    }
    if (!document.is_object())
      throw fail("", "the model must be a JSON object");
    if (!document.contains("fusec_graph") || document["fusec_graph"] != 1)
      throw fail("", "missing \"fusec_graph\": 1 (the format version)");
    return document;
  }

  Graph read(const std::string &text) {
    json document = parse(text);

    Graph graph;
    graph.sourcePath = path;
    if (document.contains("name"))
      graph.name = string(document["name"], "", "name");
    for (const json &entry : array(document, "inputs", ""))
      graph.inputs.push_back(readInput(entry));
    graph.symbols = symbols;
    for (const json &entry : optionalArray(document, "constants"))
      graph.constants.push_back(readConstant(entry));
    for (const json &entry : array(document, "nodes", ""))
      graph.nodes.push_back(readNode(entry));
    for (const json &entry : array(document, "outputs", ""))
      graph.outputs.push_back(string(entry, "", "outputs entry"));
    return graph;
  }

private:
  static std::string stripPrefix(const std::string &message) {
    // "[json.exception.parse_error.101] parse error at line 1..." -> "parse..."
    size_t bracket = message.find("] ");
    return bracket == std::string::npos ? message : message.substr(bracket + 2);
  }

  Error fail(const std::string &where, const std::string &reason) const {
    return Error(path + ": " + (where.empty() ? "" : where + ": ") +
                 "error: " + reason);
  }

  std::string string(const json &value, const std::string &where,
                     const std::string &field) const {
    if (!value.is_string())
      throw fail(where, "\"" + field + "\" must be a string");
    return value.get<std::string>();
  }

  const json &array(const json &object, const char *field,
                    const std::string &where) const {
    if (!object.contains(field) || !object[field].is_array())
      throw fail(where, std::string("missing array \"") + field + "\"");
    return object[field];
  }

  json optionalArray(const json &object, const char *field) const {
    if (!object.contains(field))
      return json::array();
    return array(object, field, "");
  }

  /// The dims of `object`'s "shape"; with `names`, a dim may be a string
  /// (a named dim: -1 in the result, its name in `names`).
  Shape shape(const json &object, const std::string &where,
              std::vector<std::string> *names = nullptr) const {
    if (!object.contains("shape") || !object["shape"].is_array())
      throw fail(where, "missing \"shape\" (an array of dims)");
    Shape dims;
    int64_t elements = 1;
    for (const json &dim : object["shape"]) {
      if (names && dim.is_string() && !dim.get<std::string>().empty()) {
        names->push_back(dim.get<std::string>());
        dims.push_back(-1);
        continue;
      }
      if (names)
        names->emplace_back();
      if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
        throw fail(where, std::string("\"shape\" dims must be non-negative "
                                      "integers") +
                              (names ? " or dim names" : "") + ", got " +
                              dim.dump());
      dims.push_back(dim.get<int64_t>());
      // Element counts stay far from int64 overflow in every index computation
      // (a zero-size dim makes an empty tensor; the other dims still count).
      if (dims.back() > kMaxElements / std::max<int64_t>(elements, 1))
        throw fail(where, "\"shape\" " + object["shape"].dump() +
                              " has more than 2^48 elements");
      elements *= std::max<int64_t>(dims.back(), 1);
    }
    return dims;
  }

  DType dtype(const json &object, const std::string &where) const {
    if (!object.contains("dtype"))
      throw fail(where, "missing \"dtype\"");
    std::string name = string(object["dtype"], where, "dtype");
    std::optional<DType> parsed = parseDType(name);
    if (!parsed)
      throw fail(where, "unknown dtype '" + name +
                            "' (expected f64, f32, f16, bf16, i8, i32, i64 "
                            "or i1)");
    return *parsed;
  }

  std::string name(const json &entry, const char *kind) const {
    if (!entry.is_object())
      throw fail("", std::string("each ") + kind + " must be a JSON object");
    if (!entry.contains("name"))
      throw fail("", std::string("a ") + kind + " has no \"name\"");
    return string(entry["name"], "", "name");
  }

  GraphInput readInput(const json &entry) {
    std::string inputName = name(entry, "input");
    std::string where = "input '" + inputName + "'";
    DType inputDType = dtype(entry, where);
    std::vector<std::string> names;
    Shape dims = shape(entry, where, &names);
    if (!keepNamedDims)
      bindNamedDims(inputName, where, dims, names);
    bool symbolic = std::any_of(dims.begin(), dims.end(),
                                [](int64_t dim) { return dim < 0; });
    return {inputName, inputDType, dims,
            symbolic ? names : std::vector<std::string>{}};
  }

  /// Sizes for an input's named dims: its --input-shape (whose other dims
  /// must match), else the sizes the same names took in earlier inputs. An
  /// input without named dims keeps its declared shape (a shape given for
  /// its name is for inputs that leave dims open).
  void bindNamedDims(const std::string &inputName, const std::string &where,
                     Shape &dims, std::vector<std::string> &names) {
    if (std::none_of(dims.begin(), dims.end(),
                     [](int64_t dim) { return dim < 0; }))
      return;
    auto given = inputShapes.find(inputName);
    if (given != inputShapes.end()) {
      if (given->second.size() != dims.size())
        throw fail(where, "--input-shape gives " +
                              std::to_string(given->second.size()) +
                              " dims, the input has " +
                              std::to_string(dims.size()));
      for (size_t d = 0; d < dims.size(); ++d) {
        if (names[d].empty() && dims[d] != given->second[d])
          throw fail(where, "dim " + std::to_string(d) + " is " +
                                std::to_string(dims[d]) +
                                ", but --input-shape gives " +
                                std::to_string(given->second[d]));
        if (!names[d].empty())
          bind(where, names[d], given->second[d]);
        dims[d] = given->second[d];
      }
      return;
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (names[d].empty())
        continue;
      auto bound = namedDims.find(names[d]);
      if (bound != namedDims.end()) {
        dims[d] = bound->second;
        names[d].clear();
        continue;
      }
      if (names[d].front() == '(') {
        // A sum ("(past+seq)"): derived from its symbols at every run
        // (SymbolicDims), each of which must have a range.
        std::string name;
        for (char c : names[d] + "+") {
          if (c != '(' && c != ')' && c != '+' && c != '*') {
            name += c;
            continue;
          }
          if (name.empty() ||
              std::isdigit(static_cast<unsigned char>(name[0]))) {
            name.clear();
            continue;
          }
          auto range = dimRanges.find(name);
          if (range == dimRanges.end() ||
              range->second.min == range->second.max)
            throw fail(where, "dim '" + names[d] + "' sums '" + name +
                                  "', which needs a range: --dim " + name +
                                  "=MIN..MAX");
          if (std::none_of(symbols.begin(), symbols.end(),
                           [&](const DimSymbol &s) { return s.name == name; }))
            symbols.push_back(range->second);
          name.clear();
        }
        continue;
      }
      auto range = dimRanges.find(names[d]);
      if (range != dimRanges.end() && range->second.min == range->second.max) {
        // `--dim NAME=SIZE`: fixed by name, for every input naming it.
        dims[d] = range->second.min;
        names[d].clear();
        continue;
      }
      if (range == dimRanges.end())
        throw fail(where, "dim '" + names[d] +
                              "' is named; give its size with --input-shape " +
                              inputName +
                              "=D0,D1,... (or --inputs), or its "
                              "range with --dim " +
                              names[d] + "=MIN..MAX");
      // Left symbolic: the model serves the range.
      if (std::none_of(symbols.begin(), symbols.end(),
                       [&](const DimSymbol &s) { return s.name == names[d]; }))
        symbols.push_back(range->second);
    }
  }

  /// `name` is `size` from here on; a name already bound must agree.
  void bind(const std::string &where, const std::string &name, int64_t size) {
    auto [it, inserted] = namedDims.emplace(name, size);
    if (!inserted && it->second != size)
      throw fail(where, "dim '" + name + "' is " + std::to_string(size) +
                            " here but " + std::to_string(it->second) +
                            " in an input before");
  }

  GraphConstant readConstant(const json &entry) const {
    std::string constantName = name(entry, "constant");
    std::string where = "constant '" + constantName + "'";
    DType valueDType = dtype(entry, where);
    Shape valueShape = shape(entry, where);
    int64_t count = numElements(valueShape);
    bool hasData = entry.contains("data"), hasFile = entry.contains("file");
    if (hasData == hasFile)
      throw fail(where, "give exactly one of \"data\" or \"file\"");
    // Sizes are checked against what is present before anything is
    // allocated: a huge "shape" with three numbers fails at once.
    if (hasData) {
      const json &data = entry["data"];
      if (!data.is_array() || static_cast<int64_t>(data.size()) != count)
        throw fail(where, "\"data\" must be an array of " +
                              std::to_string(count) +
                              " numbers (one per element)");
      Tensor value(valueDType, valueShape);
      size_t width = dtypeBytes(valueDType);
      for (size_t i = 0; i < data.size(); ++i) {
        if (!data[i].is_number() && !data[i].is_boolean())
          throw fail(where, "\"data\" element " + std::to_string(i) +
                                " is not a number: " + data[i].dump());
        if (data[i].is_number_integer() && !isFloat(valueDType) &&
            valueDType != DType::I1) {
          // Integers stay exact (i64 above 2^53), wrapped to the dtype.
          uint64_t bits = data[i].is_number_unsigned()
                              ? data[i].get<uint64_t>()
                              : static_cast<uint64_t>(data[i].get<int64_t>());
          for (size_t b = 0; b < width; ++b)
            value.bytes[i * width + b] = static_cast<uint8_t>(bits >> (8 * b));
          continue;
        }
        value.set(i, data[i].is_boolean() ? data[i].get<bool>()
                                          : data[i].get<double>());
      }
      return {constantName, std::move(value)};
    }
    return {constantName,
            readConstantFile(entry, where, valueDType, valueShape)};
  }

  Tensor readConstantFile(const json &entry, const std::string &where,
                          DType valueDType, const Shape &valueShape) const {
    std::string file = string(entry["file"], where, "file");
    // Weights live next to the model: no absolute paths, no escaping.
    if (file.empty() || file[0] == '/')
      throw fail(where, "constant file '" + file +
                            "' must be a path relative to the model file");
    std::stringstream parts(file);
    for (std::string part; std::getline(parts, part, '/');)
      if (part == "..")
        throw fail(where, "constant file '" + file +
                              "' may not leave the model's directory ('..')");
    int64_t offset = 0;
    if (entry.contains("offset")) {
      if (!entry["offset"].is_number_integer() || entry["offset"] < 0)
        throw fail(where, "\"offset\" must be a non-negative integer");
      offset = entry["offset"].get<int64_t>();
    }
    size_t slash = path.rfind('/');
    std::string resolved =
        (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + file;
    // Only a regular file has a size to check the shape against: a
    // directory reports a huge one, a FIFO or device would block or never
    // end.
    struct stat info;
    if (stat(resolved.c_str(), &info) != 0)
      throw fail(where, "cannot open constant file '" + resolved + "'");
    if (!S_ISREG(info.st_mode))
      throw fail(where, "constant file '" + resolved + "' is not a file");
    std::ifstream in(resolved, std::ios::binary);
    if (!in)
      throw fail(where, "cannot open constant file '" + resolved + "'");
    in.seekg(0, std::ios::end);
    int64_t size = in.tellg();
    if (size < 0)
      throw fail(where, "cannot read constant file '" + resolved + "'");
    int64_t needed =
        numElements(valueShape) * static_cast<int64_t>(dtypeBytes(valueDType));
    if (offset > size || needed > size - offset)
      throw fail(where, "constant file '" + resolved + "' has " +
                            std::to_string(size) + " bytes; " +
                            std::to_string(needed) + " are needed at offset " +
                            std::to_string(offset));
    Tensor value(valueDType, valueShape);
    in.seekg(offset);
    in.read(reinterpret_cast<char *>(value.data()), needed);
    if (!in)
      throw fail(where, "cannot read constant file '" + resolved + "'");
    return value;
  }

  std::vector<std::string> names(const json &node, const char *field,
                                 const std::string &where) const {
    std::vector<std::string> result;
    for (const json &value : array(node, field, where))
      result.push_back(string(value, where, field));
    return result;
  }

  GraphNode readNode(const json &entry) const {
    GraphNode node;
    node.name = name(entry, "node");
    std::string where = "node '" + node.name + "'";
    if (!entry.contains("op"))
      throw fail(where, "missing \"op\"");
    node.op = string(entry["op"], where, "op");
    node.inputs = names(entry, "inputs", where);
    node.outputs = names(entry, "outputs", where);
    if (entry.contains("attrs")) {
      if (!entry["attrs"].is_object())
        throw fail(where, "\"attrs\" must be an object");
      for (auto &[key, value] : entry["attrs"].items()) {
        if (value.is_string()) {
          node.attrs[key] = value.get<std::string>();
        } else if (value.is_number_integer()) {
          if (value.is_number_unsigned() &&
              value.get<uint64_t>() > uint64_t(INT64_MAX))
            throw fail(where, "attr '" + key + "' is out of the int64 range");
          node.attrs[key] = value.get<int64_t>();
        } else if (value.is_number()) {
          node.attrs[key] = value.get<double>();
        } else if (value.is_array()) {
          std::vector<int64_t> list;
          for (const json &item : value) {
            if (!item.is_number_integer() ||
                (item.is_number_unsigned() &&
                 item.get<uint64_t>() > uint64_t(INT64_MAX)))
              throw fail(where, "attr '" + key + "' must hold int64 integers");
            list.push_back(item.get<int64_t>());
          }
          node.attrs[key] = list;
        } else {
          throw fail(where, "attr '" + key + "' has an unsupported value " +
                                value.dump());
        }
      }
    }
    return node;
  }

  std::string path;
  InputShapes inputShapes;
  DimRanges dimRanges;
  /// The named dims left symbolic, in order of first use.
  std::vector<DimSymbol> symbols;
  /// readJsonInputs: named dims stay -1.
  bool keepNamedDims;
  /// The sizes named dims took, in input order.
  std::map<std::string, int64_t> namedDims;
};

} // namespace

Graph readJsonGraph(const std::string &path, const InputShapes &inputShapes,
                    const DimRanges &dimRanges) {
  return JsonReader(path, inputShapes, false, dimRanges).readFile();
}

Graph parseJsonGraph(const std::string &text, const std::string &name,
                     const InputShapes &inputShapes,
                     const DimRanges &dimRanges) {
  return JsonReader(name, inputShapes, false, dimRanges).read(text);
}

std::vector<GraphInput> readJsonInputs(const std::string &path) {
  JsonReader reader(path, {}, /*keepNamedDims=*/true);
  return reader.readInputs(reader.fileText());
}

} // namespace fusec
