//===- ReductionEmitter.h - What the reduction printers share --*- C++ -*-===//
//
// The C++ (cpu/ReductionCppPrinter.cpp) and CUDA
// (cuda/ReductionCudaPrinter.cpp) printers of a scheduled reduction: they
// print the plan as its ReductionParams say and decide nothing.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_REDUCTIONEMITTER_H
#define FUSE_CODEGEN_REDUCTIONEMITTER_H

#include "codegen/ScalarExprPrinter.h"
#include "codegen/schedule/ReductionSchedule.h"

#include "mlir/Support/IndentedOstream.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <utility>
#include <vector>

namespace fuse::reduction {

/// The kernel as C++ with OpenMP: `extern "C" void NAME(const void *const *,
/// void *const *)`.
mlir::FailureOr<std::string>
printCppReduction(const ReductionPlan &plan, const ScheduledReduction &schedule,
                  const std::string &name, const std::vector<std::string> &ops);
/// The kernel as CUDA C: `extern "C" __global__ void NAME(in0.., out0..)`,
/// with the scratch buffer last where the params give it one.
mlir::FailureOr<std::string>
printCudaReduction(const ReductionPlan &plan,
                   const ScheduledReduction &schedule, const std::string &name,
                   const std::vector<std::string> &ops,
                   const MathFunctionMap *f32Functions);

/// Statements of one scope: loads bound, reduced values bound, ops built
/// into lets, lets printed for the target.
class ScopePrinter {
public:
  ScopePrinter(const ReductionPlan &plan, const MathFunctionMap *f32Functions,
               std::string prefix)
      : plan(plan), builder(std::move(prefix)),
        printer(f32Functions, /*roundsEachOp=*/!f32Functions) {}

  void bind(mlir::Value value, const std::string &variable) {
    builder.bind(value, variable);
  }
  void divideByReciprocal(mlir::Value divisor, const std::string &reciprocal) {
    builder.divideByReciprocal(divisor, reciprocal);
  }
  /// Binds every value a load defines to the load's variable.
  void bindLoads(Load::Kind kind) {
    for (auto [value, index] : plan.loadOf)
      if (plan.loads[index].kind == kind)
        builder.bind(value, plan.loads[index].variable);
  }
  mlir::LogicalResult build(llvm::ArrayRef<mlir::Operation *> ops,
                            ScalarLets &lets) {
    for (mlir::Operation *op : ops)
      if (mlir::failed(builder.build(*op, lets)))
        return mlir::failure();
    return mlir::success();
  }
  void print(mlir::raw_indented_ostream &os,
             llvm::ArrayRef<ScalarLet> lets) const {
    printer.print(lets, os);
  }
  const std::string &variableOf(mlir::Value value) const {
    return builder.variableOf(value);
  }
  bool isBound(mlir::Value value) const { return builder.isBound(value); }

private:
  const ReductionPlan &plan;
  ScalarExprBuilder builder;
  ScalarExprPrinter printer;
};

/// The row-level state every emitter tracks: the reduced values known so
/// far (loads, accumulators, reduced ops), as variables at row scope.
struct RowScope {
  std::vector<std::pair<mlir::Value, std::string>> bound;
  void bindInto(ScopePrinter &printer) const {
    for (const auto &[value, variable] : bound)
      printer.bind(value, variable);
  }
};

/// The comment above a kernel: its ops, its space and `how` it walks it.
std::string header(const ReductionPlan &plan, const std::string &name,
                   const std::vector<std::string> &ops, const std::string &how);

/// The stored form of `value`: a cast from f32 to the f16/bf16 it is stored
/// as rounds once at the store instead of twice.
std::string storedValue(const ScopePrinter &printer, mlir::Value value,
                        fusec::DType dtype);

/// What both emitters share: reduced ops at row scope, reduced outputs,
/// loads.
class EmitterBase {
protected:
  EmitterBase(const ReductionPlan &plan, const ReductionParams &params,
              const std::string &name, const std::vector<std::string> &ops,
              const MathFunctionMap *f32Functions)
      : plan(plan), params(params), name(name), ops(ops),
        f32Functions(f32Functions) {}

  std::string loadExpression(const Load &load, const std::string &offset);
  /// At the start of a row: the per-row loads, and each full load's row
  /// offset (`aN_row`). Returns the row scope with the per-row and uniform
  /// loads bound.
  RowScope emitRowLoads(mlir::raw_indented_ostream &os, const DimGroup &rows);
  /// The values the same at every point of a row or column: the per-row
  /// and uniform loads, and the symbolic sizes.
  RowScope uniformScope() const;
  /// One point of a column schedule: the prologue's statements, the full
  /// outputs stored at `outputOffset`, each accumulator's lane `lane`
  /// combined with its operand.
  void emitColumnStep(mlir::raw_indented_ostream &os,
                      llvm::ArrayRef<ScalarLet> statements,
                      const ScopePrinter &printer,
                      const std::string &outputOffset, const std::string &lane);
  void emitUniformLoads(mlir::raw_indented_ostream &os);
  /// Where row `row`'s full outputs start (`outStrides` from
  /// outputStrides): row * length where the length is symbolic.
  std::string outputRowOffset(const DimGroup &rows,
                              const fusec::Shape &outStrides) const;
  /// The loads of values constant along the reduction (Load::Reduced), at
  /// the offsets `offsetOf` gives for them (by index into the loads).
  void emitReducedLoads(mlir::raw_indented_ostream &os,
                        llvm::function_ref<std::string(unsigned)> offsetOf);
  /// Column schedules: where outer point `o` starts in load `load`'s input,
  /// or (kFullOutput) in a full output at `strides`.
  static constexpr int kFullOutput = -1;
  std::string outerOffset(const DimGroup &outer, int load,
                          const fusec::Shape &strides) const;
  /// Prints the reduced ops ready after `level` at row scope and binds
  /// their results for later scopes.
  mlir::LogicalResult emitReducedOps(mlir::raw_indented_ostream &os,
                                     RowScope &scope, unsigned level);
  void emitReducedOutputs(mlir::raw_indented_ostream &os, const RowScope &scope,
                          const std::string &index);
  static std::string combiner(const ReductionInfo &reduction);

  const ReductionPlan &plan;
  const ReductionParams &params;
  const std::string &name;
  const std::vector<std::string> &ops;
  const MathFunctionMap *f32Functions;
};

} // namespace fuse::reduction

#endif
