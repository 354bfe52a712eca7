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

The default pipeline (`passes/Pipeline.cpp`): `canonicalize` (folds constants
through the op table and applies identities such as `x*1 → x`), `cse`, then
`fuse-form-fusion-regions`, which first decides groups (a union-find over
pointwise ops that never duplicates work across a broadcast and never forms a
cycle between regions) and then materializes each as a `fuse.fusion` region.
`--remarks` prints why an op was left out of a region.

```mlir
TEXT
  $fusec $model --emit=fused
  cat <<'TEXT'
```

## 3. Plan: `fusec examples/seed.json --emit=plan`

Codegen (codegen/) turns each region into a kernel and the function into a
runtime `Program`: kernels in launch order with the buffers they read and
write. Reshapes become buffer aliases; dense constants become constant
buffers.

```json
TEXT
  $fusec $model --emit=plan --target=cpu
  cat <<'TEXT'
```

## 4a. Source for the CPU: `fusec examples/seed.json --target=cpu --emit=source`

One translation unit: a prelude (math declarations with vector variants from
glibc's libmvec; f16/bf16 conversions when needed) and one `extern "C"`
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

The same statements in a grid-stride loop over 16-byte vectors (4 × f32,
8 × bf16), then a scalar tail; NVRTC compiles it to a cubin for the GPU's
architecture (`--emit=ptx` shows the PTX).

```cuda
TEXT
  $fusec $model --target=cuda --emit=source | sed -n '/^\/\/ fused_/,$p'
  cat <<'TEXT'
```

## 5. Run: `fusec examples/seed.json --target=cpu --run --check`

The runtime compiles the source (host: `$CXX -O3 -march=native -fopenmp`;
GPU: NVRTC), caches the result on disk (content-addressed; atomic writes;
corrupt entries are detected and rebuilt), loads it and runs the kernels.
`--check` runs the unfused program (one kernel per op) on the CPU backend on
the same inputs and compares.

```
TEXT
  $fusec $model --target=cpu --run --check
  echo '```'
} > docs/pipeline.md
