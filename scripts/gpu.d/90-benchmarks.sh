#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh, last): every benchmark of the release preset's build on the
# fake and the GPU (scripts/bench.sh --no-build). The report docs/performance.md and its plot are
# written into $OUT/bench/ (not into the checkout), with the raw JSON of each executable, so that
# the run's figures come back from a device machine; copy them into docs/ to publish them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

out="${OUT:-build/gpu-out}/bench"
mkdir -p "$out"
if [[ ! -d build/release/suites/benchmarks ]]; then
  echo "benchmarks: build/release/suites/benchmarks not found; build the release preset first" \
    "(scripts/gpu.sh builds it with EMMKIT_GPU_PRESETS=\"default release\")" >&2
  exit 2
fi
OUT="$out" BENCH_DOC="$out/performance.md" BENCH_PLOT="$out/performance.png" \
  scripts/bench.sh --no-build
