//===- ReductionEmitter.cpp - What the reduction printers share ----------===//

#include "codegen/ReductionEmitter.h"

#include "ir/TypeUtils.h"

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse::reduction {

namespace {

const char *combinerTemplate(ReductionCombiner combiner) {
  switch (combiner) {
  case ReductionCombiner::Sum:
    return "FusecSum";
  case ReductionCombiner::Prod:
    return "FusecProd";
  case ReductionCombiner::Max:
    return "FusecMax";
  case ReductionCombiner::Min:
    return "FusecMin";
  }
  return "FusecSum";
}

} // namespace

std::string header(const ReductionPlan &plan, const std::string &name,
                   const std::vector<std::string> &ops,
                   const std::string &how) {
  std::string text = "// " + name + ": ";
  for (size_t i = 0; i < ops.size(); ++i)
    text += (i ? " -> " : "") + ops[i];
  return text + " over " + plan.space.describe() + " (reduced dims in []), " +
         how + "\n";
}

std::string storedValue(const ScopePrinter &printer, Value value, DType dtype) {
  if (auto cast = value.getDefiningOp<CastOp>())
    if ((dtype == DType::F16 || dtype == DType::BF16) &&
        dtypeOf(cast.getOperand().getType()) == DType::F32 &&
        printer.isBound(cast.getOperand()))
      return toStorage(dtype, printer.variableOf(cast.getOperand()));
  return toStorage(dtype, printer.variableOf(value));
}

std::string EmitterBase::loadExpression(const Load &load,
                                        const std::string &offset) {
  return fromStorage(load.dtype,
                     "in" + std::to_string(load.argument) + "[" + offset + "]");
}

RowScope EmitterBase::emitRowLoads(raw_indented_ostream &os,
                                   const DimGroup &rows) {
  for (size_t i = 0; i < plan.loads.size(); ++i) {
    const Load &load = plan.loads[i];
    std::string rowOffset = plan.symbolicRowOffsets.empty()
                                ? rows.offset("row", load.strides)
                                : plan.symbolicRowOffsets[i];
    if (load.kind == Load::Reduced)
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << loadExpression(load, rowOffset) << ";\n";
    else if (load.kind == Load::Full)
      os << "const int64_t " << load.variable << "_row = " << rowOffset
         << ";\n";
  }
  return uniformScope();
}

RowScope EmitterBase::uniformScope() const {
  RowScope scope;
  for (auto [value, index] : plan.loadOf)
    if (plan.loads[index].kind != Load::Full)
      scope.bound.push_back({value, plan.loads[index].variable});
  scope.bound.insert(scope.bound.end(), plan.sizeValues.begin(),
                     plan.sizeValues.end());
  return scope;
}

std::string EmitterBase::outputRowOffset(const DimGroup &rows,
                                         const Shape &outStrides) const {
  if (plan.symbolicRowLength)
    return "row * " + plan.rowLengthExpression(0);
  return rows.offset("row", outStrides);
}

void EmitterBase::emitReducedLoads(
    raw_indented_ostream &os,
    llvm::function_ref<std::string(unsigned)> offsetOf) {
  for (auto [index, load] : llvm::enumerate(plan.loads))
    if (load.kind == Load::Reduced)
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << loadExpression(load, offsetOf(index)) << ";\n";
}

std::string EmitterBase::outerOffset(const DimGroup &outer, int load,
                                     const Shape &strides) const {
  if (plan.symbolicOuterOffsets.empty())
    return outer.offset("o", strides);
  return load == kFullOutput ? plan.symbolicOutputOuterOffset
                             : plan.symbolicOuterOffsets[load];
}

void EmitterBase::emitColumnStep(raw_indented_ostream &os,
                                 ArrayRef<ScalarLet> statements,
                                 const ScopePrinter &printer,
                                 const std::string &outputOffset,
                                 const std::string &lane) {
  printer.print(os, statements);
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (plan.outputs[i].full)
      os << "out" << i << "[" << outputOffset << "] = "
         << storedValue(printer, plan.outputs[i].value, plan.outputs[i].dtype)
         << ";\n";
  for (const ReductionInfo &reduction : plan.reductions)
    os << reduction.accumulator << "[" << lane << "] = " << combiner(reduction)
       << "::combine(" << reduction.accumulator << "[" << lane << "], "
       << printer.variableOf(reduction.op->getOperand(0)) << ");\n";
}

void EmitterBase::emitUniformLoads(raw_indented_ostream &os) {
  for (const Load &load : plan.loads)
    if (load.kind == Load::Uniform)
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << loadExpression(load, "0") << ";\n";
}

LogicalResult EmitterBase::emitReducedOps(raw_indented_ostream &os,
                                          RowScope &scope, unsigned level) {
  SmallVector<Operation *> ready = plan.reducedOpsAt(level);
  if (ready.empty())
    return success();
  ScopePrinter printer(plan, f32Functions, "r" + std::to_string(level) + "_");
  scope.bindInto(printer);
  ScalarLets statements;
  // Constants the reduced ops use are printed with them.
  SmallVector<Operation *> withConstants;
  for (Operation *op : ready)
    for (Value operand : op->getOperands())
      if (auto constant = operand.getDefiningOp<ConstantOp>())
        if (!llvm::is_contained(withConstants, constant.getOperation()) &&
            !printer.isBound(constant))
          withConstants.push_back(constant);
  withConstants.append(ready.begin(), ready.end());
  if (failed(printer.build(withConstants, statements)))
    return failure();
  printer.print(os, statements);
  for (Operation *op : withConstants)
    scope.bound.push_back(
        {op->getResult(0), printer.variableOf(op->getResult(0))});
  return success();
}

void EmitterBase::emitReducedOutputs(raw_indented_ostream &os,
                                     const RowScope &scope,
                                     const std::string &index) {
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (plan.outputs[i].full)
      continue;
    std::string variable;
    for (const auto &[value, name] : scope.bound)
      if (value == plan.outputs[i].value)
        variable = name;
    os << "out" << i << "[" << index
       << "] = " << toStorage(plan.outputs[i].dtype, variable) << ";\n";
  }
}

std::string EmitterBase::combiner(const ReductionInfo &reduction) {
  return std::string(combinerTemplate(reduction.combiner)) + "<" +
         computeType(reduction.dtype) + ">";
}

} // namespace fuse::reduction
