//===- OnnxRegistry.h - Every ONNX op fusec reads, once -------*- C++ -*-===//
//
// Each ONNX op fusec reads is registered once, in the ops file of its family
// (frontends/onnx/ops/<Family>.cpp), with everything the importer checks
// before converting it: the opsets it is read for, the attributes it takes
// and in which opsets, the inputs that must be constants, its arity. The
// importer (OnnxImporter.cpp) and `fusec --list-ops` read only this.
//
//   registry.on("Softmax", "softmax").attr("axis").rewrite(coerceTo2D);
//   registry.on("Split", convertSplit).minInputs(1)
//       .attr("axis").attr("split", kOldestOpset, 12).attr("num_outputs", 18);
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTENDS_ONNX_ONNXREGISTRY_H
#define FUSEC_FRONTENDS_ONNX_ONNXREGISTRY_H

#include "frontends/Graph.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace onnx {
class NodeProto;
} // namespace onnx

namespace fusec::onnx_import {

/// The default-domain opsets read: every op's conversion holds for kMinOpset
/// to kMaxOpset (28, the newest of ONNX 1.23; what changed after 17 is in the
/// ops' attribute opsets and their converters). Models of older opsets (from
/// kOldestOpset) are read op by op: an op whose older versions changed
/// meaning says from which version it is read (olderVersionsDiffer).
constexpr int64_t kOldestOpset = 1, kMinOpset = 11, kMaxOpset = 28;

class OnnxConverter;

/// After the generic conversion (attributes and constant inputs read into a
/// node of the op's graph op): op-specific checks and rewrites of that node.
using RewriteNode = void (*)(OnnxConverter &, const onnx::NodeProto &,
                             GraphNode &);
/// A whole-node conversion, for ops that become several nodes, constants or
/// aliases; it reads the node's attributes itself.
using ConvertNode = void (*)(OnnxConverter &, const onnx::NodeProto &);

struct OnnxOpDef {
  std::string name;
  /// The ops file that registers it (ops/<family>.cpp; "Importer" for the
  /// importer's own ops), for the generated docs.
  std::string family;
  /// The first default-domain opset the op is read from, where later than
  /// ONNX's registry says it is defined.
  int64_t sinceOpset = kOldestOpset;
  /// Versions before `oldestVersion` changed meaning without an attribute
  /// that would refuse them; `olderVersionsDiffer` says how.
  int64_t oldestVersion = 0;
  std::string olderVersionsDiffer;
  /// The graph op the generic conversion makes (empty with `convert`).
  std::string graphOp;
  /// An attribute the op reads, defined in opsets [first, last]: outside
  /// them it is an error, as it is to ONNX's checker. The generic conversion
  /// refuses any attribute not listed; a whole-node converter reads its own.
  struct Attribute {
    std::string name;
    int64_t first = kOldestOpset, last = kMaxOpset;
  };
  std::vector<Attribute> attrs;
  /// An input read as an attribute of the graph node (it must be a
  /// constant), from `sinceOpset` on.
  struct ConstantInput {
    size_t index;
    std::string attr;
    int64_t sinceOpset = 0;
  };
  std::vector<ConstantInput> constantInputs;
  /// Inputs a converter reads as constants itself (Split's sizes, Resize's
  /// scales, ...): each one listed, and every one from `readsConstantsFrom`.
  std::vector<size_t> readsConstants;
  size_t readsConstantsFrom = SIZE_MAX;
  /// Inputs the converter indexes without checking (protobuf does not).
  int minInputs = 0;
  /// One or more inputs, chained left to right (Max, Min, Sum).
  bool variadic = false;
  RewriteNode rewrite = nullptr;
  ConvertNode convert = nullptr;

  /// Why `attr` is not an attribute of this op in `opset` ("" when it is or
  /// when the op does not restrict it).
  std::string attributeOpsetProblem(const std::string &attr,
                                    int64_t opset) const;
  bool readsAttribute(const std::string &attr) const;
  /// Whether input `index` must be a constant (a constant input or one the
  /// converter reads as a constant): the importer binds the static values
  /// of graph inputs (OnnxOptions::staticInputValues) to such inputs.
  bool bindsInput(size_t index) const;
};

class OnnxRegistry {
public:
  /// Fills in one op's definition.
  class OpBuilder {
  public:
    explicit OpBuilder(OnnxOpDef &def) : def(def) {}
    OpBuilder &attr(const char *name, int64_t first = kOldestOpset,
                    int64_t last = kMaxOpset);
    OpBuilder &attrs(std::initializer_list<const char *> names);
    OpBuilder &constantInput(size_t index, const char *attr,
                             int64_t sinceOpset = 0);
    /// Input `index` is read as a constant by the converter itself.
    OpBuilder &readsConstant(size_t index);
    /// Every input from `index` on is.
    OpBuilder &readsConstantsFrom(size_t index);
    OpBuilder &minInputs(int count);
    OpBuilder &variadic();
    OpBuilder &olderVersionsDiffer(int64_t oldestVersion, const char *how);
    OpBuilder &rewrite(RewriteNode rewrite);

  private:
    OnnxOpDef &def;
  };

  /// An op converted generically into `graphOp`.
  OpBuilder on(const char *name, const char *graphOp,
               int64_t sinceOpset = kOldestOpset);
  /// An op converted by `convert` alone.
  OpBuilder on(const char *name, ConvertNode convert,
               int64_t sinceOpset = kOldestOpset);

  /// The op's definition, or null when fusec does not read it.
  const OnnxOpDef *find(const std::string &name) const;
  const std::deque<OnnxOpDef> &ops() const { return defs; }

  /// Every family's ops, registered on first use.
  static const OnnxRegistry &instance();

private:
  OpBuilder add(OnnxOpDef def);
  /// The family whose ops are being registered (set by `instance`).
  std::string family;
  std::deque<OnnxOpDef> defs; ///< stable addresses for `byName`
  std::map<std::string, const OnnxOpDef *> byName;
};

/// Why fusec does not read the version of `opType` in default-domain `opset`
/// ("" when it does): deprecated, not defined, or an older version that
/// changed meaning (`def` may be null for an op fusec does not read).
std::string opsetVersionProblem(const OnnxOpDef *def, const std::string &opType,
                                int64_t opset);

// The families, each in frontends/onnx/ops/<Family>.cpp.
void registerElementwiseOps(OnnxRegistry &registry);
void registerMatmulOps(OnnxRegistry &registry);
void registerReductionOps(OnnxRegistry &registry);
void registerNormalizationOps(OnnxRegistry &registry);
void registerConvPoolOps(OnnxRegistry &registry);
void registerResizeOps(OnnxRegistry &registry);
void registerGatherScatterOps(OnnxRegistry &registry);
void registerTensorOps(OnnxRegistry &registry);
void registerQuantizationOps(OnnxRegistry &registry);
void registerRecurrentOps(OnnxRegistry &registry);
void registerAttentionOps(OnnxRegistry &registry);
void registerSignalOps(OnnxRegistry &registry);
/// Constant, Identity, Shape, Size, If, Loop, Scan: the importer's own.
void registerImporterOps(OnnxRegistry &registry);

} // namespace fusec::onnx_import

#endif
