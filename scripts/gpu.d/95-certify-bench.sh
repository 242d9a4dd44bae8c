#!/usr/bin/env bash
# GPU step (run by scripts/gpu.sh): the certification wall time of the reference plugin, from
# the release preset's emm_bench_certify (suites/benchmarks/certify_bench.cpp), on both backends
# and in every isolation mode (worker: the default; clause: --isolation clause; in-process), in
# one run so that the ratios compare like with like. Writes $OUT/certify_bench.json and checks
# the targets for the default (worker) mode at the default budget: <= 2 s on one GPU (3 s on
# two), <= 500 ms on the fake backend (a target set for 2 cores; this machine has more). Exit 1 when a target is missed or a
# benchmark reports an error; a machine without a GPU skips the GPU target with the reason.
# Then "where the time goes": one more GPU certification of the reference plugin with each
# console line stamped with the milliseconds since the start (the probe, the worker's CUDA start
# and every clause show as steps), beside what a bare CUDA start (cuInit, the primary context,
# one synchronise) costs on this machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bench=build/release/suites/benchmarks/emm_bench_certify
out="${OUT:-build/gpu-out}"
if [[ ! -x "$bench" ]]; then
  echo "certify benchmark: $bench not found; build the release preset first" >&2
  exit 2
fi
mkdir -p "$out"
"$bench" --benchmark_filter='^Certify/' --benchmark_out="$out/certify_bench.json" \
  --benchmark_out_format=json
status=0
python3 - "$out/certify_bench.json" <<'PY' || status=1
import json, os, subprocess, sys

import shutil
# Issue 20's targets at the default budget (the property engine included): the fake within
# 0.5 s on 2 cores; the gpu within 2 s on one GPU and 3 s on two (each clause runs on every
# device the machine has).
def gpu_count():
    if shutil.which("nvidia-smi") is None:
        return 1
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return max(1, sum(1 for line in listing.splitlines() if line.startswith("GPU ")))
GPUS = gpu_count()
TARGETS_MS = {("reference", "gpu", "worker"): 2000.0 if GPUS < 2 else 3000.0,
              ("reference", "fake", "worker"): 500.0}
UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
with open(sys.argv[1]) as report:
    entries = json.load(report)["benchmarks"]
times, status = {}, 0
for entry in entries:
    name = entry["name"].split("/")
    key = tuple(name[1:4])
    if entry.get("error_occurred"):
        print(f"{entry['name']}: not run ({entry.get('error_message')})")
        if key[1] != "gpu" or "no GPU" not in entry.get("error_message", ""):
            status = 1
        continue
    times[key] = entry["real_time"] * UNIT_MS[entry.get("time_unit", "ns")]
    print(f"{entry['name']}: {times[key]:.0f} ms ({entry.get('label', '')})")
for (plugin, backend, mode), target in TARGETS_MS.items():
    if (plugin, backend, mode) not in times:
        continue
    took = times[(plugin, backend, mode)]
    clause = times.get((plugin, backend, "clause"))
    ratio = f"; --isolation clause took {clause / took:.1f}x as long" if clause else ""
    verdict = "meets" if took <= target else "MISSES"
    # The fake target is set for a 2-core machine (CI's): elsewhere it is shown, not enforced.
    enforced = backend == "gpu" or os.cpu_count() == 2
    note = "" if enforced else f" (set for 2 cores; this host has {os.cpu_count()}: not enforced)"
    print(f"target {plugin}/{backend}/{mode}: {took:.0f} ms {verdict} <= {target:.0f} ms{ratio}{note}")
    status |= enforced and took > target
sys.exit(status)
PY

certify=build/release/conformance/emm-certify
plugin=build/release/conformance/libemm_reference_plugin.so
if [[ -x "$certify" && -f "$plugin" ]]; then
  echo
  echo "where the time goes (reference plugin, gpu backend, worker isolation):"
  python3 - "$certify" "$plugin" <<'PY' || true
import ctypes, subprocess, sys, time

start = time.monotonic()
child = subprocess.Popen([sys.argv[1], "--plugin", sys.argv[2], "--backend", "gpu"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
for line in child.stdout:
    print(f"{(time.monotonic() - start) * 1e3:7.0f} ms  {line.rstrip()}")
print(f"{(time.monotonic() - start) * 1e3:7.0f} ms  exit status {child.wait()}")
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as error:
    print(f"bare CUDA start: not measured ({error})")
    sys.exit(0)
begin = time.monotonic()
context = ctypes.c_void_p()
steps = [("cuInit", lambda: cuda.cuInit(0)),
         ("cuDevicePrimaryCtxRetain", lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0)),
         ("cuCtxSetCurrent", lambda: cuda.cuCtxSetCurrent(context)),
         ("cuCtxSynchronize", lambda: cuda.cuCtxSynchronize())]
for name, call in steps:
    before = time.monotonic()
    result = call()
    print(f"bare CUDA start: {name} {(time.monotonic() - before) * 1e3:.0f} ms (result {result})")
print(f"bare CUDA start: {(time.monotonic() - begin) * 1e3:.0f} ms in all")
PY
fi
exit "$status"
