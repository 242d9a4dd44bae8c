#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): runs every row of the known-bad zoo (suites/known_bad/) on
# the GPU backend with the default preset's build, and compares with the manifest as CTest does
# on the fake backend: each defect must fail its clause there too, with the pinned clauses
# passing (suites/known_bad/check_zoo.py --backend gpu). The manifest's outcomes are expected on
# every backend. The JSON reports go to $OUT/known_bad/. Without a GPU, emm-certify's probe says
# why and the step is skipped (exit 0, with that reason).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
manifest=suites/known_bad/manifest.tsv
reports="${OUT:-$build/gpu-out}/known_bad"
if [[ ! -x "$certify" ]]; then
  echo "known-bad zoo on gpu: $certify not found; build the default preset first" >&2
  exit 2
fi
mkdir -p "$reports"

# The test and library columns of every row but the comments and the header.
mapfile -t rows < <(awk -F '\t' '!/^#/ && NF > 1 && $1 != "test" { print $1 "\t" $2 }' "$manifest")
expected=()
unexpected=()
for row in "${rows[@]}"; do
  test="${row%%$'\t'*}"
  library="${row#*$'\t'}"
  echo "==================== known_bad.$test on gpu ===================="
  status=0
  python3 suites/known_bad/check_zoo.py --backend gpu --timeout 1800 \
    --certify "$certify" --plugin "$build/suites/known_bad/plugins/lib$library.so" \
    --manifest "$manifest" --test "$test" --work-dir "$reports" || status=$?
  case "$status" in
    0) expected+=("$test") ;;
    77)
      echo "known-bad zoo on gpu: SKIPPED (no GPU backend, reason above)"
      exit 0
      ;;
    *) unexpected+=("$test") ;;
  esac
done

echo "known-bad zoo on gpu: ${#expected[@]}/${#rows[@]} as the manifest expects${unexpected:+; NOT: ${unexpected[*]}}" \
  "(reports in $reports/)"
((${#unexpected[@]} == 0))
