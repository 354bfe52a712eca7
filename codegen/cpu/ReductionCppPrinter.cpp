//===- ReductionCppPrinter.cpp - A scheduled reduction as C++ ------------===//
//
// Rows in parallel (OpenMP), each pass a simd loop into lanes; column
// tiles in parallel, a simd loop per reduced row. The schedule
// (schedule/ReductionSchedule.h) made every choice.
//
//===----------------------------------------------------------------------===//

#include "codegen/PointwiseKernel.h"
#include "codegen/ReductionEmitter.h"

#include "ir/TypeUtils.h"

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse::reduction {

namespace {

class CppEmitter : EmitterBase {
public:
  CppEmitter(const ReductionPlan &plan, const ScheduledReduction &schedule,
             const std::string &name, const std::vector<std::string> &ops)
      : EmitterBase(plan, schedule.params, name, ops, &cpuMathFunctions()),
        schedule(schedule) {}

  FailureOr<std::string> emit() {
    std::string text;
    llvm::raw_string_ostream raw(text);
    raw_indented_ostream os(raw);
    bool column = params.column;
    os << header(plan, name, ops,
                 column ? "column tiles in parallel" : "rows in parallel");
    os << cppKernelSignature(name, plan.symbolicRows.has_value()) << " {\n";
    os.indent();
    unsigned numInputs = plan.fusion.getInputs().size();
    for (unsigned i = 0; i < numInputs; ++i) {
      const char *type =
          storageType(dtypeOf(plan.fusion.getInputs()[i].getType()));
      os << "const " << type << " *__restrict in" << i << " = (const " << type
         << " *)fusec_inputs[" << i << "];\n";
    }
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const char *type = storageType(plan.outputs[i].dtype);
      os << type << " *__restrict out" << i << " = (" << type
         << " *)fusec_outputs[" << i << "];\n";
    }
    emitUniformLoads(os);
    if (failed(column ? emitColumns(os) : emitRows(os)))
      return failure();
    os.unindent();
    os << "}\n";
    return text;
  }

private:
  LogicalResult emitRows(raw_indented_ostream &os) {
    DimGroup rows, cols;
    rowGroups(plan.space, rows, cols);
    int64_t numRows = rows.size(), length = cols.size();
    Shape outStrides = outputStrides(plan);
    std::string outRow = outputRowOffset(rows, outStrides);
    // A symbolic row is walked at the run's length (buffers kept for a
    // later pass are sized for the longest).
    const std::string lengthText = plan.rowLengthExpression(length);
    auto colOffset = [&](const Shape &strides) {
      return cols.contiguous(strides) ? std::string("col")
                                      : cols.offset("col", strides);
    };

    // Values a pass computes that a later pass needs again are kept in a
    // row buffer when the schedule keeps them.
    const PassSlices &passes = schedule.slices;
    const auto &slices = passes.slices;
    const auto &kept = passes.kept;
    const auto &keptUses = passes.keptUses;
    std::vector<std::string> keptNames;
    for (size_t k = 0; k < kept.size(); ++k)
      keptNames.push_back("k" + std::to_string(k) + "_row");

    // A symbolic row count starts the OpenMP team only for enough rows.
    if (params.parallel)
      os << "#pragma omp parallel for schedule(static)"
         << (plan.symbolicRows ? " if(" + plan.rowCountExpression(numRows) +
                                     " * " + lengthText + " >= " +
                                     std::to_string(kCpuParallelThreshold) + ")"
                               : std::string())
         << "\n";
    os << "for (int64_t row = 0; row < " << plan.rowCountExpression(numRows)
       << "; ++row) {\n";
    os.indent();
    RowScope scope = emitRowLoads(os, rows);
    for (auto [index, entry] : llvm::enumerate(kept))
      os << computeType(dtypeOf(entry.first.getType())) << " "
         << keptNames[index] << "[" << length << "];\n";
    if (failed(emitReducedOps(os, scope, 0)))
      return failure();

    const int64_t lanes = params.lanes;
    for (size_t p = 0; p < schedule.passes.size(); ++p) {
      bool storesOutputs = schedule.passes[p].storesOutputs;
      ScalarLets statements;
      ScopePrinter printer(plan, f32Functions, "v");
      scope.bindInto(printer);
      printer.bindLoads(Load::Full);
      for (auto [index, entry] : llvm::enumerate(kept))
        if (keptUses[p].contains(entry.first))
          printer.bind(entry.first, keptNames[index] + "[col]");
      if (failed(printer.build(slices[p], statements)))
        return failure();
      const std::vector<const ReductionInfo *> &here =
          schedule.passes[p].reductions;
      for (const ReductionInfo *reduction : here)
        os << computeType(reduction->dtype) << " " << reduction->accumulator
           << "_lanes[" << lanes << "];\n"
           << "for (int64_t lane = 0; lane < " << lanes << "; ++lane) "
           << reduction->accumulator
           << "_lanes[lane] = " << combiner(*reduction) << "::identity();\n";
      auto body = [&](const std::string &laneIndex) {
        for (unsigned index : passes.loads[p]) {
          const Load &load = plan.loads[index];
          os << "const " << computeType(load.dtype) << " " << load.variable
             << " = "
             << loadExpression(load, load.variable + "_row + " +
                                         colOffset(load.strides))
             << ";\n";
        }
        printer.print(os, statements);
        for (auto [index, entry] : llvm::enumerate(kept))
          if (entry.second == p)
            os << keptNames[index]
               << "[col] = " << printer.variableOf(entry.first) << ";\n";
        for (const ReductionInfo *reduction : here)
          os << reduction->accumulator << "_lanes[" << laneIndex
             << "] = " << combiner(*reduction) << "::combine("
             << reduction->accumulator << "_lanes[" << laneIndex << "], "
             << printer.variableOf(reduction->op->getOperand(0)) << ");\n";
        if (storesOutputs)
          for (size_t i = 0; i < plan.outputs.size(); ++i)
            if (plan.outputs[i].full)
              os << "out" << i << "[" << outRow << " + "
                 << colOffset(outStrides) << "] = "
                 << storedValue(printer, plan.outputs[i].value,
                                plan.outputs[i].dtype)
                 << ";\n";
      };
      if (storesOutputs) {
        os << "#pragma omp simd\n";
        os << "for (int64_t col = 0; col < " << lengthText << "; ++col) {\n";
        os.indent();
        body("");
        os.unindent();
        os << "}\n";
        continue;
      }
      // Whole groups of lanes, then the rest of the row one by one.
      int64_t whole = length / lanes * lanes;
      std::string wholeText = plan.symbolicRowLength
                                  ? "(" + lengthText + ") / " +
                                        std::to_string(lanes) + " * " +
                                        std::to_string(lanes)
                                  : std::to_string(whole);
      if (plan.symbolicRowLength)
        os << "const int64_t whole" << p << " = " << wholeText << ";\n";
      if (plan.symbolicRowLength)
        wholeText = "whole" + std::to_string(p);
      if (whole > 0) {
        os << "for (int64_t col0 = 0; col0 < " << wholeText
           << "; col0 += " << lanes << ") {\n";
        os.indent();
        os << "#pragma omp simd\n";
        os << "for (int64_t lane = 0; lane < " << lanes << "; ++lane) {\n";
        os.indent();
        os << "const int64_t col = col0 + lane;\n";
        body("lane");
        os.unindent();
        os << "}\n";
        os.unindent();
        os << "}\n";
      }
      if (whole < length || plan.symbolicRowLength) {
        os << "for (int64_t col = " << wholeText << "; col < " << lengthText
           << "; ++col) {\n";
        os.indent();
        body("col - " + wholeText);
        os.unindent();
        os << "}\n";
      }
      for (const ReductionInfo *reduction : here) {
        os << computeType(reduction->dtype) << " " << reduction->accumulator
           << " = " << combiner(*reduction) << "::identity();\n";
        os << "for (int64_t lane = 0; lane < " << lanes << "; ++lane) "
           << reduction->accumulator << " = " << combiner(*reduction)
           << "::combine(" << reduction->accumulator << ", "
           << reduction->accumulator << "_lanes[lane]);\n";
        scope.bound.push_back(
            {reduction->op->getResult(0), reduction->accumulator});
      }
      if (failed(emitReducedOps(os, scope, p + 1)))
        return failure();
    }
    emitReducedOutputs(os, scope, "row");
    os.unindent();
    os << "}\n";
    return success();
  }

  LogicalResult emitColumns(raw_indented_ostream &os) {
    DimGroup outer, reduced, inner;
    columnGroups(plan.space, outer, reduced, inner);
    const int64_t tileColumns = params.columnTile,
                  innerTiles = params.innerTiles, tiles = params.tiles;
    // Symbolic outer dims: the run's tiles.
    std::string tilesText =
        plan.symbolicOuter ? plan.symbolicOuter->cExpression("fusec_dims") +
                                 " * " + std::to_string(innerTiles)
                           : std::to_string(tiles);
    if (params.parallel)
      os << "#pragma omp parallel for schedule(static)\n";
    os << "for (int64_t tile = 0; tile < " << tilesText << "; ++tile) {\n";
    os.indent();
    os << "const int64_t o = tile / " << innerTiles << ";\n";
    os << "const int64_t i0 = tile % " << innerTiles << " * " << tileColumns
       << ";\n";
    os << "const int64_t width = " << inner.size() << " - i0 < " << tileColumns
       << " ? " << inner.size() << " - i0 : " << tileColumns << ";\n";
    for (const ReductionInfo &reduction : plan.reductions)
      os << computeType(reduction.dtype) << " " << reduction.accumulator << "["
         << tileColumns << "];\n"
         << "for (int64_t ii = 0; ii < " << tileColumns << "; ++ii) "
         << reduction.accumulator << "[ii] = " << combiner(reduction)
         << "::identity();\n";
    Shape outStrides = outputStrides(plan);
    // `load`: an index into the loads, or kFullOutput.
    auto offsetOf = [&](int load, const Shape &strides, bool alongReduced) {
      std::string offset = outerOffset(outer, load, strides) + " + " +
                           inner.offset("i", strides);
      if (alongReduced)
        offset += " + " + reduced.offset("k", strides);
      return offset;
    };
    // Every full value is a prologue: computed per reduced row.
    const SmallVector<Operation *> &slice = schedule.columnSlice;
    ScalarLets statements;
    RowScope scope = uniformScope();
    ScopePrinter printer(plan, f32Functions, "v");
    printer.bindLoads(Load::Full);
    scope.bindInto(printer);
    if (failed(printer.build(slice, statements)))
      return failure();
    os << "for (int64_t k = 0; k < " << plan.rowLengthExpression(reduced.size())
       << "; ++k) {\n";
    os.indent();
    os << "#pragma omp simd\n";
    os << "for (int64_t ii = 0; ii < " << tileColumns << "; ++ii) {\n";
    os.indent();
    os << "if (ii < width) {\n";
    os.indent();
    os << "const int64_t i = i0 + ii;\n";
    emitReducedLoads(os, [&](unsigned index) {
      return offsetOf(index, plan.loads[index].strides, false);
    });
    for (unsigned index : schedule.columnLoads) {
      const Load &load = plan.loads[index];
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << loadExpression(load, offsetOf(index, load.strides, true)) << ";\n";
    }
    emitColumnStep(os, statements, printer,
                   offsetOf(kFullOutput, outStrides, true), "ii");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    // The epilogue, per output column.
    os << "for (int64_t ii = 0; ii < width; ++ii) {\n";
    os.indent();
    os << "const int64_t i = i0 + ii;\n";
    emitReducedLoads(os, [&](unsigned index) {
      return offsetOf(index, plan.loads[index].strides, false);
    });
    for (const ReductionInfo &reduction : plan.reductions) {
      os << "const " << computeType(reduction.dtype) << " "
         << reduction.accumulator << "_result = " << reduction.accumulator
         << "[ii];\n";
      scope.bound.push_back(
          {reduction.op->getResult(0), reduction.accumulator + "_result"});
    }
    if (failed(emitReducedOps(os, scope, 0)) ||
        failed(emitReducedOps(os, scope, 1)))
      return failure();
    emitReducedOutputs(os, scope,
                       "o * " + std::to_string(inner.size()) + " + i");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    return success();
  }

  const ScheduledReduction &schedule;
};

} // namespace

FailureOr<std::string> printCppReduction(const ReductionPlan &plan,
                                         const ScheduledReduction &schedule,
                                         const std::string &name,
                                         const std::vector<std::string> &ops) {
  return CppEmitter(plan, schedule, name, ops).emit();
}

} // namespace fuse::reduction
