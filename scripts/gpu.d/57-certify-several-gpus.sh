#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): the several-device clauses (DEV-1..DEV-4: one instance per
# context, memory on the current context's device, memory info per device, staged IPC between
# devices) on every GPU present, for the reference plugin and the known-good set
# (suites/known_good/manifest.tsv). The gpu backend uses every GPU the driver sees, so the other
# steps' full certifications (50-certify.sh, 55-certify-known-bad.sh, 60-certify-known-good.sh)
# run these clauses too; this step runs only them (emm-certify --only), so that a multi-GPU
# machine's verdict on them is one short, separate line. Each DEV result must be pass, or
# not_supported because the plugin declares the clause's capability absent.
#
# With one GPU it prints why it skips (the DEV clauses need two; they are then not_supported
# with "<ID>: a second device (1 present) not observable on gpu" on every certificate) and exits
# 0; without a GPU, emm-certify's probe says why and it exits 0. Reports: $OUT/several_gpus/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
manifest=suites/known_good/manifest.tsv
reports="${OUT:-$build/gpu-out}/several_gpus"
clauses=DEV-1,DEV-2,DEV-3,DEV-4
if [[ ! -x "$certify" ]]; then
  echo "several GPUs: $certify not found; build the default preset first" >&2
  exit 2
fi
mkdir -p "$reports"

# judge REPORT: prints "skip REASON" (the gpu backend did not run, or one GPU), "ok" or
# "bad WHAT" for one --only report.
judge() {
  python3 - "$1" "$clauses" <<'PY'
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))
gpu = next((b for b in report.get("backends", []) if b.get("name") == "gpu"), {})
if not gpu.get("ran"):
    print("skip the gpu backend did not run:", gpu.get("reason", "no reason given"))
    sys.exit()
results = {r.get("clause"): r for r in report.get("results", []) if r.get("backend") == "gpu"}
one = [c for c, r in results.items() if "needs two devices" in r.get("message", "")]
if one:
    print("skip one GPU present:", results[one[0]].get("message", ""))
    sys.exit()
bad = []
for clause in sys.argv[2].split(","):
    r = results.get(clause, {})
    if r.get("outcome") == "pass":
        continue
    if r.get("outcome") == "not_supported" and "the plugin declares" in r.get("message", ""):
        continue
    bad.append(f"{clause} {r.get('outcome', 'no result')}: {r.get('message', '')}")
print("bad " + "; ".join(bad) if bad else "ok")
PY
}

# The reference plugin, then the library column of every known-good row.
plugins=("reference=$build/conformance/libemm_reference_plugin.so")
if [[ -f "$manifest" ]]; then
  while read -r name; do
    plugins+=("known_good.$name=$build/suites/known_good/plugins/lib$name.so")
  done < <(awk -F '\t' '!/^#/ && NF > 1 && $1 != "test" { print $2 }' "$manifest")
fi

passed=()
failed=()
for entry in "${plugins[@]}"; do
  name="${entry%%=*}"
  library="${entry#*=}"
  echo "==================== $name: $clauses on every GPU ===================="
  # --only makes a partial run: exit 3 when every selected clause passed, 1 when one failed.
  "$certify" --plugin "$library" --backend gpu --only "$clauses" --timeout-s 600 \
    --json "$reports/$name.json" --markdown "$reports/$name.md" || true
  verdict="$(judge "$reports/$name.json" 2>&1 || echo "bad no readable report")"
  case "$verdict" in
    skip*)
      echo "several GPUs: SKIPPED (${verdict#skip })"
      exit 0
      ;;
    ok) passed+=("$name") ;;
    *)
      echo "several GPUs: $name: ${verdict#bad }"
      failed+=("$name")
      ;;
  esac
done

echo "several GPUs: ${#passed[@]}/${#plugins[@]} pass $clauses${failed:+; NOT: ${failed[*]}}" \
  "(reports in $reports/)"
((${#failed[@]} == 0))
