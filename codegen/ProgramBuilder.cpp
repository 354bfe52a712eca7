//===- ProgramBuilder.cpp - Fused IR to a runtime Program ----------------===//

#include "codegen/Codegen.h"

#include "codegen/AttentionKernel.h"
#include "codegen/EmbeddedSources.h"
#include "codegen/LayoutKernel.h"
#include "codegen/PointwiseKernel.h"
#include "codegen/QuantizedMatmulKernel.h"
#include "codegen/ReductionKernel.h"
#include "codegen/RegionKind.h"
#include "codegen/schedule/PointwiseSchedule.h"
#include "ir/FuseDialect.h"
#include "ir/SymbolicDims.h"
#include "ir/TypeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <set>

using namespace mlir;
using fusec::BufferDesc;
using fusec::BufferRole;

namespace fuse {

/// Raw little-endian bytes of a constant in fusec's tensor layout.
static std::vector<uint8_t> constantBytes(DenseElementsAttr attr) {
  RankedTensorType type = cast<RankedTensorType>(attr.getType());
  fusec::DType dtype = dtypeOf(type);
  size_t width = fusec::dtypeBytes(dtype);
  int64_t count = type.getNumElements();
  std::vector<uint8_t> bytes(count * width);
  if (bytes.empty()) // an empty vector's data() may be null: no memcpy
    return bytes;
  if (type.getElementType().isInteger(1)) { // MLIR packs bools in bits
    auto element = attr.value_begin<APInt>();
    for (int64_t i = 0; i < count; ++i)
      bytes[i] = (*(element + (attr.isSplat() ? 0 : i))).getZExtValue();
    return bytes;
  }
  // Otherwise MLIR's raw layout is fusec's.
  ArrayRef<char> raw = attr.getRawData();
  if (!attr.isSplat()) {
    std::memcpy(bytes.data(), raw.data(), bytes.size());
    return bytes;
  }
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(bytes.data() + i * width, raw.data(), width);
  return bytes;
}

/// The call of a matmul: its shapes as m, n, k and batch strides. The
/// prepare pass left every operand batch all ones (stride 0) or complete.
static FailureOr<fusec::MatmulCall> matmulCallOf(MatmulOp op,
                                                 fusec::Target target) {
  MatmulShape shape = op.getMatmulShape();
  fusec::MatmulCall call;
  call.dtype = dtypeOf(op.getLhs().getType());
  if (dtypeOf(op.getType()) != call.dtype)
    call.outputDType = dtypeOf(op.getType());
  call.m = shape.m;
  call.n = shape.n;
  call.k = shape.k;
  call.batch = fusec::numElements(shape.batch);
  call.transposeA = op.getTransposeA();
  call.transposeB = op.getTransposeB();
  call.alpha = op.getAlpha().convertToDouble();
  StringRef epilogue = op.getEpilogue();
  call.epilogue = epilogue == "relu"        ? fusec::Epilogue::Relu
                  : epilogue == "gelu_tanh" ? fusec::Epilogue::GeluTanh
                                            : fusec::Epilogue::None;
  bool hasEpilogue = op.getBias() || call.epilogue != fusec::Epilogue::None;
  if (hasEpilogue && target != fusec::Target::Cuda)
    return op.emitError() << "codegen: " << describeOp(op)
                          << " has a bias or an activation, which only the "
                             "CUDA target's library call applies";
  if (hasEpilogue && (call.k == 0 || !isOneProduct(shape, call.transposeA)))
    return op.emitError() << "codegen: " << describeOp(op)
                          << " has a bias or an activation, which needs one "
                             "product over k > 0";
  auto strideOf = [&](const fusec::Shape &batch,
                      int64_t matrix) -> std::optional<int64_t> {
    if (fusec::numElements(batch) == 1)
      return 0;
    if (fusec::numElements(batch) == call.batch)
      return matrix;
    return std::nullopt;
  };
  std::optional<int64_t> strideA = strideOf(shape.lhsBatch, call.m * call.k);
  std::optional<int64_t> strideB = strideOf(shape.rhsBatch, call.k * call.n);
  if (!strideA || !strideB)
    return op.emitError() << "codegen: " << describeOp(op)
                          << " has a partly broadcast batch; run "
                             "fuse-prepare-library-calls first";
  call.batchStrideA = *strideA;
  call.batchStrideB = *strideB;
  // A batch only the lhs has: its matrices are consecutive rows.
  if (call.batch > 1 && isOneProduct(shape, call.transposeA)) {
    call.m *= call.batch;
    call.batch = 1;
    call.batchStrideA = call.batchStrideB = 0;
  }
  return call;
}

/// Symbolic programs: each dynamic dim's type becomes its size at the
/// symbols' maxima, so that the kernel analyses see static shapes (the
/// kernels then take the varying count from their arguments).
static void setTypesAtMaxima(func::FuncOp function, const SymbolicDims &dims) {
  auto atMaxima = [&](Value value) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.hasStaticShape())
      return;
    fusec::Shape shape =
        fusec::maximalShape(dims.shapeOf(value), dims.symbols());
    value.setType(type.clone(shape));
  };
  function.walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          atMaxima(arg);
    for (Value result : op->getResults())
      atMaxima(result);
  });
  Block &body = function.getBody().front();
  function.setType(FunctionType::get(function.getContext(),
                                     body.getArgumentTypes(),
                                     body.getTerminator()->getOperandTypes()));
}

namespace {
class ProgramBuilder {
public:
  ProgramBuilder(fusec::Program &program, const MathFunctionMap *f32Functions,
                 const std::string &gpuArch,
                 std::vector<KernelSchedule> *schedules,
                 const SymbolicDims *symbolic)
      : program(program), f32Functions(f32Functions), gpuArch(gpuArch),
        schedules(schedules), symbolic(symbolic) {}

  int addBuffer(Value value, std::string name, BufferRole role) {
    // Names are unique in a plan: later duplicates get a suffix.
    std::string unique = name;
    for (int n = 1; !usedNames.insert(unique).second; ++n)
      unique = name + "_" + std::to_string(n);
    auto type = cast<RankedTensorType>(value.getType());
    BufferDesc buffer;
    buffer.name = unique;
    buffer.dtype = dtypeOf(type);
    buffer.shape = toShape(type);
    buffer.role = role;
    if (symbolic) {
      fusec::SymbolicShape shape = symbolic->shapeOf(value);
      if (!fusec::isStaticShape(shape))
        buffer.symbolicShape = std::move(shape);
    }
    program.buffers.push_back(std::move(buffer));
    int id = static_cast<int>(program.buffers.size()) - 1;
    bufferOf[value] = id;
    return id;
  }

  LogicalResult build(func::FuncOp func) {
    program.name = func.getSymName().str();
    Block &body = func.getBody().front();
    // Names of returned values, so that kernels write the graph's outputs
    // under the names the user gave them.
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
      std::string name = "result" + std::to_string(index);
      if (auto attr =
              func.getResultAttrOfType<StringAttr>(index, kValueNameAttr))
        name = attr.str();
      program.outputNames.push_back(name);
      outputNameOf.try_emplace(value, name);
    }
    for (BlockArgument arg : body.getArguments()) {
      std::string name = "arg" + std::to_string(arg.getArgNumber());
      if (auto attr = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        kValueNameAttr))
        name = attr.str();
      program.inputs.push_back(addBuffer(arg, name, BufferRole::Input));
    }
    unsigned temporaries = 0;
    auto temporaryName = [&](Value value) {
      auto it = outputNameOf.find(value);
      return it != outputNameOf.end() ? it->second
                                      : "t" + std::to_string(temporaries++);
    };
    for (Operation &op : body.without_terminator()) {
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense)
          return op.emitError("codegen: unsupported constant attribute");
        std::string name = nodeNameOf(op.getLoc());
        int id = addBuffer(constant, name.empty() ? "const" : name,
                           BufferRole::Constant);
        program.buffers[id].data = constantBytes(dense);
      } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        int source = bufferOf.lookup(reshape.getOperand());
        while (program.buffers[source].role == BufferRole::Alias)
          source = program.buffers[source].aliasOf;
        int id = addBuffer(reshape, temporaryName(reshape), BufferRole::Alias);
        program.buffers[id].aliasOf = source;
        program.steps.push_back({fusec::StepKind::View, id});
      } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
        FailureOr<fusec::MatmulCall> call =
            matmulCallOf(matmul, program.target);
        if (failed(call))
          return failure();
        if (symbolic && failed(setSymbolicSizes(matmul, *call)))
          return failure();
        call->a = bufferOf.lookup(matmul.getLhs());
        call->b = bufferOf.lookup(matmul.getRhs());
        call->bias = matmul.getBias() ? bufferOf.lookup(matmul.getBias()) : -1;
        call->output =
            addBuffer(matmul, temporaryName(matmul), BufferRole::Temporary);
        program.steps.push_back({fusec::StepKind::Matmul,
                                 static_cast<int>(program.matmuls.size())});
        program.matmuls.push_back(*call);
      } else if (auto fusion = dyn_cast<FusionOp>(op)) {
        fusec::KernelDesc desc;
        std::string params;
        InPlacePairs inPlace;
        if (failed(buildKernel(fusion, desc, params, inPlace)))
          return failure();
        desc.scheduleParams = params;
        if (schedules)
          schedules->push_back({desc.name, desc.schedule, params});
        for (Value input : fusion.getInputs())
          desc.inputs.push_back(bufferOf.lookup(input));
        if (desc.scratchBytes > 0) {
          fusec::BufferDesc scratch;
          scratch.name = desc.name + "_scratch";
          scratch.dtype = fusec::DType::I8;
          scratch.shape = {desc.scratchBytes};
          scratch.role = BufferRole::Scratch;
          program.buffers.push_back(std::move(scratch));
          desc.scratch = static_cast<int>(program.buffers.size()) - 1;
        }
        for (Value result : fusion.getResults())
          desc.outputs.push_back(
              addBuffer(result, temporaryName(result), BufferRole::Temporary));
        for (auto [input, output] : inPlace)
          program.buffers[desc.outputs[output]].updatesInput =
              desc.inputs[input];
        program.steps.push_back({fusec::StepKind::Kernel,
                                 static_cast<int>(program.kernels.size())});
        program.kernels.push_back(std::move(desc));
      } else {
        return op.emitError() << "codegen: " << describeOp(&op)
                              << " is outside any fusion region; run the "
                                 "fusion pipeline before codegen";
      }
    }
    for (Value value : returnOp.getOperands())
      program.outputs.push_back(bufferOf.lookup(value));

    program.prelude =
        "// Generated by fusec from '" + program.name + "' for target " +
        fusec::targetName(program.target) + ".\n" +
        (program.target == fusec::Target::Cuda ? cudaPrelude()
                                               : cppPrelude(usesHalfTypes));
    // The attention kernels' templates, once for all of them (sm_90a's
    // compile only there).
    if (usesAttention)
      program.prelude +=
          std::string("\n") + kAttentionArgsSource + "\n" +
          (program.target == fusec::Target::Cuda
               ? std::string(kFlashAttentionSource) + "\n" +
                     kFlashAttentionSm90Source
               : std::string(kAttentionCpuSource));
    program.source = program.prelude;
    for (const fusec::KernelDesc &kernel : program.kernels)
      program.source += "\n" + kernel.source;
    return success();
  }

private:
  /// (input, output) indices of a region whose output may share the input's
  /// memory (inPlaceUpdates).
  using InPlacePairs = std::vector<std::pair<unsigned, unsigned>>;

  /// The kernel of one region, by the region's kind, its schedule's params
  /// and the outputs that may update an input in place.
  LogicalResult buildKernel(FusionOp fusion, fusec::KernelDesc &desc,
                            std::string &params, InPlacePairs &inPlace) {
    unsigned index = program.kernels.size();
    bool cuda = program.target == fusec::Target::Cuda;
    const bool symbolicRegion = hasSymbolicValues(fusion);
    // Layout, reduction and contraction regions each have a builder that
    // makes the whole kernel description.
    auto adopt = [&](FailureOr<fusec::KernelDesc> kernel) -> LogicalResult {
      if (failed(kernel))
        return failure();
      desc = std::move(*kernel);
      usesHalfTypes |= regionUsesHalfTypes(fusion);
      return success();
    };
    // With symbolic dims: the kernel's count of elements, rows or batches.
    size_t dimCount = program.symbols.size();
    switch (fuse::regionKindOf(fusion)) {
    case fuse::RegionKind::Reduction: {
      if (!symbolicRegion)
        return adopt(buildReductionKernel(fusion, index, program.target,
                                          f32Functions, &params));
      return adopt(buildReductionKernel(fusion, index, program.target,
                                        f32Functions, &params, symbolic,
                                        dimCount));
    }
    case fuse::RegionKind::Layout:
      return adopt(buildLayoutKernel(fusion, index, program.target, &params,
                                     symbolicRegion ? symbolic : nullptr));
    case fuse::RegionKind::Attention:
      usesAttention = true;
      return adopt(buildAttentionKernel(fusion, index, program.target, gpuArch,
                                        &params,
                                        symbolicRegion ? symbolic : nullptr));
    case fuse::RegionKind::Contraction:
      if (symbolicRegion)
        return fusion.emitError() << "codegen: a contraction kernel with "
                                     "symbolic dims is not supported yet";
      return adopt(
          buildQuantizedMatmulKernel(fusion, index, program.target, &params));
    case fuse::RegionKind::Pointwise:
      break;
    }
    FailureOr<PointwiseKernel> kernel = analyzePointwiseRegion(
        fusion, index, symbolicRegion ? symbolic : nullptr);
    if (failed(kernel))
      return failure();
    if (symbolicRegion)
      kernel->symbolicElements =
          fusec::symbolicElements(kernel->symbolicIterationShape);
    kernel->dimCount = dimCount;
    if (!symbolicRegion)
      kernel->inPlace = inPlace = inPlaceUpdates(fusion, *kernel);
    desc.name = kernel->name;
    desc.ops = kernel->ops;
    desc.schedule = "pointwise";
    ScheduledPointwise schedule = schedulePointwise(*kernel, program.target);
    params = schedule.params.toString();
    desc.source = cuda ? printCudaKernel(*kernel, schedule.params, f32Functions)
                       : printCppKernel(*kernel, schedule);
    if (cuda)
      desc.launch = launchOf(schedule.params);
    if (symbolicRegion) {
      desc.readsDimSizes = true;
      if (cuda)
        desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{
            *kernel->symbolicElements,
            int64_t(schedule.params.blockX) * schedule.params.vectorWidth};
    }
    usesHalfTypes |= kernel->usesHalfTypes;
    return success();
  }

  /// The pointwise region's (input, output) pairs that may share memory: a
  /// graph output `select(cond, new, input)` (reshapes aside) that keeps
  /// most of a graph input and replaces some elements, as a KV cache's
  /// TensorScatter does (present = written ? update : past), where the input
  /// has the output's type, nothing but this region reads it, and the
  /// region reads it at the element being computed (contiguous).
  InPlacePairs inPlaceUpdates(FusionOp fusion, const PointwiseKernel &kernel) {
    auto isGraphOutput = [](Value value) {
      return llvm::any_of(value.getUsers(), [](Operation *user) {
        return isa<func::ReturnOp>(user);
      });
    };
    Block &body = fusion.getBody().front();
    InPlacePairs pairs;
    SmallVector<bool> taken(fusion.getInputs().size(), false);
    for (auto [j, result] : llvm::enumerate(fusion.getResults())) {
      auto select = fusion.getYield().getValues()[j].getDefiningOp<SelectOp>();
      if (!select || !isGraphOutput(result))
        continue;
      Value kept = select.getFalseValue();
      while (auto reshape = kept.getDefiningOp<ReshapeOp>())
        kept = reshape.getOperand();
      auto arg = dyn_cast<BlockArgument>(kept);
      if (!arg || arg.getOwner() != &body)
        continue;
      unsigned k = arg.getArgNumber();
      Value input = fusion.getInputs()[k];
      auto graphInput = dyn_cast<BlockArgument>(input);
      if (taken[k] || !graphInput ||
          !isa<func::FuncOp>(graphInput.getOwner()->getParentOp()) ||
          input.getType() != result.getType() ||
          kernel.inputs[k].access != InputAccess::Contiguous ||
          isGraphOutput(input) || llvm::count(fusion.getInputs(), input) != 1 ||
          !llvm::all_of(input.getUsers(),
                        [&](Operation *user) { return user == fusion; }))
        continue;
      pairs.push_back({k, static_cast<unsigned>(j)});
      taken[k] = true;
    }
    return pairs;
  }

  /// A library matmul's sizes that vary per run: m, n, k and the batch
  /// count, each an expression of the symbols. Operands are compact, so
  /// the leading dims and batch strides follow from them. A batch only the
  /// lhs has stacks into its rows (m is then every lhs dim but k).
  LogicalResult setSymbolicSizes(MatmulOp matmul, fusec::MatmulCall &call) {
    fusec::SymbolicShape lhs = symbolic->shapeOf(matmul.getLhs()),
                         rhs = symbolic->shapeOf(matmul.getRhs()),
                         out = symbolic->shapeOf(matmul);
    if (fusec::isStaticShape(lhs) && fusec::isStaticShape(rhs))
      return success();
    const fusec::SymbolicSize one = fusec::SymbolicSize::constant(1);
    // A 1-D lhs is one row [1, k]; a 1-D rhs one column [k, 1].
    auto matrixDims = [&](const fusec::SymbolicShape &shape, bool isLhs) {
      if (shape.size() == 1)
        return isLhs ? std::pair{one, shape[0]} : std::pair{shape[0], one};
      return std::pair{shape[shape.size() - 2], shape.back()};
    };
    auto batchOf = [](const fusec::SymbolicShape &shape) {
      return fusec::SymbolicShape(
          shape.begin(), shape.end() - std::min<size_t>(shape.size(), 2));
    };
    auto [lhsRows, lhsCols] = matrixDims(lhs, true);
    auto [rhsRows, rhsCols] = matrixDims(rhs, false);
    bool transposeA = matmul.getTransposeA(),
         transposeB = matmul.getTransposeB();
    fusec::SymbolicSize m = transposeA ? lhsCols : lhsRows,
                        k = transposeA ? lhsRows : lhsCols,
                        n = transposeB ? rhsRows : rhsCols;
    size_t matrixRank = (lhs.size() >= 2) + (rhs.size() >= 2);
    fusec::SymbolicSize batch = fusec::symbolicElements(fusec::SymbolicShape(
        out.begin(), out.end() - std::min(out.size(), matrixRank)));
    fusec::SymbolicSize lhsBatch = fusec::symbolicElements(batchOf(lhs)),
                        rhsBatch = fusec::symbolicElements(batchOf(rhs));
    auto unsupported = [&](const char *why) {
      return matmul.emitError()
             << "codegen: a matmul '"
             << fusec::formatSymbolicShape(lhs, program.symbols) << "' @ '"
             << fusec::formatSymbolicShape(rhs, program.symbols)
             << "' is not supported with symbolic dims: " << why;
    };
    // Each operand's batch is the whole batch or one matrix for all (a
    // stacked lhs's batch is its rows').
    bool stacked = call.batch == 1 && batch != one;
    if ((!stacked && call.batchStrideA != 0 && lhsBatch != batch) ||
        (call.batchStrideB != 0 && rhsBatch != batch) ||
        (!stacked && call.batchStrideA == 0 && !lhsBatch.isStatic()) ||
        (call.batchStrideB == 0 && !rhsBatch.isStatic()))
      return unsupported("an operand's batch is partly broadcast");
    auto setIfSymbolic = [](std::optional<fusec::SymbolicSize> &field,
                            const fusec::SymbolicSize &size) {
      if (!size.isStatic())
        field = size;
    };
    setIfSymbolic(call.symbolicM, stacked ? m * batch : m);
    setIfSymbolic(call.symbolicN, n);
    setIfSymbolic(call.symbolicK, k);
    if (!stacked)
      setIfSymbolic(call.symbolicBatch, batch);
    bool hasEpilogue =
        matmul.getBias() || call.epilogue != fusec::Epilogue::None;
    if (hasEpilogue && call.symbolicK &&
        llvm::any_of(call.symbolicK->symbols,
                     [&](int s) { return program.symbols[s].min == 0; }))
      return unsupported("its bias or activation needs k > 0, and k may be 0");
    return success();
  }

  /// Some input or result of the region has a symbolic dim, or it computes
  /// with a symbolic size (fuse.dim_size, fuse.iota).
  bool hasSymbolicValues(FusionOp fusion) const {
    if (!symbolic || symbolic->empty())
      return false;
    auto isSymbolic = [&](Value value) {
      return !fusec::isStaticShape(symbolic->shapeOf(value));
    };
    bool readsSizes = false;
    fusion.getBody().walk(
        [&](Operation *op) { readsSizes |= isa<DimSizeOp, IotaOp>(op); });
    return readsSizes || llvm::any_of(fusion.getInputs(), isSymbolic) ||
           llvm::any_of(fusion.getResults(), isSymbolic);
  }

  fusec::Program &program;
  const MathFunctionMap *f32Functions;
  std::string gpuArch;
  std::vector<KernelSchedule> *schedules;
  /// Symbolic programs: every value's dims (types are at the maxima).
  const SymbolicDims *symbolic;
  DenseMap<Value, int> bufferOf;
  DenseMap<Value, std::string> outputNameOf;
  std::set<std::string> usedNames;
  bool usesHalfTypes = false;
  bool usesAttention = false;
};
} // namespace

FailureOr<fusec::Program> buildProgram(ModuleOp module, fusec::Target target,
                                       bool fastMath,
                                       const std::string &gpuArch,
                                       std::vector<KernelSchedule> *schedules) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  if (funcs.size() != 1)
    return module.emitError() << "codegen: expected one function in the "
                                 "module, found "
                              << funcs.size();
  if (!funcs.front().getBody().hasOneBlock())
    return funcs.front().emitError("codegen: expected a single-block function");
  fusec::Program program;
  program.target = target;
  const MathFunctionMap *f32Functions =
      fastMath && target == fusec::Target::Cuda ? &cudaFastMathFunctions()
                                                : nullptr;
  FailureOr<SymbolicDims> dims = SymbolicDims::analyze(funcs.front());
  if (failed(dims))
    return failure();
  if (!dims->empty()) {
    program.symbols = dims->symbols();
    setTypesAtMaxima(funcs.front(), *dims);
  }
  if (failed(ProgramBuilder(program, f32Functions, gpuArch, schedules,
                            dims->empty() ? nullptr : &*dims)
                 .build(funcs.front())))
    return failure();
  return program;
}

} // namespace fuse
