//===- ReductionSchedule.h - Reduction regions: analysis, params -*- C++
//-*-===//
//
// A region rooted at reductions walks one reduction space: kept dims (one
// result each) and reduced dims. Its values are full (one per point of the
// space) or reduced (one per kept point). Analysis builds the plan: the
// region inputs as loads with strides over the space, the reductions in
// levels (a reduction whose operand needs another reduction's result comes
// a level later), the slice of full ops each pass over the reduced dims
// computes, and the reduced ops computed between passes. The schedule step
// then makes every decision of the kernel, per target, as plain data
// (ReductionParams); the printers (cpu/ReductionCppPrinter.cpp,
// cuda/ReductionCudaPrinter.cpp) only print it:
//
//   row (reduced dims innermost, or any pattern but column):
//     CUDA: a warp per row for short rows, a block per row with warp
//     shuffles and shared memory for long ones; inputs read once with
//     16-byte loads and held in registers across passes when they fit.
//     C++: rows in parallel (OpenMP), each pass a simd loop into 16 lanes.
//   column ([kept, reduced, kept inner]):
//     CUDA: threads along the inner dims, the reduced dims split across
//     blocks; the last block of a column tile combines the partials in a
//     fixed order and runs the epilogue (one launch, deterministic).
//     C++: tiles of inner columns in parallel, a simd loop per reduced row.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCHEDULE_REDUCTIONSCHEDULE_H
#define FUSE_CODEGEN_SCHEDULE_REDUCTIONSCHEDULE_H

#include "codegen/PointwiseKernel.h"
#include "ir/FuseDialect.h"
#include "ir/ReductionSpace.h"
#include "runtime/core/Program.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace fuse::reduction {

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

/// A region input read at each point of the space.
struct Load {
  unsigned argument;
  fusec::DType dtype;
  /// Full: varies along reduced dims; Reduced: one per row; Uniform: one.
  enum Kind { Full, Reduced, Uniform } kind;
  fusec::Shape strides; ///< per dim of the space
  std::string variable;
  /// The rank of the shape it is read as: the space's, or the kept dims'
  /// alone (the reduced ones dropped).
  size_t targetRank = 0;
};

struct ReductionInfo {
  mlir::Operation *op;
  ReductionCombiner combiner;
  fusec::DType dtype;
  unsigned level;
  std::string accumulator;
};

struct Output {
  mlir::Value value;
  fusec::DType dtype;
  bool full;
};

/// The dims of the space split into groups, with offset expressions of a
/// load within each group.
struct DimGroup {
  std::vector<size_t> dims;
  fusec::Shape shape;
  int64_t size() const { return fusec::numElements(shape); }
  /// The part of `strides`' offset from this group's coordinates at linear
  /// index `index` of the group.
  std::string offset(const std::string &index,
                     const fusec::Shape &strides) const {
    fusec::Shape sub;
    for (size_t d : dims)
      sub.push_back(strides[d]);
    return broadcastOffsetExpression(index, shape, sub);
  }
  /// The group's coordinates are contiguous in `strides` (row-major within
  /// the group, innermost stride 1).
  bool contiguous(const fusec::Shape &strides) const {
    int64_t expected = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      if (shape[k] != 1 && strides[dims[k]] != expected)
        return false;
      expected *= shape[k];
    }
    return true;
  }
};

class ReductionPlan {
public:
  static mlir::FailureOr<ReductionPlan> analyze(FusionOp fusion);

  mutable FusionOp fusion; // MLIR op handles are not const-correct
  /// Symbolic programs: the rows (kept points) as a size of the program's
  /// `dimCount` symbols; the space is then at their maxima, and only the
  /// row count varies (the loads' row offsets are symbolicRowOffsets).
  std::optional<fusec::SymbolicSize> symbolicRows;
  size_t dimCount = 0;
  /// Symbolic programs: each load's offset at the start of row `row`, an
  /// expression of `fusec_dims` (indexed like `loads`; empty otherwise).
  std::vector<std::string> symbolicRowOffsets;
  /// Symbolic programs: each fuse.dim_size of the region with its C
  /// expression of `fusec_dims` (a mean's count over symbolic dims).
  std::vector<std::pair<mlir::Value, std::string>> sizeValues;
  /// Symbolic column schedules: the outer points as a size, each load's
  /// offset at outer point `o` (indexed like `loads`), and a full output's.
  std::optional<fusec::SymbolicSize> symbolicOuter;
  std::vector<std::string> symbolicOuterOffsets;
  std::string symbolicOutputOuterOffset;
  /// The row count as C: `numRows`, or an expression of `fusec_dims`.
  std::string rowCountExpression(int64_t numRows) const {
    return symbolicRows ? symbolicRows->cExpression("fusec_dims")
                        : std::to_string(numRows);
  }
  /// Symbolic programs whose reduced points vary (a row's length, a
  /// column's reduced rows): only the outermost reduced dim is symbolic, so
  /// that a point's offset within the reduced dims is the same expression
  /// at every size. Row schedules also need the reduced dims innermost
  /// (kept dims after them are 1): a full output row starts at row *
  /// length. Kernels are scheduled for the maximal length and walk the
  /// run's.
  std::optional<fusec::SymbolicSize> symbolicRowLength;
  /// What the row length is a multiple of at every size.
  int64_t rowLengthMultiple = 1;
  /// The row may be empty at some size (a symbol's range starts at 0).
  bool rowMayBeEmpty = false;
  /// The row length as C: `length`, or an expression of `fusec_dims`.
  std::string rowLengthExpression(int64_t length) const {
    return symbolicRowLength ? symbolicRowLength->cExpression("fusec_dims")
                             : std::to_string(length);
  }
  ReductionSpace space;
  ReductionSchedule schedule;
  std::vector<Load> loads;
  llvm::DenseMap<mlir::Value, unsigned> loadOf; ///< values read by a load
  llvm::DenseMap<mlir::Value, ValueRole> roles; ///< of every op result
  llvm::DenseMap<mlir::Value, unsigned>
      avail; ///< reductions needed, as a level
  std::vector<ReductionInfo> reductions;
  unsigned numLevels = 0;
  std::vector<Output> outputs;

  /// Full ops (and constants) computing `roots` from loads and reduced
  /// values, in program order.
  /// Values in `available` (kept from an earlier pass) are not recomputed.
  llvm::SmallVector<mlir::Operation *>
  fullSlice(llvm::ArrayRef<mlir::Value> roots,
            const llvm::DenseSet<mlir::Value> *available = nullptr) const;
  /// Reduced ops (not reductions) ready after `level`, in program order.
  llvm::SmallVector<mlir::Operation *> reducedOpsAt(unsigned level) const;
  std::vector<mlir::Value> fullOutputs() const;
  std::vector<mlir::Value> reductionOperands(unsigned level) const;
  /// The loads of full values the slice `ops` (with `roots`) reads.
  std::vector<unsigned> loadsOf(llvm::ArrayRef<mlir::Operation *> ops,
                                llvm::ArrayRef<mlir::Value> roots) const;

private:
  mlir::LogicalResult addLoad(mlir::BlockArgument arg, mlir::Value boundTo,
                              const fusec::Shape &target);
};

/// Strides over the space of an input of `shape` read as `target` (the
/// space's shape, or its reduced shape with or without the reduced dims).
std::optional<fusec::Shape> spaceStrides(const ReductionSpace &space,
                                         const fusec::Shape &shape,
                                         const fusec::Shape &target);

/// The passes of a row schedule over the reduced dims: what each computes,
/// and which values one pass computes that a later one needs again (kept
/// in registers or a row buffer rather than recomputed).
struct PassSlices {
  std::vector<llvm::SmallVector<mlir::Operation *>> slices;
  std::vector<std::vector<unsigned>> loads;    ///< full loads each pass reads
  llvm::MapVector<mlir::Value, unsigned> kept; ///< value -> pass computing it
  std::vector<llvm::DenseSet<mlir::Value>> keptUses; ///< per pass

  /// `roots[p]` are what pass p must compute. Conversions are never kept:
  /// redoing one is cheaper than holding its result.
  static PassSlices plan(const ReductionPlan &plan,
                         const std::vector<std::vector<mlir::Value>> &roots,
                         bool keepValues);
};

/// Softmax's two reductions over a row: a max of some g, then (alone at the
/// next level) a sum of exp(g - max) that reads no other value of the max's
/// level. Online softmax computes both in one pass over the row.
struct OnlineSoftmax {
  const ReductionInfo *max;
  const ReductionInfo *sum;
};

std::optional<OnlineSoftmax> findOnlineSoftmax(const ReductionPlan &plan);

/// Whether `width` adjacent elements along `contiguous` are one aligned
/// 16-byte access at every point of the `others` dims.
bool readsVectors(const fusec::Shape &strides, int64_t width,
                  const DimGroup &contiguous,
                  std::initializer_list<const DimGroup *> others);

/// Kept dims (rows) and reduced dims (columns) of the row schedule.
void rowGroups(const ReductionSpace &space, DimGroup &rows, DimGroup &cols);

/// Outer kept dims, reduced dims and inner kept dims of the column
/// schedule (dims of 1 go wherever they are: their coordinate is 0).
void columnGroups(const ReductionSpace &space, DimGroup &outer,
                  DimGroup &reduced, DimGroup &inner);

/// Row-major strides of the space: where a full output element goes. With
/// a symbolic row length, the kept dims' strides are what they are
/// multiples of (a full output row starts at row * length).
fusec::Shape outputStrides(const ReductionPlan &plan);

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

/// Every decision of a reduction kernel, as plain data (printable,
/// hashable, comparable): what --emit=schedule shows, and all the printers
/// read besides the plan. Fields a schedule does not use keep their
/// defaults.
struct ReductionParams {
  fusec::Target target = fusec::Target::Cpu;
  /// The column schedule ([outer, reduced, inner]); else the row schedule.
  bool column = false;
  /// Row schedules: kept points (rows) and reduced points per row.
  int64_t rows = 0, rowLength = 0;
  /// Column schedules: the outer kept, reduced and inner kept points.
  int64_t outer = 0, reduced = 0, inner = 0;

  /// C++: the loop over rows (column tiles) is split among OpenMP threads.
  bool parallel = false;
  /// C++ rows: accumulator lanes of each pass's simd loop.
  int64_t lanes = 0;
  /// Rows: values one pass computes that a later pass needs are kept (C++:
  /// a row buffer on the stack; CUDA: registers) instead of recomputed.
  bool keepValues = false;

  /// CUDA: elements per access (16-byte vectors where every row, or every
  /// column tile, starts aligned for them; else 1).
  int64_t vectorWidth = 1;
  /// CUDA rows: a warp per row (several rows per block), else a block.
  bool warpPerRow = false;
  int64_t threadsPerRow = 0, rowsPerBlock = 0;
  /// CUDA rows: steps of each thread over its row's vectors.
  int64_t steps = 0;
  /// CUDA rows: loads (by index) read by two passes and held in registers.
  std::vector<unsigned> cachedLoads;
  /// CUDA rows: softmax's max and sum in one pass (rows too long to keep).
  bool onlineSoftmax = false;
  /// CUDA rows: each step checks it is inside the row.
  bool stepGuard = false;
  /// CUDA rows of symbolic length that hold nothing in registers across
  /// passes: each pass loops over the run's steps (`steps` is the most)
  /// rather than unrolling the most.
  bool runtimeSteps = false;

  /// Column schedules: inner columns per tile (C++ and CUDA), tiles over
  /// the inner columns, and tiles in all (times the outer points).
  int64_t columnTile = 0, innerTiles = 0, tiles = 0;
  /// CUDA columns: the reduced rows are split across `splits` blocks of
  /// `rowsPerSplit` rows each; the last block of a tile combines them.
  int64_t splits = 1, rowsPerSplit = 0;
  /// CUDA columns: every split holds whole unrolled tiles of rows (a loop
  /// of constant count, unrolled `unroll` times), else a bounded loop.
  bool wholeSplits = false;
  int64_t unroll = 0;
  /// CUDA columns: scratch offsets of each reduction's partials, and of the
  /// tiles' counters; bytes in all.
  std::vector<int64_t> partialOffsets;
  int64_t counterOffset = 0, scratchBytes = 0;

  /// CUDA: the launch.
  unsigned blockX = 1, blockY = 1;
  int64_t gridX = 1;
  unsigned gridY = 1;

  /// One line of `key=value` fields, those of this schedule only.
  std::string toString() const;
  size_t hash() const;
  bool operator==(const ReductionParams &other) const;
  bool operator!=(const ReductionParams &other) const {
    return !(*this == other);
  }
};

/// One pass of a row schedule over the reduced points of a row.
struct RowPass {
  std::vector<mlir::Value> roots;
  std::vector<const ReductionInfo *> reductions; ///< combined this pass
  bool storesOutputs = false;
};

/// A scheduled reduction: the params, and the passes they were decided on
/// (what the printers walk).
struct ScheduledReduction {
  ReductionParams params;
  /// Row schedules: the passes, their slices, and softmax's max and sum
  /// when they share a pass.
  std::vector<RowPass> passes;
  PassSlices slices;
  std::optional<OnlineSoftmax> online;
  /// Column schedules: the full values computed per reduced row (every
  /// reduction operand and full output), their slice and the loads it reads.
  std::vector<mlir::Value> columnRoots;
  llvm::SmallVector<mlir::Operation *> columnSlice;
  std::vector<unsigned> columnLoads;
};

ScheduledReduction scheduleReduction(const ReductionPlan &plan,
                                     fusec::Target target);

/// The CUDA launch of a scheduled kernel.
fusec::LaunchGeometry launchOf(const ReductionParams &params);

} // namespace fuse::reduction

#endif
