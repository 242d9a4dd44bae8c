#!/usr/bin/env bash
# Measures the mutation score of the checks (suites/mutation/README.md): builds emm-certify and
# the plugin libraries of the known-good set and the examples, then runs
# suites/mutation/mutate.py, which makes one small defect at a time in those plugins, builds each
# mutant from the build's own commands in a scratch folder and certifies it on the fake backend.
#
#   scripts/mutation.sh [--preset NAME] [--no-build] [--sample N] [mutate.py options...]
#
#   --preset NAME   the build to use (default: default -> build/default); it is only read
#   --no-build      do not build first (the targets must be up to date: mutate.py checks)
#   --sample N      a random sample of N mutants (seed 1 unless --seed is given): the CI run
#   -h, --help      this text
#   anything else   passed to mutate.py: --subjects, --operators, --seed, --jobs, --only,
#                   --skip-subjects, --time-limit, --list, --extra-certify-args, --tsan-certify,
#                   --fail-under ...
#
# Defaults: --jobs 2, reports in build/mutation/mutation.json and build/mutation/mutation.md
# (outside build/<preset>). A full run certifies every mutant (about 940, 5-40 s each: hours on
# two cores); `--sample 40` took 11 minutes on two cores. Exit status: mutate.py's (0 done,
# 1 score below --fail-under, 2 a build or baseline problem).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

preset=default
run_build=1
args=()
while (($# > 0)); do
  case "$1" in
    --preset) preset="${2:?--preset needs a name}"; shift 2 ;;
    --no-build) run_build=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
build="build/$preset"

# --list needs no build at all.
for arg in "${args[@]}"; do
  [[ "$arg" == "--list" ]] && exec python3 suites/mutation/mutate.py "${args[@]}"
done

if ((run_build)); then
  if [[ ! -f "$build/build.ninja" ]]; then
    echo "mutation.sh: $build is not configured; run: cmake --preset $preset" >&2
    exit 2
  fi
  # The subjects' plugin targets, named as CMake names them (suites/known_good/CMakeLists.txt:
  # emm_known_good_<file>; examples/CMakeLists.txt: emm_example_<folder>).
  # A source the build does not know yet (not in the manifest) is left out here; mutate.py
  # skips its subject and says so.
  known=$(ninja -C "$build" -t targets all | cut -d: -f1)
  targets=(emm-certify emm-ipc-importer)
  for source in suites/known_good/*.cpp; do
    target="emm_known_good_$(basename "$source" .cpp)"
    grep -qx "$target" <<<"$known" && targets+=("$target")
  done
  for example in pool stream_ordered host_only_minimal logging; do
    targets+=("emm_example_$example")
  done
  # Two jobs, as the presets build.
  cmake --build "$build" --parallel 2 --target "${targets[@]}"
fi

defaults=(--build-dir "$build" --jobs 2 --json build/mutation/mutation.json
          --markdown build/mutation/mutation.md)
# --sample without --seed: seed 1, so that two CI runs certify the same mutants.
exec python3 suites/mutation/mutate.py "${defaults[@]}" "${args[@]}"
