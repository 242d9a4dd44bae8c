#!/usr/bin/env bash
# Builds what certification needs (emm-certify, its IPC importer and the selected plugin
# libraries: a target list, not the whole kit and its tests) and certifies the reference plugin
# and the four example plugins with emm-certify (spec §5): on the fake driver always, and on the
# GPU too when one is present (otherwise the certificates list the gpu backend as not run, with
# the reason).
#
#   scripts/certify.sh [options] [PLUGIN...]
#
#   PLUGIN               certify only these: reference, pool, stream_ordered, logging,
#                        host_only_minimal (default: all five)
#   --preset NAME        CMake configure/build preset (default: default -> build/default)
#   --backend B          fake, gpu or all (default: all)
#   --no-setup           do not run scripts/setup.sh (packages already installed)
#   --no-build           do not configure or build (use what is in build/<preset>)
#   -h, --help           this text
#
# For each plugin it prints emm-certify's progress, its table and its verdict, and writes
#   build/<preset>/certificates/<name>.md    the certificate (Markdown)
#   build/<preset>/certificates/<name>.json  the report tools parse (spec §5)
#   build/<preset>/certificates/<name>.xml   JUnit XML for CI test views
#   build/<preset>/certificates/<name>.html  the HTML certificate
# then one summary line. Exit status: 0 when every plugin is CERTIFIED, 1 when any is NOT
# CERTIFIED, 2 when one could not be loaded, a tool is missing, or the arguments are wrong.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

preset=default
backend=all
run_setup=1
run_build=1
selected=()
while (($# > 0)); do
  case "$1" in
    --preset) preset="${2:?--preset needs a name}"; shift 2 ;;
    --backend) backend="${2:?--backend needs fake, gpu or all}"; shift 2 ;;
    --no-setup) run_setup=0; shift ;;
    --no-build) run_build=0; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "certify: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) selected+=("$1"); shift ;;
  esac
done
case "$backend" in
  fake | gpu | all) ;;
  *) echo "certify: --backend must be fake, gpu or all, not '$backend'" >&2; exit 2 ;;
esac

build="build/$preset"
# name -> plugin library, in the order they are certified.
names=(reference pool stream_ordered logging host_only_minimal)
# name -> its CMake target.
declare -A target=(
  [reference]=emm_reference_plugin
  [pool]=emm_example_pool
  [stream_ordered]=emm_example_stream_ordered
  [logging]=emm_example_logging
  [host_only_minimal]=emm_example_host_only_minimal
)
declare -A library=(
  [reference]="$build/conformance/libemm_reference_plugin.so"
  [pool]="$build/examples/libemm_example_pool.so"
  [stream_ordered]="$build/examples/libemm_example_stream_ordered.so"
  [logging]="$build/examples/libemm_example_logging.so"
  [host_only_minimal]="$build/examples/libemm_example_host_only_minimal.so"
)
if ((${#selected[@]} > 0)); then
  for name in "${selected[@]}"; do
    if [[ -z "${library[$name]+set}" ]]; then
      echo "certify: unknown plugin '$name'; choose from: ${names[*]}" >&2
      exit 2
    fi
  done
  names=("${selected[@]}")
fi

if ((run_setup)) && [[ -x scripts/setup.sh ]]; then
  scripts/setup.sh
fi
if ((run_build)); then
  cmake --preset "$preset"
  # emm-ipc-importer is the second process of the IPC clauses on the gpu backend.
  targets=(emm-certify emm-ipc-importer)
  for name in "${names[@]}"; do targets+=("${target[$name]}"); done
  cmake --build --preset "$preset" --target "${targets[@]}"
fi

certify="$build/conformance/emm-certify"
if [[ ! -x "$certify" ]]; then
  echo "certify: $certify not found; build first (drop --no-build)" >&2
  exit 2
fi
certificates="$build/certificates"
mkdir -p "$certificates"

# The logging example writes its event log here rather than to /tmp (it is kept for reading).
export EMM_LOGGING_PLUGIN_CSV="${EMM_LOGGING_PLUGIN_CSV:-$PWD/$certificates/logging-events.csv}"

certified=()
failed=()
unloadable=()
for name in "${names[@]}"; do
  plugin="${library[$name]}"
  echo
  echo "==================== $name: $plugin ===================="
  if [[ ! -f "$plugin" ]]; then
    echo "certify: $plugin was not built" >&2
    unloadable+=("$name")
    continue
  fi
  status=0
  # Two fake devices, so that the DEV clauses run on the fake backend too.
  "$certify" --plugin "$plugin" --backend "$backend" --devices 2 \
    --markdown "$certificates/$name.md" --json "$certificates/$name.json" \
    --junit "$certificates/$name.xml" --html "$certificates/$name.html" || status=$?
  case "$status" in
    0) certified+=("$name") ;;
    1) failed+=("$name") ;;
    *) unloadable+=("$name") ;;
  esac
done

echo
summary="certify: ${#certified[@]}/${#names[@]} CERTIFIED"
((${#certified[@]} > 0)) && summary+=" (${certified[*]})"
((${#failed[@]} > 0)) && summary+="; NOT CERTIFIED: ${failed[*]}"
((${#unloadable[@]} > 0)) && summary+="; could not be loaded: ${unloadable[*]}"
summary+="; backend $backend; certificates in $certificates/"
echo "$summary"

((${#unloadable[@]} > 0)) && exit 2
((${#failed[@]} > 0)) && exit 1
exit 0
