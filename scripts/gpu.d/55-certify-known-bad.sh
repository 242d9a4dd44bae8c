#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): the known-bad plugin zoo (suites/known_bad/) on the GPU
# backend with the default preset's build. suites/known_bad/check_zoo.py --backend gpu asserts
# each row's manifest expectations there (the exit status, the verdict, the violated clause's
# outcome and message, the pinned clauses), exactly as CTest does on the fake backend. Rows run
# EMMKIT_ZOO_JOBS at a time (default 1, see below). The JSON
# reports and one log per row go to $OUT/known_bad/. Without a GPU the step is skipped (exit 0,
# with emm-certify's reason).
#
# Rows run one at a time: the gpu backend reads memory in use from cuMemGetInfo, which counts
# every process on the device, so two certifications side by side see each other's memory as
# leaks (docs/fake-vs-gpu.md). EMMKIT_ZOO_JOBS > 1 is only for a quick look at crashes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
manifest=suites/known_bad/manifest.tsv
reports="${OUT:-$build/gpu-out}/known_bad"
jobs="${EMMKIT_ZOO_JOBS:-1}"
if [[ ! -x "$certify" ]]; then
  echo "known-bad on gpu: $certify not found; build the default preset first" >&2
  exit 2
fi
mkdir -p "$reports"

# one_row TEST LIBRARY: checks one manifest row; prints "<status> <test>" as its last line.
one_row() {
  local test="$1" library="$2" status=0
  python3 suites/known_bad/check_zoo.py --backend gpu --timeout 1800 --certify "$certify" \
    --plugin "$build/suites/known_bad/plugins/lib$library.so" --manifest "$manifest" \
    --test "$test" --work-dir "$reports" >"$reports/$test.log" 2>&1 || status=$?
  echo "$status $test"
}
export -f one_row
export build certify manifest reports

# Test and library names hold no blanks (CTest names and file stems).
results="$(awk -F '\t' '!/^#/ && NF > 1 && $1 != "test" { print $1, $2 }' "$manifest" |
  xargs -P "$jobs" -n 2 bash -c 'one_row "$@"' _)"

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
