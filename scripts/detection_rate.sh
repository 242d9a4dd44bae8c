#!/usr/bin/env bash
# Measures how often ALLOC-10 catches the racy plugins of the known-bad zoo: each one's ALLOC-10
# is run N times (emm-certify --only ALLOC-10, a fresh process each time) and the runs in which
# the clause failed are counted. A race shows only when threads meet in the window, so a rate
# below 100% is a fact about the check to record (suites/known_bad/README.md), not a flake.
#
#   scripts/detection_rate.sh [options]
#
#   --build DIR       the built tree (default: build/default); needs emm-certify and the zoo
#   --runs N          runs per plugin (default: 50)
#   --backend B       fake or gpu (default: fake)
#   -h, --help        this text
#
# The racy plugins are the manifest's ALLOC-10 rows (suites/known_bad/manifest.tsv). Prints one
# line per plugin, "<library>: detected K of N runs (P%)", and exits 0 when every plugin was
# detected in every run, 1 when any run missed, 2 when a tool or a library is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

build=build/default
runs=50
backend=fake
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "detection_rate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

certify="$build/conformance/emm-certify"
[[ -x "$certify" ]] || { echo "detection_rate.sh: no emm-certify at $certify; build it first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

status=0
while IFS=$'\t' read -r test library clause _; do
  [[ "$clause" == "ALLOC-10" ]] || continue
  plugin="$build/suites/known_bad/plugins/lib$library.so"
  [[ -f "$plugin" ]] || { echo "detection_rate.sh: no $plugin; build emm_known_bad_zoo" >&2; exit 2; }
  detected=0
  for ((run = 1; run <= runs; ++run)); do
    report="$work/$library.$run.json"
    "$certify" --plugin "$plugin" --backend "$backend" --only ALLOC-10 --json "$report" \
      >/dev/null 2>&1 || true
    outcome=$(python3 -c 'import json, sys
results = json.load(open(sys.argv[1]))["results"]
print(next((r["outcome"] for r in results if r["clause"] == "ALLOC-10"), "missing"))' "$report")
    [[ "$outcome" == "fail" ]] && detected=$((detected + 1))
  done
  echo "$library: detected $detected of $runs runs ($((100 * detected / runs))%)"
  [[ $detected -eq $runs ]] || status=1
done < <(grep -v '^#' suites/known_bad/manifest.tsv | tail -n +2)
exit $status
