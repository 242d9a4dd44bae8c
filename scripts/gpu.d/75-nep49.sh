#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): NEP 49 on the GPU (docs/nep49-handlers.md).
#   1. NumPy's own default handler, certified with `emm-certify --nep49` (fake and gpu columns);
#   2. the pinned example (examples/nep49_pinned), certified through --nep49 and --nep49-library,
#      with the reference manager and with the pool example as EMM_CUDA_MEMORY_MANAGER: its
#      arrays are then real cuMemHostAlloc memory;
#   3. `with emm_pinned(): np.empty(...)` in a plain Python process on the GPU;
#   4. emm_bench_nep49 (release preset) on the gpu backend: pinned vs pageable host-to-device
#      bandwidth at 1 MiB, 64 MiB and 1 GiB and the handlers' allocation cost, with the ratios.
# Reports, logs and the benchmark JSON go to $OUT/nep49/ (copy them to docs/gpu-runs/).
# The bridge embeds the Python it was built with: when the default build has none (the NumPy
# here is not /usr/bin/python3's), the step reconfigures with EMM_NEP49_PYTHON (default: the
# python3 on PATH). Without a GPU the gpu columns say why and only the fake ones run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build/default
certify="$build/conformance/emm-certify"
out="${OUT:-$build/gpu-out}/nep49"
mkdir -p "$out"
# The interpreter the build's bridge embeds, else EMM_NEP49_PYTHON, else the python3 on PATH.
python="$(sed -n 's/^EMM_NEP49_PYTHON_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)"
python="${EMM_NEP49_PYTHON:-${python:-$(command -v python3)}}"
if [[ ! -f "$build/nep49/libemm_nep49_numpy.so" ]]; then
  echo "nep49: no NumPy bridge in $build; configuring with EMM_NEP49_PYTHON=$python"
  cmake --preset default -DEMM_NEP49_PYTHON="$python" >"$out/configure.log"
  python="$(sed -n 's/^EMM_NEP49_PYTHON_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")"
fi
cmake --build --preset default --target emm-certify emm_nep49_pinned emm_nep49_pinned_module \
  emm_example_pool >"$out/build.log"
if [[ ! -f "$build/nep49/libemm_nep49_numpy.so" ]]; then
  echo "nep49: the NumPy bridge was not built (see $out/configure.log): $python needs NumPy >= 1.22" \
    "and CPython's headers" >&2
  exit 1
fi
"$python" -c 'import numpy, platform; print("nep49: NumPy", numpy.__version__, "Python", platform.python_version())' |
  tee "$out/versions.txt"

pinned_dir="$build/examples/nep49_pinned"
pool="$build/examples/libemm_example_pool.so"
failed=()
# certify NAME MANAGER ARGS...: one certification on every backend, reports under $out.
certify() {
  local name="$1" manager="$2"
  shift 2
  echo "==================== nep49: $name ===================="
  local status=0
  EMM_CUDA_MEMORY_MANAGER="$manager" PYTHONPATH="$pinned_dir" "$certify" "$@" --backend all \
    --json "$out/$name.json" --markdown "$out/$name.md" --logs "$out/$name.logs" || status=$?
  [[ $status == 0 ]] || failed+=("$name (exit $status)")
}
certify numpy_default default --nep49 numpy:PyDataMem_DefaultHandler
certify pinned_module_default default --nep49 _emm_nep49_pinned:handler
certify pinned_module_pool "$pool" --nep49 _emm_nep49_pinned:handler
certify pinned_mapped_library_default default \
  --nep49-library "$pinned_dir/libemm_nep49_pinned.so:emm_nep49_pinned_mapped_handler"

gpu_ran="$("$python" -c 'import json, sys
print(any(b["name"] == "gpu" and b["ran"] for b in json.load(open(sys.argv[1]))["backends"]))' \
  "$out/numpy_default.json" 2>/dev/null || echo False)"
if [[ "$gpu_ran" != True ]]; then
  echo "nep49: no GPU backend (see $out/numpy_default.md): the Python demo and the benchmark" \
    "need one; ${#failed[@]} certification failure(s)${failed:+: ${failed[*]}}"
  ((${#failed[@]} == 0))
  exit
fi

echo "==================== nep49: emm_pinned() in Python ===================="
PYTHONPATH="$pinned_dir" "$python" - <<'PY' 2>&1 | tee "$out/python_demo.txt" || failed+=("python demo")
import numpy as np
from emm_nep49_pinned import emm_pinned, is_pinned, live_blocks
with emm_pinned():
    a = np.arange(1 << 20, dtype=np.float64)
with emm_pinned(mapped=True):
    b = np.zeros((1024, 1024))
assert is_pinned(a) and is_pinned(b) and not is_pinned(np.empty(10)), "arrays not pinned"
assert a.sum() == (1 << 20) * ((1 << 20) - 1) / 2 and not b.any()
print("nep49: pinned arrays on the GPU: ok; live blocks", live_blocks(False), live_blocks(True))
PY

bench=build/release/suites/benchmarks/emm_bench_nep49
if [[ -x "$bench" ]]; then
  echo "==================== nep49: benchmark (gpu) ===================="
  "$bench" --benchmark_filter='/(gpu|host)/' --benchmark_out="$out/bench.json" \
    --benchmark_out_format=json | tee "$out/bench.txt" || failed+=("benchmark")
  "$python" - "$out/bench.json" <<'PY' | tee "$out/bench_ratios.md" || true
import json, sys
rows = {b["name"].removesuffix("/real_time"): b for b in json.load(open(sys.argv[1]))["benchmarks"]}
print("| bytes | pageable GB/s | pinned GB/s | pinned / pageable |")
print("|---:|---:|---:|---:|")
for size in (1 << 20, 64 << 20, 1 << 30):
    page, pin = rows.get(f"Nep49HtoD/pageable/gpu/{size}"), rows.get(f"Nep49HtoD/pinned/gpu/{size}")
    if page and pin and "bytes_per_second" in page and "bytes_per_second" in pin:
        p, q = page["bytes_per_second"] / 1e9, pin["bytes_per_second"] / 1e9
        print(f"| {size} | {p:.2f} | {q:.2f} | {q / p:.2f} |")
print()
print("| bytes | libc us | pinned (reference) us | pinned (pool) us |")
print("|---:|---:|---:|---:|")
for size in (1 << 20, 64 << 20, 1 << 30):
    cells = [rows.get(f"Nep49Alloc/{h}/{b}/{size}") for h, b in
             (("libc", "host"), ("pinned_reference", "gpu"), ("pinned_pool", "gpu"))]
    print(f"| {size} | " + " | ".join(f"{c['real_time']:.1f}" if c else "-" for c in cells) + " |")
PY
else
  echo "nep49: $bench not built (the release preset builds the benchmarks); no bandwidth table"
fi

echo "nep49 on gpu: ${#failed[@]} failure(s)${failed:+: ${failed[*]}} (reports in $out/)"
((${#failed[@]} == 0))
