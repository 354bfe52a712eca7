//===- FusionGraph.cpp - The fusion graph in Graphviz DOT ----------------===//
//
// `fusec --emit=dot`: the model lowered once more up to fusion, with every op
// tagged just before region formation so that the formation's remarks
// ("not fused with its consumer ...", whose metadata names the consumer's
// location and the reason) can be pinned to edges of the fused IR. Regions
// map to the Program's kernels in order: codegen makes one kernel per
// fuse.fusion and one call per fuse.matmul, walking the function's body.
//
//===----------------------------------------------------------------------===//

#include "tools/lib/FusionGraph.h"

#include "codegen/RegionKind.h"
#include "compiler/PipelineOptions.h"
#include "frontends/Importer.h"
#include "frontends/Onnx.h"
#include "ir/FuseDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;

namespace fusec {

namespace {

/// Before fuse-form-fusion-regions runs, gives every op of the function a
/// location of its own: its location fused with a unique id. Ops keep their
/// locations through region formation (members are cloned), and remarks
/// are located at their producer, so the ids connect both.
class TagOps : public PassInstrumentation {
public:
  explicit TagOps(DenseMap<Location, int> &tagOf) : tagOf(tagOf) {}
  void runBeforePass(Pass *pass, Operation *op) override {
    if (pass->getArgument() != "fuse-form-fusion-regions")
      return;
    Builder builder(op->getContext());
    op->walk([&](Operation *inner) {
      if (inner == op || isa<func::ReturnOp>(inner))
        return;
      int id = static_cast<int>(tagOf.size());
      Location tagged = FusedLoc::get(
          {inner->getLoc()}, builder.getI64IntegerAttr(id), op->getContext());
      inner->setLoc(tagged);
      tagOf[tagged] = id;
    });
  }

private:
  DenseMap<Location, int> &tagOf;
};

/// "a\"b" for a DOT string.
std::string quote(const std::string &text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c == '\n' ? ' ' : c;
  }
  return quoted + "\"";
}

/// A DOT label: lines joined by "\n", each escaped.
std::string label(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines) {
    std::string escaped = quote(line);
    text += (text.empty() ? "" : "\\n") + escaped.substr(1, escaped.size() - 2);
  }
  return "\"" + text + "\"";
}

/// A long name cut to about `width` characters: ONNX names are paths
/// ("/transformer/h.0/attn/Softmax") whose end says the most, so leading
/// components go first.
std::string shorten(const std::string &name, size_t width = 24) {
  std::string text = name;
  while (text.size() > width) {
    size_t slash = text.find('/', 1);
    if (slash == std::string::npos || slash + 1 >= text.size())
      break;
    text = text.substr(slash + 1);
  }
  if (text.size() > width)
    text = "..." + text.substr(text.size() - (width - 3));
  return text;
}

/// Words wrapped into lines of about `width` characters.
std::vector<std::string> wrap(const std::string &text, size_t width) {
  std::vector<std::string> lines(1);
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width)
      lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + word;
  }
  return lines;
}

/// A remark's reason made short for an edge label (the whole reason goes in
/// the tooltip): its first clause, ops named "matmul 'qkv/MatMul'" rather
/// than "'fuse.matmul' (node '/blocks.0/attn/qkv/MatMul')".
std::string edgeLabel(const std::string &reason) {
  size_t cut = std::min(reason.find("; "), reason.find(", and "));
  std::string text = cut == std::string::npos ? reason : reason.substr(0, cut);
  std::string shortened;
  for (size_t at = 0;;) {
    size_t op = text.find("'fuse.", at);
    if (op == std::string::npos) {
      shortened += text.substr(at);
      break;
    }
    size_t end = text.find('\'', op + 1);
    if (end == std::string::npos) {
      shortened += text.substr(at);
      break;
    }
    shortened += text.substr(at, op - at) + text.substr(op + 6, end - op - 6);
    at = end + 1;
    const std::string node = " (node '";
    if (text.compare(at, node.size(), node) == 0) {
      size_t close = text.find("')", at + node.size());
      if (close != std::string::npos) {
        shortened +=
            " '" +
            shorten(text.substr(at + node.size(), close - at - node.size()),
                    20) +
            "'";
        at = close + 2;
      }
    }
  }
  return shortened;
}

std::string typeOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return "";
  std::string shape;
  for (int64_t dim : type.getShape())
    shape += (shape.empty() ? "" : "x") + std::to_string(dim);
  std::string element;
  llvm::raw_string_ostream os(element);
  os << type.getElementType();
  return element + "[" + shape + "]";
}

std::string mnemonic(Operation *op) {
  StringRef name = op->getName().getStringRef();
  name.consume_front("fuse.");
  return name.str();
}

struct Style {
  const char *fill, *border, *legend;
};
Style styleOf(fuse::RegionKind kind) {
  switch (kind) {
  case fuse::RegionKind::Pointwise:
    return {"#dbeafe", "#3b6fb6", "pointwise"};
  case fuse::RegionKind::Reduction:
    return {"#fde3c4", "#d9822b", "reduction"};
  case fuse::RegionKind::Layout:
    return {"#d9f2d9", "#3c9a3c", "layout"};
  case fuse::RegionKind::Contraction:
    return {"#eadcf8", "#8a56c2", "contraction"};
  case fuse::RegionKind::Attention:
    return {"#fbe0ef", "#b8437f", "attention"};
  }
  return {"#ffffff", "#000000", ""};
}
constexpr const char *kLibraryFill = "#f8d0cc", *kLibraryBorder = "#b03a2e";
constexpr const char *kUnfusedEdge = "#b03a2e";

/// Writes the DOT text of the fused module.
class DotWriter {
public:
  DotWriter(const Program &program, const DenseMap<Location, int> &tagOf,
            const std::map<std::pair<int, int>, std::string> &reasons)
      : program(program), tagOf(tagOf), reasons(reasons) {}

  std::string write(func::FuncOp func) {
    Block &body = func.getBody().front();
    size_t fusions = 0, matmuls = 0;
    for (Operation &op : body)
      fusions += isa<fuse::FusionOp>(op), matmuls += isa<fuse::MatmulOp>(op);
    if (fusions != program.kernels.size() || matmuls != program.matmuls.size())
      throw Error("fusec: internal error: --emit=dot found " +
                  std::to_string(fusions) + " regions and " +
                  std::to_string(matmuls) + " matmuls but the program has " +
                  std::to_string(program.kernels.size()) + " kernels and " +
                  std::to_string(program.matmuls.size()) + " calls");

    os << "digraph " << quote(program.name) << " {\n";
    os << "  graph [rankdir=TB, newrank=true, nodesep=0.25, ranksep=0.35, "
          "fontname=\"Helvetica\", fontsize=12, labelloc=t, label="
       << label({program.name + ": " + std::to_string(fusions) + " kernel" +
                     (fusions == 1 ? "" : "s") + ", " +
                     std::to_string(matmuls) + " library call" +
                     (matmuls == 1 ? "" : "s") + " (" +
                     targetName(program.target) + ")",
                 "regions: blue pointwise, orange reduction, green layout, "
                 "violet contraction; red: library call"})
       << "];\n";
    os << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
          "fontname=\"Helvetica\", fontsize=10, height=0.3, margin=\"0.08,"
          "0.03\"];\n";
    os << "  edge [color=\"#666666\", arrowsize=0.6, fontname=\"Helvetica\", "
          "fontsize=9];\n";

    for (BlockArgument arg : body.getArguments()) {
      std::string name = "arg" + std::to_string(arg.getArgNumber());
      if (auto attr = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        fuse::kValueNameAttr))
        name = attr.str();
      std::string id = newNode();
      nodeOf[arg.getAsOpaquePointer()] = id;
      os << "  " << id << " [shape=invhouse, fillcolor=\"#eeeeee\", label="
         << label({shorten(name), typeOf(arg)}) << "];\n";
    }

    size_t kernel = 0, call = 0;
    for (Operation &op : body.without_terminator()) {
      if (auto fusion = dyn_cast<fuse::FusionOp>(op)) {
        writeRegion(fusion, program.kernels[kernel], kernel);
        ++kernel;
        continue;
      }
      if (op.getNumResults() != 1)
        continue;
      std::string id = newNode();
      nodeOf[op.getResult(0).getAsOpaquePointer()] = id;
      std::string node = fuse::nodeNameOf(op.getLoc());
      if (isa<fuse::ConstantOp>(op)) {
        os << "  " << id << " [shape=cylinder, fillcolor=\"#fff4b8\", label="
           << label({shorten(node.empty() ? "constant" : node),
                     typeOf(op.getResult(0))})
           << "];\n";
      } else if (isa<fuse::MatmulOp>(op)) {
        const MatmulCall &desc = program.matmuls[call++];
        std::string what =
            std::string(dtypeName(desc.dtype)) + " " + std::to_string(desc.m) +
            "x" + std::to_string(desc.n) + "x" + std::to_string(desc.k);
        if (desc.batch != 1)
          what += " (batch " + std::to_string(desc.batch) + ")";
        std::vector<std::string> lines = {"matmul (library call)", what};
        if (desc.epilogue != Epilogue::None || desc.bias >= 0)
          lines.push_back(std::string(desc.bias >= 0 ? "+ bias " : "") +
                          (desc.epilogue != Epilogue::None
                               ? std::string("+ ") + epilogueName(desc.epilogue)
                               : ""));
        if (!node.empty())
          lines.push_back(shorten(node));
        os << "  " << id << " [shape=box3d, style=filled, fillcolor=\""
           << kLibraryFill << "\", color=\"" << kLibraryBorder
           << "\", penwidth=1.5, label=" << label(lines) << "];\n";
        pending.push_back(&op);
      } else {
        // A view (reshape): a buffer alias between kernels.
        os << "  " << id << " [style=\"rounded,dashed\", fontsize=9, label="
           << label({mnemonic(&op) + " (view)", typeOf(op.getResult(0))})
           << "];\n";
        pending.push_back(&op);
      }
    }

    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
      std::string name = "result" + std::to_string(index);
      if (auto attr =
              func.getResultAttrOfType<StringAttr>(index, fuse::kValueNameAttr))
        name = attr.str();
      std::string id = newNode();
      os << "  " << id << " [shape=house, fillcolor=\"#eeeeee\", label="
         << label({shorten(name), typeOf(value)}) << "];\n";
      edges.push_back({source(value), id, nullptr, nullptr});
    }
    for (Operation *op : pending)
      for (Value operand : op->getOperands())
        edges.push_back({source(operand),
                         nodeOf[op->getResult(0).getAsOpaquePointer()],
                         sourceOp(operand), op});
    for (const Edge &edge : edges)
      writeEdge(edge);
    os << "}\n";
    return os.str();
  }

private:
  struct Edge {
    std::string from, to;
    Operation *producer, *consumer; ///< for the remark's reason; may be null
  };

  std::string newNode() { return "n" + std::to_string(nodes++); }

  void writeRegion(fuse::FusionOp fusion, const KernelDesc &kernel,
                   size_t index) {
    Style style = styleOf(fuse::regionKindOf(fusion));
    os << "  subgraph cluster_" << index << " {\n";
    os << "    label=" << label({kernel.name, kernel.schedule})
       << "; style=\"rounded,filled\"; fillcolor=\"" << style.fill
       << "\"; color=\"" << style.border
       << "\"; penwidth=1.5; fontsize=10; fontname=\"Helvetica-Bold\";\n";
    Block &body = fusion.getBody().front();
    for (auto [input, arg] : llvm::zip(fusion.getInputs(), body.getArguments()))
      innerValue[arg.getAsOpaquePointer()] = input;
    std::string previousNode;
    for (Operation &op : body.without_terminator()) {
      if (isa<fuse::ConstantOp>(op))
        continue; // splat constants: scalars inlined into the kernel
      std::string id = newNode();
      for (Value result : op.getResults())
        nodeOf[result.getAsOpaquePointer()] = id;
      // A composite's ops share its node: named once, on the first.
      std::string node = fuse::nodeNameOf(op.getLoc());
      std::vector<std::string> lines = {mnemonic(&op)};
      if (!node.empty() && node != previousNode &&
          !isa<fuse::BroadcastToOp>(op))
        lines.push_back(shorten(node));
      if (!isa<fuse::BroadcastToOp>(op))
        previousNode = node;
      os << "    " << id << " [label=" << label(lines)
         << (isa<fuse::BroadcastToOp>(op) ? ", fontsize=8, height=0.2" : "")
         << "];\n";
      for (Value operand : op.getOperands())
        if (!isa_and_nonnull<fuse::ConstantOp>(operand.getDefiningOp()))
          edges.push_back({source(operand), id, sourceOp(operand), &op});
    }
    auto yield = cast<fuse::YieldOp>(body.getTerminator());
    for (auto [result, yielded] :
         llvm::zip(fusion.getResults(), yield.getOperands()))
      yieldedBy[result.getAsOpaquePointer()] = yielded;
    os << "  }\n";
  }

  /// The value an edge starts from: inside a region's body, a block
  /// argument stands for the region's input, a region's result for what
  /// its body yields.
  Value resolve(Value value) {
    for (;;) {
      if (auto it = innerValue.find(value.getAsOpaquePointer());
          it != innerValue.end()) {
        value = it->second;
        continue;
      }
      if (auto it = yieldedBy.find(value.getAsOpaquePointer());
          it != yieldedBy.end()) {
        value = it->second;
        continue;
      }
      return value;
    }
  }
  std::string source(Value value) {
    auto it = nodeOf.find(resolve(value).getAsOpaquePointer());
    return it == nodeOf.end() ? "" : it->second;
  }
  Operation *sourceOp(Value value) { return resolve(value).getDefiningOp(); }

  int tag(Operation *op) {
    auto it = op ? tagOf.find(op->getLoc()) : tagOf.end();
    return it == tagOf.end() ? -1 : it->second;
  }

  void writeEdge(const Edge &edge) {
    // x * x reads x once: one edge.
    if (edge.from.empty() || edge.to.empty() ||
        !written.insert({edge.from, edge.to}).second)
      return;
    os << "  " << edge.from << " -> " << edge.to;
    auto it = reasons.find({tag(edge.producer), tag(edge.consumer)});
    if (edge.producer && edge.consumer && it != reasons.end())
      os << " [color=\"" << kUnfusedEdge << "\", fontcolor=\"" << kUnfusedEdge
         << "\", style=dashed, penwidth=1.3, label="
         << label(wrap(edgeLabel(it->second), 28))
         << ", tooltip=" << quote("not fused: " + it->second) << "]";
    os << ";\n";
  }

  const Program &program;
  const DenseMap<Location, int> &tagOf;
  const std::map<std::pair<int, int>, std::string> &reasons;
  std::ostringstream os;
  int nodes = 0;
  /// The DOT node of each value (by opaque pointer) and region member op.
  std::map<const void *, std::string> nodeOf;
  /// A region's block argument -> its input; a region's result -> what its
  /// body yields.
  std::map<const void *, Value> innerValue, yieldedBy;
  std::vector<Edge> edges;
  std::set<std::pair<std::string, std::string>> written;
  std::vector<Operation *> pending; ///< top-level ops whose inputs to draw
};

/// Where `program` is on PATH, or "".
std::string findOnPath(const std::string &program) {
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

} // namespace

std::string fusionGraphDot(const std::string &path,
                           const CompileOptions &options,
                           const Program &program) {
  std::unique_ptr<MLIRContext> ownedContext = fuse::newFuseContext();
  MLIRContext &context = *ownedContext;

  DenseMap<Location, int> tagOf;
  std::map<std::pair<int, int>, std::string> reasons;
  // The remarks' structured form: located at the producer, metadata the
  // consumer's location and the reason. Other diagnostics were reported
  // when the program was lowered.
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    auto &metadata = diagnostic.getMetadata();
    if (diagnostic.getSeverity() != DiagnosticSeverity::Remark ||
        metadata.size() != 2 ||
        metadata[0].getKind() !=
            DiagnosticArgument::DiagnosticArgumentKind::Attribute ||
        metadata[1].getKind() !=
            DiagnosticArgument::DiagnosticArgumentKind::Attribute)
      return success();
    auto consumer = dyn_cast<LocationAttr>(metadata[0].getAsAttribute());
    auto reason = dyn_cast<StringAttr>(metadata[1].getAsAttribute());
    auto producer = tagOf.find(diagnostic.getLocation());
    if (consumer && reason && producer != tagOf.end())
      if (auto it = tagOf.find(Location(consumer)); it != tagOf.end())
        reasons.try_emplace({producer->second, it->second}, reason.str());
    return success();
  });

  OwningOpRef<ModuleOp> module;
  if (StringRef(path).ends_with(".json")) {
    module = fuse::importGraph(
        readJsonGraph(path, options.inputShapes, options.dimRanges), &context);
  } else if (StringRef(path).ends_with(".mlir")) {
    module = fuse::parseMlirFile(path, &context);
  } else if (isOnnxModelPath(path)) {
    OnnxOptions onnx;
    onnx.inputShapes = options.inputShapes;
    module = fuse::importGraph(readOnnxGraph(path, onnx), &context);
  }
  if (!module)
    throw Error(path + ": error: cannot import the model for --emit=dot");
  PassManager pm(&context);
  pm.addInstrumentation(std::make_unique<TagOps>(tagOf));
  if (failed(fuse::buildDefaultPipeline(pm, pipelineOptionsFor(options))) ||
      failed(pm.run(*module)))
    throw Error(path + ": error: the fusion pipeline failed for --emit=dot");
  SmallVector<func::FuncOp> funcs(module->getOps<func::FuncOp>());
  if (funcs.size() != 1)
    throw Error(path + ": error: --emit=dot expects one function");
  return DotWriter(program, tagOf, reasons).write(funcs.front());
}

std::string renderDot(const std::string &dot, const std::string &format) {
  if (findOnPath("dot").empty())
    throw Error("fusec: error: --emit=" + format +
                " needs Graphviz's 'dot' on PATH (Debian: apt-get install "
                "graphviz); --emit=dot prints the graph without it");
  char outputPath[] = "/tmp/fusec-dot-XXXXXX";
  int fd = mkstemp(outputPath);
  if (fd < 0)
    throw Error("fusec: error: cannot create a temporary file for dot");
  close(fd);
  std::string command =
      "dot -T" + format + " -o '" + std::string(outputPath) + "'";
  FILE *pipe = popen(command.c_str(), "w");
  if (!pipe) {
    std::remove(outputPath);
    throw Error("fusec: error: cannot run '" + command + "'");
  }
  std::fwrite(dot.data(), 1, dot.size(), pipe);
  int status = pclose(pipe);
  std::ifstream in(outputPath, std::ios::binary);
  std::string rendered((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  std::remove(outputPath);
  if (status != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("fusec: error: '" + command + "' failed (exit status " +
                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                ")");
  return rendered;
}

} // namespace fusec
