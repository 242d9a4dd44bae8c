#!/usr/bin/env bash
# Runs every ```bash block of README.md, docs/authors-guide.md and docs/ci-guide.md, in order,
# and fails on the first one that fails. A block preceded by the line `<!-- not-run -->` is
# skipped (expensive, GPU-only or workflow snippets).
#
#   EMMKIT_BUILD_DIR=/path/to/build scripts/check-docs.sh     (default: build/default)
#
# Convention: the guides write paths as a user sees them after scripts/test.sh, relative to the
# repository root (build/default/...). This script runs each block, in its own `bash -euo
# pipefail`, from a scratch directory that mirrors the repository root with symbolic links
# (nothing is copied) and whose build/default links to EMMKIT_BUILD_DIR. Files the blocks
# write under build/default/ land in that build directory.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EMMKIT_BUILD_DIR:-build/default}"
[[ "$build" = /* ]] || build="$root/$build"
if [[ ! -x "$build/conformance/emm-certify" ]]; then
  echo "check-docs: $build/conformance/emm-certify not found; build first (scripts/test.sh)" >&2
  exit 2
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for entry in "$root"/* "$root"/.[!.]*; do
  [[ -e "$entry" ]] || continue
  [[ "$(basename "$entry")" == build ]] && continue
  ln -s "$entry" "$scratch/$(basename "$entry")"
done
mkdir "$scratch/build"
ln -s "$build" "$scratch/build/default"

# Writes each runnable block to $scratch/blocks/NNN.sh with a first line naming its origin.
mkdir "$scratch/blocks"
count=0
for doc in README.md docs/authors-guide.md docs/ci-guide.md; do
  count=$(awk -v doc="$doc" -v dir="$scratch/blocks" -v n="$count" '
    /^<!-- not-run -->[[:space:]]*$/ { skip = 1; next }
    !inblock && /^```bash[[:space:]]*$/ {
      inblock = 1; n++; out = sprintf("%s/%03d.sh", dir, n)
      if (skip) { out = "/dev/null"; n-- }
      else printf "# %s:%d\n", doc, NR > out
      skip = 0; next
    }
    inblock && /^```[[:space:]]*$/ { inblock = 0; if (out != "/dev/null") close(out); next }
    inblock { print > out; next }
    /[^[:space:]]/ { skip = 0 }
    END { print n }
  ' "$root/$doc")
done

if ((count == 0)); then
  echo "check-docs: no runnable bash blocks found" >&2
  exit 1
fi
cd "$scratch"
for block in blocks/*.sh; do
  origin="$(head -n 1 "$block" | sed 's/^# //')"
  echo "==================== $origin ===================="
  sed 1d "$block"
  echo "--------------------"
  if ! bash -euo pipefail "$block"; then
    echo "check-docs: FAILED: the block at $origin" >&2
    exit 1
  fi
done
echo "check-docs: all $count runnable blocks passed"
