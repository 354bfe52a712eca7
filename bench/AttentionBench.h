//===- AttentionBench.h - Fused attention cases ----------------*- C++ -*-===//
#ifndef FUSEC_BENCH_ATTENTIONBENCH_H
#define FUSEC_BENCH_ATTENTIONBENCH_H

#include "compiler/Driver.h"

#include <string>
#include <vector>

namespace fusec::bench {

/// Whether `name` is an attention case ("attention_...").
bool isAttentionCase(const std::string &name);

/// Times the attention cases of `target` (all, or those named in `only`;
/// "PREFIX*" names all that start with PREFIX):
/// on CUDA issue #30's prefill grid (bf16 and f16, head dims 64 and 128, B
/// x T = 16k tokens, T 512 to 16k, causal and not) in TFLOP/s against the
/// unfused matmul / softmax / matmul chain (T <= 4k), and its decode grid
/// (bf16, 32 query heads of 128 over 32 or 8 kv heads, batch 1 and 8, 1k to
/// 32k cached keys) in GB/s of the cache read against the copy ceiling; on
/// the CPU, f32 at T 512 and 2k. One JSON line per case.
void runAttention(Target target, const std::vector<std::string> &only,
                  int reps);

} // namespace fusec::bench

#endif
