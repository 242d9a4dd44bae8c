#!/usr/bin/env bash
# Builds emmkit with a CMake preset and runs its tests.
#
#   scripts/test.sh [preset]      preset: default (Debug; the default), asan-ubsan, tsan, release
#
# Runs scripts/setup.sh first (installs missing Debian packages; skip with EMMKIT_SKIP_SETUP=1),
# then configures build/<preset>, builds it (2 jobs) and runs ctest (2 jobs, output on failure).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

preset="${1:-default}"
case "$preset" in
  default | asan-ubsan | tsan | release) ;;
  *) echo "usage: scripts/test.sh [default|asan-ubsan|tsan|release]" >&2; exit 2 ;;
esac

if [[ "${EMMKIT_SKIP_SETUP:-0}" != 1 ]]; then
  scripts/setup.sh
fi
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset" --output-on-failure -j2
