//===- AttentionSchedule.h - Fused attention: shape and params --*- C++ -*-===//
//
// The fused attention kernel (one fuse.attention in a region) computes, for
// every batch b, query head h and query row i,
//
//   s[j]   = scale * sum_d q[b, h, i, d] * k[b, h / group, j, d] + bias(b, h,
//   i, j) out[b, h, i, :] = sum_j softmax(s)[j] * v[b, h / group, j, :]
//
// with group = heads / kvHeads, the keys j a causal or sliding-window rule
// hides left out of the softmax (as -inf), softmax statistics in f32 (f64
// for f64), never writing the queryLen x keyLen scores to memory. The
// operands are strided views (the head split and merge of a model become
// strides, not copies). AttentionShape is what the region asks for;
// AttentionParams is every decision of the kernel for a target, printable
// and hashable as the other schedules' params are.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_SCHEDULE_ATTENTIONSCHEDULE_H
#define FUSE_CODEGEN_SCHEDULE_ATTENTIONSCHEDULE_H

#include "runtime/core/DType.h"
#include "runtime/core/Program.h"

#include <cstdint>
#include <string>

namespace fuse {

/// Where element (b, h, t, d) of q, k, v or the output lies, in elements
/// from the start of its buffer: offset + b * batch + h * head + t * row + d.
/// The head dim is contiguous; a stride of 0 repeats (broadcasts) a dim.
struct AttentionOperandLayout {
  int64_t offset = 0, batch = 0, head = 0, row = 0;
};

/// Where element (b, h, i, j) of the bias lies: offset + b * batch +
/// h * head + i * row + j * column (0: the dim broadcasts).
struct AttentionBiasLayout {
  int64_t offset = 0, batch = 0, head = 0, row = 0, column = 0;
};

enum class AttentionBias {
  None,
  /// A float tensor (the operands' dtype) added to the scaled scores.
  Additive,
  /// A bool tensor: where it is false (0) the key is hidden (-inf).
  Keep,
};

struct AttentionShape {
  /// Of q, k, v and the output (and an additive bias): f16, bf16, f32, f64.
  fusec::DType dtype = fusec::DType::F32;
  int64_t batch = 1, heads = 1, kvHeads = 1, queryLen = 1, keyLen = 1;
  int64_t headDim = 1, valueHeadDim = 1;
  AttentionOperandLayout query, key, value, output;
  AttentionBias bias = AttentionBias::None;
  AttentionBiasLayout biasLayout;
  /// Multiplies q . k before the bias is added.
  double scale = 1.0;
  /// Causal: query i sees key j only if j <= i + causalOffset.
  bool causal = false;
  int64_t causalOffset = 0;
  /// >= 0: query i sees key j only if j >= i + causalOffset - windowLeft
  /// (a sliding window; with `causal`, windowLeft + 1 keys at most).
  int64_t windowLeft = -1;
  /// A row that sees no key (every score -inf) outputs zeros (ONNX's
  /// Attention op) rather than NaN (softmax of -inf everywhere, as an
  /// explicit Softmax computes it).
  bool zeroMaskedRows = false;
  /// Every row whose softmax is NaN (all scores -inf, a NaN or +inf score)
  /// outputs zeros: Where(IsNaN(p), 0, p) before the matmul with v.
  bool zeroNanRows = false;
  /// The query or key length varies from run to run (a symbolic program;
  /// queryLen and keyLen are the maxima): the decode kernel, whose splits
  /// are fixed, is not chosen.
  bool symbolicLengths = false;

  /// Multiply-adds of q . k and p . v over the keys a query may see:
  /// 2 * (headDim + valueHeadDim) per visible (i, j) pair, the causal
  /// triangle counted as half (the usual TFLOP/s convention).
  double flops() const;
};

/// Every decision of the attention kernel for a target: printable,
/// hashable, comparable. Fields the chosen kernel does not use keep their
/// defaults.
struct AttentionParams {
  fusec::Target target = fusec::Target::Cpu;
  /// "cpu-tiles" (C++: query tiles by key tiles, online softmax),
  /// "split-keys" (CUDA decode: few query rows, the keys split among
  /// blocks), "wgmma" (sm_90a f16/bf16: a producer warpgroup copies key
  /// blocks into shared memory, two consumer warpgroups of 64 query rows
  /// each run warpgroup MMAs on them),
  /// "tensor-cores" (CUDA f16/bf16: mma.sync on query blocks of 16 rows per
  /// warp, key blocks through shared memory) or "warp-per-row" (CUDA
  /// cores: a warp per query row, its lanes over the head dims).
  std::string kernel;
  /// C++: rows of a query tile and keys of a key tile.
  int64_t cpuQueryTile = 0, cpuKeyTile = 0;
  /// CUDA: warps per block; tensor cores (wgmma, mma.sync): query rows per
  /// block and keys per key block; mma.sync: 16-row query tiles per warp,
  /// and whether a warp keeps its query fragments in registers (else it
  /// reads them from shared memory per key block).
  int64_t warpsPerBlock = 0, blockM = 0, blockN = 0, rowTiles = 0;
  bool queryInRegisters = false;
  /// "split-keys" (decode): the query rows that share a kv head, together,
  /// and the keys in `splits` splits of `splitKeys` keys.
  int64_t decodeRows = 0, splits = 0, splitKeys = 0;
  /// "split-keys": key rows, and value rows, read in 16-byte chunks
  /// (aligned whole chunks; values: a power of two or a multiple of 32).
  bool vectorKeys = false, vectorValues = false;
  /// "split-keys": key and value tiles stream through shared memory by
  /// cp.async this many stages deep (0: read straight into registers).
  int64_t stages = 0;
  /// Tensor cores: the (batch, head) pairs run along the grid's x and the
  /// query blocks along y (there are more pairs than a grid's y holds).
  bool headsInGridX = false;
  /// CUDA: the launch.
  unsigned blockX = 1;
  int64_t gridX = 1;
  unsigned gridY = 1;
  unsigned sharedBytes = 0;
  /// Zero-initialized device memory between blocks (split-KV partials).
  int64_t scratchBytes = 0;

  /// One line of `key=value` fields, those of the chosen kernel only.
  std::string toString() const;
  size_t hash() const;
  bool operator==(const AttentionParams &other) const;
  bool operator!=(const AttentionParams &other) const {
    return !(*this == other);
  }
};

/// The kernel for `shape` on `target`; on CUDA, for the GPU `gpuArch`
/// names ("sm_90a": the wgmma kernel where it applies).
AttentionParams scheduleAttention(const AttentionShape &shape,
                                  fusec::Target target,
                                  const std::string &gpuArch = "");

/// The CUDA launch of a scheduled kernel.
fusec::LaunchGeometry launchOf(const AttentionParams &params);

} // namespace fuse

#endif
