#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): certify on every GPU present. The gpu backend uses every GPU
# the driver sees, so the DEV clauses (one instance per context, memory on the current
# context's device, memory info per device, staged IPC between devices) run only where there are
# two or more. This step certifies the reference plugin on the gpu backend and, when DEV-1 ran
# (two GPUs or more), checks the zoo's baselines and DEV rows (suites/known_bad/manifest.tsv)
# with suites/known_bad/check_zoo.py --backend gpu. The known-good set is certified on the same
# backend, so on every GPU, by 60-certify-known-good.sh. With one GPU this step says so and
# skips (exit 0); without a GPU, emm-certify's probe says why and it skips. Reports go to
# $OUT/several_gpus/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
reference="$build/conformance/libemm_reference_plugin.so"
reports="${OUT:-$build/gpu-out}/several_gpus"
if [[ ! -x "$certify" || ! -f "$reference" ]]; then
  echo "several GPUs: $certify or $reference not found; build the default preset first" >&2
  exit 2
fi
mkdir -p "$reports"

echo "==================== reference plugin on every GPU ===================="
status=0
"$certify" --plugin "$reference" --backend gpu --timeout-s 600 \
  --json "$reports/reference.json" --markdown "$reports/reference.md" || status=$?
# What the report says of the gpu backend and of DEV-1 there: ran/not, its device line, DEV-1's
# outcome and message.
read -r ran devices dev1 < <(python3 - "$reports/reference.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))
gpu = next((b for b in report.get("backends", []) if b.get("name") == "gpu"), {})
dev1 = next((r for r in report.get("results", [])
             if r.get("clause") == "DEV-1" and r.get("backend") == "gpu"), {})
one = dev1.get("outcome") == "not_supported" and "needs two devices" in dev1.get("message", "")
print("yes" if gpu.get("ran") else "no", "one" if one else "several", dev1.get("outcome", "none"))
PY
)
if [[ "$ran" != yes ]]; then
  echo "several GPUs: SKIPPED (the gpu backend did not run; emm-certify said why above)"
  exit 0
fi
if [[ "$devices" == one ]]; then
  echo "several GPUs: SKIPPED (one GPU present; DEV-1..DEV-4 need two: each is not_supported" \
    "with the note 'needs two devices; 1 present' on the certificate)"
  exit "$status"
fi
echo "reference plugin: DEV-1 $dev1, emm-certify exit $status"

passed=()
failed=()
((status == 0)) && passed+=("reference") || failed+=("reference")
check_rows() {  # suite manifest library-dir awk-filter
  local suite=$1 manifest=$2 libraries=$3 filter=$4 row library
  [[ -f "$manifest" ]] || { echo "several GPUs: no $manifest, $suite skipped"; return 0; }
  while IFS=$'\t' read -r row library; do
    echo "==================== $suite.$row on every GPU ===================="
    if python3 suites/known_bad/check_zoo.py --suite "$suite" --backend gpu --timeout 1800 \
      --certify "$certify" --plugin "$libraries/lib$library.so" --manifest "$manifest" \
      --test "$row" --work-dir "$reports/$suite"; then
      passed+=("$suite.$row")
    else
      failed+=("$suite.$row")
    fi
  done < <(awk -F '\t' "!/^#/ && NF > 1 && \$1 != \"test\" && $filter { print \$1 \"\t\" \$2 }" \
    "$manifest")
}
# shellcheck disable=SC2016  # an awk expression, for awk to expand
check_rows known_bad suites/known_bad/manifest.tsv "$build/suites/known_bad/plugins" \
  '($3 ~ /^DEV-/ || $3 == "-")'

echo "several GPUs: ${#passed[@]}/$((${#passed[@]} + ${#failed[@]})) as expected" \
  "${failed:+; NOT: ${failed[*]}} (reports in $reports/)"
((${#failed[@]} == 0))
