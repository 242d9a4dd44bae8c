#!/usr/bin/env bash
# Builds the benchmarks in the release preset, runs every emm_bench_* executable on the fake
# backend and (when one is present) the GPU, and writes docs/performance.md with its plot and
# the kit's performance targets. Meant for a machine with a GPU; without one the GPU rows say why
# they did not run.
#
#   scripts/bench.sh [--no-build] [--bin-dir DIR] [--filter REGEX]
#
#   --no-build      use executables already built (in DIR, default build/release/suites/benchmarks)
#   --bin-dir DIR   where the emm_bench_* executables are
#   --filter REGEX  passed to every executable as --benchmark_filter (a quick partial run)
#
# Environment: OUT (results folder, default build/bench-out), JOBS (build jobs, default: all
# cores), BENCH_DOC (default docs/performance.md), BENCH_PLOT (default docs/performance.png),
# BENCH_ARGS (extra Google Benchmark flags, e.g. --benchmark_repetitions=3).
#
# $OUT receives one JSON per executable (Google Benchmark's format), meta.json (device, driver,
# commit, command), bench.log (everything printed) and copies of the report and its plot —
# eight files, so the whole run comes back from a device machine. The full run takes about
# 70 seconds on one H200 (16 cores), half of it the random-allocation replays.
#
# A GPU machine without Google Benchmark (or GoogleTest) cannot build the release preset: build
# here, copy the emm_bench_* executables, emm-certify, emm-ipc-importer, libemm_reference.so.0,
# libemm_reference_plugin.so and libbenchmark.so.1* there, and run
#   LD_LIBRARY_PATH=<libs> EMM_BENCH_CERTIFY=<emm-certify> EMM_IPC_IMPORTER=<emm-ipc-importer> \
#   EMM_BENCH_PLUGIN_REFERENCE=<libemm_reference_plugin.so> scripts/bench.sh --no-build --bin-dir <dir>
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=1
bin_dir="build/release/suites/benchmarks"
filter=""
while (($#)); do
  case "$1" in
    --no-build) build=0 ;;
    --bin-dir) bin_dir="$2"; shift ;;
    --filter) filter="$2"; shift ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

export OUT="${OUT:-build/bench-out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
doc="${BENCH_DOC:-docs/performance.md}"
plot="${BENCH_PLOT:-docs/performance.png}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
log="$OUT/bench.log"
: >"$log"

say() { echo "$@" | tee -a "$log"; }

if ((build)); then
  say "== building the release preset (benchmarks, emm-certify, the reference plugin)"
  cmake --preset release 2>&1 | tee -a "$log"
  cmake --build --preset release --target emm_benchmarks --parallel "$jobs" 2>&1 | tee -a "$log"
fi

shopt -s nullglob
benches=("$bin_dir"/emm_bench_*)
if ((${#benches[@]} == 0)); then
  say "bench.sh: no emm_bench_* executables in $bin_dir (configure with -DEMMKIT_BUILD_BENCHMARKS=ON)"
  exit 1
fi

# --- provenance ----------------------------------------------------------------------------------
gpu_name="none"
driver_version="—"
if command -v nvidia-smi >/dev/null 2>&1; then
  if smi="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)" &&
    [[ -n "$smi" ]]; then
    gpu_name="${smi%%,*}"
    driver_version="${smi#*,}"
    driver_version="${driver_version# }"
  fi
fi
commit="${EMMKIT_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo "no commit")}"
if [[ "$commit" != "no commit" ]] && [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  commit="$commit (with uncommitted changes)"
fi
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1)"
# shellcheck disable=SC2016  # $filter does expand: the single quotes are literal text here
command_line="scripts/bench.sh${filter:+ --filter '$filter'}"
META_DATE="$(date -u '+%Y-%m-%d %H:%M:%S')" META_COMMIT="$commit" META_DEVICE="$gpu_name" \
  META_DRIVER="$driver_version" META_HOST="$(hostname)" META_CPUS="$(nproc 2>/dev/null || echo '?')" \
  META_CPU_MODEL="${cpu_model:-?}" META_COMMAND="$command_line" \
  python3 -c '
import json, os, sys
e = os.environ
json.dump({"date": e["META_DATE"], "commit": e["META_COMMIT"], "device": e["META_DEVICE"],
           "driver_version": e["META_DRIVER"], "host": e["META_HOST"], "cpus": e["META_CPUS"],
           "cpu_model": e["META_CPU_MODEL"],
           "build": "release preset (CMAKE_BUILD_TYPE=Release)",
           "command": e["META_COMMAND"]}, open(sys.argv[1], "w"), indent=2)
' "$OUT/meta.json"
say "== device: $gpu_name (driver $driver_version), commit $commit"

# --- run ------------------------------------------------------------------------------------------
failed=0
for bench in "${benches[@]}"; do
  [[ -x "$bench" && -f "$bench" ]] || continue
  name="$(basename "$bench")"
  say "== $name"
  args=(--benchmark_out="$OUT/$name.json" --benchmark_out_format=json)
  [[ -n "$filter" ]] && args+=(--benchmark_filter="$filter")
  # shellcheck disable=SC2206
  extra=(${BENCH_ARGS:-})
  start=$SECONDS
  if ! "$bench" "${args[@]}" "${extra[@]}" 2>&1 | tee -a "$log"; then
    say "bench.sh: $name failed"
    failed=1
  fi
  say "== $name took $((SECONDS - start)) s"
done

# --- report ---------------------------------------------------------------------------------------
mkdir -p "$(dirname "$doc")" "$(dirname "$plot")"
python3 scripts/bench_report.py --input "$OUT" --output "$doc" --plot "$plot" 2>&1 | tee -a "$log"
# Copies beside the JSON, unless the report was written there already (scripts/gpu.d/90).
for written in "$doc" "$plot"; do
  if [[ -f "$written" && "$(cd "$(dirname "$written")" && pwd)" != "$OUT" ]]; then
    cp "$written" "$OUT/"
  fi
done
say "== report: $doc (copies in $OUT)"
exit $failed
