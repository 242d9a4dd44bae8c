#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): the known-bad plugin zoo (suites/known_bad/) on the GPU
# backend with the default preset's build (EMMKIT_ZOO_PRESET=release: the release one).
# suites/known_bad/check_zoo.py --backend gpu asserts each row's manifest expectations there
# (the exit status, the verdict, the violated clause's outcome and message, the pinned clauses),
# exactly as CTest does on the fake backend. Rows run EMMKIT_ZOO_JOBS at a time (default 1, see
# below). The JSON reports, one log per row and results.txt (one "<status> <row>" line per row
# as it ends) go to $OUT/known_bad/. Without a GPU the step is skipped (exit 0, with
# emm-certify's reason).
#
# Rows run one at a time by default: leaks are judged from the process's own ledger
# (cupti_ledger.hpp), but the memory-info clauses compare a plugin's cuMemGetInfo figures, which
# count every process on the device, and ALLOC-3 fills the device, so certifications side by
# side on one GPU can disturb them (docs/fake-vs-gpu.md). EMMKIT_ZOO_GPU_LANES=1 on a machine
# with several GPUs runs one row per GPU at a time instead, each row seeing only its GPU
# (CUDA_VISIBLE_DEVICES, taken with flock), and then the DEV rows, which need two devices, one
# at a time with every GPU. EMMKIT_ZOO_ROWS (a regular expression over row names) selects rows.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build="build/${EMMKIT_ZOO_PRESET:-default}"
certify="$build/conformance/emm-certify"
manifest=suites/known_bad/manifest.tsv
reports="${OUT:-$build/gpu-out}/known_bad"
jobs="${EMMKIT_ZOO_JOBS:-1}"
if [[ ! -x "$certify" ]]; then
  echo "known-bad on gpu: $certify not found; build the default preset first" >&2
  exit 2
fi
mkdir -p "$reports"
: >"$reports/results.txt"

# one_row TEST LIBRARY: checks one manifest row; prints "<status> <test>" as its last line. In
# GPU lanes it first takes a free GPU (a lock per GPU) and runs on it alone.
one_row() {
  local test="$1" library="$2" status=0 gpu lock
  if [[ -n "${lanes:-}" ]]; then
    while [[ -z "${CUDA_VISIBLE_DEVICES:-}" ]]; do
      for gpu in $(seq 0 $((lanes - 1))); do
        exec {lock}>"$reports/.gpu$gpu.lock"
        if flock -n "$lock"; then
          export CUDA_VISIBLE_DEVICES=$gpu
          break
        fi
        exec {lock}>&-
      done
      [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]] || sleep 0.2
    done
  fi
  python3 suites/known_bad/check_zoo.py --backend gpu --timeout 1800 --certify "$certify" \
    --plugin "$build/suites/known_bad/plugins/lib$library.so" --manifest "$manifest" \
    --test "$test" --work-dir "$reports" >"$reports/$test.log" 2>&1 || status=$?
  # Also as it comes, so that a run cut short still says which rows were done.
  echo "$status $test" | tee -a "$reports/results.txt"
}
export -f one_row
export build certify manifest reports

# Test and library names hold no blanks (CTest names and file stems).
rows="$(awk -F '\t' '!/^#/ && NF > 1 && $1 != "test" { print $1, $2 }' "$manifest" |
  { grep -E "^(${EMMKIT_ZOO_ROWS:-.*}) " || true; })"
if [[ "${EMMKIT_ZOO_GPU_LANES:-0}" == 1 ]]; then
  lanes="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  lanes="${lanes:-1}"
  ((lanes >= 1)) || lanes=1
  echo "known-bad on gpu: $lanes GPU lanes, then the DEV rows with every GPU"
  results="$(grep -v '^DEV-' <<<"$rows" | lanes=$lanes xargs -r -P "$lanes" -n 2 bash -c 'one_row "$@"' _)"
  results+=$'\n'"$(grep '^DEV-' <<<"$rows" | xargs -r -n 2 bash -c 'one_row "$@"' _)"
  results="$(grep . <<<"$results" || true)"
else
  results="$(xargs -r -P "$jobs" -n 2 bash -c 'one_row "$@"' _ <<<"$rows")"
fi

total=0 passed=0 skipped=0
failed=()
while read -r status test; do
  total=$((total + 1))
  case "$status" in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) failed+=("$test") ;;
  esac
done <<<"$results"

if ((skipped == total)); then
  echo "known-bad on gpu: SKIPPED (no GPU backend):"
  head -n 5 "$reports"/*.log | head -n 20
  exit 0
fi
for test in "${failed[@]}"; do
  echo "==================== known_bad.$test on gpu: NOT as the manifest says ===================="
  cat "$reports/$test.log"
done
echo "known-bad on gpu: $passed/$total rows as the manifest says, $skipped skipped" \
  "${failed:+; NOT: ${failed[*]}} (logs and reports in $reports/)"
((${#failed[@]} == 0))
