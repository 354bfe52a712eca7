#!/usr/bin/env bash
# Regenerates docs/pipeline.md from real `fusec --emit` output on the seed
# model, so the documented dumps never drift from what fusec prints.
set -euo pipefail
cd "$(dirname "$0")/.."
fusec=build/tools/fusec
model=examples/seed.json
{
  cat <<'TEXT'
# The pipeline, stage by stage

Every stage of `fusec` can be printed with `--emit=STAGE`. Below is a real
dump of each for `examples/seed.json` (`z = sin⁴(x) * y + sin⁴(x)`), made by
`scripts/update-pipeline-doc.sh`.

## 1. Import: `fusec examples/seed.json --emit=ir`

The frontend (frontends/) turns each node into a `fuse` op located at the node
(errors name it); graph input and output names ride along as `fuse.name`
attributes.

```mlir
TEXT
  $fusec $model --emit=ir
  cat <<'TEXT'
```

## 2. Fusion: `fusec examples/seed.json --emit=fused`

The default pipeline (`passes/Pipeline.cpp`): `fuse-prepare-library-calls`
(gemm becomes a matmul; a transpose feeding a matmul becomes its transpose
flag, a scale its alpha, and on the CUDA target a bias add and relu or tanh
gelu its cuBLASLt epilogue; a matmul of few rows with int8 per-channel
weights becomes one quantized GEMV kernel), `fuse-decompose-composites`
(softmax, layer_norm, gelu, ... become primitive reductions and elementwise
ops), `fuse-make-broadcasts-explicit` (implicit broadcasts become
`fuse.broadcast_to`, so reduce → broadcast → sub is an edge fusion sees),
`canonicalize` (folds constants exactly through the op table and applies the
identities and MLIR's algebraic traits), `cse`, then
`fuse-form-fusion-regions`. Region formation reads each op's kind through
`FusionKindOpInterface`: reductions root groups of their iteration space,
elementwise ops, broadcasts and views join their producers' groups by per-kind
rules (never duplicating work across a broadcast, never forming a cycle
between regions, never broadcasting a column reduction's result back; a
broadcast shared by consumers that cannot share a region is copied into
each, so each reads the small operand instead of one region writing the
full tensor out for the others), layout
ops and quantized GEMVs get a region alone, and matmuls stay outside every
region as library calls; each group is then materialized as a `fuse.fusion`.
`--remarks` prints why an op was left out of a region.

```mlir
TEXT
  $fusec $model --emit=fused
  cat <<'TEXT'
```

## 3. Plan: `fusec examples/seed.json --emit=plan`

Codegen (codegen/) turns each region into a kernel and the function into a
runtime `Program` of typed steps in run order (`steps`: kernel launches,
library calls with their shapes, transposes, alpha, bias and epilogue, and
views) with the buffers each reads and writes. Reshapes become buffer
aliases; dense constants become constant buffers.

```json
TEXT
  $fusec $model --emit=plan --target=cpu
  cat <<'TEXT'
```

## 4a. Source for the CPU: `fusec examples/seed.json --target=cpu --emit=source`

One translation unit: a prelude (math declarations with vector variants from
glibc's libmvec, and fusec's own f32 exp, which the printer calls in place
of `exp` because libmvec's turns scalar on inputs past ±87; f16/bf16
conversions when needed) and one `extern "C"`
function per kernel. The per-element statements come from the shared
scalar-expression printer, which reads each op's C expression from
`ir/ElementwiseOps.def`; the C++ target wraps them in `#pragma omp simd` loops
(parallel above 65536 elements; a row loop with per-input offsets when an
input is broadcast).

```cpp
TEXT
  $fusec $model --target=cpu --emit=source
  cat <<'TEXT'
```

## 4b. Source for the GPU: `fusec examples/seed.json --target=cuda --emit=source`

The same statements in a grid-stride loop, one element per thread here:
a kernel of at most a block's elements (256) gains nothing from vectors.
Larger ones loop over 16-byte vectors (4 × f32, 8 × bf16), then, if the
vectors leave any, a scalar tail from the warp after the vectors'. Both
loops stay rolled (`#pragma unroll 1`: they mostly run once, and unrolled
copies only cost NVRTC time). The kernels of a program compile as up to 8
units, each by NVRTC on a thread of its own (one per core), to cubins for
the GPU's architecture, with `--minimal` and `--fmad=false` (a multiply and
an add round separately); `--emit=ptx` shows the PTX.

```cuda
TEXT
  $fusec $model --target=cuda --emit=source | sed -n '/^\/\/ fused_/,$p'
  cat <<'TEXT'
```

## 5. Run: `fusec examples/seed.json --target=cpu --run --check`

The runtime compiles the source (host: `$CXX -O3 -march=native -fopenmp -ffp-contract=off`;
GPU: NVRTC), caches the result on disk (content-addressed; atomic writes;
corrupt entries are detected and rebuilt), loads it and runs the kernels.
`--check` runs the unfused program (one kernel per op) on the CPU backend on
the same inputs and compares.

```
TEXT
  $fusec $model --target=cpu --run --check
  cat <<'TEXT'
```

## 6. A reduction: `fusec test/models/softmax.json`

Softmax decomposes into max, exp and sum around explicit broadcasts, and
fusion keeps all of it in one region rooted at the reductions:

```mlir
TEXT
  $fusec test/models/softmax.json --emit=fused
  cat <<'TEXT'
```

Codegen analyzes a reduction region (codegen/schedule/ReductionSchedule.cpp):
region inputs become loads with strides over the reduction space, reductions
are sorted into levels (a reduction whose operand needs another's result
comes a level later), each level is one pass over the row, and the ops on
the reduced shape run between passes. The schedule step then makes every
choice for the target as plain data, `ReductionParams`: on the GPU a warp or
a block per row, threads, steps, the width of each access, which loads and
values a later pass needs stay in registers, whether softmax's max and sum
share a pass, and the launch geometry (carried in the plan); column
reductions (reduced dims outside a kept inner dim) get their tiles and the
split of the reduced rows across blocks. `--emit=schedule` prints each
kernel's params:

```
TEXT
  $fusec test/models/softmax.json --target=cuda --emit=schedule
  cat <<'TEXT'
```

The printers (codegen/cpu/, codegen/cuda/) only print what the params say:
the warp shuffles and shared memory come from
`codegen/device/Reduction.cuh`. The same plan printed for the GPU:

```cuda
TEXT
  $fusec test/models/softmax.json --target=cuda --emit=source | sed -n '/^\/\/ fused_/,$p'
  echo '```'
} > docs/pipeline.md
