#!/usr/bin/env bash
# Builds the fuzz preset (clang++, libFuzzer, ASan + LSan + UBSan) and runs every fuzz target of
# suites/fuzz for a bounded time, one after another, each from a fresh copy of its committed
# corpus (suites/fuzz/corpus/<target>/, left untouched). Prints, per target, libFuzzer's
# executions, executions per second and coverage (its final cov: edges and ft: features).
#
#   scripts/fuzz.sh            60 seconds per target
#   scripts/fuzz.sh 30         30 seconds per target
#
# Exits non-zero when a target crashes, leaks, hits undefined behaviour, breaks a property
# (emm::fuzz::finding) or times out on one input; the input that did it is kept as
# build/fuzz/fuzz-runs/<target>/crash-* (or leak-*, timeout-*, oom-*) with the target's log
# beside it. Reproduce with build/fuzz/suites/fuzz/<target> <that file>; once fixed, commit the
# file into suites/fuzz/corpus/<target>/ so that the corpus replay (CTest fuzz.<target>.corpus)
# keeps it fixed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [seconds-per-target]   (a whole number of seconds, default 60)" >&2
  exit 2
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

list=build/fuzz/suites/fuzz/fuzzers.txt
if [[ ! -s "$list" ]]; then
  echo "fuzz.sh: $list is missing or empty: the fuzz preset built no fuzz target" >&2
  exit 1
fi

runs="$PWD/build/fuzz/fuzz-runs"
failed=()
printf '\n%-20s %12s %10s %8s %8s  %s\n' target executions exec/s cov ft result
while IFS=$'\t' read -r target binary; do
  work="$runs/$target"
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp -R "suites/fuzz/corpus/$target/." "$work/corpus/"
  status=0
  # Each target runs in its own folder: relative paths in its inputs (fuzz_certify_cli's report
  # paths) land there, and so do the artifacts.
  (
    cd "$work"
    ASAN_OPTIONS="detect_leaks=1:handle_abort=1" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      "$binary" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/" corpus >"$work/log" 2>&1
  ) || status=$?
  done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" | tail -n 1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")"
  executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)"
  per_second="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)"
  if ((status == 0)) && [[ -n "$done_line" ]]; then
    result=clean
  else
    result="FAILED (status $status)"
    failed+=("$target")
  fi
  printf '%-20s %12s %10s %8s %8s  %s\n' "$target" "${executions:--}" "${per_second:--}" \
    "${cov:--}" "${ft:--}" "$result"
done <"$list"

for target in "${failed[@]}"; do
  work="$runs/$target"
  echo
  echo "==================== $target: last lines of $work/log ===================="
  tail -n 40 "$work/log"
  artifacts=("$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-*)
  for artifact in "${artifacts[@]}"; do
    [[ -e "$artifact" ]] && echo "kept input: $artifact"
  done
done
if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: every target ran ${seconds}s clean"
