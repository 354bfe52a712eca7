//===- SymbolicExecutable.h - A symbolic Program, run at any size -*- C++
//-*-===//
//
// Runs a Program whose dims vary (Program::symbols): each run binds the
// sizes from its inputs' shapes, checks them against the symbols' ranges,
// and runs the program instantiated at them. One executable per distinct
// set of sizes is kept (its buffers, memory plan and CUDA graph), up to a
// limit, so steady-state runs at sizes seen before allocate nothing; the
// kernels are compiled once, for every size (they read the sizes as
// arguments), and later instances load them from the kernel cache.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_SYMBOLICEXECUTABLE_H
#define FUSEC_RUNTIME_SYMBOLICEXECUTABLE_H

#include "runtime/Executable.h"

#include <map>

namespace fusec {

class SymbolicExecutable : public Executable {
public:
  /// Instances beyond this many sizes evict the least recently used.
  static constexpr size_t kMaxInstances = 32;
  /// `make` builds the executable of an instantiated program.
  SymbolicExecutable(Program program,
                     std::function<std::shared_ptr<Executable>(Program)> make);

  void run(const std::vector<Tensor> &inputs,
           std::vector<Tensor> &outputs) override;
  void enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                       const std::vector<DeviceTensor> &outputs,
                       void *callerStream = nullptr) override;
  void synchronize() override;
  void runTimed(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                std::vector<double> &stepMicros) override;
  /// The kernels of an instance, which serve every size: with the
  /// symbolic program, a package of the model (its specializations are
  /// not kept).
  ExecutableImage image() const override;

  /// Runs whose size of symbol `symbol` is `size` run `executable`, the
  /// model compiled with that dim fixed (`--specialize`), instead.
  void addSpecialization(int symbol, int64_t size,
                         std::shared_ptr<Executable> executable);
  size_t specializationCount() const { return specializations.size(); }

  /// The executable for `sizes` (one per symbol), built on first use.
  Executable &instanceFor(const std::vector<int64_t> &sizes);
  /// How many sizes have an executable now.
  size_t instanceCount() const { return instances.size(); }

private:
  /// The executable a run on inputs of `shapes` runs: a specialization's,
  /// else the instance for the sizes they bind.
  const std::shared_ptr<Executable> &
  executableForShapes(const std::vector<Shape> &shapes);
  const std::shared_ptr<Executable> &
  sharedInstanceFor(const std::vector<int64_t> &sizes);

  struct Specialization {
    int symbol;
    int64_t size;
    std::shared_ptr<Executable> executable;
  };
  std::vector<Specialization> specializations;
  std::function<std::shared_ptr<Executable>(Program)> make;
  struct Instance {
    std::shared_ptr<Executable> executable;
    uint64_t lastUse = 0; ///< `uses` when last run
  };
  std::map<std::vector<int64_t>, Instance> instances;
  uint64_t uses = 0;
  /// Instances with queued device work not yet synchronized.
  std::vector<std::shared_ptr<Executable>> pending;
};

} // namespace fusec

#endif
