#!/usr/bin/env bash
# python.pip_install: python/ installs with pip (offline, from a copy, so the source tree stays
# clean) and the installed package works without PYTHONPATH tricks: `import emmkit`, the
# `emmkit` command and `python3 -m emmkit` print their usage, and pytest finds the plugin
# through its pytest11 entry point.
#
#   check_pip_install.sh PYTHON SOURCE_DIR
set -euo pipefail
python="$1"
source_dir="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
cp -r "$source_dir/python/pyproject.toml" "$source_dir/python/emmkit" "$work/src/"
if ! "$python" -c "import setuptools, wheel" 2>/dev/null ||
  ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "python.pip_install: pip, setuptools or wheel missing for $python (apt: python3-pip" \
    "python3-setuptools python3-wheel)" >&2
  exit 1
fi
"$python" -m pip install --quiet --no-build-isolation --no-deps --no-index --target \
  "$work/site" "$work/src"
export PYTHONPATH="$work/site"
"$python" - <<'PY'
import importlib.metadata as metadata

import emmkit

plugins = [e for e in metadata.entry_points(group="pytest11") if e.name == "emmkit"]
assert [e.value for e in plugins] == ["emmkit.pytest_plugin"], plugins
scripts = [e for e in metadata.entry_points(group="console_scripts") if e.name == "emmkit"]
assert [e.value for e in scripts] == ["emmkit.__main__:entry_point"], scripts
assert callable(emmkit.certify)
print("installed:", metadata.version("emmkit"), "pytest11 and console_scripts registered")
PY
status=0
"$work/site/bin/emmkit" >"$work/usage" 2>&1 || status=$?
grep -q "python3 -m emmkit certify MODULE" "$work/usage" && ((status == 2)) || {
  echo "python.pip_install: the emmkit command did not print its usage (exit $status)" >&2
  cat "$work/usage" >&2
  exit 1
}
if "$python" -c "import pytest" 2>/dev/null; then
  "$python" -m pytest --help -p no:cacheprovider >"$work/pytest-help" 2>&1 || true
  grep -q -- "--emm-plugin" "$work/pytest-help" || {
    echo "python.pip_install: pytest did not load the installed plugin (no --emm-plugin)" >&2
    exit 1
  }
fi
echo "python.pip_install: ok"
