#!/usr/bin/env bash
# Builds the libFuzzer harnesses (test/fuzz, clang 22 with ASan + UBSan) in
# build-fuzz/ and runs each for SECONDS (default 60), one after another:
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]      e.g. scripts/fuzz.sh 30 fuzz-npy
#
# Prints each harness's executions and any finding; exits 1 if any harness
# found something. Inputs that add coverage are kept in build-fuzz/corpus/
# (the committed seeds in test/fuzz/corpus/ are only read); findings are
# written to build-fuzz/findings/<harness>/ (see docs/fuzzing.md for what to
# do with one). FUSEC_FUZZ_JOBS sets the build's parallelism;
# FUSEC_FUZZ_DIR=DIR uses DIR instead of build-fuzz/ for the build, corpus
# and findings (CI: .ci/run uses build-fuzz-ci/).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FUSEC_FUZZ_DIR:-build-fuzz}
seconds=${1:-60}
if [ $# -gt 0 ]; then shift; fi
harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  harnesses=(fuzz-json fuzz-mlir fuzz-onnx fuzz-onnx-tensor fuzz-npy
             fuzz-cache-entry fuzz-package)
fi

scripts/install-fuzz-deps.sh
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DFUSEC_FUZZ=ON
fi
cmake --build "$dir" --target "${harnesses[@]}" -- \
  -j "${FUSEC_FUZZ_JOBS:-$(nproc)}"

export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Runs never touch the user's kernel cache (the harnesses use their own).
export FUSEC_CACHE_DIR="$PWD/$dir/fuzz-kernel-cache"

found=0
summary=()
for harness in "${harnesses[@]}"; do
  name=${harness#fuzz-}
  corpus=$dir/corpus/$name
  findings=$dir/findings/$name
  log=$dir/fuzz-$name.log
  mkdir -p "$corpus" "$findings"
  echo "== $harness: ${seconds}s (log: $log)"
  status=0
  # -rss_limit_mb / -malloc_limit_mb: a loader that allocates what a file
  # merely declares is a finding ("sizes are validated before memory is
  # allocated"). -timeout: one input may take at most 30 s.
  "$dir/test/fuzz/$harness" -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -artifact_prefix="$findings/" \
    "$corpus" "test/fuzz/corpus/$name" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ "$status" -eq 0 ]; then
    result="ok"
  else
    found=1
    artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
    what=$(grep -m1 -E '^SUMMARY:|ERROR: (AddressSanitizer|libFuzzer)' "$log" ||
           echo "exit status $status")
    result="FINDING: $what; input: ${artifact:-none}"
    grep -m1 -B2 -A30 -E '^==[0-9]+==ERROR|runtime error|deadly signal' \
      "$log" || tail -40 "$log"
  fi
  line=$(printf '%-18s %12s execs %8s exec/s  %s' "$harness" "${runs:-?}" \
         "${rate:-?}" "$result")
  echo "$line"
  summary+=("$line")
done
echo
echo "== fuzzing summary (${seconds}s per harness)"
printf '%s\n' "${summary[@]}"
exit "$found"
