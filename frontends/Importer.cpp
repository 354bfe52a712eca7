//===- Importer.cpp - Graphs and .mlir files into fuse IR ----------------===//

#include "frontends/Importer.h"
#include "frontends/NodeImport.h"
#include "ir/SymbolicDims.h"

#include "ir/ElementwiseOps.h"
#include "ir/FuseDialect.h"
#include "ir/TypeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <map>
#include <set>

using namespace mlir;
using fusec::Graph;
using fusec::GraphNode;

namespace fuse {

std::unique_ptr<MLIRContext> newFuseContext() {
  DialectRegistry registry;
  registry.insert<FuseDialect, func::FuncDialect>();
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  context->disableMultithreading();
  context->printOpOnDiagnostic(false);
  return context;
}

namespace {

class GraphImporter {
public:
  GraphImporter(const Graph &graph, MLIRContext *context,
                fusec::DimRanges dimRanges = {})
      : graph(graph), context(context), builder(context),
        dimRanges(std::move(dimRanges)) {
    std::string file = graph.sourcePath.empty() ? "<graph " + graph.name + ">"
                                                : graph.sourcePath;
    fileLoc = FileLineColLoc::get(context, file, 0, 0);
  }

  OwningOpRef<ModuleOp> run() {
    OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
    if (failed(defineNames()))
      return nullptr;
    std::vector<const GraphNode *> order;
    if (failed(topologicalOrder(order)))
      return nullptr;

    // The graph's symbols as `dimRanges` has them: a range replaced, a dim
    // given one size fixed.
    std::vector<fusec::DimSymbol> symbols;
    for (const fusec::DimSymbol &symbol : graph.symbols) {
      auto range = dimRanges.find(symbol.name);
      if (range == dimRanges.end())
        symbols.push_back(symbol);
      else if (range->second.min != range->second.max)
        symbols.push_back(range->second);
    }
    SmallVector<Type> argTypes;
    std::vector<std::vector<std::string>> argDimNames;
    for (const fusec::GraphInput &input : graph.inputs) {
      // A symbolic dim is dynamic in the IR; the function names its symbol.
      fusec::Shape shape = input.shape;
      std::vector<std::string> names = input.dimNames;
      for (size_t d = 0; d < names.size() && d < shape.size(); ++d) {
        if (names[d].empty())
          continue;
        auto range = dimRanges.find(names[d]);
        if (range != dimRanges.end() &&
            range->second.min == range->second.max) {
          shape[d] = range->second.min;
          names[d].clear();
        } else {
          shape[d] = ShapedType::kDynamic;
        }
      }
      argTypes.push_back(tensorType(input.dtype, shape));
      argDimNames.push_back(std::move(names));
    }
    builder.setInsertionPointToEnd(module->getBody());
    auto func = func::FuncOp::create(builder, fileLoc, graph.name,
                                     builder.getFunctionType(argTypes, {}));
    Block *body = func.addEntryBlock();
    builder.setInsertionPointToEnd(body);
    for (auto [index, input] : llvm::enumerate(graph.inputs)) {
      values[input.name] = body->getArgument(index);
      func.setArgAttr(index, kValueNameAttr, builder.getStringAttr(input.name));
    }
    if (!symbols.empty())
      setSymbolicDims(func, symbols, argDimNames);
    for (const fusec::GraphConstant &constant : graph.constants)
      values[constant.name] = importConstant(constant);
    for (const GraphNode *node : order)
      if (failed(importNode(*node)))
        return nullptr;

    SmallVector<Value> results;
    for (const std::string &output : graph.outputs) {
      auto it = values.find(output);
      if (it == values.end()) {
        emitError(fileLoc) << "graph output '" << output
                           << "' is not defined by any input, constant or node";
        return nullptr;
      }
      results.push_back(it->second);
    }
    if (results.empty()) {
      emitError(fileLoc) << "the graph has no outputs";
      return nullptr;
    }
    func::ReturnOp::create(builder, fileLoc, results);
    func.setType(
        builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
    for (size_t index = 0; index < graph.outputs.size(); ++index)
      func.setResultAttr(index, kValueNameAttr,
                         builder.getStringAttr(graph.outputName(index)));
    if (failed(verify(*module)))
      return nullptr;
    return module;
  }

  /// GraphValueTypes: imports into `body` what the graph gained since the
  /// last call, its inputs and constants as arguments of `body` (only their
  /// types matter there), its nodes in their order; a node that does not
  /// import leaves its output undefined.
  void importAdded(Block *body) {
    builder.setInsertionPointToEnd(body);
    auto addArgument = [&](const std::string &name, fusec::DType dtype,
                           const fusec::Shape &shape) {
      if (llvm::all_of(shape, [](int64_t dim) { return dim >= 0; }))
        values.try_emplace(
            name, body->addArgument(tensorType(dtype, shape), nodeLoc(name)));
    };
    for (; importedInputs < graph.inputs.size(); ++importedInputs) {
      const fusec::GraphInput &input = graph.inputs[importedInputs];
      // A symbolic dim (named, -1 here) is dynamic.
      fusec::Shape shape = input.shape;
      for (size_t d = 0; d < shape.size() && d < input.dimNames.size(); ++d)
        if (!input.dimNames[d].empty() && shape[d] < 0)
          shape[d] = ShapedType::kDynamic;
      if (shape != input.shape)
        values.try_emplace(input.name,
                           body->addArgument(tensorType(input.dtype, shape),
                                             nodeLoc(input.name)));
      else
        addArgument(input.name, input.dtype, input.shape);
    }
    for (; importedConstants < graph.constants.size(); ++importedConstants) {
      const fusec::GraphConstant &constant = graph.constants[importedConstants];
      addArgument(constant.name, constant.value.dtype, constant.value.shape);
    }
    for (; importedNodes < graph.nodes.size(); ++importedNodes) {
      const GraphNode &node = graph.nodes[importedNodes];
      if (llvm::all_of(node.inputs, [&](const std::string &input) {
            return input.empty() || values.count(input);
          }))
        (void)importNode(node);
    }
  }

  /// The type of value `name` imported so far, or null.
  RankedTensorType importedType(const std::string &name) const {
    auto it = values.find(name);
    return it == values.end()
               ? RankedTensorType()
               : dyn_cast<RankedTensorType>(it->second.getType());
  }

private:
  Location nodeLoc(const std::string &name) {
    return NameLoc::get(builder.getStringAttr(name), fileLoc);
  }

  RankedTensorType tensorType(fusec::DType dtype, const fusec::Shape &shape) {
    return RankedTensorType::get(shape, toElementType(context, dtype));
  }

  /// Every value name is defined exactly once.
  LogicalResult defineNames() {
    auto define = [&](const std::string &value, const std::string &by,
                      Location loc) -> LogicalResult {
      auto [it, inserted] = definedBy.try_emplace(value, by);
      if (!inserted)
        return emitError(loc) << "value '" << value << "' is defined twice, by "
                              << it->second << " and by " << by;
      return success();
    };
    for (const fusec::GraphInput &input : graph.inputs)
      if (failed(define(input.name, "input '" + input.name + "'",
                        nodeLoc(input.name))))
        return failure();
    for (const fusec::GraphConstant &constant : graph.constants)
      if (failed(define(constant.name, "constant '" + constant.name + "'",
                        nodeLoc(constant.name))))
        return failure();
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const GraphNode &node = graph.nodes[i];
      for (const std::string &output : node.outputs) {
        if (failed(
                define(output, "node '" + node.name + "'", nodeLoc(node.name))))
          return failure();
        producer[output] = i;
      }
    }
    return success();
  }

  /// Nodes in dependency order (the file may list them in any order).
  LogicalResult topologicalOrder(std::vector<const GraphNode *> &order) {
    std::vector<int> pending(graph.nodes.size(), 0);
    std::vector<std::vector<size_t>> consumers(graph.nodes.size());
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const GraphNode &node = graph.nodes[i];
      for (const std::string &input : node.inputs) {
        if (input.empty()) // an optional input left out
          continue;
        if (!definedBy.count(input))
          return emitError(nodeLoc(node.name))
                 << "input '" << input
                 << "' is not defined by any graph input, constant or node";
        if (auto it = producer.find(input); it != producer.end()) {
          ++pending[i];
          consumers[it->second].push_back(i);
        }
      }
    }
    std::vector<size_t> ready;
    for (size_t i = graph.nodes.size(); i-- > 0;)
      if (pending[i] == 0)
        ready.push_back(i);
    while (!ready.empty()) {
      size_t next = ready.back();
      ready.pop_back();
      order.push_back(&graph.nodes[next]);
      for (size_t consumer : consumers[next])
        if (--pending[consumer] == 0)
          ready.push_back(consumer);
    }
    if (order.size() == graph.nodes.size())
      return success();
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      if (pending[i] > 0)
        return emitError(nodeLoc(graph.nodes[i].name))
               << "the node is part of a cycle: its inputs depend on its own "
                  "outputs";
    return failure();
  }

  Value importConstant(const fusec::GraphConstant &constant) {
    const fusec::Tensor &tensor = constant.value;
    RankedTensorType type = tensorType(tensor.dtype, tensor.shape);
    DenseElementsAttr attr;
    if (!type.getElementType().isInteger(1)) {
      // The stored bits are MLIR's own layout (bools aside, which it packs):
      // taken as they are, a model's weights import at memcpy speed rather
      // than one APFloat at a time. A splat is one element.
      size_t width = fusec::dtypeBytes(tensor.dtype);
      const char *data = reinterpret_cast<const char *>(tensor.bytes.data());
      size_t size = tensor.bytes.size();
      bool splat = size >= width;
      for (size_t at = width; splat && at < size; at += width)
        splat = std::memcmp(data, data + at, width) == 0;
      attr = DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(data, splat ? width : size));
    } else {
      // The stored bits, exactly (no detour through double).
      unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      size_t bytes = fusec::dtypeBytes(tensor.dtype);
      SmallVector<APInt> elements;
      for (int64_t i = 0; i < tensor.numElements(); ++i) {
        uint64_t raw = 0;
        std::memcpy(&raw, tensor.bytes.data() + i * bytes, bytes);
        elements.emplace_back(bits, bits == 1 ? (raw & 1) : raw,
                              /*isSigned=*/false, /*implicitTrunc=*/true);
      }
      attr = DenseElementsAttr::get(type, elements);
    }
    return ConstantOp::create(builder, nodeLoc(constant.name), type, attr);
  }

  /// The result type a node's attrs ask for (cast, reshape, broadcast_to).
  FailureOr<Type> attrResultType(const GraphNode &node, Value operand) {
    Location loc = nodeLoc(node.name);
    auto operandType = cast<RankedTensorType>(operand.getType());
    if (node.op == "cast" || node.op == "bitcast") {
      auto it = node.attrs.find("dtype");
      const std::string *name = it == node.attrs.end()
                                    ? nullptr
                                    : std::get_if<std::string>(&it->second);
      if (!name)
        return emitError(loc)
               << "'" << node.op << "' needs attr \"dtype\" (a dtype name)";
      std::optional<fusec::DType> dtype = fusec::parseDType(*name);
      if (!dtype)
        return emitError(loc)
               << "'" << node.op << "' to unknown dtype '" << *name << "'";
      return Type(RankedTensorType::get(operandType.getShape(),
                                        toElementType(context, *dtype)));
    }
    if (auto named = node.attrs.find("dims"); named != node.attrs.end()) {
      const std::string *text = std::get_if<std::string>(&named->second);
      if (!text)
        return emitError(loc) << "'" << node.op
                              << "' attr \"dims\" is a string of sizes, "
                                 "\"1,seq,768\"";
      FailureOr<std::pair<SmallVector<int64_t>, ArrayAttr>> dims =
          parseResultDims(node, *text, loc);
      if (failed(dims))
        return failure();
      return Type(
          RankedTensorType::get(dims->first, operandType.getElementType()));
    }
    auto it = node.attrs.find("shape");
    const std::vector<int64_t> *shape =
        it == node.attrs.end() ? nullptr
                               : std::get_if<std::vector<int64_t>>(&it->second);
    if (!shape)
      return emitError(loc)
             << "'" << node.op << "' needs attr \"shape\" (an array of dims)";
    std::vector<int64_t> dims = *shape;
    if (node.op == "reshape") {
      // ONNX Reshape: 0 copies the operand's dim (unless allowzero), one -1
      // is inferred from the element count.
      auto allowZero = node.attrs.find("allowzero");
      bool zeroIsDim = allowZero != node.attrs.end() &&
                       std::holds_alternative<int64_t>(allowZero->second) &&
                       std::get<int64_t>(allowZero->second) != 0;
      int inferred = -1;
      int64_t known = 1;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] == 0 && !zeroIsDim) {
          if (d >= static_cast<size_t>(operandType.getRank()))
            return emitError(loc) << "'reshape' dim " << d
                                  << " is 0 (copy) but the operand has rank "
                                  << operandType.getRank();
          dims[d] = operandType.getDimSize(d);
        }
        if (dims[d] == -1) {
          if (inferred >= 0)
            return emitError(loc) << "'reshape' attr \"shape\" has more "
                                     "than one -1";
          inferred = static_cast<int>(d);
          continue;
        }
        if (dims[d] >= 0 && __builtin_mul_overflow(known, dims[d], &known))
          return emitError(loc) << "'reshape' attr \"shape\" has more "
                                   "elements than int64 holds";
      }
      if (inferred >= 0 && !operandType.hasStaticShape()) {
        // A symbolic operand: the -1 dim is symbolic too (SymbolicDims
        // derives which product of symbols it is).
        dims[inferred] = ShapedType::kDynamic;
        inferred = -1;
      }
      if (inferred >= 0) {
        int64_t total = operandType.getNumElements();
        if (known == 0 || total % known != 0)
          return emitError(loc)
                 << "'reshape' cannot infer the -1 dim: " << total
                 << " elements do not divide by " << known;
        dims[inferred] = total / known;
      }
    }
    for (int64_t dim : dims)
      if (dim < 0 && !ShapedType::isDynamic(dim))
        return emitError(loc) << "'" << node.op
                              << "' attr \"shape\" has a negative dim " << dim;
    return Type(RankedTensorType::get(dims, operandType.getElementType()));
  }

  /// A size given as "seq", "batch*seq" or "2*seq": its integer factor and
  /// the symbols it names. A symbol `--dim` fixes counts as its size.
  struct SizeProduct {
    int64_t factor = 1;
    SmallVector<Attribute> symbols;
  };
  FailureOr<SizeProduct> parseSizeProduct(const GraphNode &node, StringRef text,
                                          Location loc) {
    auto func = cast<func::FuncOp>(builder.getInsertionBlock()->getParentOp());
    SizeProduct size;
    for (StringRef factorText : fuse::splitSizeProduct(text)) {
      if (factorText.starts_with("(")) {
        // A sum ("(past+seq)"), which SymbolicDims reads: each name in it
        // must be a symbol left symbolic.
        if (!declaresSymbol(func, factorText))
          return emitError(loc) << "'" << node.op << "' size \"" << text
                                << "\" has a sum naming what is not a "
                                   "symbol left symbolic";
        size.symbols.push_back(builder.getStringAttr(factorText));
        continue;
      }
      int64_t number = 0;
      if (!factorText.getAsInteger(10, number)) {
        if (number < 1 ||
            __builtin_mul_overflow(size.factor, number, &size.factor))
          return emitError(loc) << "'" << node.op << "' size \"" << text
                                << "\" has a factor below 1 or past int64";
        continue;
      }
      auto fixed = dimRanges.find(factorText.str());
      if (declaresSymbol(func, factorText))
        size.symbols.push_back(builder.getStringAttr(factorText));
      else if (fixed != dimRanges.end() &&
               fixed->second.min == fixed->second.max) {
        if (__builtin_mul_overflow(size.factor, fixed->second.min,
                                   &size.factor))
          return emitError(loc)
                 << "'" << node.op << "' size \"" << text << "\" is past int64";
      } else
        return emitError(loc)
               << "'" << node.op << "' size \"" << text << "\" names '"
               << factorText << "', which is not a symbol of the graph";
    }
    return size;
  }

  /// reshape and broadcast_to: attr "dims", the result's sizes as
  /// "1,seq,12,64" (each an integer or a product of symbols), names a
  /// result with symbolic dims; returns its shape (dynamic where symbolic)
  /// and the op's `fuse.dims` for SymbolicDims.
  FailureOr<std::pair<SmallVector<int64_t>, ArrayAttr>>
  parseResultDims(const GraphNode &node, const std::string &text,
                  Location loc) {
    SmallVector<int64_t> shape;
    SmallVector<Attribute> dims;
    for (StringRef dimText : llvm::split(StringRef(text), ',')) {
      FailureOr<SizeProduct> size = parseSizeProduct(node, dimText.trim(), loc);
      if (failed(size))
        return failure();
      if (size->symbols.empty()) {
        shape.push_back(size->factor);
        dims.push_back(builder.getI64IntegerAttr(size->factor));
        continue;
      }
      std::string product =
          size->factor == 1 ? "" : std::to_string(size->factor);
      for (Attribute symbol : size->symbols)
        product += (product.empty() ? "" : "*") +
                   cast<StringAttr>(symbol).getValue().str();
      shape.push_back(ShapedType::kDynamic);
      dims.push_back(builder.getStringAttr(product));
    }
    return std::make_pair(shape, builder.getArrayAttr(dims));
  }

  /// dim_size and iota: a size given as "seq", "batch*seq" or
  /// "2*seq" (attr "size"). A symbol `--dim` fixes counts as its size; with
  /// none left the result is a constant.
  FailureOr<Value> importSymbolicSize(const GraphNode &node, Location loc) {
    if (!node.inputs.empty())
      return emitError(loc) << "'" << node.op << "' takes no inputs";
    auto attr = node.attrs.find("size");
    const std::string *text = attr == node.attrs.end()
                                  ? nullptr
                                  : std::get_if<std::string>(&attr->second);
    if (!text || text->empty())
      return emitError(loc) << "'" << node.op
                            << "' needs attr \"size\", a product of symbols "
                               "and integers such as \"batch*seq\"";
    FailureOr<SizeProduct> size = parseSizeProduct(node, *text, loc);
    if (failed(size))
      return failure();
    int64_t factor = size->factor;
    SmallVector<Attribute> &symbols = size->symbols;
    auto i64 = builder.getI64Type();
    if (node.op == "dim_size") {
      auto type = RankedTensorType::get({}, i64);
      if (symbols.empty())
        return ConstantOp::create(
                   builder, loc,
                   DenseElementsAttr::get(
                       type, builder.getI64IntegerAttr(factor).getValue()))
            .getResult();
      return DimSizeOp::create(builder, loc, type,
                               builder.getArrayAttr(symbols), factor)
          .getResult();
    }
    if (symbols.empty()) {
      // A fixed length is a constant: held to what a constant may be.
      constexpr int64_t kMaxConstantIota = int64_t(1) << 24;
      if (factor > kMaxConstantIota)
        return emitError(loc) << "'iota' of fixed size " << factor
                              << " is larger than a constant may be ("
                              << kMaxConstantIota << " elements)";
      SmallVector<APInt> elements;
      for (int64_t k = 0; k < factor; ++k)
        elements.push_back(APInt(64, k));
      return ConstantOp::create(
                 builder, loc,
                 DenseElementsAttr::get(RankedTensorType::get({factor}, i64),
                                        elements))
          .getResult();
    }
    return IotaOp::create(builder, loc,
                          RankedTensorType::get({ShapedType::kDynamic}, i64),
                          builder.getArrayAttr(symbols), factor)
        .getResult();
  }

  LogicalResult importNode(const GraphNode &node) {
    Location loc = nodeLoc(node.name);
    if (node.outputs.size() != 1)
      return emitError(loc) << "'" << node.op << "' produces 1 output but "
                            << node.outputs.size() << " were named";
    if (node.op == "dim_of") {
      if (node.inputs.size() != 1 || !values.count(node.inputs[0]))
        return emitError(loc) << "'dim_of' takes one input";
      auto attr = node.attrs.find("dim");
      const int64_t *dim = attr == node.attrs.end()
                               ? nullptr
                               : std::get_if<int64_t>(&attr->second);
      if (!dim)
        return emitError(loc) << "'dim_of' needs integer attr \"dim\"";
      auto op = DimOfOp::create(builder, loc,
                                RankedTensorType::get({}, builder.getI64Type()),
                                values.at(node.inputs[0]), *dim);
      if (failed(verify(op)))
        return failure();
      values[node.outputs[0]] = op.getResult();
      return success();
    }
    if (node.op == "dim_size" || node.op == "iota") {
      FailureOr<Value> size = importSymbolicSize(node, loc);
      if (failed(size) || failed(verify(size->getDefiningOp())))
        return failure();
      values[node.outputs[0]] = *size;
      return success();
    }
    NodeImport import{node, builder, loc, {}};
    for (const std::string &input : node.inputs)
      import.operands.push_back(input.empty() ? Value() : values.at(input));
    std::optional<FailureOr<Value>> imported =
        importReductionOrComposite(import);
    if (!imported)
      imported = importLayout(import);
    if (!imported)
      imported = importLibrary(import);
    if (imported) {
      if (failed(*imported))
        return failure();
      Operation *created = imported->value().getDefiningOp();
      if (created && failed(verify(created)))
        return failure();
      values[node.outputs[0]] = **imported;
      return success();
    }
    const ElementwiseOpInfo *info = lookupElementwiseOp(node.op);
    static const std::map<std::string, unsigned> kOtherArity = {
        {"select", 3},
        {"cast", 1},
        {"bitcast", 1},
        {"reshape", 1},
        {"broadcast_to", 1}};
    auto other = kOtherArity.find(node.op);
    if (!info && other == kOtherArity.end())
      return emitError(loc) << "unknown op '" << node.op << "'";
    if (info && !node.attrs.empty())
      return emitError(loc)
             << "'" << node.op << "' takes no attrs, but \""
             << node.attrs.begin()->first << "\" was given"
             << (node.op == "mod" ? " (ONNX Mod's fmod=1 is op 'fmod')" : "");
    unsigned arity = info ? info->arity : other->second;
    if (node.inputs.size() != arity)
      return emitError(loc) << "'" << node.op << "' takes " << arity << " input"
                            << (arity == 1 ? "" : "s") << " but "
                            << node.inputs.size() << " were given";
    SmallVector<Value> operands;
    for (const std::string &input : node.inputs) {
      if (input.empty())
        return emitError(loc) << "'" << node.op << "' has no optional inputs";
      operands.push_back(values.at(input));
    }

    SmallVector<Type> resultTypes;
    if (info) {
      if (failed(inferElementwiseResultType("fuse." + node.op, context, loc,
                                            operands, resultTypes)))
        return failure();
    } else if (node.op == "select") {
      if (failed(SelectOp::inferReturnTypes(
              context, loc, operands, DictionaryAttr(),
              OpaqueProperties(nullptr), RegionRange(), resultTypes)))
        return failure();
    } else {
      FailureOr<Type> type = attrResultType(node, operands[0]);
      if (failed(type))
        return failure();
      resultTypes.push_back(*type);
    }
    OperationState state(loc, "fuse." + node.op);
    state.addOperands(operands);
    state.addTypes(resultTypes);
    if (node.op == "cast")
      if (auto it = node.attrs.find("saturate"); it != node.attrs.end()) {
        const int64_t *saturate = std::get_if<int64_t>(&it->second);
        if (!saturate)
          return emitError(loc) << "'cast' attr \"saturate\" must be 0 or 1";
        if (*saturate == 0)
          state.addAttribute(CastOp::getNonSaturatingAttrName(state.name),
                             builder.getUnitAttr());
      }
    if (node.op == "cast")
      if (auto it = node.attrs.find("round_mode"); it != node.attrs.end()) {
        const std::string *mode = std::get_if<std::string>(&it->second);
        if (!mode)
          return emitError(loc)
                 << "'cast' attr \"round_mode\" must be a string";
        state.addAttribute(CastOp::getRoundModeAttrName(state.name),
                           builder.getStringAttr(*mode));
      }
    if (auto named = node.attrs.find("dims"); named != node.attrs.end()) {
      // (attrResultType read it: a string that parses.)
      auto dims =
          parseResultDims(node, std::get<std::string>(named->second), loc);
      if (failed(dims))
        return failure();
      if (llvm::any_of(dims->first, ShapedType::isDynamic))
        state.addAttribute(kDimsAttrName, dims->second);
    }
    Operation *op = builder.create(state);
    if (failed(verify(op)))
      return failure();
    values[node.outputs[0]] = op->getResult(0);
    return success();
  }

  const Graph &graph;
  MLIRContext *context;
  OpBuilder builder;
  size_t importedInputs = 0, importedConstants = 0, importedNodes = 0;
  Location fileLoc = UnknownLoc();
  std::map<std::string, std::string> definedBy;
  std::map<std::string, size_t> producer;
  std::map<std::string, Value> values;
  /// Ranges that replace the graph's (`--dim`), a size that fixes a dim.
  fusec::DimRanges dimRanges;
};

} // namespace

OwningOpRef<ModuleOp> importGraph(const Graph &graph, MLIRContext *context,
                                  const fusec::DimRanges &dimRanges) {
  return GraphImporter(graph, context, dimRanges).run();
}

struct GraphValueTypes::State {
  explicit State(const Graph &graph)
      : context(newFuseContext()),
        quiet(context.get(), [](Diagnostic &) { return success(); }),
        importer(graph, context.get()) {
    OpBuilder builder(context.get());
    Location loc = UnknownLoc::get(context.get());
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
    auto func = func::FuncOp::create(builder, loc, "typing",
                                     builder.getFunctionType({}, {}));
    // Symbolic sizes (dim_size, iota) name the graph's symbols.
    if (!graph.symbols.empty())
      setSymbolicDims(func, graph.symbols, {});
    body = func.addEntryBlock();
  }

  std::unique_ptr<MLIRContext> context;
  ScopedDiagnosticHandler quiet;
  OwningOpRef<ModuleOp> module;
  Block *body = nullptr;
  GraphImporter importer;
};

GraphValueTypes::GraphValueTypes(const Graph &graph)
    : state(std::make_unique<State>(graph)) {}

GraphValueTypes::~GraphValueTypes() = default;

std::optional<std::pair<fusec::DType, fusec::Shape>>
GraphValueTypes::typeOf(const std::string &name) {
  state->importer.importAdded(state->body);
  RankedTensorType type = state->importer.importedType(name);
  if (!type)
    return std::nullopt;
  std::optional<fusec::DType> dtype = toDType(type.getElementType());
  if (!dtype)
    return std::nullopt;
  return std::make_pair(*dtype, toShape(type));
}

namespace {

OwningOpRef<ModuleOp>
parseMlirBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                MLIRContext *context) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, context);
  if (module && failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> parseMlirFile(const std::string &path,
                                    MLIRContext *context) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "cannot open model file: " << buffer.getError().message();
    return nullptr;
  }
  return parseMlirBuffer(std::move(*buffer), context);
}

OwningOpRef<ModuleOp> parseMlirText(const std::string &text,
                                    const std::string &name,
                                    MLIRContext *context) {
  return parseMlirBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name),
                         context);
}

} // namespace fuse
