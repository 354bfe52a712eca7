//===- Compiler.h - The fusec library API ----------------------*- C++ -*-===//
//
//   fusec::GraphBuilder b("seed");
//   auto x = b.input("x", fusec::DType::F32, {2, 3});
//   b.output(b.op("sin", {b.op("sin", {x})}));
//   fusec::CompiledModel model = fusec::compile(b.build());
//   std::vector<fusec::Tensor> out = model.run({input});
//   for (const fusec::KernelInfo &k : model.kernels()) std::cout << k.source;
//
// Every failure throws fusec::Error with a complete message naming the file
// and node ("model.json: node 'n3': error: ...").
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_COMPILER_COMPILER_H
#define FUSEC_COMPILER_COMPILER_H

#include "frontends/Graph.h"
#include "runtime/core/Error.h"
#include "runtime/core/Program.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fusec {

class Executable;

struct CompileOptions {
  /// Unset: cuda when a usable GPU is present, cpu otherwise.
  std::optional<Target> target;
  /// CUDA: compile with --use_fast_math (__sinf, __expf, ...).
  bool fastMath = false;
  /// CUDA: f32 matmuls may use TF32 tensor cores (10-bit mantissa inputs);
  /// off by default, so f32 products are f32-accurate.
  bool tf32 = false;
  /// CUDA: replay each run as one captured CUDA graph (see CudaOptions).
  bool cudaGraph = true;
  /// CUDA: let kernels that wait for their predecessor themselves start
  /// while it ends (see CudaOptions).
  bool kernelOverlap = true;
  /// CUDA: graph inputs and outputs up to this size are read and written by
  /// the kernels in mapped host memory, with no copies (see CudaOptions);
  /// 0 copies every one.
  int64_t zeroCopyMaxBytes = 16 * 1024;
  /// CUDA: NVRTC architecture ("sm_80"); "" for the device's own, or sm_90a
  /// when compiling without a GPU.
  std::string gpuArch;
  /// Runs the model's f32 tensors in this dtype (BF16 or F16): matmuls,
  /// attention and memory-bound tensors, with f32 accumulation; inputs and
  /// outputs keep their dtypes (docs/precision.md has the per-op policy).
  /// Unset: every tensor keeps the dtype the model gives it.
  std::optional<DType> precision;
  /// With `precision`: the nodes (by name) whose f32 tensors stay f32.
  std::vector<std::string> keepF32Nodes;
  /// false: one kernel per op, the eager-like baseline.
  bool fuse = true;
  /// false (with `fuse`): attention runs as its matmul, softmax and matmul
  /// kernels rather than one fused attention kernel (its baseline).
  bool attention = true;
  /// ONNX and JSON models: shapes for graph inputs with symbolic (ONNX
  /// dim_param) or named (JSON) dims.
  std::map<std::string, Shape> inputShapes;
  /// Named dims (ONNX dim_params, JSON named dims) that stay symbolic, with
  /// their ranges: the model compiles once and runs at any sizes in them
  /// (docs/dynamic-shapes.md). A dim with a size in `inputShapes` is fixed.
  DimRanges dimRanges;
  /// Sizes of symbolic dims that also get a compile of their own, with the
  /// dim fixed (`--specialize seq=1,128`): a run at such a size runs it.
  std::map<std::string, std::vector<int64_t>> specializations;
  /// Kernel cache directory; "" for KernelCache::defaultDirectory().
  std::string cacheDir;
  /// Receives each fusion remark (why an op was not fused), formatted as
  /// "FILE: node 'NAME': remark: ..."; unset: remarks are dropped.
  std::function<void(const std::string &)> onRemark;
};

struct KernelInfo {
  std::string name;
  std::vector<std::string> ops;
  std::string source;
};

/// A compiled graph, ready to run. Not safe to run from several threads at
/// once (temporaries are reused between runs).
class CompiledModel {
public:
  explicit CompiledModel(std::shared_ptr<Executable> executable);
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// Reuses `outputs`' storage when it already has the right shapes.
  void run(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs);
  /// CUDA models: runs on tensors already in GPU memory and writes each
  /// output to the device memory the caller gives for it, with no copies
  /// through the host; returns when the outputs are written. Throws for a
  /// model compiled for the CPU and for tensors of other dtypes or shapes.
  void runOnDevice(const std::vector<DeviceTensor> &inputs,
                   const std::vector<DeviceTensor> &outputs);
  /// The same run, returning once it is queued on fusec's CUDA stream
  /// behind earlier ones (a CUDA graph replayed per binding of addresses):
  /// leave the inputs as they are and the outputs unread until
  /// synchronize(), which also reports errors of the queued work. Events
  /// order the run after the work queued so far on `stream` (a CUstream,
  /// e.g. PyTorch's current stream; null: the legacy default stream) and
  /// the work queued there next after the run: a caller that reads the
  /// outputs on that stream need not synchronize().
  void enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                       const std::vector<DeviceTensor> &outputs,
                       void *stream = nullptr);
  void synchronize();
  std::vector<KernelInfo> kernels() const;
  const Program &program() const;
  /// Writes the model as one package file (docs/packages.md): its program,
  /// compiled kernels and weights; fusec::load(path) runs it with no
  /// compiler. A CUDA model's PTX is compiled here, for later GPUs.
  void save(const std::string &path) const;

private:
  friend Executable &executableOf(CompiledModel &model);
  friend std::shared_ptr<Executable> executableShared(const CompiledModel &);
  std::shared_ptr<Executable> executable;
};

/// The target `options` select on this machine.
Target resolveTarget(const CompileOptions &options);
/// The NVRTC architecture `options` select: --gpu-arch, else the device's,
/// else sm_90a (H100/H200) when there is no GPU.
std::string resolveGpuArch(const CompileOptions &options);

CompiledModel compile(const Graph &graph, const CompileOptions &options = {});
/// A model CompiledModel::save wrote (`fusec MODEL --emit=package -o PATH`),
/// loaded without MLIR, NVRTC or the host compiler. Throws fusec::Error
/// naming the file for a corrupt or truncated package, another fusec or
/// format version, or one this machine cannot run (runtime/Package.h).
CompiledModel load(const std::string &path);
CompiledModel compileFile(const std::string &path,
                          const CompileOptions &options = {});

/// The syntaxes a model comes in.
enum class ModelFormat { Json, Mlir, Onnx, OnnxText };
/// The format a model file's name says (.json, .mlir, .onnx, .onnxtxt).
std::optional<ModelFormat> modelFormatOf(const std::string &path);
/// A model held in memory (JSON or MLIR text, ONNX protobuf bytes or text);
/// `name` stands for its file in error messages.
CompiledModel compileBuffer(const std::string &contents, ModelFormat format,
                            const std::string &name,
                            const CompileOptions &options = {});

} // namespace fusec

#endif
