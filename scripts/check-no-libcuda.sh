#!/usr/bin/env bash
# check-no-libcuda.sh DIR: fails if any executable or shared library under DIR lists libcuda in
# its DT_NEEDED entries (readelf -d). emmkit loads the CUDA driver at run time (dlopen in
# emm::CudaDriver, spec §2.1), so every kit binary must start on a machine without a GPU.
# Prints each file it checked; exits 0 when none needs libcuda, 1 when some do, 2 when DIR holds
# no executable or shared library at all (nothing was checked) or readelf is missing.
set -euo pipefail

if [[ $# -ne 1 || ! -d "$1" ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
if ! command -v readelf >/dev/null 2>&1; then
  echo "readelf not found: install binutils" >&2
  exit 2
fi

dir="$1"
checked=0
offenders=()
# ELF executables and shared objects, found by their magic and header type among executable
# files and *.so* (object files, archives and scripts are skipped).
while IFS= read -r -d '' file; do
  [[ "$(head -c 4 "$file" 2>/dev/null | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
  type="$(readelf -h "$file" 2>/dev/null | awk -F: '/^ *Type:/ {print $2}')"
  case "$type" in
    *EXEC* | *DYN*) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  needed="$(readelf -d "$file" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')"
  if grep -q '^libcuda\.' <<<"$needed"; then
    offenders+=("$file")
    echo "FAIL  $file needs $(grep '^libcuda\.' <<<"$needed" | tr '\n' ' ')"
  else
    echo "ok    $file"
  fi
done < <(find "$dir" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0 | sort -z)

if ((checked == 0)); then
  echo "no executable or shared library under $dir: build first" >&2
  exit 2
fi
if ((${#offenders[@]} > 0)); then
  echo "${#offenders[@]} of $checked ELF files list libcuda in DT_NEEDED; load the driver with" \
    "emm::CudaDriver (dlopen) instead of linking it" >&2
  exit 1
fi
echo "all $checked ELF executables and shared libraries under $dir are free of libcuda"
