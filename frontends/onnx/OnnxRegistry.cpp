//===- OnnxRegistry.cpp - every ONNX op fusec reads, registered once ------===//

#include "frontends/onnx/OnnxRegistry.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace fusec::onnx_import {

std::string OnnxOpDef::attributeOpsetProblem(const std::string &attr,
                                             int64_t opset) const {
  for (const Attribute &row : attrs)
    if (row.name == attr && (opset < row.first || opset > row.last))
      return "attribute '" + attr + "' of " + name + " is defined in opsets " +
             std::to_string(row.first) + " to " + std::to_string(row.last) +
             ", not in " + std::to_string(opset);
  return "";
}

bool OnnxOpDef::readsAttribute(const std::string &attr) const {
  return std::any_of(attrs.begin(), attrs.end(),
                     [&](const Attribute &row) { return row.name == attr; });
}

bool OnnxOpDef::bindsInput(size_t index) const {
  return index >= readsConstantsFrom ||
         std::find(readsConstants.begin(), readsConstants.end(), index) !=
             readsConstants.end() ||
         std::any_of(
             constantInputs.begin(), constantInputs.end(),
             [&](const ConstantInput &input) { return input.index == index; });
}

using OpBuilder = OnnxRegistry::OpBuilder;

OpBuilder &OpBuilder::attr(const char *name, int64_t first, int64_t last) {
  def.attrs.push_back({name, first, last});
  return *this;
}

OpBuilder &OpBuilder::attrs(std::initializer_list<const char *> names) {
  for (const char *name : names)
    attr(name);
  return *this;
}

OpBuilder &OpBuilder::constantInput(size_t index, const char *attr,
                                    int64_t sinceOpset) {
  def.constantInputs.push_back({index, attr, sinceOpset});
  return *this;
}

OpBuilder &OpBuilder::readsConstant(size_t index) {
  def.readsConstants.push_back(index);
  return *this;
}

OpBuilder &OpBuilder::readsConstantsFrom(size_t index) {
  def.readsConstantsFrom = index;
  return *this;
}

OpBuilder &OpBuilder::minInputs(int count) {
  def.minInputs = count;
  return *this;
}

OpBuilder &OpBuilder::variadic() {
  def.variadic = true;
  return *this;
}

OpBuilder &OpBuilder::olderVersionsDiffer(int64_t oldestVersion,
                                          const char *how) {
  def.oldestVersion = oldestVersion;
  def.olderVersionsDiffer = how;
  return *this;
}

OpBuilder &OpBuilder::rewrite(RewriteNode rewrite) {
  def.rewrite = rewrite;
  return *this;
}

OpBuilder OnnxRegistry::on(const char *name, const char *graphOp,
                           int64_t sinceOpset) {
  OnnxOpDef def;
  def.name = name;
  def.graphOp = graphOp;
  def.sinceOpset = sinceOpset;
  return add(std::move(def));
}

OpBuilder OnnxRegistry::on(const char *name, ConvertNode convert,
                           int64_t sinceOpset) {
  OnnxOpDef def;
  def.name = name;
  def.convert = convert;
  def.sinceOpset = sinceOpset;
  return add(std::move(def));
}

OpBuilder OnnxRegistry::add(OnnxOpDef def) {
  if (byName.count(def.name)) {
    // A programming error in an ops file, found by every test that reads
    // an ONNX model.
    std::fprintf(stderr, "fusec: ONNX op %s is registered twice\n",
                 def.name.c_str());
    std::abort();
  }
  def.family = family;
  defs.push_back(std::move(def));
  byName[defs.back().name] = &defs.back();
  return OpBuilder(defs.back());
}

const OnnxOpDef *OnnxRegistry::find(const std::string &name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

const OnnxRegistry &OnnxRegistry::instance() {
  static const OnnxRegistry registry = [] {
    OnnxRegistry r;
    const std::pair<const char *, void (*)(OnnxRegistry &)> families[] = {
        {"Elementwise", registerElementwiseOps},
        {"Matmul", registerMatmulOps},
        {"Reduction", registerReductionOps},
        {"Normalization", registerNormalizationOps},
        {"ConvPool", registerConvPoolOps},
        {"Resize", registerResizeOps},
        {"GatherScatter", registerGatherScatterOps},
        {"Tensor", registerTensorOps},
        {"Quantization", registerQuantizationOps},
        {"Recurrent", registerRecurrentOps},
        {"Attention", registerAttentionOps},
        {"Signal", registerSignalOps},
        {"Importer", registerImporterOps}};
    for (const auto &[family, registerOps] : families) {
      r.family = family;
      registerOps(r);
    }
    return r;
  }();
  return registry;
}

std::string opsetVersionProblem(const OnnxOpDef *def, const std::string &opType,
                                int64_t opset) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(opType, static_cast<int>(opset), "");
  if (schema && schema->Deprecated())
    return opType + " is deprecated in opset " + std::to_string(opset);
  if (opset >= kMinOpset)
    return "";
  if (!schema)
    return opType + " is not defined in opset " + std::to_string(opset);
  // An op's versions before opset 11 are read where they compute what the
  // newer ones do on the attributes and inputs fusec takes: legacy
  // attributes (consumed_inputs, broadcast, axis, is_test, ...) are refused
  // by each op's list of attributes. Ops that changed meaning without such
  // an attribute say which version they are read from.
  if (!def || schema->since_version() >= def->oldestVersion)
    return "";
  return opType + " of opset " + std::to_string(opset) + " (version " +
         std::to_string(schema->since_version()) +
         ") is not supported: " + def->olderVersionsDiffer +
         "; fusec reads version " + std::to_string(def->oldestVersion) + " on";
}

} // namespace fusec::onnx_import
