#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): Python EMM plugins through emm-certify --python. Certifies
# examples/python (CuPy- and PyTorch-backed managers, each must be CERTIFIED), numba-cuda's own
# NumbaCUDAMemoryManager (its certificate is recorded, pass or fail), runs the known-bad Python
# zoo (suites/python/zoo: each plugin must be caught) and the pytest plugin over the CuPy
# example. Reports and logs go to $OUT/python/. Needs the default preset built with
# libemm_python (EMMKIT_PYTHON; on the GPU machine pybind11 comes from pip:
# cmake --preset default -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)").
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
out="${OUT:-$build/gpu-out}/python"
mkdir -p "$out"
if [[ ! -x "$certify" ]]; then
  echo "python on gpu: $certify not found; build the default preset first" >&2
  exit 2
fi
if "$certify" --help | grep -q "NOT AVAILABLE"; then
  echo "python on gpu: emm-certify was built without libemm_python:" >&2
  "$certify" --help | grep -A1 "NOT AVAILABLE" >&2
  exit 2
fi
export PYTHONPATH="$PWD/examples/python:$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
# A worker that crashes prints its native stack into the clause's log (and Python's faulthandler
# its Python frames): a crash on a remote machine is then diagnosable from the logs alone.
export EMMKIT_CRASH_STACK=1 PYTHONFAULTHANDLER=1
failed=()

certify_one() {  # name target must-certify [emm-certify options...]
  local name=$1 target=$2 must=$3 status=0
  shift 3
  echo "==================== python: $name ($target) ===================="
  "$certify" --python "$target" "$@" --timeout-s 600 --json "$out/$name.json" \
    --markdown "$out/$name.md" --logs "$out/$name.logs" 2>&1 | tee "$out/$name.txt" || true
  status=${PIPESTATUS[0]}
  echo "python: $name exit $status"
  if [[ $status -eq 2 ]] && grep -q "runs on the gpu backend only" "$out/$name.txt"; then
    echo "python on gpu: SKIPPED (no GPU, reason above)"
    exit 0
  fi
  if [[ $must == yes && $status -ne 0 ]]; then failed+=("$name (exit $status)"); fi
}

certify_one cupy cupy_manager yes
certify_one torch torch_manager yes
# numba-cuda's default manager, as Numba uses it; recorded whatever its verdict. It declares
# nothing, so its capabilities are given: it provides memory info and IPC handles.
certify_one numba_default "numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager" no \
  --capabilities ipc,memory_info

echo "==================== python: known-bad zoo ===================="
python3 suites/python/zoo/check_python_zoo.py --certify "$certify" --work-dir "$out/zoo" \
  2>&1 | tee "$out/zoo.txt"
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("zoo")

echo "==================== python: pytest plugin ===================="
if python3 -c "import pytest" 2>/dev/null; then
  EMMKIT_CERTIFY="$certify" python3 -m pytest -p emmkit.pytest_plugin --emm-plugin cupy_manager \
    --junitxml "$out/pytest.xml" -rs python/emmkit/certified_plugin_test.py 2>&1 |
    tee "$out/pytest.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("pytest")
else
  echo "python on gpu: pytest is not installed here (pip install pytest): pytest step not run" |
    tee "$out/pytest.txt"
fi

echo "==================== python: python3 -m emmkit ===================="
EMMKIT_CERTIFY="$certify" python3 -m emmkit certify torch_manager 2>&1 | tee "$out/emmkit_module.txt"

echo "==================== python: PERF side by side ===================="
# The C++ subjects measured the same way (PERF clauses only: their verdict is PARTIAL).
for cxx in "reference=$build/conformance/libemm_reference_plugin.so" \
           "pool=$build/examples/libemm_example_pool.so"; do
  "$certify" --plugin "${cxx#*=}" --backend gpu --only PERF-1,PERF-2 \
    --json "$out/perf_${cxx%%=*}.json" > "$out/perf_${cxx%%=*}.txt" 2>&1 || true
done
python3 suites/python/perf_table.py "numba-cuda NumbaCUDAMemoryManager=$out/numba_default.json" \
  "CuPy plugin (examples/python)=$out/cupy.json" "PyTorch plugin (examples/python)=$out/torch.json" \
  "reference manager (C++)=$out/perf_reference.json" "pool example (C++)=$out/perf_pool.json" \
  | tee "$out/perf_table.md"

if ((${#failed[@]})); then
  echo "python on gpu: FAILED: ${failed[*]}"
  exit 1
fi
echo "python on gpu: all as expected (reports in $out)"
