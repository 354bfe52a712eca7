//===- ReductionCudaPrinter.cpp - A scheduled reduction as CUDA ----------===//
//
// Rows: a warp or a block per row, passes over the row's vectors, warp
// shuffles (and shared memory) combining them. Columns: threads along the
// inner columns, the reduced rows split across blocks, the last block of a
// tile combining the partials. The schedule (schedule/ReductionSchedule.h)
// made every choice.
//
//===----------------------------------------------------------------------===//

#include "codegen/ReductionEmitter.h"

#include "ir/TypeUtils.h"

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse::reduction {

namespace {

class CudaEmitter : EmitterBase {
public:
  CudaEmitter(const ReductionPlan &plan, const ScheduledReduction &schedule,
              const std::string &name, const std::vector<std::string> &ops,
              const MathFunctionMap *f32Functions)
      : EmitterBase(plan, schedule.params, name, ops, f32Functions),
        schedule(schedule) {}

  FailureOr<std::string> emit() {
    std::string text;
    llvm::raw_string_ostream raw(text);
    raw_indented_ostream os(raw);
    LogicalResult result = params.column ? emitColumns(os) : emitRows(os);
    if (failed(result))
      return failure();
    return text;
  }

private:
  std::string signature(unsigned threads, bool withScratch) {
    std::string text = "extern \"C\" __global__ void __launch_bounds__(" +
                       std::to_string(threads) + ") " + name + "(";
    unsigned numInputs = plan.fusion.getInputs().size();
    std::vector<std::string> params;
    for (unsigned i = 0; i < numInputs; ++i)
      params.push_back(
          std::string("const ") +
          storageType(dtypeOf(plan.fusion.getInputs()[i].getType())) +
          " *__restrict__ in" + std::to_string(i));
    for (size_t i = 0; i < plan.outputs.size(); ++i)
      params.push_back(std::string(storageType(plan.outputs[i].dtype)) +
                       " *__restrict__ out" + std::to_string(i));
    if (withScratch)
      params.push_back("unsigned char *__restrict__ fusec_scratch");
    for (size_t i = 0; i < params.size(); ++i)
      text += (i ? ", " : "") + params[i];
    if (!plan.symbolicRows)
      return text + ") {\n";
    return text + cudaDimParameters(plan.dimCount) + ") {\n  " +
           cudaDimArray(plan.dimCount);
  }

  LogicalResult emitRows(raw_indented_ostream &os) {
    DimGroup rows, cols;
    rowGroups(plan.space, rows, cols);
    const int64_t numRows = rows.size(), length = cols.size();
    Shape outStrides = outputStrides(plan);
    const std::vector<RowPass> &passes = schedule.passes;
    const auto &slices = schedule.slices.slices;
    const auto &passLoads = schedule.slices.loads;
    const auto &kept = schedule.slices.kept;
    const auto &keptUses = schedule.slices.keptUses;
    const int64_t width = params.vectorWidth;
    auto vectorizable = [&](const Shape &strides) {
      return readsVectors(strides, width, cols, {&rows});
    };
    const bool warpPerRow = params.warpPerRow;
    const int64_t threads = params.threadsPerRow, steps = params.steps;
    std::vector<bool> cached(plan.loads.size(), false);
    for (unsigned index : params.cachedLoads)
      cached[index] = true;
    const std::optional<OnlineSoftmax> &online = schedule.online;
    const std::string onlineState = "online";
    const std::string onlineType =
        online ? std::string("FusecMaxExpSum<") +
                     computeType(online->max->dtype) + ">"
               : "";
    const std::string onlineCombiner =
        online ? std::string("FusecOnlineSoftmax<") +
                     computeType(online->max->dtype) + ">"
               : "";
    auto isOnlineMax = [&](const ReductionInfo *reduction) {
      return online && reduction == online->max;
    };
    std::vector<std::string> keptNames;
    for (size_t k = 0; k < kept.size(); ++k)
      keptNames.push_back("k" + std::to_string(k));

    os << header(plan, name, ops,
                 (warpPerRow ? std::string("a warp per row")
                             : "a block of " + std::to_string(threads) +
                                   " threads per row") +
                     ", " + std::to_string(width) + " per access, " +
                     std::to_string(steps) + " steps" +
                     (online ? ", online softmax" : ""));
    os << signature(params.blockX, false);
    os.indent();
    int warps = static_cast<int>(threads / 32);
    if (!warpPerRow) {
      for (const ReductionInfo &reduction : plan.reductions)
        if (!online || (&reduction != online->max && &reduction != online->sum))
          os << "__shared__ " << computeType(reduction.dtype) << " "
             << reduction.accumulator << "_scratch[" << warps << "];\n";
      if (online)
        os << "__shared__ " << onlineType << " " << onlineState << "_scratch["
           << warps << "];\n";
    }
    if (warpPerRow) {
      os << "const int64_t row = (int64_t)blockIdx.x * " << params.rowsPerBlock
         << " + (threadIdx.x >> 5);\n";
      os << "const int tid = threadIdx.x & 31;\n";
    } else {
      os << "const int64_t row = blockIdx.x;\n";
      os << "const int tid = threadIdx.x;\n";
    }
    os << "if (row >= " << plan.rowCountExpression(numRows) << ") return;\n";
    emitUniformLoads(os);
    RowScope scope = emitRowLoads(os, rows);
    // Cached loads keep the stored elements: a bf16 row takes half the
    // registers it would as f32.
    auto vectorType = [&](DType dtype) { return cudaVectorType(dtype, width); };
    for (size_t i = 0; i < plan.loads.size(); ++i) {
      if (!cached[i])
        continue;
      if (vectorizable(plan.loads[i].strides))
        os << vectorType(plan.loads[i].dtype) << " " << plan.loads[i].variable
           << "_cache[" << steps << "];\n";
      else
        os << storageType(plan.loads[i].dtype) << " " << plan.loads[i].variable
           << "_cache[" << steps * width << "];\n";
    }
    for (auto [index, entry] : llvm::enumerate(kept))
      os << computeType(dtypeOf(entry.first.getType())) << " "
         << keptNames[index] << "_cache[" << steps * width << "];\n";
    if (failed(emitReducedOps(os, scope, 0)))
      return failure();
    std::string outRow = outputRowOffset(rows, outStrides);
    std::vector<bool> inCache(plan.loads.size(), false);
    unsigned reciprocals = 0;

    for (size_t p = 0; p < passes.size(); ++p) {
      const RowPass &pass = passes[p];
      ScalarLets statements;
      ScopePrinter printer(plan, f32Functions, "v");
      scope.bindInto(printer);
      printer.bindLoads(Load::Full);
      for (auto [index, entry] : llvm::enumerate(kept))
        if (entry.second < p)
          printer.bind(entry.first, keptNames[index]);
      // A row's values divided by one per-row value and then rounded to
      // f16/bf16 (softmax's normalization): one division per row, a
      // multiplication per element; the rounding absorbs the f32 ulp.
      for (Operation *op : slices[p]) {
        auto div = dyn_cast<DivOp>(op);
        if (!div || !div->hasOneUse() || dtypeOf(div.getType()) != DType::F32)
          continue;
        Value divisor = div.getRhs();
        if (auto broadcast = divisor.getDefiningOp<BroadcastToOp>())
          divisor = broadcast.getOperand();
        if (plan.roles.lookup(divisor) != ValueRole::Reduced)
          continue;
        auto cast = dyn_cast<CastOp>(*div->getUsers().begin());
        DType rounded = cast ? dtypeOf(cast.getType()) : DType::F32;
        if (rounded != DType::F16 && rounded != DType::BF16)
          continue;
        std::string reciprocal = "rcp" + std::to_string(reciprocals++);
        bool found = false;
        for (const auto &[value, variable] : scope.bound)
          if (value == divisor && !found) {
            os << "const float " << reciprocal << " = 1.0f / " << variable
               << ";\n";
            found = true;
          }
        if (found)
          printer.divideByReciprocal(div.getRhs(), reciprocal);
      }
      if (failed(printer.build(slices[p], statements)))
        return failure();
      bool onlinePass = llvm::any_of(pass.reductions, isOnlineMax);
      for (const ReductionInfo *reduction : pass.reductions)
        if (isOnlineMax(reduction))
          os << onlineType << " " << onlineState << " = " << onlineCombiner
             << "::identity();\n";
        else
          os << computeType(reduction->dtype) << " " << reduction->accumulator
             << " = " << combiner(*reduction) << "::identity();\n";
      if (params.runtimeSteps) {
        // The run's steps: a short row of a long maximum skips the rest.
        std::string perStep = std::to_string(threads * width);
        os << "#pragma unroll 4\n";
        os << "for (int step = 0; step < (int)((" << plan.rowLengthExpression(0)
           << " + " << perStep << " - 1) / " << perStep << "); ++step) {\n";
      } else {
        os << "#pragma unroll\n";
        os << "for (int step = 0; step < " << steps << "; ++step) {\n";
      }
      os.indent();
      os << "const int64_t col0 = ((int64_t)step * " << threads << " + tid) * "
         << width << ";\n";
      if (params.stepGuard)
        os << "if (col0 < " << plan.rowLengthExpression(length) << ") {\n";
      else
        os << "{\n";
      os.indent();
      std::vector<bool> readsCache(plan.loads.size(), false);
      for (unsigned index : passLoads[p]) {
        const Load &load = plan.loads[index];
        readsCache[index] = inCache[index];
        if (readsCache[index] || !vectorizable(load.strides))
          continue;
        os << "const " << vectorType(load.dtype) << " " << load.variable
           << "_vector = *reinterpret_cast<const " << vectorType(load.dtype)
           << " *>(in" << load.argument << " + " << load.variable
           << "_row + col0);\n";
        if (cached[index])
          os << load.variable << "_cache[step] = " << load.variable
             << "_vector;\n";
      }
      if (pass.storesOutputs)
        for (size_t i = 0; i < plan.outputs.size(); ++i)
          if (plan.outputs[i].full && vectorizable(outStrides))
            os << vectorType(plan.outputs[i].dtype) << " out" << i
               << "_vector;\n";
      if (onlinePass)
        os << computeType(online->max->dtype) << " " << onlineState
           << "_values[" << width << "];\n";
      os << "#pragma unroll\n";
      os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
      os.indent();
      os << "[[maybe_unused]] const int64_t col = col0 + lane;\n";
      for (unsigned index : passLoads[p]) {
        const Load &load = plan.loads[index];
        bool vector = vectorizable(load.strides);
        std::string cacheSlot = vector ? load.variable + "_cache[step].v[lane]"
                                       : load.variable + "_cache[step * " +
                                             std::to_string(width) + " + lane]";
        std::string element = readsCache[index] ? cacheSlot
                              : vector
                                  ? load.variable + "_vector.v[lane]"
                                  : "in" + std::to_string(load.argument) + "[" +
                                        load.variable + "_row + " +
                                        cols.offset("col", load.strides) + "]";
        if (cached[index] && !readsCache[index] && !vector)
          os << cacheSlot << " = " << element << ";\n";
        os << "const " << computeType(load.dtype) << " " << load.variable
           << " = " << fromStorage(load.dtype, element) << ";\n";
      }
      for (auto [index, entry] : llvm::enumerate(kept))
        if (keptUses[p].contains(entry.first))
          os << "const " << computeType(dtypeOf(entry.first.getType())) << " "
             << keptNames[index] << " = " << keptNames[index]
             << "_cache[step * " << width << " + lane];\n";
      printer.print(os, statements);
      for (auto [index, entry] : llvm::enumerate(kept))
        if (entry.second == p)
          os << keptNames[index] << "_cache[step * " << width
             << " + lane] = " << printer.variableOf(entry.first) << ";\n";
      for (const ReductionInfo *reduction : pass.reductions)
        if (isOnlineMax(reduction))
          os << onlineState << "_values[lane] = "
             << printer.variableOf(reduction->op->getOperand(0)) << ";\n";
        else
          os << reduction->accumulator << " = " << combiner(*reduction)
             << "::combine(" << reduction->accumulator << ", "
             << printer.variableOf(reduction->op->getOperand(0)) << ");\n";
      if (pass.storesOutputs)
        for (size_t i = 0; i < plan.outputs.size(); ++i) {
          if (!plan.outputs[i].full)
            continue;
          std::string value = storedValue(printer, plan.outputs[i].value,
                                          plan.outputs[i].dtype);
          if (vectorizable(outStrides))
            os << "out" << i << "_vector.v[lane] = " << value << ";\n";
          else
            os << "out" << i << "[" << outRow << " + "
               << cols.offset("col", outStrides) << "] = " << value << ";\n";
        }
      os.unindent();
      os << "}\n";
      if (onlinePass)
        os << onlineState << " = " << onlineCombiner << "::add(" << onlineState
           << ", " << onlineState << "_values);\n";
      if (pass.storesOutputs)
        for (size_t i = 0; i < plan.outputs.size(); ++i)
          if (plan.outputs[i].full && vectorizable(outStrides))
            os << "*reinterpret_cast<" << vectorType(plan.outputs[i].dtype)
               << " *>(out" << i << " + " << outRow << " + col0) = out" << i
               << "_vector;\n";
      os.unindent();
      os << "}\n";
      os.unindent();
      os << "}\n";
      for (unsigned index : passLoads[p])
        inCache[index] = inCache[index] || cached[index];
      auto allReduce = [&](const std::string &state,
                           const std::string &combinerType) {
        if (warpPerRow)
          os << state << " = fusec_warp_allreduce<" << combinerType << ">("
             << state << ");\n";
        else
          os << state << " = fusec_block_allreduce<" << combinerType << ", "
             << warps << ">(" << state << ", " << state << "_scratch);\n";
      };
      for (const ReductionInfo *reduction : pass.reductions) {
        if (isOnlineMax(reduction)) {
          allReduce(onlineState, onlineCombiner);
          const char *type = computeType(reduction->dtype);
          os << "const " << type << " " << online->max->accumulator << " = "
             << onlineState << ".max;\n";
          os << "const " << type << " " << online->sum->accumulator << " = "
             << onlineCombiner << "::sum(" << onlineState << ");\n";
          scope.bound.push_back(
              {online->sum->op->getResult(0), online->sum->accumulator});
        } else {
          allReduce(reduction->accumulator, combiner(*reduction));
        }
        scope.bound.push_back(
            {reduction->op->getResult(0), reduction->accumulator});
      }
      if (!pass.reductions.empty()) {
        unsigned level = pass.reductions.front()->level;
        if (failed(emitReducedOps(os, scope, level)))
          return failure();
        // The sum's level was computed in this pass too.
        if (onlinePass && failed(emitReducedOps(os, scope, level + 1)))
          return failure();
      }
    }
    os << "if (tid == 0) {\n";
    os.indent();
    emitReducedOutputs(os, scope, "row");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    return success();
  }

  LogicalResult emitColumns(raw_indented_ostream &os) {
    DimGroup outer, reduced, inner;
    columnGroups(plan.space, outer, reduced, inner);
    const int64_t innerSize = inner.size(), reducedSize = reduced.size();
    Shape outStrides = outputStrides(plan);
    const SmallVector<Operation *> &slice = schedule.columnSlice;
    const std::vector<unsigned> &used = schedule.columnLoads;
    const int64_t width = params.vectorWidth;
    auto vectorizable = [&](const Shape &strides) {
      return readsVectors(strides, width, inner, {&outer, &reduced});
    };
    const int64_t tileColumns = params.columnTile,
                  innerTiles = params.innerTiles, tiles = params.tiles,
                  splits = params.splits, rowsPerSplit = params.rowsPerSplit;
    // Each split's partials are one per column of every tile.
    const int64_t lanes = tiles * tileColumns;
    const unsigned columnRows = params.blockY;

    os << header(plan, name, ops,
                 "threads along " + std::to_string(innerSize) +
                     " inner columns (" + std::to_string(width) + " each), " +
                     std::to_string(reducedSize) + " reduced rows in " +
                     std::to_string(splits) + " splits");
    os << signature(params.blockX * params.blockY, splits > 1);
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << "__shared__ " << computeType(reduction.dtype) << " "
         << reduction.accumulator << "_part[" << columnRows << "]["
         << tileColumns + 1 << "];\n";
    os << "const int64_t tile = blockIdx.x;\n";
    os << "const int64_t o = tile / " << innerTiles << ";\n";
    os << "const int64_t i0 = tile % " << innerTiles << " * " << tileColumns
       << " + threadIdx.x * " << width << ";\n";
    os << "const bool valid = tile < " << tiles << " && i0 < " << innerSize
       << ";\n";
    os << "const int64_t kBegin = (int64_t)blockIdx.y * " << rowsPerSplit
       << ";\n";
    const std::string reducedText = plan.rowLengthExpression(reducedSize);
    if (!params.wholeSplits)
      os << "const int64_t kEnd = kBegin + " << rowsPerSplit << " < "
         << reducedText << " ? kBegin + " << rowsPerSplit << " : "
         << reducedText << ";\n";
    emitUniformLoads(os);
    // `load`: an index into the loads, or kFullOutput.
    auto offsetOf = [&](int load, const Shape &strides, bool alongReduced,
                        const std::string &column) {
      std::string offset = outerOffset(outer, load, strides) + " + " +
                           inner.offset(column, strides);
      if (alongReduced)
        offset += " + " + reduced.offset("k", strides);
      return offset;
    };
    auto reducedLoads = [&] {
      emitReducedLoads(os, [&](unsigned index) {
        return offsetOf(index, plan.loads[index].strides, false, "i");
      });
    };
    RowScope scope = uniformScope();
    ScalarLets statements;
    ScopePrinter printer(plan, f32Functions, "v");
    scope.bindInto(printer);
    printer.bindLoads(Load::Full);
    if (failed(printer.build(slice, statements)))
      return failure();

    for (const ReductionInfo &reduction : plan.reductions) {
      os << computeType(reduction.dtype) << " " << reduction.accumulator << "["
         << width << "];\n";
      os << "for (int lane = 0; lane < " << width << "; ++lane) "
         << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::identity();\n";
    }
    os << "if (valid) {\n";
    os.indent();
    if (params.wholeSplits) {
      os << "#pragma unroll " << params.unroll << "\n";
      os << "for (int step = 0; step < " << rowsPerSplit / columnRows
         << "; ++step) {\n";
      os.indent();
      os << "const int64_t k = kBegin + threadIdx.y + step * " << columnRows
         << ";\n";
    } else {
      os << "for (int64_t k = kBegin + threadIdx.y; k < kEnd; k += "
         << columnRows << ") {\n";
      os.indent();
    }
    for (unsigned index : used) {
      const Load &load = plan.loads[index];
      if (!vectorizable(load.strides))
        continue;
      std::string vectorType = cudaVectorType(load.dtype, width);
      os << "const " << vectorType << " " << load.variable
         << "_vector = *reinterpret_cast<const " << vectorType << " *>(in"
         << load.argument << " + " << offsetOf(index, load.strides, true, "i0")
         << ");\n";
    }
    os << "#pragma unroll\n";
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    os << "[[maybe_unused]] const int64_t i = i0 + lane;\n";
    reducedLoads();
    for (unsigned index : used) {
      const Load &load = plan.loads[index];
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << (vectorizable(load.strides)
                 ? fromStorage(load.dtype, load.variable + "_vector.v[lane]")
                 : loadExpression(load,
                                  offsetOf(index, load.strides, true, "i")))
         << ";\n";
    }
    emitColumnStep(os, statements, printer,
                   offsetOf(kFullOutput, outStrides, true, "i"), "lane");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    // Combine the rows of the block.
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "_part[threadIdx.y][threadIdx.x * "
         << width << " + lane] = " << reduction.accumulator << "[lane];\n";
    os.unindent();
    os << "}\n";
    os << "__syncthreads();\n";
    os << "if (threadIdx.y == 0) {\n";
    os.indent();
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    os << "for (int r = 1; r < " << columnRows << "; ++r) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::combine(" << reduction.accumulator << "[lane], "
         << reduction.accumulator << "_part[r][threadIdx.x * " << width
         << " + lane]);\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    auto emitEpilogue = [&]() -> LogicalResult {
      os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
      os.indent();
      os << "const int64_t i = i0 + lane;\n";
      reducedLoads();
      RowScope epilogue = scope;
      for (const ReductionInfo &reduction : plan.reductions)
        epilogue.bound.push_back(
            {reduction.op->getResult(0), reduction.accumulator + "[lane]"});
      if (failed(emitReducedOps(os, epilogue, 0)) ||
          failed(emitReducedOps(os, epilogue, 1)))
        return failure();
      emitReducedOutputs(os, epilogue,
                         "o * " + std::to_string(innerSize) + " + i");
      os.unindent();
      os << "}\n";
      return success();
    };
    if (splits == 1) {
      os << "if (threadIdx.y == 0 && valid) {\n";
      os.indent();
      if (failed(emitEpilogue()))
        return failure();
      os.unindent();
      os << "}\n";
      os.unindent();
      os << "}\n";
      return success();
    }
    // Partials of every split; the block that finishes a tile last
    // combines them in split order and runs the epilogue.
    os << "__shared__ bool fusec_last;\n";
    for (size_t r = 0; r < plan.reductions.size(); ++r) {
      const ReductionInfo &reduction = plan.reductions[r];
      os << computeType(reduction.dtype) << " *" << reduction.accumulator
         << "_partials = reinterpret_cast<" << computeType(reduction.dtype)
         << " *>(fusec_scratch + " << params.partialOffsets[r] << ");\n";
    }
    os << "const int64_t column = tile * " << tileColumns << " + threadIdx.x * "
       << width << ";\n";
    os << "if (threadIdx.y == 0 && valid) {\n";
    os.indent();
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "_partials[(int64_t)blockIdx.y * " << lanes
         << " + column + lane] = " << reduction.accumulator << "[lane];\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os << "__threadfence();\n";
    os << "__syncthreads();\n";
    os << "if (threadIdx.x == 0 && threadIdx.y == 0) {\n";
    os.indent();
    os << "unsigned *counters = reinterpret_cast<unsigned *>(fusec_scratch + "
       << params.counterOffset << ");\n";
    os << "const unsigned done = atomicAdd(&counters[tile], 1u);\n";
    os << "fusec_last = done == " << splits - 1 << "u;\n";
    os << "if (fusec_last) counters[tile] = 0u; // ready for the next run\n";
    os.unindent();
    os << "}\n";
    os << "__syncthreads();\n";
    os << "if (fusec_last && threadIdx.y == 0 && valid) {\n";
    os.indent();
    os << "__threadfence();\n";
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions) {
      os << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::identity();\n";
      os << "for (int64_t s = 0; s < " << splits << "; ++s) "
         << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::combine(" << reduction.accumulator << "[lane], __ldcg(&"
         << reduction.accumulator << "_partials[s * " << lanes
         << " + column + lane]));\n";
    }
    os.unindent();
    os << "}\n";
    if (failed(emitEpilogue()))
      return failure();
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    return success();
  }

  const ScheduledReduction &schedule;
};

} // namespace

FailureOr<std::string> printCudaReduction(const ReductionPlan &plan,
                                          const ScheduledReduction &schedule,
                                          const std::string &name,
                                          const std::vector<std::string> &ops,
                                          const MathFunctionMap *f32Functions) {
  return CudaEmitter(plan, schedule, name, ops, f32Functions).emit();
}

} // namespace fuse::reduction
