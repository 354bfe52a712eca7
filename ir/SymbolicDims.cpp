//===- SymbolicDims.cpp - Which size each dynamic dim has -----------------===//

#include "ir/SymbolicDims.h"

#include "ir/FuseDialect.h"
#include "ir/LayoutOps.h"
#include "ir/LibraryOps.h"
#include "ir/TypeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using fusec::SymbolicShape;
using fusec::SymbolicSize;

namespace fuse {

namespace {

/// The most elements of any tensor (the JSON reader's and the compiler's).
constexpr int64_t kMaxElements = int64_t(1) << 48;

bool hasDynamicDims(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && !type.hasStaticShape();
}

SymbolicShape staticShape(RankedTensorType type) {
  SymbolicShape shape;
  for (int64_t dim : type.getShape())
    shape.push_back(SymbolicSize::constant(dim));
  return shape;
}

} // namespace

SmallVector<StringRef> splitSizeProduct(StringRef text) {
  SmallVector<StringRef> factors;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : '*';
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == '*' && depth == 0) {
      factors.push_back(text.slice(from, i));
      from = i + 1;
    }
  }
  return factors;
}

namespace {

/// A product of symbols and integers ("seq", "2*batch*seq") or of sums of
/// them in parentheses ("batch*(past+seq)"), a sum becoming the derived
/// symbol of `symbols` it is (added when new); nullopt when it names a
/// symbol not in `symbols`.
std::optional<SymbolicSize> parseSize(StringRef text,
                                      std::vector<fusec::DimSymbol> &symbols,
                                      std::string &why) {
  if (text.count('(') != text.count(')')) {
    why = "'" + text.str() + "' has unbalanced parentheses";
    return std::nullopt;
  }
  SymbolicSize size = SymbolicSize::constant(1);
  for (StringRef factor : splitSizeProduct(text)) {
    int64_t number = 0;
    if (!factor.getAsInteger(10, number) && number >= 1) {
      if (__builtin_mul_overflow(size.factor, number, &size.factor)) {
        why = "'" + text.str() + "' is past int64";
        return std::nullopt;
      }
      continue;
    }
    auto named = llvm::find_if(symbols, [&](const fusec::DimSymbol &symbol) {
      return symbol.name == factor;
    });
    if (named != symbols.end()) {
      size = size *
             SymbolicSize::symbol(static_cast<int>(named - symbols.begin()));
      continue;
    }
    if (factor.size() < 2 || !factor.starts_with("(") ||
        !factor.ends_with(")")) {
      why = "names '" + factor.str() + "', which is not in '" +
            kSymbolsAttrName.str() + "'";
      return std::nullopt;
    }
    // A sum: its terms at parenthesis depth 0 within it.
    StringRef inner = factor.drop_front().drop_back();
    std::optional<SymbolicSize> sum = SymbolicSize::constant(0);
    int depth = 0;
    size_t from = 0;
    for (size_t i = 0; i <= inner.size(); ++i) {
      char c = i < inner.size() ? inner[i] : '+';
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      if (c != '+' || depth != 0)
        continue;
      std::optional<SymbolicSize> term =
          parseSize(inner.slice(from, i), symbols, why);
      if (!term)
        return std::nullopt;
      sum = fusec::addSymbolicSizes(*sum, *term, /*subtract=*/false, symbols);
      if (!sum) {
        why = "'" + factor.str() + "' is no size over the symbols' ranges";
        return std::nullopt;
      }
      from = i + 1;
    }
    size = size * *sum;
  }
  return size;
}

/// A dim of a `fuse.dims` list: a size (IntegerAttr) or parseSize's text.
std::optional<SymbolicSize> parseDim(Attribute entry,
                                     std::vector<fusec::DimSymbol> &symbols,
                                     std::string &why) {
  if (auto size = dyn_cast<IntegerAttr>(entry))
    return SymbolicSize::constant(size.getInt());
  auto text = dyn_cast<StringAttr>(entry);
  if (!text) {
    why = "'" + kDimsAttrName.str() + "' holds symbol names and sizes";
    return std::nullopt;
  }
  return parseSize(text.getValue(), symbols, why);
}

} // namespace

SymbolicShape SymbolicDims::shapeOf(Value value) const {
  auto found = shapes.find(value);
  if (found != shapes.end())
    return found->second;
  return staticShape(cast<RankedTensorType>(value.getType()));
}

bool declaresSymbol(func::FuncOp function, StringRef name) {
  if (name.starts_with("(")) {
    // A sum: read over the declared symbols as SymbolicDims reads it.
    std::vector<fusec::DimSymbol> symbols;
    auto list = function ? function->getAttrOfType<ArrayAttr>(kSymbolsAttrName)
                         : nullptr;
    for (Attribute entry : list ? list.getValue() : ArrayRef<Attribute>()) {
      auto triple = dyn_cast<ArrayAttr>(entry);
      if (triple && triple.size() >= 3 && isa<StringAttr>(triple[0]) &&
          isa<IntegerAttr>(triple[1]) && isa<IntegerAttr>(triple[2]))
        symbols.push_back({cast<StringAttr>(triple[0]).str(),
                           cast<IntegerAttr>(triple[1]).getInt(),
                           cast<IntegerAttr>(triple[2]).getInt()});
    }
    std::string why;
    return parseSize(name, symbols, why).has_value();
  }
  auto declared =
      function ? function->getAttrOfType<ArrayAttr>(kSymbolsAttrName) : nullptr;
  return declared && llvm::any_of(declared, [&](Attribute entry) {
           auto triple = dyn_cast<ArrayAttr>(entry);
           auto named = triple && !triple.empty()
                            ? dyn_cast<StringAttr>(triple[0])
                            : nullptr;
           return named && named.getValue() == name;
         });
}

SymbolicShape dimsOf(const SymbolicDims *dims, Value value) {
  return dims ? dims->shapeOf(value)
              : staticShape(cast<RankedTensorType>(value.getType()));
}

/// A `fuse.dims` list as the dims of a value of type `type`: one per dim,
/// a symbolic one where the type's is dynamic and the type's size elsewhere.
static FailureOr<SymbolicShape>
parseDims(ArrayAttr named, RankedTensorType type,
          std::vector<fusec::DimSymbol> &symbols,
          llvm::function_ref<InFlightDiagnostic(const Twine &)> fail) {
  if (named.size() != static_cast<size_t>(type.getRank()))
    return fail("'" + kDimsAttrName + "' has " + Twine(named.size()) +
                " dims but the type has rank " + Twine(type.getRank()));
  SymbolicShape shape;
  for (auto [d, entry] : llvm::enumerate(named)) {
    std::string why;
    std::optional<SymbolicSize> size = parseDim(entry, symbols, why);
    if (!size)
      return fail("dim " + Twine(d) + ": " + why);
    if (size->isStatic() != !type.isDynamicDim(d) ||
        (size->isStatic() && size->factor != type.getDimSize(d)))
      return fail("dim " + Twine(d) + " is '" +
                  (size->isStatic() ? std::to_string(size->factor)
                                    : cast<StringAttr>(entry).str()) +
                  "' in '" + kDimsAttrName + "' but not in the type");
    shape.push_back(*size);
  }
  return shape;
}

FailureOr<SymbolicDims> SymbolicDims::analyze(func::FuncOp function) {
  SymbolicDims dims;
  auto symbolList = function->getAttrOfType<ArrayAttr>(kSymbolsAttrName);
  auto fail = [&](const Twine &why) {
    return function.emitError() << "'" << kSymbolsAttrName << "': " << why;
  };
  std::map<std::string, int> indexOf;
  if (symbolList)
    for (Attribute entry : symbolList) {
      auto triple = dyn_cast<ArrayAttr>(entry);
      if (!triple || (triple.size() != 3 && triple.size() != 4) ||
          !isa<StringAttr>(triple[0]) ||
          !llvm::all_of(llvm::drop_begin(triple),
                        [](Attribute a) { return isa<IntegerAttr>(a); }))
        return fail("each symbol is [NAME, MIN, MAX] or [NAME, MIN, MAX, "
                    "MULTIPLE]");
      fusec::DimSymbol symbol{cast<StringAttr>(triple[0]).str(),
                              cast<IntegerAttr>(triple[1]).getInt(),
                              cast<IntegerAttr>(triple[2]).getInt()};
      if (triple.size() == 4)
        symbol.multiple = cast<IntegerAttr>(triple[3]).getInt();
      if (symbol.min < 0 || symbol.max < 1 || symbol.max < symbol.min ||
          symbol.multiple < 1 ||
          symbol.max / symbol.multiple * symbol.multiple < symbol.min)
        return fail("symbol '" + symbol.name + "' has the empty range " +
                    std::to_string(symbol.min) + ".." +
                    std::to_string(symbol.max) +
                    (symbol.multiple > 1
                         ? " of multiples of " + std::to_string(symbol.multiple)
                         : std::string()));
      if (symbol.max > kMaxElements)
        return fail("symbol '" + symbol.name + "' has a maximum above 2^48");
      if (symbol.name.empty() ||
          symbol.name.find_first_of("()+*") != std::string::npos)
        return fail("symbol '" + symbol.name +
                    "' is not a name: sums and products of symbols are "
                    "written in dims, not declared");
      if (!indexOf.emplace(symbol.name, dims.syms.size()).second)
        return fail("symbol '" + symbol.name + "' is listed twice");
      dims.syms.push_back(symbol);
    }
  if (function.isExternal())
    return dims;
  // The sums the function names anywhere become derived symbols first, so
  // that every later lookup by name (sizeNamed) finds them.
  auto internSums = [&](Attribute list) {
    if (auto names = dyn_cast_or_null<ArrayAttr>(list))
      for (Attribute entry : names)
        if (auto text = dyn_cast<StringAttr>(entry);
            text && text.getValue().contains('(')) {
          std::string why; // reported where the dims are read
          (void)parseSize(text.getValue(), dims.syms, why);
        }
  };
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    internSums(function.getArgAttr(i, kDimsAttrName));
  function.walk([&](Operation *op) {
    internSums(op->getAttr(kDimsAttrName));
    if (auto size = dyn_cast<DimSizeOp>(op))
      internSums(size.getSymbols());
    else if (auto iota = dyn_cast<IotaOp>(op))
      internSums(iota.getSymbols());
  });
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    auto named =
        function.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kDimsAttrName);
    if (!type || (type.hasStaticShape() && !named))
      continue;
    auto argFail = [&](const Twine &why) {
      return function.emitError()
             << "argument #" << arg.getArgNumber() << ": " << why;
    };
    if (!named || named.size() != static_cast<size_t>(type.getRank()))
      return argFail("a dynamic dim needs '" + kDimsAttrName.str() +
                     "', one symbol name or size per dim");
    FailureOr<SymbolicShape> shape = parseDims(
        named, type, dims.syms, [&](const Twine &why) { return argFail(why); });
    if (failed(shape))
      return failure();
    dims.shapes[arg] = *shape;
  }
  if (failed(dims.deriveBlock(function.getBody().front())))
    return failure();
  return dims;
}

LogicalResult SymbolicDims::record(Operation *op, Value result,
                                   SymbolicShape shape) {
  // (Every rule below gives the result's rank; a mistake in one is an
  // error here, not a read past a shape's end in the op after it.)
  if (auto type = dyn_cast<RankedTensorType>(result.getType());
      type && type.getRank() != static_cast<int64_t>(shape.size()))
    return op->emitError() << "internal error: symbolic dims of rank "
                           << shape.size() << " derived for a result of rank "
                           << type.getRank();
  // Every size is computed at the maxima somewhere (buffers, kernels'
  // schedules): held to the 2^48 elements of any tensor, without overflow.
  int64_t elements = 1;
  bool overflow = false;
  for (const SymbolicSize &dim : shape) {
    int64_t size = dim.factor;
    for (int symbol : dim.symbols)
      overflow |= __builtin_mul_overflow(size, syms[symbol].max, &size);
    overflow |= __builtin_mul_overflow(elements, size, &elements);
  }
  if (overflow || elements > kMaxElements)
    return op->emitError()
           << "has more than 2^48 elements at the symbols' maxima ("
           << fusec::formatSymbolicShape(shape, syms) << ")";
  shapes[result] = std::move(shape);
  return success();
}

LogicalResult SymbolicDims::deriveBlock(Block &block) {
  for (Operation &op : block)
    if (failed(derive(&op)))
      return failure();
  return success();
}

/// The dims of the result of an op whose operands broadcast (NumPy, from
/// the right) to it: each dynamic result dim is that of the operands' which
/// are dynamic there, and they must agree.
static FailureOr<SymbolicShape>
broadcastResult(Operation *op, RankedTensorType resultType,
                llvm::ArrayRef<SymbolicShape> operands,
                const std::vector<fusec::DimSymbol> &symbols) {
  SymbolicShape result = staticShape(resultType);
  int64_t rank = resultType.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d))
      continue;
    std::optional<SymbolicSize> size;
    for (const SymbolicShape &operand : operands) {
      int64_t at = d - (rank - static_cast<int64_t>(operand.size()));
      if (at < 0 || operand[at].isStatic())
        continue;
      if (size && *size != operand[at])
        return op->emitError()
               << "dim " << d << " is '" << size->format(symbols)
               << "' in one operand and '" << operand[at].format(symbols)
               << "' in another: symbolic dims must match";
      size = operand[at];
    }
    if (!size)
      return op->emitError() << "dim " << d
                             << " of the result is dynamic but no operand's "
                                "is: symbolic dims must come from the inputs";
    result[d] = *size;
  }
  return result;
}

LogicalResult SymbolicDims::derive(Operation *op) {
  // Regions first: a fusion's results are its yielded values.
  if (auto fusion = dyn_cast<FusionOp>(op)) {
    Block &body = fusion.getBody().front();
    for (auto [arg, operand] :
         llvm::zip(body.getArguments(), fusion->getOperands()))
      if (hasDynamicDims(operand))
        shapes[arg] = shapeOf(operand);
    if (failed(deriveBlock(body)))
      return failure();
    for (auto [result, yielded] :
         llvm::zip(fusion->getResults(), fusion.getYield().getValues()))
      if (hasDynamicDims(result) &&
          failed(record(op, result, shapeOf(yielded))))
        return failure();
    return success();
  }
  bool dynamicOperand = llvm::any_of(op->getOperands(), hasDynamicDims);
  bool dynamicResult = llvm::any_of(op->getResults(), hasDynamicDims);
  if (!dynamicOperand && !dynamicResult)
    return success();
  if (isa<func::ReturnOp, YieldOp>(op))
    return success();
  auto unsupported = [&](const Twine &why) {
    return op->emitError() << "'" << op->getName().getStringRef()
                           << "' with symbolic dims: " << why;
  };
  if (isa<DimOfOp>(op))
    return success(); // a 0-d size (resolveDimSizes replaces it)
  if (auto iota = dyn_cast<IotaOp>(op)) {
    std::optional<SymbolicSize> length =
        sizeNamed(iota.getSymbols(), iota.getFactor());
    if (!length)
      return unsupported("names a symbol the function lacks");
    return record(op, iota.getResult(), {*length});
  }
  if (op->getNumResults() != 1)
    return unsupported("not supported yet");
  Value result = op->getResult(0);
  auto resultType = dyn_cast<RankedTensorType>(result.getType());
  if (!resultType)
    return unsupported("not supported yet");

  // Dims the frontend names: a reshape or broadcast to a shape it computed
  // from the run's sizes (an ONNX Reshape to Concat(Shape(x)[:2], [12, 64]))
  // says which symbols its dynamic dims are, where the operand's alone may
  // not ([batch*seq, 768] -> [batch, seq, 768]). Checked, not trusted.
  if (auto named = op->getAttrOfType<ArrayAttr>(kDimsAttrName)) {
    FailureOr<SymbolicShape> shape =
        parseDims(named, resultType, syms,
                  [&](const Twine &why) { return unsupported(why); });
    if (failed(shape))
      return failure();
    if (!isa<ReshapeOp, BroadcastToOp>(op))
      return unsupported("'" + kDimsAttrName +
                         "' names the dims of reshapes and broadcasts only");
    SymbolicShape in = shapeOf(op->getOperand(0));
    if (isa<ReshapeOp>(op)) {
      if (fusec::symbolicElements(in) != fusec::symbolicElements(*shape))
        return unsupported("'" + fusec::formatSymbolicShape(in, syms) +
                           "' has other elements than '" +
                           fusec::formatSymbolicShape(*shape, syms) + "'");
    } else if (isa<BroadcastToOp>(op)) {
      const SymbolicSize one = SymbolicSize::constant(1);
      bool broadcasts = in.size() <= shape->size();
      for (size_t d = 0; broadcasts && d < in.size(); ++d) {
        const SymbolicSize &to = (*shape)[shape->size() - in.size() + d];
        broadcasts = in[d] == one || in[d] == to;
      }
      if (!broadcasts)
        return unsupported("'" + fusec::formatSymbolicShape(in, syms) +
                           "' does not broadcast to '" +
                           fusec::formatSymbolicShape(*shape, syms) + "'");
    }
    return record(op, result, std::move(*shape));
  }

  // Reductions, and the composite ones (mean, L2, log-sum-exp) before
  // they are broken down.
  Value operand;
  llvm::ArrayRef<int64_t> axes;
  if (auto reduction = dyn_cast<ReductionOpInterface>(op)) {
    operand = reduction.getReducedOperand();
    axes = reduction.getReducedAxes();
  } else if (auto mean = dyn_cast<ReduceMeanOp>(op)) {
    operand = mean.getOperand();
    axes = mean.getAxes();
  } else if (auto l2 = dyn_cast<ReduceL2Op>(op)) {
    operand = l2.getOperand();
    axes = l2.getAxes();
  } else if (auto logSumExp = dyn_cast<ReduceLogSumExpOp>(op)) {
    operand = logSumExp.getOperand();
    axes = logSumExp.getAxes();
  }
  if (operand) {
    // (A reduced dim may be symbolic here: a fused attention reduces along
    // a symbolic key length; codegen refuses other such reductions.)
    SymbolicShape in = shapeOf(operand), out;
    bool keep = resultType.getRank() == static_cast<int64_t>(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
      if (!reduced)
        out.push_back(in[d]);
      else if (keep)
        out.push_back(SymbolicSize::constant(1));
    }
    return record(op, result, std::move(out));
  }

  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    SymbolicShape in = shapeOf(reshape.getOperand());
    SymbolicSize elements = fusec::symbolicElements(in);
    SymbolicShape out = staticShape(resultType);
    std::vector<int64_t> dynamicDims;
    int64_t staticProduct = 1;
    for (int64_t d = 0; d < resultType.getRank(); ++d)
      if (resultType.isDynamicDim(d))
        dynamicDims.push_back(d);
      else
        staticProduct *= resultType.getDimSize(d);
    if (dynamicDims.empty() && !elements.isStatic())
      return unsupported("a result of fixed size from '" +
                         fusec::formatSymbolicShape(in, syms) + "'");
    // The operand's leading symbolic dims kept as they are, the fixed
    // dims after them regrouped: [b, s, 768] -> [b, s, 12, 64].
    size_t leading = 0;
    while (leading < in.size() && !in[leading].isStatic())
      ++leading;
    bool keepsLeading = dynamicDims.size() == leading && leading > 0;
    for (size_t i = 0; keepsLeading && i < leading; ++i)
      keepsLeading = dynamicDims[i] == static_cast<int64_t>(i);
    if (keepsLeading) {
      int64_t rest = 1;
      for (size_t d = leading; d < in.size(); ++d)
        rest *= in[d].factor;
      keepsLeading = rest == staticProduct;
    }
    // Each symbolic dim kept whole, the fixed dims between them regrouped
    // with the same products: [1, s, 768] -> [1, s, 12, 64],
    // [b, s, 12, 64] -> [b, s, 768].
    auto keepsSymbolicDims = [&] {
      std::vector<size_t> symbolicDims;
      for (size_t d = 0; d < in.size(); ++d)
        if (!in[d].isStatic())
          symbolicDims.push_back(d);
      if (symbolicDims.size() != dynamicDims.size())
        return false;
      auto staticRun = [](auto begin, auto end, auto sizeOf) {
        int64_t product = 1;
        for (auto it = begin; it != end; ++it)
          product *= sizeOf(*it);
        return product;
      };
      size_t inFrom = 0, outFrom = 0;
      for (size_t k = 0; k <= symbolicDims.size(); ++k) {
        size_t inTo = k < symbolicDims.size() ? symbolicDims[k] : in.size();
        size_t outTo = k < dynamicDims.size()
                           ? static_cast<size_t>(dynamicDims[k])
                           : static_cast<size_t>(resultType.getRank());
        int64_t inRun =
            staticRun(in.begin() + inFrom, in.begin() + inTo,
                      [](const SymbolicSize &d) { return d.factor; });
        int64_t outRun = 1;
        for (size_t d = outFrom; d < outTo; ++d)
          outRun *= resultType.getDimSize(d);
        if (inRun != outRun ||
            (k < symbolicDims.size() && in[symbolicDims[k]].factor != 1))
          return false;
        inFrom = inTo + 1;
        outFrom = outTo + 1;
      }
      return true;
    };
    if (keepsLeading) {
      for (size_t i = 0; i < leading; ++i)
        out[i] = in[i];
    } else if (keepsSymbolicDims()) {
      size_t k = 0;
      for (size_t d = 0; d < in.size(); ++d)
        if (!in[d].isStatic())
          out[dynamicDims[k++]] = in[d];
    } else if (dynamicDims.size() == 1 && staticProduct > 0 &&
               elements.factor % staticProduct == 0) {
      // One dynamic dim takes every symbol: [b, s, 768] -> [b*s, 768].
      out[dynamicDims[0]] = {elements.factor / staticProduct, elements.symbols};
    } else {
      return unsupported("cannot tell which symbols the result's dims are "
                         "(from '" +
                         fusec::formatSymbolicShape(in, syms) + "')");
    }
    if (fusec::symbolicElements(out) != elements)
      return unsupported("the result's elements differ from the operand's ('" +
                         fusec::formatSymbolicShape(in, syms) + "')");
    return record(op, result, std::move(out));
  }

  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    SymbolicShape in = shapeOf(transpose.getOperand()), out;
    for (int64_t source : transpose.getPerm())
      out.push_back(in[source]);
    return record(op, result, std::move(out));
  }

  if (isa<SliceOp, PadOp>(op)) {
    // A slice's verifier refuses cutting a symbolic dim; a pad's, cropping
    // one. The others keep the operand's, a padded one grows: seq + 3.
    SymbolicShape in = shapeOf(op->getOperand(0)), out;
    out = staticShape(resultType);
    auto pad = dyn_cast<PadOp>(op);
    std::optional<ResolvedPad> pads;
    if (pad)
      pads = resolvePad(pad);
    for (size_t d = 0; d < in.size(); ++d) {
      if (!resultType.isDynamicDim(d))
        continue;
      out[d] = in[d];
      int64_t added = pads ? pads->begins[d] + pads->ends[d] : 0;
      if (added == 0)
        continue;
      std::optional<SymbolicSize> padded = fusec::addSymbolicSizes(
          in[d], SymbolicSize::constant(added), /*subtract=*/false, syms);
      if (!padded)
        return unsupported("the padded dim " + Twine(d) + " is no size");
      out[d] = *padded;
    }
    return record(op, result, std::move(out));
  }

  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t rank = resultType.getRank();
    std::optional<int64_t> normalized = normalizeAxis(concat.getAxis(), rank);
    if (!normalized)
      return unsupported("axis out of range");
    int64_t axis = *normalized;
    // Along the axis, the sum of the operands' dims (a cache grown by
    // concatenation is `past + seq` long).
    SmallVector<SymbolicShape> operands;
    std::optional<SymbolicSize> along = SymbolicSize::constant(0);
    for (Value input : concat.getInputs()) {
      operands.push_back(shapeOf(input));
      along = fusec::addSymbolicSizes(*along, operands.back()[axis],
                                      /*subtract=*/false, syms);
      if (!along)
        return unsupported("the concatenated dims' sum is no size");
    }
    SymbolicShape out = operands.front();
    out[axis] = *along;
    if (along->isStatic() != !resultType.isDynamicDim(axis) ||
        (along->isStatic() && along->factor != resultType.getDimSize(axis)))
      return unsupported("the result's dim " + Twine(axis) + " is not '" +
                         along->format(syms) + "'");
    for (const SymbolicShape &other : operands)
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && other[d] != out[d])
          return unsupported("dim " + Twine(d) + " is '" + out[d].format(syms) +
                             "' in one operand and '" + other[d].format(syms) +
                             "' in another");
    return record(op, result, std::move(out));
  }

  if (auto gather = dyn_cast<GatherOp>(op)) {
    // data[:axis] + indices + data[axis + 1:]; the kernel reads every size.
    SymbolicShape data = shapeOf(gather.getData()),
                  indices = shapeOf(gather.getIndices()), out;
    std::optional<int64_t> axis =
        normalizeAxis(gather.getAxis(), static_cast<int64_t>(data.size()));
    if (!axis)
      return unsupported("axis out of range");
    out.assign(data.begin(), data.begin() + *axis);
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), data.begin() + *axis + 1, data.end());
    return record(op, result, std::move(out));
  }

  if (isa<ArgMaxOp, ArgMinOp>(op)) {
    SymbolicShape in = shapeOf(op->getOperand(0)), out;
    auto argmax = dyn_cast<ArgMaxOp>(op);
    auto argmin = dyn_cast<ArgMinOp>(op);
    int64_t rawAxis = argmax ? argmax.getAxis() : argmin.getAxis();
    bool keep = argmax ? argmax.getKeepdims() : argmin.getKeepdims();
    std::optional<int64_t> axis =
        normalizeAxis(rawAxis, static_cast<int64_t>(in.size()));
    if (!axis)
      return unsupported("axis out of range");
    for (size_t d = 0; d < in.size(); ++d)
      if (static_cast<int64_t>(d) != *axis)
        out.push_back(in[d]);
      else if (keep)
        out.push_back(SymbolicSize::constant(1));
    return record(op, result, std::move(out));
  }

  if (auto attention = dyn_cast<AttentionOp>(op)) {
    // The batch and the lengths may be symbolic: q, k and v as [B, H, T, D]
    // or [B, T, C] with H, D and C fixed, the same batch in each; the
    // result is the query's with its own last dim.
    SymbolicShape query = shapeOf(attention.getQuery());
    for (Value operand :
         {attention.getQuery(), attention.getKey(), attention.getValue()}) {
      SymbolicShape shape = shapeOf(operand);
      bool fixed = shape.back().isStatic() && shape[0] == query[0] &&
                   (shape.size() != 4 || shape[1].isStatic());
      if (!fixed)
        return unsupported("q, k and v may be symbolic only in their batch "
                           "(the same in each) and length, not '" +
                           fusec::formatSymbolicShape(shape, syms) + "'");
    }
    // [B, H, T, D] queries with the heads merged in the result: [B, T, C];
    // [B, T, C] queries (packed heads) with the heads split in the result:
    // [B, H, T, D].
    SymbolicShape out = query;
    if (query.size() == 4 && resultType.getRank() == 3)
      out = {query[0], query[2], query[3]};
    if (query.size() == 3 && resultType.getRank() == 4)
      out = {query[0], SymbolicSize::constant(resultType.getShape()[1]),
             query[1], query[2]};
    out.back() = SymbolicSize::constant(resultType.getShape().back());
    return record(op, result, std::move(out));
  }

  if (auto gemm = dyn_cast<GemmOp>(op)) {
    // [M, K] @ [K, N] (either transposed) with C broadcast to [M, N].
    SymbolicShape a = shapeOf(gemm.getA()), b = shapeOf(gemm.getB());
    if (a.size() != 2 || b.size() != 2)
      return unsupported("A and B must be 2-D");
    SymbolicShape out = {a[gemm.getTransA() ? 1 : 0],
                         b[gemm.getTransB() ? 0 : 1]};
    if (a[gemm.getTransA() ? 0 : 1] != b[gemm.getTransB() ? 1 : 0])
      return unsupported("the contracted dims differ: '" +
                         fusec::formatSymbolicShape(a, syms) + "' and '" +
                         fusec::formatSymbolicShape(b, syms) + "'");
    if (Value c = gemm.getC()) {
      FailureOr<SymbolicShape> broadcast =
          broadcastResult(op, resultType, {out, shapeOf(c)}, syms);
      if (failed(broadcast))
        return failure();
    }
    return record(op, result, std::move(out));
  }

  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    // NumPy's matmul over dims that may be symbolic: broadcast batch dims,
    // then m and n (op(lhs) [..., m, k] @ op(rhs) [..., k, n]). Which of
    // these forms a library call takes is codegen's
    // question (ProgramBuilder); a fused attention takes them all.
    SymbolicShape lhs = shapeOf(matmul.getLhs()),
                  rhs = shapeOf(matmul.getRhs());
    if (lhs.size() >= 2 && matmul.getTransposeA())
      std::swap(lhs[lhs.size() - 1], lhs[lhs.size() - 2]);
    if (rhs.size() >= 2 && matmul.getTransposeB())
      std::swap(rhs[rhs.size() - 1], rhs[rhs.size() - 2]);
    if (lhs.back() != rhs[rhs.size() >= 2 ? rhs.size() - 2 : 0])
      return unsupported("the contracted dims differ: '" +
                         fusec::formatSymbolicShape(lhs, syms) + "' @ '" +
                         fusec::formatSymbolicShape(rhs, syms) + "'");
    SymbolicShape lhsBatch, rhsBatch;
    if (lhs.size() > 2)
      lhsBatch.assign(lhs.begin(), lhs.end() - 2);
    if (rhs.size() > 2)
      rhsBatch.assign(rhs.begin(), rhs.end() - 2);
    // Right-aligned; a fixed 1 repeats, other dims must be equal.
    size_t batchRank = std::max(lhsBatch.size(), rhsBatch.size());
    SymbolicShape out(batchRank, SymbolicSize::constant(1));
    for (size_t d = 0; d < batchRank; ++d) {
      const SymbolicSize one = SymbolicSize::constant(1);
      size_t fromEnd = batchRank - d;
      SymbolicSize a = fromEnd <= lhsBatch.size()
                           ? lhsBatch[lhsBatch.size() - fromEnd]
                           : one;
      SymbolicSize b = fromEnd <= rhsBatch.size()
                           ? rhsBatch[rhsBatch.size() - fromEnd]
                           : one;
      if (a != b && a != one && b != one)
        return unsupported("batch dim " + Twine(d) + " is '" + a.format(syms) +
                           "' in one operand and '" + b.format(syms) +
                           "' in the other");
      out[d] = a == one ? b : a;
    }
    if (lhs.size() >= 2)
      out.push_back(lhs[lhs.size() - 2]);
    if (rhs.size() >= 2)
      out.push_back(rhs.back());
    if (static_cast<int64_t>(out.size()) != resultType.getRank())
      return unsupported("the result's rank differs from its operands'");
    return record(op, result, std::move(out));
  }

  // Ops whose operands broadcast to their result.
  bool broadcasting =
      isa<ElementwiseOpInterface, SelectOp, CastOp, BroadcastToOp, SoftmaxOp,
          LogSoftmaxOp, LayerNormOp, RmsNormOp, GeluOp, SiluOp, LeakyReluOp,
          EluOp, SeluOp, CeluOp, HardSigmoidOp, ShrinkOp, IsInfOp, ClipOp>(op);
  if (!broadcasting)
    return unsupported("not supported yet");
  SmallVector<SymbolicShape> operands;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      operands.push_back(shapeOf(operand));
  // An explicit broadcast of a fixed value to a symbolic shape (the
  // broadcast pass makes them) takes its dims from the values it is
  // combined with, found through its users (and casts of it), which come
  // earlier.
  if (isa<BroadcastToOp>(op)) {
    SmallVector<Value> reached = {result};
    for (size_t next = 0; next < reached.size() && next < 16; ++next)
      for (Operation *user : reached[next].getUsers()) {
        if (isa<CastOp>(user) && user->getNumResults() == 1)
          reached.push_back(user->getResult(0));
        for (Value other : user->getOperands()) {
          if (llvm::is_contained(reached, other) ||
              !isa<RankedTensorType>(other.getType()) ||
              cast<RankedTensorType>(other.getType()).getRank() !=
                  resultType.getRank())
            continue;
          if (shapes.count(other) || !hasDynamicDims(other)) {
            operands.push_back(shapeOf(other));
            continue;
          }
          // Another explicit broadcast, later in the block: its operand's
          // dims (right-aligned) say what it has.
          if (auto broadcast = other.getDefiningOp<BroadcastToOp>())
            if (shapes.count(broadcast.getOperand()) ||
                !hasDynamicDims(broadcast.getOperand()))
              operands.push_back(shapeOf(broadcast.getOperand()));
        }
      }
  }
  FailureOr<SymbolicShape> shape =
      broadcastResult(op, resultType, operands, syms);
  if (failed(shape))
    return failure();
  return record(op, result, std::move(*shape));
}

std::optional<SymbolicSize> SymbolicDims::sizeNamed(ArrayAttr symbols,
                                                    int64_t factor) const {
  SymbolicSize size = SymbolicSize::constant(factor);
  // A sum names a derived symbol analyze() found: parsed on a copy, it
  // adds none.
  std::vector<fusec::DimSymbol> known = syms;
  for (Attribute symbol : symbols) {
    std::string why;
    std::optional<SymbolicSize> named =
        parseSize(cast<StringAttr>(symbol).getValue(), known, why);
    if (!named || known.size() != syms.size())
      return std::nullopt;
    size = size * *named;
  }
  return size;
}

LogicalResult resolveDimSizes(func::FuncOp function, const SymbolicDims &dims) {
  SmallVector<DimOfOp> sizes;
  function.walk([&](DimOfOp op) { sizes.push_back(op); });
  for (DimOfOp op : sizes) {
    SymbolicSize size = dims.shapeOf(op.getOperand())[op.getDim()];
    OpBuilder builder(op);
    auto type = cast<RankedTensorType>(op.getType());
    Value replacement;
    if (size.isStatic()) {
      replacement = ConstantOp::create(
          builder, op.getLoc(),
          DenseElementsAttr::get(
              type, builder.getI64IntegerAttr(size.factor).getValue()));
    } else {
      SmallVector<Attribute> names;
      for (int symbol : size.symbols)
        names.push_back(builder.getStringAttr(dims.symbols()[symbol].name));
      replacement = DimSizeOp::create(builder, op.getLoc(), type,
                                      builder.getArrayAttr(names), size.factor);
    }
    op.replaceAllUsesWith(replacement);
    op.erase();
  }
  return success();
}

void setSymbolicDims(func::FuncOp function,
                     const std::vector<fusec::DimSymbol> &symbols,
                     const std::vector<std::vector<std::string>> &argDimNames) {
  Builder builder(function.getContext());
  SmallVector<Attribute> list;
  for (const fusec::DimSymbol &symbol : symbols) {
    if (symbol.isDerived())
      continue; // named by its sum where used
    SmallVector<Attribute> entry = {builder.getStringAttr(symbol.name),
                                    builder.getI64IntegerAttr(symbol.min),
                                    builder.getI64IntegerAttr(symbol.max)};
    if (symbol.multiple != 1)
      entry.push_back(builder.getI64IntegerAttr(symbol.multiple));
    list.push_back(builder.getArrayAttr(entry));
  }
  function->setAttr(kSymbolsAttrName, builder.getArrayAttr(list));
  for (auto [index, names] : llvm::enumerate(argDimNames)) {
    if (llvm::all_of(names, [](const std::string &n) { return n.empty(); }))
      continue;
    auto type = cast<RankedTensorType>(function.getArgument(index).getType());
    SmallVector<Attribute> dims;
    for (auto [d, name] : llvm::enumerate(names))
      dims.push_back(name.empty() ? Attribute(builder.getI64IntegerAttr(
                                        type.getDimSize(d)))
                                  : Attribute(builder.getStringAttr(name)));
    function.setArgAttr(index, kDimsAttrName, builder.getArrayAttr(dims));
  }
}

} // namespace fuse
