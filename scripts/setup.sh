#!/usr/bin/env bash
# Installs what building and testing emmkit needs on Debian/Ubuntu, and checks for the CUDA
# Toolkit headers. Idempotent: apt-get runs only when a package is missing.
#
#   scripts/setup.sh            install what is missing (as root, or through sudo)
#   EMMKIT_SETUP_NO_INSTALL=1 scripts/setup.sh   only report what is missing (offline machines)
#
# The CUDA Toolkit is not installed here (it does not come from Debian's archive): only its
# headers are needed (cuda.h); nothing links libcuda, which is loaded at run time when present.
set -euo pipefail

# clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes) build the fuzz preset.
packages=(cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev libboost-test-dev
          librapidcheck-dev   # the conformance engine: generated sequences and shrinking
          clang-format python3 clang libclang-rt-14-dev
          python3-jsonschema  # the JSON reports are validated against docs/report.schema.json
          chromium            # the HTML certificate's rendering test
          python3-dev pybind11-dev python3-numba python3-pytest  # libemm_python and its tests
          python3-numpy       # NEP 49: the NumPy bridge and examples/nep49_pinned
          python3-pip python3-setuptools python3-wheel)  # python/ installs with pip

is_installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

missing=()
if command -v dpkg >/dev/null 2>&1; then
  for package in "${packages[@]}"; do
    is_installed "$package" || missing+=("$package")
  done
else
  echo "setup: dpkg not found: not a Debian-based system; install by hand: ${packages[*]}" >&2
fi

if ((${#missing[@]} > 0)); then
  echo "setup: missing packages: ${missing[*]}"
  if [[ "${EMMKIT_SETUP_NO_INSTALL:-0}" == 1 ]]; then
    echo "setup: EMMKIT_SETUP_NO_INSTALL=1: not installing them" >&2
  else
    if [[ "$(id -u)" == 0 ]]; then
      as_root=()
    elif command -v sudo >/dev/null 2>&1; then
      as_root=(sudo)
    else
      echo "setup: not root and no sudo: run as root: apt-get install ${missing[*]}" >&2
      exit 1
    fi
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
else
  echo "setup: all packages present (${packages[*]})"
fi

# --- CUDA Toolkit headers ----------------------------------------------------------------------
cuda_header=""
for root in "${CUDAToolkit_ROOT:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr; do
  if [[ -n "$root" && -f "$root/include/cuda.h" ]]; then
    cuda_header="$root/include/cuda.h"
    break
  fi
done
if [[ -z "$cuda_header" ]] && command -v nvcc >/dev/null 2>&1; then
  root="$(dirname "$(dirname "$(command -v nvcc)")")"
  [[ -f "$root/include/cuda.h" ]] && cuda_header="$root/include/cuda.h"
fi
if [[ -z "$cuda_header" ]]; then
  cat >&2 <<'MSG'
setup: ERROR: the CUDA Toolkit headers were not found (no cuda.h in $CUDAToolkit_ROOT,
       $CUDA_HOME, $CUDA_PATH, /usr/local/cuda/include or /usr/include).
       emmkit needs only the Toolkit's headers to build (no GPU, no driver): install the CUDA
       Toolkit (12.x or 13.x) from NVIDIA, or point CUDAToolkit_ROOT at an existing one.
MSG
  exit 1
fi
version="$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$cuda_header" | head -n 1)"
echo "setup: CUDA Toolkit headers: $cuda_header (CUDA_VERSION ${version:-unknown})"
