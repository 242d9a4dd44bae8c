#!/usr/bin/env bash
# The one command for a machine with a GPU: builds the default (Debug) and release presets, runs
# every test labelled `gpu` (ctest -L gpu), then each scripts/gpu.d/*.sh in name order (the
# certifier on the GPU backend, GPU benchmarks, ...). Everything is also written to
# ${OUT:-build/gpu-out}/gpu.log. A failing step does not stop the others; the summary at the end
# lists each step, and the exit status is 1 if any failed.
#
#   scripts/gpu.sh [all|build|test]     all (default) = build then test
#
# Environment: OUT (log folder), EMMKIT_GPU_PRESETS (default "default release"),
# EMMKIT_GPU_JOBS (build jobs; default: all cores), EMMKIT_GPU_CTEST_JOBS (default 1: one GPU),
# EMMKIT_GPU_CTEST_ARGS (more ctest arguments, e.g. "-LE soak" to leave the soak out),
# EMMKIT_GPU_STEPS (which test steps run, default all: "ctest" and the number prefixes of
# scripts/gpu.d/*.sh, e.g. "ctest 50" or "55 60 70"; to split a long run over several calls).
# The machine needs cmake, ninja, a C++20 compiler, GoogleTest/GoogleMock and the CUDA Toolkit
# headers; nothing is installed here (GPU machines are often offline): scripts/setup.sh is run
# in report-only mode. Each scripts/gpu.d/*.sh runs from the repository root with OUT set, and
# should write its files (reports, certificates) under $OUT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-all}"
case "$mode" in
  all | build | test) ;;
  *) echo "usage: scripts/gpu.sh [all|build|test]" >&2; exit 2 ;;
esac

export OUT="${OUT:-build/gpu-out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
log="$OUT/gpu.log"
read -r -a presets <<<"${EMMKIT_GPU_PRESETS:-default release}"
jobs="${EMMKIT_GPU_JOBS:-$(nproc 2>/dev/null || echo 2)}"
ctest_jobs="${EMMKIT_GPU_CTEST_JOBS:-1}"
read -r -a ctest_args <<<"${EMMKIT_GPU_CTEST_ARGS:-}"
read -r -a only_steps <<<"${EMMKIT_GPU_STEPS:-}"

# selected NAME: whether the test step NAME ("ctest" or a gpu.d number prefix) is to run.
selected() {
  ((${#only_steps[@]} == 0)) && return 0
  local wanted
  for wanted in "${only_steps[@]}"; do
    [[ "$1" == "$wanted" ]] && return 0
  done
  return 1
}

results=()
failed=0
# step NAME COMMAND...: runs one step, records its outcome, never stops the script.
step() {
  local name="$1"
  shift
  local begin=$SECONDS rc=0
  printf '\n==================== %s ====================\n' "$name"
  "$@" || rc=$?
  local outcome="ok"
  if ((rc != 0)); then
    outcome="FAILED (exit $rc)"
    failed=$((failed + 1))
  fi
  results+=("$(printf '%-48s %-16s %4ds' "$name" "$outcome" $((SECONDS - begin)))")
}

main() {
  echo "emmkit GPU run: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), mode $mode"
  echo "log: $log"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  else
    echo "WARNING: nvidia-smi not found: GPU tests will report that no GPU is present"
  fi
  step "setup check (report only)" env EMMKIT_SETUP_NO_INSTALL=1 scripts/setup.sh

  if [[ "$mode" != test ]]; then
    local preset
    for preset in "${presets[@]}"; do
      step "configure $preset" cmake --preset "$preset"
      step "build $preset" cmake --build --preset "$preset" -j "$jobs"
    done
  fi

  if [[ "$mode" != build ]]; then
    if selected ctest; then
      step "ctest -L gpu (default preset)" \
        ctest --preset default -L gpu --output-on-failure -j "$ctest_jobs" "${ctest_args[@]}"
    fi
    local script name
    shopt -s nullglob
    for script in scripts/gpu.d/*.sh; do
      name="$(basename "$script")"
      selected "${name%%-*}" || continue
      step "$script" bash "$script"
    done
    shopt -u nullglob
  fi

  printf '\n==================== summary ====================\n'
  printf '%s\n' "${results[@]}"
  if ((failed > 0)); then
    echo "GPU RUN: $failed step(s) FAILED"
    return 1
  fi
  echo "GPU RUN: all ${#results[@]} steps passed"
}

set +e
main 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
exit "$status"
