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
# count every process on the device, so certifications side by side can disturb them
# (docs/fake-vs-gpu.md). EMMKIT_ZOO_JOBS > 1 is for a quick look; rerun a row that fails alone.
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

# one_row TEST LIBRARY: checks one manifest row; prints "<status> <test>" as its last line.
one_row() {
  local test="$1" library="$2" status=0
  python3 suites/known_bad/check_zoo.py --backend gpu --timeout 1800 --certify "$certify" \
    --plugin "$build/suites/known_bad/plugins/lib$library.so" --manifest "$manifest" \
    --test "$test" --work-dir "$reports" >"$reports/$test.log" 2>&1 || status=$?
  # Also as it comes, so that a run cut short still says which rows were done.
  echo "$status $test" | tee -a "$reports/results.txt"
}
export -f one_row
export build certify manifest reports

# Test and library names hold no blanks (CTest names and file stems).
results="$(awk -F '\t' '!/^#/ && NF > 1 && $1 != "test" { print $1, $2 }' "$manifest" |
  { grep -E "^(${EMMKIT_ZOO_ROWS:-.*}) " || true; } | xargs -P "$jobs" -n 2 bash -c 'one_row "$@"' _)"

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
