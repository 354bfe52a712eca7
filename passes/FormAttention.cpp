//===- FormAttention.cpp - Attention chains as one fuse.attention ---------===//
//
// Run as matmul, softmax and matmul, attention writes the heads x Tq x Tk
// scores to memory and reads them twice, and its head split and merge run
// as copy kernels. This pass finds the chain a model writes,
//
//   softmax(mask(scale * transpose(q) @ transpose(k) + bias)) @ transpose(v)
//
// and replaces it with one fuse.attention that reads q, k and v where the
// projections wrote them (see Passes.td for the forms it accepts). A
// softmax that feeds a matmul but does not match gets a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/SymbolicDims.h"
#include "ir/TypeUtils.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace fuse {
#define GEN_PASS_DEF_FUSEFORMATTENTION
#include "passes/Passes.h.inc"
} // namespace fuse

using namespace mlir;
using namespace fuse;

namespace {

/// The kernels hold a row of q and of the output per thread group: head
/// dims past this are left to the matmul and softmax kernels.
constexpr int64_t kMaxHeadDim = 256;

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// A scalar-like operand: one element, whatever its rank.
bool isScalar(Value value) {
  return tensorType(value).hasStaticShape() &&
         tensorType(value).getNumElements() == 1;
}

/// The constant `value` holds: a constant op's, or that of a one-element
/// value computed from constants by ops that fold (the exporters'
/// 1 / sqrt(sqrt(head_dim)), which this pass sees before canonicalization
/// folds it). Null otherwise.
Attribute foldedConstant(Value value, int depth = 0) {
  if (auto constant = value.getDefiningOp<ConstantOp>())
    return constant.getValue();
  Operation *op = value.getDefiningOp();
  constexpr int kMaxDepth = 8;
  if (!op || depth > kMaxDepth || op->getNumResults() != 1 ||
      op->getNumRegions() != 0 || !isScalar(value))
    return {};
  SmallVector<Attribute> operands;
  for (Value operand : op->getOperands()) {
    Attribute folded = foldedConstant(operand, depth + 1);
    if (!folded)
      return {};
    operands.push_back(folded);
  }
  SmallVector<OpFoldResult> results;
  if (failed(op->fold(operands, results)) || results.size() != 1)
    return {};
  if (auto folded = dyn_cast<Attribute>(results.front()))
    return folded;
  // An identity (a cast to its own type) folds to its operand.
  Value kept = cast<Value>(results.front());
  return kept == value ? Attribute() : foldedConstant(kept, depth + 1);
}

/// The value of a float splat constant (of any shape), if `value` is one.
std::optional<double> splatFloat(Value value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(foldedConstant(value));
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

bool hasPerm(TransposeOp op, ArrayRef<int64_t> perm) {
  return op && op.getPerm() == perm;
}

/// How q, k or v is read: the tensor and, for [B, T, C], the first column.
struct Operand {
  Value tensor;
  int64_t column = 0;
  /// k and v: the kv heads a grouped-query model repeats (0: as many as
  /// the query's).
  int64_t kvHeads = 0;
};

/// A [B, T, H*D] tensor as [B, T, C] with its heads from `column`: the
/// tensor itself, or the source of a slice of its last dim.
Operand tokensFirst(Value value) {
  auto slice = value.getDefiningOp<SliceOp>();
  if (!slice)
    return {value, 0};
  RankedTensorType source = tensorType(slice.getOperand());
  RankedTensorType result = tensorType(slice.getResult());
  if (source.getRank() != 3 || source.getDimSize(0) != result.getDimSize(0) ||
      source.getDimSize(1) != result.getDimSize(1))
    return {value, 0};
  std::optional<ArrayRef<int64_t>> steps = slice.getSteps();
  if (steps && llvm::any_of(*steps, [](int64_t step) { return step != 1; }))
    return {value, 0};
  ArrayRef<int64_t> starts = slice.getStarts();
  std::optional<ArrayRef<int64_t>> axes = slice.getAxes();
  int64_t column = -1;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
    if (axis < 0)
      axis += 3;
    if (axis != 2)
      continue;
    column = starts[i] < 0 ? starts[i] + source.getDimSize(2) : starts[i];
  }
  if (column < 0)
    return {value, 0};
  return {slice.getOperand(), column};
}

/// A multiply by a splat scalar as (factor, the other operand).
std::optional<std::pair<double, Value>> scalarProduct(MulOp mul) {
  for (auto [factor, other] : {std::pair(mul.getRhs(), mul.getLhs()),
                               std::pair(mul.getLhs(), mul.getRhs())}) {
    std::optional<double> splat = splatFloat(factor);
    if (splat && isScalar(factor) &&
        tensorType(other) == tensorType(mul.getResult()))
      return std::pair(*splat, other);
  }
  return std::nullopt;
}

/// `value` without the multiplies by splat scalars that made it, their
/// product folded into `scale`.
Value peelScale(Value value, double &scale) {
  while (auto mul = value.getDefiningOp<MulOp>()) {
    std::optional<std::pair<double, Value>> product = scalarProduct(mul);
    if (!product)
      break;
    scale *= product->first;
    value = product->second;
  }
  return value;
}

/// Grouped-query heads written out (torch's repeat_interleave or expand):
/// a [B, Hkv, T, D] source reshaped to [B, Hkv, 1, T, D], broadcast to
/// [B, Hkv, g, T, D] and reshaped to [B, Hkv * g, T, D]. The source, its
/// Hkv in `kvHeads`; else null.
Value repeatedHeadsSource(Value value, int64_t &kvHeads) {
  auto merged = value.getDefiningOp<ReshapeOp>();
  auto repeated =
      merged ? merged.getOperand().getDefiningOp<BroadcastToOp>() : nullptr;
  auto split =
      repeated ? repeated.getOperand().getDefiningOp<ReshapeOp>() : nullptr;
  if (!split)
    return Value();
  ArrayRef<int64_t> source = tensorType(split.getOperand()).getShape();
  ArrayRef<int64_t> grouped = tensorType(repeated.getResult()).getShape();
  ArrayRef<int64_t> result = tensorType(value).getShape();
  if (source.size() != 4 || grouped.size() != 5 || result.size() != 4 ||
      tensorType(split.getResult()).getShape() !=
          ArrayRef<int64_t>{source[0], source[1], 1, source[2], source[3]} ||
      grouped[0] != source[0] || grouped[1] != source[1] ||
      grouped[3] != source[2] || grouped[4] != source[3] ||
      result != ArrayRef<int64_t>{source[0], source[1] * grouped[2], source[2],
                                  source[3]})
    return Value();
  kvHeads = source[1];
  return split.getOperand();
}

/// q or v as the attention reads it, from the [B, H, T, D] value the
/// matmul takes: a transpose [0, 2, 1, 3] of a reshape of [B, T, H*D]
/// becomes the tokens-first view of that tensor. Multiplies by a splat
/// scalar on the way are folded into `scale`.
Operand headsOperand(Value value, double &scale) {
  value = peelScale(value, scale);
  int64_t kvHeads = 0;
  if (Value source = repeatedHeadsSource(value, kvHeads)) {
    Operand operand = headsOperand(source, scale);
    operand.kvHeads = kvHeads;
    return operand;
  }
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!hasPerm(transpose, {0, 2, 1, 3}))
    return {value, 0};
  auto reshape = transpose.getOperand().getDefiningOp<ReshapeOp>();
  if (!reshape)
    return {value, 0};
  RankedTensorType split = tensorType(reshape.getResult()); // [B, T, H, D]
  RankedTensorType source = tensorType(reshape.getOperand());
  if (source.getRank() != 3 || source.getDimSize(0) != split.getDimSize(0) ||
      source.getDimSize(1) != split.getDimSize(1))
    return {value, 0};
  return tokensFirst(reshape.getOperand());
}

/// Whether dim `i` of `a` and dim `j` of `b` are the same size: equal
/// fixed sizes, or (symbolic programs) the same expression of the symbols.
bool sameDim(Value a, int64_t i, Value b, int64_t j,
             const SymbolicDims *symbolic) {
  int64_t sizeA = tensorType(a).getDimSize(i),
          sizeB = tensorType(b).getDimSize(j);
  if (!ShapedType::isDynamic(sizeA) || !ShapedType::isDynamic(sizeB))
    return sizeA == sizeB;
  return symbolic && symbolic->shapeOf(a)[i] == symbolic->shapeOf(b)[j];
}

/// k as the attention reads it, from the [B, H, D, Tk] value the score
/// matmul takes: a transpose [0, 1, 3, 2] of a [B, H, Tk, D] value, the
/// same transpose with the batch dims merged around it (torch's dynamo
/// exporter: reshape to [B*H, Tk, D], transpose [0, 2, 1], reshape to [B,
/// H, D, Tk]), or a transpose [0, 2, 3, 1] of a reshape of [B, Tk, H*D].
FailureOr<Operand> keyOperand(Value value, double &scale, std::string &why,
                              const SymbolicDims *symbolic) {
  value = peelScale(value, scale);
  if (auto split = value.getDefiningOp<ReshapeOp>()) {
    auto swap = split.getOperand().getDefiningOp<TransposeOp>();
    auto merge = hasPerm(swap, {0, 2, 1})
                     ? swap.getOperand().getDefiningOp<ReshapeOp>()
                     : ReshapeOp();
    Value heads = merge ? merge.getOperand() : Value();
    // (The reshapes keep the elements: [B*H, Tk, D] merges B and H when
    // Tk and D stay, and [B, H, D, Tk] splits them back.)
    if (heads && tensorType(heads).getRank() == 4 &&
        tensorType(value).getRank() == 4 &&
        sameDim(merge, 1, heads, 2, symbolic) &&
        sameDim(merge, 2, heads, 3, symbolic) &&
        sameDim(value, 0, heads, 0, symbolic) &&
        sameDim(value, 1, heads, 1, symbolic) &&
        sameDim(value, 2, heads, 3, symbolic) &&
        sameDim(value, 3, heads, 2, symbolic))
      return headsOperand(heads, scale);
  }
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (hasPerm(transpose, {0, 1, 3, 2}))
    return headsOperand(transpose.getOperand(), scale);
  if (hasPerm(transpose, {0, 2, 3, 1})) {
    auto reshape = transpose.getOperand().getDefiningOp<ReshapeOp>();
    RankedTensorType split =
        reshape ? tensorType(reshape.getResult()) : RankedTensorType();
    RankedTensorType source =
        reshape ? tensorType(reshape.getOperand()) : RankedTensorType();
    if (reshape && source.getRank() == 3 &&
        source.getDimSize(0) == split.getDimSize(0) &&
        source.getDimSize(1) == split.getDimSize(1))
      return tokensFirst(reshape.getOperand());
  }
  why = "the key operand is not a transposed [B, H, Tk, D] tensor (its head "
        "dim would not be contiguous)";
  return failure();
}

/// Visible keys of a [Tq, Tk] 0/1 pattern as causal/window rules.
struct KeyRule {
  bool causal = false;
  int64_t offset = 0;
  int64_t windowLeft = -1;
};

/// The causal (and sliding-window) rule a constant pattern spells, where
/// `visible(i, j)` says whether query i sees key j; nullopt when the
/// pattern is no such rule.
std::optional<KeyRule>
ruleOf(int64_t queries, int64_t keys,
       llvm::function_ref<bool(int64_t, int64_t)> visible) {
  KeyRule rule;
  // The offset and window from the first row they show in.
  bool offsetKnown = false, windowKnown = false;
  for (int64_t i = 0; i < queries && !(offsetKnown && windowKnown); ++i) {
    int64_t last = -1, first = -1;
    for (int64_t j = 0; j < keys; ++j)
      if (visible(i, j)) {
        if (first < 0)
          first = j;
        last = j;
      }
    if (last < 0)
      continue;
    if (!offsetKnown && last < keys - 1) {
      rule.causal = offsetKnown = true;
      rule.offset = last - i;
    }
    if (!windowKnown && first > 0 && offsetKnown) {
      windowKnown = true;
      rule.windowLeft = i + rule.offset - first;
    }
  }
  if (!rule.causal)
    return std::nullopt; // all visible (nothing to learn) or no rule
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) {
      bool expected =
          j <= i + rule.offset &&
          (rule.windowLeft < 0 || j >= i + rule.offset - rule.windowLeft);
      if (visible(i, j) != expected)
        return std::nullopt;
    }
  return rule;
}

/// The rule of a constant mask broadcast to [..., Tq, Tk] that only varies
/// in its last two dims; `isVisible` reads one element.
std::optional<KeyRule>
constantRule(Value mask, int64_t queries, int64_t keys,
             llvm::function_ref<bool(double)> isVisible) {
  auto constant = mask.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                        : DenseElementsAttr();
  if (!dense)
    return std::nullopt;
  ArrayRef<int64_t> shape = tensorType(mask).getShape();
  int64_t rank = shape.size();
  if (rank < 2 || shape[rank - 2] != queries || shape[rank - 1] != keys ||
      !tensorType(mask).hasStaticShape() ||
      tensorType(mask).getNumElements() != queries * keys)
    return std::nullopt;
  // Read once, with the typed iterators where there are (a causal mask is
  // a million elements at T = 1024: constantElement per element took
  // 100 ms a mask).
  std::vector<char> visible;
  visible.reserve(queries * keys);
  Type elementType = dense.getElementType();
  if (dense.isSplat())
    visible.assign(queries * keys, isVisible(constantElement(dense, 0)));
  else if (elementType.isInteger(1))
    for (bool element : dense.getValues<bool>())
      visible.push_back(isVisible(element ? 1.0 : 0.0));
  else if (elementType.isF32())
    for (float element : dense.getValues<float>())
      visible.push_back(isVisible(element));
  else
    for (int64_t i = 0; i < queries * keys; ++i)
      visible.push_back(isVisible(constantElement(dense, i)));
  return ruleOf(queries, keys,
                [&](int64_t i, int64_t j) { return visible[i * keys + j]; });
}

struct AttentionMatch {
  MatmulOp scores, output;
  SoftmaxOp softmax;
  Operand query, key, value;
  double scale = 1.0;
  Value bias;             ///< float added, or bool: true where visible
  bool biasHides = false; ///< a bool bias that is true where hidden
  /// A bool bias that selects this finite value rather than -inf (the
  /// exporters' finfo(f32).min): the kernel adds a float bias of 0 or it,
  /// which is the select wherever |score| is below 2^100 (the value
  /// absorbs it), fully hidden rows included (uniform, as the select).
  std::optional<double> hiddenFinite;
  KeyRule rule;
  /// The result replaces this value: the output matmul, or the reshape
  /// to [B, Tq, H*Dv] of its head merge.
  Value replaced;
  bool tokensFirstResult = false;
  /// The probabilities pass through Where(IsNaN(p), 0, p) (the exporters'
  /// SDPA): a row whose softmax is NaN is zero.
  bool zeroNanRows = false;
};

class Matcher {
public:
  /// `symbolic`: the function's symbolic dims, where it has symbols.
  Matcher(SoftmaxOp softmax, const SymbolicDims *symbolic)
      : symbolic(symbolic) {
    match.softmax = softmax;
  }

  /// Fills the match or says why not.
  FailureOr<AttentionMatch> run(std::string &why) {
    SoftmaxOp softmax = match.softmax;
    RankedTensorType scores = tensorType(softmax.getResult());
    int64_t rank = scores.getRank();
    int64_t axis = static_cast<int64_t>(softmax.getAxis());
    if (rank != 4 || (axis != -1 && axis != 3))
      return fail(why, "the softmax is not over the last dim of a "
                       "[B, H, Tq, Tk] tensor");
    Value probabilities = softmax.getResult();
    if (SelectOp zeroed = nanZeroingSelect(softmax)) {
      probabilities = zeroed.getResult();
      match.zeroNanRows = true;
    }
    if (probabilities.hasOneUse())
      if (auto cast = dyn_cast<CastOp>(*probabilities.user_begin());
          cast && isIdentity(cast))
        probabilities = cast.getResult(); // the exporters' .type(v.dtype)
    if (!probabilities.hasOneUse())
      return fail(why, "the probabilities have other users than the matmul "
                       "with v");
    auto output = dyn_cast<MatmulOp>(*probabilities.user_begin());
    if (!output || output.getLhs() != probabilities || !isPlainProduct(output))
      return fail(why, "the probabilities do not feed a plain matmul as its "
                       "lhs");
    match.output = output;
    if (failed(matchScores(softmax.getOperand(), why)))
      return failure();
    if (failed(matchOperands(why)))
      return failure();
    matchResult();
    return match;
  }

private:
  /// Where(IsNaN(p), 0, p) of the softmax p, its only users: the select.
  static SelectOp nanZeroingSelect(SoftmaxOp softmax) {
    Value p = softmax.getResult();
    SelectOp select;
    IsNanOp isNan;
    for (Operation *user : p.getUsers()) {
      if (auto s = dyn_cast<SelectOp>(user); s && !select)
        select = s;
      else if (auto n = dyn_cast<IsNanOp>(user); n && !isNan)
        isNan = n;
      else
        return SelectOp();
    }
    if (!select || !isNan || !isNan.getResult().hasOneUse() ||
        select.getCond() != isNan.getResult() || select.getFalseValue() != p ||
        tensorType(select.getResult()) != tensorType(p))
      return SelectOp();
    std::optional<double> zero = splatFloat(select.getTrueValue());
    return zero && *zero == 0.0 ? select : SelectOp();
  }

  /// A cast to its operand's own type (before canonicalization).
  static bool isIdentity(CastOp cast) {
    return cast.getOperand().getType() == cast.getType();
  }

  static bool isPlainProduct(MatmulOp op) {
    return !op.getTransposeA() && !op.getTransposeB() && !op.getBias() &&
           op.getAlpha().convertToDouble() == 1.0 && op.getEpilogue() == "none";
  }

  LogicalResult fail(std::string &why, StringRef reason) {
    why = reason.str();
    return failure();
  }

  /// Walks from the softmax's operand down to the score matmul through
  /// masks, bias adds and scales, each used only by the next.
  LogicalResult matchScores(Value value, std::string &why) {
    RankedTensorType scores = tensorType(value);
    int64_t queries = scores.getDimSize(2), keys = scores.getDimSize(3);
    // Walking down from the softmax meets ops in reverse order: a bias add
    // met after a scale is one the scale multiplies too.
    bool scaleSeen = false;
    while (true) {
      Operation *op = value.getDefiningOp();
      if (!op)
        return fail(why, "the softmax's operand is not computed by a matmul");
      if (!value.hasOneUse() && op != match.softmax)
        return fail(why, "an intermediate of the scores has other users");
      if (auto matmul = dyn_cast<MatmulOp>(op)) {
        if (!isPlainProduct(matmul))
          return fail(why, "the score matmul has flags, a scale or a bias");
        match.scores = matmul;
        return success();
      }
      if (tensorType(value) != scores)
        return fail(why, "the scores change shape between the matmul and "
                         "the softmax");
      if (auto cast = dyn_cast<CastOp>(op); cast && isIdentity(cast)) {
        value = cast.getOperand();
        continue;
      }
      if (auto mul = dyn_cast<MulOp>(op)) {
        std::optional<std::pair<double, Value>> product = scalarProduct(mul);
        if (!product)
          return fail(why, "the scores are multiplied by a non-scalar");
        if (!(product->first > 0))
          return fail(why, "the scale is not positive");
        scaleSeen = true;
        match.scale *= product->first;
        value = product->second;
        continue;
      }
      if (auto div = dyn_cast<DivOp>(op)) {
        std::optional<double> divisor = splatFloat(div.getRhs());
        if (!divisor || !isScalar(div.getRhs()) || !(*divisor > 0))
          return fail(why, "the scores are divided by something other than "
                           "a positive scalar");
        scaleSeen = true;
        match.scale /= *divisor;
        value = div.getLhs();
        continue;
      }
      if (auto select = dyn_cast<SelectOp>(op)) {
        std::optional<double> hiddenValue;
        Value next;
        bool condHides = false;
        if ((hiddenValue = splatFloat(select.getTrueValue())) &&
            isScalar(select.getTrueValue())) {
          next = select.getFalseValue();
          condHides = true;
        } else if ((hiddenValue = splatFloat(select.getFalseValue())) &&
                   isScalar(select.getFalseValue())) {
          next = select.getTrueValue();
        }
        // -inf, or a finite value that absorbs any score in f32/f64.
        bool finite = hiddenValue && std::isfinite(*hiddenValue) &&
                      *hiddenValue <= -1e30 &&
                      (scores.getElementType().isF32() ||
                       scores.getElementType().isF64());
        if (!hiddenValue ||
            !((std::isinf(*hiddenValue) && *hiddenValue < 0) || finite))
          return fail(why, "a select on the scores does not put -inf (or "
                           "a finite value at most -1e30 in f32/f64)");
        if (match.bias || match.rule.causal)
          return fail(why, "the scores have more than one mask or bias");
        Value cond = select.getCond();
        std::optional<KeyRule> rule;
        if (!finite)
          rule = constantRule(cond, queries, keys, [&](double element) {
            return (element != 0) != condHides;
          });
        if (finite)
          match.hiddenFinite = *hiddenValue;
        if (rule) {
          match.rule = *rule;
        } else {
          match.bias = cond;
          match.biasHides = condHides;
        }
        value = next;
        continue;
      }
      if (auto add = dyn_cast<AddOp>(op)) {
        Value next = add.getLhs(), bias = add.getRhs();
        if (tensorType(next) != scores)
          std::swap(next, bias);
        if (tensorType(next) != scores)
          return fail(why, "a bias add changes the scores' shape");
        if (match.bias || match.rule.causal)
          return fail(why, "the scores have more than one mask or bias");
        if (scaleSeen)
          return fail(why, "the scale applies after the bias");
        std::optional<KeyRule> rule = constantRule(
            bias, queries, keys, [](double element) { return element == 0; });
        // Only a pattern of 0 and -inf is a rule; anything else is a bias.
        auto constant = bias.getDefiningOp<ConstantOp>();
        auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                              : DenseElementsAttr();
        bool zeroOrMinusInf =
            dense && llvm::all_of(llvm::seq<int64_t>(0, dense.getNumElements()),
                                  [&](int64_t i) {
                                    double e = constantElement(dense, i);
                                    return e == 0 || (std::isinf(e) && e < 0);
                                  });
        if (rule && zeroOrMinusInf)
          match.rule = *rule;
        else
          match.bias = bias;
        value = next;
        continue;
      }
      return fail(why, ("the scores pass through " + describeOp(op) +
                        ", which attention does not take")
                           .c_str());
    }
  }

  LogicalResult matchOperands(std::string &why) {
    match.query = headsOperand(match.scores.getLhs(), match.scale);
    FailureOr<Operand> key =
        keyOperand(match.scores.getRhs(), match.scale, why, symbolic);
    if (failed(key))
      return failure();
    match.key = *key;
    double valueScale = 1.0;
    match.value = headsOperand(match.output.getRhs(), valueScale);
    if (valueScale != 1.0)
      match.value = {match.output.getRhs()};
    if (match.key.kvHeads != match.value.kvHeads)
      return fail(why, "k and v repeat their heads for grouped queries "
                       "differently");
    RankedTensorType q = tensorType(match.scores.getLhs());
    RankedTensorType v = tensorType(match.output.getRhs());
    if (q.getRank() != 4 || v.getRank() != 4 ||
        tensorType(match.scores.getRhs()).getRank() != 4)
      return fail(why, "q, k and v are not [B, H, T, D]");
    if (q.getDimSize(3) > kMaxHeadDim || v.getDimSize(3) > kMaxHeadDim)
      return fail(why, "the head dim is over " + std::to_string(kMaxHeadDim));
    // The matmuls may broadcast a batch; the kernel does not.
    RankedTensorType kT = tensorType(match.scores.getRhs());
    if (kT.getDimSize(0) != q.getDimSize(0) ||
        kT.getDimSize(1) != q.getDimSize(1) ||
        v.getDimSize(0) != q.getDimSize(0) ||
        v.getDimSize(1) != q.getDimSize(1))
      return fail(why, "q, k and v differ in batch or heads");
    if (!std::isfinite(match.scale))
      return fail(why, "the scale is not finite");
    return success();
  }

  /// The head merge after the output matmul, folded into a tokens-first
  /// result when it is there.
  void matchResult() {
    Value result = match.output.getResult();
    match.replaced = result;
    if (!result.hasOneUse())
      return;
    auto transpose = dyn_cast<TransposeOp>(*result.user_begin());
    if (!hasPerm(transpose, {0, 2, 1, 3}) || !transpose.getResult().hasOneUse())
      return;
    auto reshape = dyn_cast<ReshapeOp>(*transpose.getResult().user_begin());
    RankedTensorType merged =
        reshape ? tensorType(reshape.getResult()) : RankedTensorType();
    if (!reshape || merged.getRank() != 3 ||
        merged.getDimSize(1) != tensorType(result).getDimSize(2))
      return;
    match.replaced = reshape.getResult();
    match.tokensFirstResult = true;
  }

  AttentionMatch match;
  const SymbolicDims *symbolic;
};

struct FormAttention : public fuse::impl::FuseFormAttentionBase<FormAttention> {
  using FuseFormAttentionBase::FuseFormAttentionBase;

  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    // Symbolic dims say which dynamic dims are the same size (the chains
    // matched are the function's own values, which rewrites keep).
    std::optional<SymbolicDims> symbolic;
    if (!softmaxes.empty() && getOperation()->hasAttr(kSymbolsAttrName)) {
      FailureOr<SymbolicDims> dims = SymbolicDims::analyze(getOperation());
      if (succeeded(dims))
        symbolic = std::move(*dims);
    }
    for (SoftmaxOp softmax : softmaxes) {
      // Only a softmax feeding a matmul may be attention.
      // (Through Where(IsNaN(p), 0, p), as the exporters write SDPA.)
      bool feedsMatmul =
          llvm::any_of(softmax.getResult().getUsers(), [](Operation *user) {
            return isa<MatmulOp>(user) ||
                   (isa<SelectOp, CastOp>(user) &&
                    llvm::any_of(user->getUsers(), [](Operation *next) {
                      return isa<MatmulOp>(next);
                    }));
          });
      if (!feedsMatmul)
        continue;
      std::string why;
      FailureOr<AttentionMatch> match =
          Matcher(softmax, symbolic ? &*symbolic : nullptr).run(why);
      if (failed(match)) {
        softmax.emitRemark() << "attention not formed: " << why;
        continue;
      }
      RankedTensorType query = tensorType(match->scores.getLhs());
      if (maxWideQueryRows >= 0 && query.getElementTypeBitWidth() >= 32 &&
          query.getDimSize(2) > maxWideQueryRows) {
        softmax.emitRemark()
            << "attention not formed: "
            << (query.getElementTypeBitWidth() == 32 ? "f32" : "f64")
            << " attention of " << query.getDimSize(2)
            << " query rows: with no tensor-core kernel for this dtype, "
               "matmuls and a softmax kernel are faster than the CUDA-core "
               "attention kernel past "
            << static_cast<int64_t>(maxWideQueryRows) << " rows";
        continue;
      }
      rewrite(*match);
      ++numFormed;
    }
  }

  void rewrite(AttentionMatch &match) {
    OpBuilder builder(match.replaced.getDefiningOp());
    builder.setInsertionPointAfter(match.replaced.getDefiningOp());
    Location loc = match.output.getLoc();
    RankedTensorType q = tensorType(match.scores.getLhs());
    RankedTensorType v = tensorType(match.output.getRhs());
    int64_t heads = q.getDimSize(1), headDim = q.getDimSize(3),
            valueHeadDim = v.getDimSize(3);
    Value bias = match.bias;
    if (bias && match.hiddenFinite) {
      // select(cond, hidden, 0) or select(cond, 0, hidden), added.
      Type element = tensorType(match.scores.getResult()).getElementType();
      auto scalar = [&](double value) {
        auto type = RankedTensorType::get({}, element);
        return ConstantOp::create(
                   builder, loc,
                   DenseElementsAttr::get(
                       type, builder.getFloatAttr(element, value).getValue()))
            .getResult();
      };
      Value hidden = scalar(*match.hiddenFinite), shown = scalar(0.0);
      auto type = RankedTensorType::get(tensorType(bias).getShape(), element);
      bias = SelectOp::create(builder, loc, type, bias,
                              match.biasHides ? hidden : shown,
                              match.biasHides ? shown : hidden)
                 .getResult();
    } else if (bias && match.biasHides) {
      // The kernel reads a bool bias as "visible": the select's condition
      // said "hidden". A constant condition folds.
      bias = NotOp::create(builder, loc, bias).getResult();
    }
    RankedTensorType resultType = tensorType(match.replaced);
    auto attention = AttentionOp::create(
        builder, loc, resultType, match.query.tensor, match.key.tensor,
        match.value.tensor, bias, builder.getI64IntegerAttr(heads),
        builder.getI64IntegerAttr(match.key.kvHeads ? match.key.kvHeads
                                                    : heads),
        builder.getI64IntegerAttr(headDim),
        builder.getI64IntegerAttr(valueHeadDim),
        builder.getI64IntegerAttr(match.query.column),
        builder.getI64IntegerAttr(match.key.column),
        builder.getI64IntegerAttr(match.value.column),
        builder.getF64FloatAttr(match.scale),
        builder.getBoolAttr(match.rule.causal),
        builder.getI64IntegerAttr(match.rule.offset),
        builder.getI64IntegerAttr(match.rule.windowLeft),
        builder.getBoolAttr(false), builder.getBoolAttr(match.zeroNanRows));
    match.replaced.replaceAllUsesWith(attention.getResult());
    // The chain is dead now; erase it from the result back to the inputs.
    SmallVector<Operation *> worklist = {match.replaced.getDefiningOp()};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!op || !op->use_empty() || isa<AttentionOp>(op))
        continue;
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      for (Value operand : operands)
        if (Operation *def = operand.getDefiningOp())
          if (def->use_empty())
            worklist.push_back(def);
    }
  }
};

} // namespace
