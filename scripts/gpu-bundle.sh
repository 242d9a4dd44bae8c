#!/usr/bin/env bash
# Packs what the GPU runs need from a build tree into one folder, for a GPU machine that has the
# NVIDIA driver but no GoogleTest, Boost or compiler set-up (such as the `device` machines):
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]      # here: defaults build/default, build/gpu-bundle
#   BUNDLE_DIR/run.sh                                   # there: runs every GPU suite, logs to $OUT
#
# With EMMKIT_BENCH_BUILD=<a release build with EMMKIT_BUILD_BENCHMARKS=ON> the benchmarks are
# packed too, and run.sh ends with scripts/bench.sh (which writes docs/performance.md into $OUT).
#
# The executables keep the absolute paths they were built with (RPATH, the IPC importer's path),
# so run.sh first links each build tree's original absolute path to its bundled copy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build="$(cd "${1:-build/default}" && pwd)"
bundle="${2:-build/gpu-bundle}"
rm -rf "$bundle"
mkdir -p "$bundle/tree" "$bundle/lib"
bundle="$(cd "$bundle" && pwd)"

# pack SOURCE_BUILD DEST_TREE FILE...: copies FILEs (relative to SOURCE_BUILD) keeping their paths.
pack() {
  local from=$1 to=$2
  shift 2
  local f
  for f in "$@"; do
    if [[ ! -e "$from/$f" ]]; then
      echo "gpu-bundle: missing $from/$f (not built?)" >&2
      exit 1
    fi
    mkdir -p "$to/$(dirname "$f")"
    cp -P "$from/$f" "$to/$f"
  done
}

# The fully versioned libemm_reference (libemm_reference.so.<project version>) of build tree $1:
# the file its SONAME link points to, so the version is read from the build, not written here.
versioned_reference() {
  local target
  target="$(readlink "$1/reference/libemm_reference.so.0")" || {
    echo "gpu-bundle: $1/reference/libemm_reference.so.0 is not a link (not built?)" >&2
    return 1
  }
  echo "reference/$target"
}

reference_so="$(versioned_reference "$build")"
files=(
  reference/libemm_reference.so reference/libemm_reference.so.0 "$reference_so"
  conformance/emm-certify conformance/emm-ipc-importer conformance/libemm_reference_plugin.so
  suites/gpu/emm_gpu_driver_tests suites/gpu/libemm_stub_cuda_driver_v1.so
  suites/gpu/libemm_stub_cuda_driver_v2.so
  suites/reference_gpu/emm_reference_gpu_test
  suites/reference_gpu/emm_reference_soak_test
  suites/conformance/emm_conformance_reference_test suites/boost/emm_conformance_boost_reference
)
for example in pool stream_ordered logging host_only_minimal; do
  files+=("examples/libemm_example_${example}.so" "examples/${example}_conformance")
done
files+=(examples/host_only_minimal_boost_conformance)

pack "$build" "$bundle/tree" "${files[@]}"
echo "$build" >"$bundle/build-path"
if [[ -n "${EMMKIT_BENCH_BUILD:-}" ]]; then
  bench_build="$(cd "$EMMKIT_BENCH_BUILD" && pwd)"
  bench_reference_so="$(versioned_reference "$bench_build")"
  pack "$bench_build" "$bundle/bench-tree" reference/libemm_reference.so.0 \
    "$bench_reference_so" conformance/emm-certify conformance/emm-ipc-importer \
    conformance/libemm_reference_plugin.so suites/benchmarks/emm_bench_alloc_pair \
    suites/benchmarks/emm_bench_certify suites/benchmarks/emm_bench_random_replay \
    suites/benchmarks/emm_bench_threads
  echo "$bench_build" >"$bundle/bench-build-path"
  mkdir -p "$bundle/scripts"
  cp scripts/bench.sh scripts/bench_report.py "$bundle/scripts/"
  cp /usr/lib/x86_64-linux-gnu/libbenchmark.so.1* "$bundle/lib/" 2>/dev/null || true
  git rev-parse --short HEAD >"$bundle/commit" 2>/dev/null || true
fi
# Debug info is not needed on the GPU machine and keeps the bundle small.
find "$bundle/tree" "$bundle"/bench-tree -type f \( -perm -u+x -o -name '*.so*' \) -exec strip --strip-debug {} + 2>/dev/null || true
# Shared libraries the GPU machine may lack.
for lib in libboost_unit_test_framework.so.1.74.0; do
  [[ -e /usr/lib/x86_64-linux-gnu/$lib ]] && cp /usr/lib/x86_64-linux-gnu/$lib "$bundle/lib/"
done
cp scripts/check-no-libcuda.sh "$bundle/"

cat >"$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every GPU suite of the bundle. Reports (JSON, Markdown, JUnit certificates, benchmark
# results) go to a results folder, packed at the end into $OUT/results.tgz next to
# performance.md/.png, so that few files come back from a device machine.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
final_out="${OUT:-$here/out}"
out="$here/results"
mkdir -p "$out" "$final_out"
build="$(cat "$here/build-path")"
mkdir -p "$(dirname "$build")"
[[ -e "$build" ]] || ln -s "$here/tree" "$build"
if [[ -f "$here/bench-build-path" ]]; then
  bench_build="$(cat "$here/bench-build-path")"
  mkdir -p "$(dirname "$bench_build")"
  [[ -e "$bench_build" ]] || ln -s "$here/bench-tree" "$bench_build"
fi
export LD_LIBRARY_PATH="$here/lib:${LD_LIBRARY_PATH:-}"
export EMM_LOGGING_PLUGIN_CSV="$out/logging-events.csv"
failed=()
step() {  # step NAME COMMAND...
  local name=$1; shift
  echo; echo "==================== $name"
  local start=$SECONDS
  "$@"
  local rc=$?
  echo "---- $name: exit $rc, $((SECONDS - start)) s"
  ((rc == 0)) || failed+=("$name")
}
cd "$build"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
step "no libcuda in DT_NEEDED" bash "$here/check-no-libcuda.sh" "$here/tree"
step "CUDA driver suite" suites/gpu/emm_gpu_driver_tests --gtest_brief=1
step "reference system on the GPU (incl. two-process IPC)" suites/reference_gpu/emm_reference_gpu_test
step "soak of the default manager" suites/reference_gpu/emm_reference_soak_test
step "typed conformance suite: reference manager on gpu" \
  suites/conformance/emm_conformance_reference_test --gtest_filter='*/1.*' --gtest_brief=1
for example in pool stream_ordered logging host_only_minimal; do
  step "typed conformance suite: $example on gpu" \
    examples/${example}_conformance --gtest_filter='*/1.*' --gtest_brief=1
done
step "Boost.Test flavour: reference manager" suites/boost/emm_conformance_boost_reference --log_level=test_suite --report_level=short
step "Boost.Test flavour: host_only_minimal" examples/host_only_minimal_boost_conformance --report_level=short
for plugin in conformance/libemm_reference_plugin.so examples/libemm_example_pool.so \
              examples/libemm_example_stream_ordered.so examples/libemm_example_logging.so \
              examples/libemm_example_host_only_minimal.so; do
  name=$(basename "$plugin" .so)
  step "emm-certify $name (fake+gpu)" conformance/emm-certify --plugin "$plugin" --backend all \
    --json "$out/$name.json" --markdown "$out/$name.md" --junit "$out/$name.junit.xml"
done
for backend in fake gpu; do
  start=$(date +%s%N)
  conformance/emm-certify --plugin conformance/libemm_reference_plugin.so --backend $backend \
    --json /dev/null >/dev/null 2>&1
  echo "full certification wall time, $backend backend: $((($(date +%s%N) - start) / 1000000)) ms"
done
if [[ -n "${bench_build:-}" ]]; then
  # bench.sh writes docs/performance.md relative to its working directory: give it a scratch one.
  mkdir -p "$out/bench-root/docs" "$out/bench-root/scripts"
  cp "$here"/scripts/bench* "$out/bench-root/scripts/"
  step "benchmarks (scripts/bench.sh)" env -C "$out/bench-root" \
    EMM_BENCH_CERTIFY="$bench_build/conformance/emm-certify" \
    EMM_IPC_IMPORTER="$bench_build/conformance/emm-ipc-importer" \
    EMM_BENCH_PLUGIN_REFERENCE="$bench_build/conformance/libemm_reference_plugin.so" \
    EMMKIT_COMMIT="$(cat "$here/commit" 2>/dev/null)" OUT="$out/bench" \
    bash scripts/bench.sh --no-build --bin-dir "$bench_build/suites/benchmarks"
  cp "$out/bench-root/docs/performance.md" "$out/bench-root/docs/performance.png" "$final_out/" 2>/dev/null
fi
tar -C "$here" -czf "$final_out/results.tgz" results
echo
if ((${#failed[@]})); then
  echo "GPU RUN: ${#failed[@]} step(s) failed: ${failed[*]}"
  exit 1
fi
echo "GPU RUN: all steps passed"
RUN
chmod +x "$bundle/run.sh"
du -sh "$bundle"
