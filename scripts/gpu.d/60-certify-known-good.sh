#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): certify the known-good plugin set (suites/known_good/) on
# the GPU backend with the default preset's build. Each row of its manifest must be CERTIFIED
# there with every plugin clause pass or an allowed not_supported, as CTest already asserts on
# the fake backend; suites/known_bad/check_zoo.py --backend gpu checks it. The JSON reports go
# to $OUT/known_good/. Without a GPU, emm-certify's probe says why and the step is skipped
# (exit 0, with that reason).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
manifest=suites/known_good/manifest.tsv
reports="${OUT:-$build/gpu-out}/known_good"
if [[ ! -x "$certify" ]]; then
  echo "known-good on gpu: $certify not found; build the default preset first" >&2
  exit 2
fi
mkdir -p "$reports"

# The library column of every row but the comments and the header.
mapfile -t names < <(awk -F '\t' '!/^#/ && NF > 1 && $1 != "test" { print $2 }' "$manifest")
certified=()
failed=()
for name in "${names[@]}"; do
  echo "==================== known_good.$name on gpu ===================="
  status=0
  python3 suites/known_bad/check_zoo.py --suite known_good --backend gpu --timeout 1800 \
    --certify "$certify" --plugin "$build/suites/known_good/plugins/lib$name.so" \
    --manifest "$manifest" --test "$name" --work-dir "$reports" || status=$?
  case "$status" in
    0) certified+=("$name") ;;
    77)
      echo "known-good on gpu: SKIPPED (no GPU backend, reason above)"
      exit 0
      ;;
    *) failed+=("$name") ;;
  esac
done

echo "known-good on gpu: ${#certified[@]}/${#names[@]} as expected${failed:+; NOT: ${failed[*]}}" \
  "(reports in $reports/)"
((${#failed[@]} == 0))
