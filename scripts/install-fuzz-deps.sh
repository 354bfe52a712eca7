#!/usr/bin/env bash
# Installs what the fuzz harnesses need on top of the normal dependencies:
# clang 22 with its libFuzzer, ASan and UBSan runtimes (scripts/fuzz.sh).
set -euo pipefail
exec "$(dirname "$0")/install-deps.sh" --fuzz
