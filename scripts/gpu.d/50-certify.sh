#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh after ctest -L gpu): certify the reference plugin and the
# example plugins on both backends with the default preset's build, then pack the certificates
# (Markdown, JSON, JUnit) into $OUT/certificates.tar.gz.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

status=0
scripts/certify.sh --no-setup --no-build --preset default --backend all || status=$?
if [[ -n "${OUT:-}" && -d build/default/certificates ]]; then
  tar -czf "$OUT/certificates.tar.gz" -C build/default certificates
  echo "certificates: $OUT/certificates.tar.gz"
fi
exit "$status"
