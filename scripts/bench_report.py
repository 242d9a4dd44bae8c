#!/usr/bin/env python3
"""Writes docs/performance.md (and its plot) from the JSON files of emmkit's benchmarks.

    scripts/bench_report.py --input build/bench-out --output docs/performance.md \
                            --plot docs/performance.png

--input holds the Google Benchmark JSON files (one per emm_bench_* executable, written with
--benchmark_out) and meta.json (device, driver, commit: written by scripts/bench.sh). The report
has: the run's provenance and the command that reproduces it; tables of every measurement with
speed-ups against the raw driver (cuMemAlloc + cuMemFree) and against CUDA's stream-ordered pool
(cuMemAllocFromPoolAsync + cuMemFreeAsync) from the same run; the kit's performance targets,
each met / not met / not measured; and a PNG plot of ns per operation against the allocation
count of the random-allocations replay. Only the Python standard library is needed: the plot uses matplotlib
when it is installed and otherwise a small PNG writer of its own (zlib + struct).
"""

import argparse
import json
import math
import os
import re
import struct
import sys
import zlib

SUBJECTS = ["raw_driver", "raw_async", "reference", "pool", "stream_ordered"]
PLUGINS = ["reference", "pool", "stream_ordered"]
BACKENDS = ["gpu", "fake"]
PAIR_SIZES = [256, 64 << 10, 1 << 20, 64 << 20]
DEFERRAL_SIZES = [256, 64 << 10]  # DeferralPair (its max_count values are read from the run)
DEFAULT_MAX_COUNT = 10  # NBEP 7's default (DEALLOC-1)
REPLAY_COUNTS = [1000, 10000, 100000]
THREAD_COUNTS = [1, 2, 4, 8, 16]

SUBJECT_TITLES = {
    "raw_driver": "raw driver (cuMemAlloc + cuMemFree)",
    "raw_async": "cuMemAllocAsync + cuMemFreeAsync (CUDA pool, one stream)",
    "reference": "reference NumbaCUDAMemoryManager (deferred frees)",
    "pool": "pool example (PoolMemoryManager)",
    "stream_ordered": "stream_ordered example (StreamOrderedMemoryManager)",
}
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# Parts of a Google Benchmark run name that are options, not parameters.
OPTION_PART = re.compile(r"^(min_time:|min_warmup_time:|real_time$|manual_time$|iterations:|"
                         r"repeats:|threads:|process_time$)")

RMM_ARENA_NS_PER_OP = 330.0  # RMM PR 543 (Titan V, 2020): arena_mr, 1000 allocations, <= 1 MiB
RMM_POOL_NS_PER_OP = 650.0   # same source: pool_mr


# --- reading -------------------------------------------------------------------------------------

class Result:
    """One benchmark run: its parameters, wall time per iteration (ns), counters, or an error."""

    def __init__(self, entry):
        parts = [p for p in entry.get("run_name", entry["name"]).split("/")
                 if not OPTION_PART.match(p)]
        self.family = parts[0]
        self.params = parts[1:]
        self.threads = int(entry.get("threads", 1))
        self.error = entry.get("error_message") if entry.get("error_occurred") else None
        unit = UNIT_NS.get(entry.get("time_unit", "ns"), 1.0)
        self.real_ns = float(entry.get("real_time", 0.0)) * unit
        self.cpu_ns = float(entry.get("cpu_time", 0.0)) * unit
        self.iterations = int(entry.get("iterations", 0))
        self.label = entry.get("label", "")
        self.counters = {k: v for k, v in entry.items() if isinstance(v, (int, float))}


class Results:
    def __init__(self):
        self.by_key = {}
        self.contexts = []

    def add_file(self, path):
        with open(path) as f:
            data = json.load(f)
        self.contexts.append(data.get("context", {}))
        for entry in data.get("benchmarks", []):
            if entry.get("run_type", "iteration") != "iteration":
                continue  # aggregates (mean/median) of --benchmark_repetitions are recomputed
            r = Result(entry)
            key = (r.family,) + tuple(r.params) + ((r.threads,) if r.family == "Threads" else ())
            # With repetitions, keep the fastest (least disturbed) run.
            old = self.by_key.get(key)
            if old is None or (r.error is None and (old.error is not None or r.real_ns < old.real_ns)):
                self.by_key[key] = r

    def get(self, *key):
        return self.by_key.get(tuple(key))

    def context(self, name):
        for c in self.contexts:
            if name in c:
                return c[name]
        return None


def value(result, counter=None):
    """The measurement in ns (or the counter), or None when absent or failed."""
    if result is None or result.error is not None or result.iterations == 0:
        return None
    if counter is not None:
        return result.counters.get(counter)
    return result.real_ns


# --- formatting ----------------------------------------------------------------------------------

def fmt_ns(ns):
    if ns is None:
        return "—"
    if ns < 1e3:
        return "%.0f ns" % ns if ns >= 100 else "%.1f ns" % ns
    if ns < 1e6:
        return "%.3g µs" % (ns / 1e3)
    if ns < 1e9:
        return "%.3g ms" % (ns / 1e6)
    return "%.3g s" % (ns / 1e9)


def fmt_ratio(r):
    if r is None:
        return "—"
    return "%.3g" % r if r < 100 else "%.0f" % r


def fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d %s" % (n // size, unit)
    return "%d B" % n


def ratio(baseline, measured):
    if baseline is None or measured is None or measured <= 0:
        return None
    return baseline / measured


def cell(ns, raw=None, async_=None, show_raw=True, show_async=True):
    """'2.61 µs (r 23, a 0.25)': time, then speed-ups against the raw driver / cuMemAllocAsync."""
    if ns is None:
        return "—"
    notes = []
    if show_raw and raw is not None:
        notes.append("r " + fmt_ratio(ratio(raw, ns)))
    if show_async and async_ is not None:
        notes.append("a " + fmt_ratio(ratio(async_, ns)))
    return fmt_ns(ns) + (" (" + ", ".join(notes) + ")" if notes else "")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def errors_of(results, backend):
    """Distinct skip/error messages of one backend (e.g. the no-GPU reason)."""
    seen = []
    for key, r in sorted(results.by_key.items(), key=lambda kv: str(kv[0])):
        if r.error and backend in key and r.error not in seen:
            seen.append(r.error)
    return seen


def backend_ran(results, backend):
    return any(r.error is None and r.iterations > 0 and backend in key
               for key, r in results.by_key.items())


# --- sections ------------------------------------------------------------------------------------

def pair_section(results, backend):
    rows = []
    for subject in SUBJECTS:
        row = [SUBJECT_TITLES[subject]]
        for size in PAIR_SIZES:
            raw = value(results.get("AllocPair", "raw_driver", backend, str(size)))
            asy = value(results.get("AllocPair", "raw_async", backend, str(size)))
            ns = value(results.get("AllocPair", subject, backend, str(size)))
            row.append(cell(ns, raw, asy, subject != "raw_driver", subject != "raw_async"))
        rows.append(row)
    return table(["subject"] + [fmt_bytes(s) for s in PAIR_SIZES], rows)


def deferral_ratio(results, backend, size, count):
    """(ns per pair, speed-up against the raw driver pair of the same run) of DeferralPair."""
    ns = value(results.get("DeferralPair", "reference", backend, str(size),
                           "max_count:%d" % count))
    raw = value(results.get("AllocPair", "raw_driver", backend, str(size)))
    return ns, ratio(raw, ns)


def deferral_counts(results, backend):
    """Every max_count of the DeferralPair rows of this backend, ascending."""
    found = {int(k[4].split(":", 1)[1]) for k in results.by_key
             if k[0] == "DeferralPair" and k[1:3] == ("reference", backend) and len(k) == 5
             and k[4].startswith("max_count:") and k[4].split(":", 1)[1].isdigit()}
    return sorted(found)


def measured_counts(results, backend, size):
    """[(max_count, r)] of the DeferralPair rows of one size that ran and have a raw pair."""
    rows = []
    for count in deferral_counts(results, backend):
        r = deferral_ratio(results, backend, size, count)[1]
        if r is not None:
            rows.append((count, r))
    return rows


def smallest_count_reaching(results, backend, size, target):
    """The smallest measured max_count whose pair is >= target × faster than the raw pair."""
    for count, r in measured_counts(results, backend, size):
        if r >= target:
            return count
    return None


def ordinal(n):
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return "%d%s" % (n, suffix)


def deferral_section(results, backend):
    counts = deferral_counts(results, backend)
    if not any(deferral_ratio(results, backend, size, c)[0] is not None
               for c in counts for size in DEFERRAL_SIZES):
        return None
    rows = [[SUBJECT_TITLES["raw_driver"], "—"]
            + [fmt_ns(value(results.get("AllocPair", "raw_driver", backend, str(size))))
               for size in DEFERRAL_SIZES]]
    for count in counts:
        label = "reference, max_count %d%s" % (
            count, " (NBEP 7's default)" if count == DEFAULT_MAX_COUNT else "")
        row = [label, "every %s free" % ordinal(count + 1)]
        for size in DEFERRAL_SIZES:
            ns, r = deferral_ratio(results, backend, size, count)
            row.append("—" if ns is None else
                       fmt_ns(ns) + (" (r %s)" % fmt_ratio(r) if r is not None else ""))
        rows.append(row)
    return table(["subject (max_count: EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT)", "flush"]
                 + ["%s (ns/pair, r)" % fmt_bytes(s) for s in DEFERRAL_SIZES], rows)


def live_section(results, backend):
    rows = []
    raw_pair = value(results.get("LivePair", "raw_driver", backend, "live:1000", "bytes:256"))
    asy_pair = value(results.get("LivePair", "raw_async", backend, "live:1000", "bytes:256"))
    raw_repl = value(results.get("LiveReplace", "raw_driver", backend, "live:1000"))
    asy_repl = value(results.get("LiveReplace", "raw_async", backend, "live:1000"))
    for subject in SUBJECTS:
        pair = value(results.get("LivePair", subject, backend, "live:1000", "bytes:256"))
        repl = value(results.get("LiveReplace", subject, backend, "live:1000"))
        rows.append([SUBJECT_TITLES[subject],
                     cell(pair, raw_pair, asy_pair, subject != "raw_driver", subject != "raw_async"),
                     cell(repl, raw_repl, asy_repl, subject != "raw_driver", subject != "raw_async")])
    return table(["subject", "256 B pair, 1000 live", "replace one of 1000 live (1 B – 1 MiB)"],
                 rows)


def replay_ns_per_op(results, subject, backend, count):
    r = results.get("Replay", subject, backend, str(count))
    v = value(r, "ns_per_op")
    if v is None and value(r) is not None:
        v = value(r) / (2 * count)
    return v


def replay_section(results, backend):
    rows = []
    for subject in SUBJECTS:
        row = [SUBJECT_TITLES[subject]]
        for count in REPLAY_COUNTS:
            raw = replay_ns_per_op(results, "raw_driver", backend, count)
            asy = replay_ns_per_op(results, "raw_async", backend, count)
            ns = replay_ns_per_op(results, subject, backend, count)
            row.append(cell(ns, raw, asy, subject != "raw_driver", subject != "raw_async"))
        rows.append(row)
    peaks = []
    for count in REPLAY_COUNTS:
        for subject in SUBJECTS:
            peak = value(results.get("Replay", subject, backend, str(count)), "peak_live")
            if peak:
                peaks.append("N = %d: %d" % (count, peak))
                break
    text = table(["subject"] + ["N = %d (ns/op)" % c for c in REPLAY_COUNTS], rows)
    if peaks:
        text += "\n\nPeak live allocations in the trace: " + "; ".join(peaks) + "."
    return text


def throughput(results, subject, backend, threads):
    return value(results.get("Threads", subject, backend, threads), "items_per_second")


def threads_section(results, backend):
    rows = []
    for subject in SUBJECTS:
        one = throughput(results, subject, backend, 1)
        row = [SUBJECT_TITLES[subject]]
        for n in THREAD_COUNTS:
            t = throughput(results, subject, backend, n)
            if t is None:
                row.append("—")
            else:
                scale = ratio(t, one) if n > 1 else None
                row.append("%.3g M/s" % (t / 1e6) + (" (×%.2f)" % scale if scale else ""))
        rows.append(row)
    return table(["subject"] + ["%d thread%s" % (n, "s" if n > 1 else "") for n in THREAD_COUNTS],
                 rows)


def nep49_section(results):
    """Pinned (examples/nep49_pinned) against pageable NumPy array memory, per backend."""
    sizes = (1 << 20, 64 << 20, 1 << 30)
    out = []
    for backend in ("gpu", "fake"):
        rows = []
        for size in sizes:
            page = value(results.get("Nep49HtoD", "pageable", backend, str(size)),
                         "bytes_per_second")
            pin = value(results.get("Nep49HtoD", "pinned", backend, str(size)), "bytes_per_second")
            if page is None and pin is None:
                continue
            rows.append([fmt_bytes(size),
                         "%.2f" % (page / 1e9) if page else "-",
                         "%.2f" % (pin / 1e9) if pin else "-",
                         fmt_ratio(pin / page) if page and pin else "-"])
        if rows:
            out.append("Host-to-device copy (cuMemcpyHtoD) on the %s backend, GB/s:\n" % backend)
            out.append(table(["array", "pageable (NumPy default)", "pinned handler",
                              "pinned / pageable"], rows) + "\n")
        rows = []
        for size in sizes:
            cells = [value(results.get("Nep49Alloc", "libc", "host", str(size)))]
            cells += [value(results.get("Nep49Alloc", handler, backend, str(size)))
                      for handler in ("pinned_reference", "pinned_pool")]
            if all(c is None for c in cells[1:]):
                continue
            rows.append([fmt_bytes(size)] + [fmt_ns(c) if c is not None else "-" for c in cells])
        if rows:
            out.append("malloc + free through the handler on the %s backend:\n" % backend)
            out.append(table(["bytes", "libc (NumPy 1.x default)", "pinned, reference manager",
                              "pinned, pool plugin"], rows) + "\n")
    return "\n".join(out)


def initialize_section(results):
    rows = []
    for plugin in PLUGINS:
        row = [SUBJECT_TITLES[plugin]]
        for backend in BACKENDS:
            row.append(fmt_ns(value(results.get("Initialize", plugin, backend))))
            row.append(fmt_ns(value(results.get("Activate", plugin, backend))))
        rows.append(row)
    header = ["plugin"]
    for backend in BACKENDS:
        header += ["initialize() (%s)" % backend, "Context::prepare_for_use() (%s)" % backend]
    return table(header, rows)


def certify_section(results):
    rows = []
    for key, r in sorted(results.by_key.items()):
        if key[0] != "Certify":
            continue
        plugin, backend = key[1], key[2]
        mode = key[3] if len(key) > 3 else "worker"
        if r.error:
            rows.append([plugin, backend, mode, "—", "—", "not run: " + r.error])
        else:
            cpu = r.counters.get("cpu_ms")
            rows.append([plugin, backend, mode, fmt_ns(r.real_ns),
                         fmt_ns(cpu * 1e6) if cpu is not None else "—", r.label or "—"])
    if not rows:
        return "_No certification timings in this run._"
    return ("Modes: **worker** (the default: one worker process per backend), **clause** "
            "(`--isolation clause`: one process per clause), **in-process** (`--in-process`: "
            "no isolation, the floor).\n\n" +
            table(["plugin", "backend", "mode", "wall time (emm-certify, whole catalogue)",
                   "processor time (all its processes)", "verdict"], rows))


COMPONENT_NOTES = {
    "ctx_get_current": "the driver query Context::make_current() makes on every memalloc",
    "context_memalloc_dispatch": "Context::memalloc + release through a plugin returning a "
                                 "ready pointer: the host's share of every pair",
    "driver_batched_pairs": "256 B cuMemAlloc pairs freed in batches, per pair (batch 11 is "
                            "the reference manager's default flush): its deferral with zero "
                            "host overhead",
    "memory_pointer_with_finalizer": "make_shared<MemoryPointer> with a finalizer + release: "
                                     "the object-model floor of any plugin's pair",
    "auto_free_pointer_own": "make_shared<AutoFreePointer>()->own() + release: the reference "
                             "manager's object model",
    "pending_deallocs_add_item": "one deferred free (queue, and a flush every 11th)",
    "mutex_lock_unlock": ("an uncontended std::mutex (a pool pair that misses the thread cache "
                          "takes two)"),
    "slab_allocator_pair_1000_live": "the pool's bookkeeping alone: SlabAllocator "
                                     "allocate(256) + free with 1000 blocks live",
}


def component(results, name, backend, *params):
    r = results.get("Component", name, backend, *params)
    v = value(r, "per_pair_ns")
    return v if v is not None else value(r)


def component_section(results):
    rows = []
    variants = sorted({(k[1],) + tuple(k[3:]) for k in results.by_key if k[0] == "Component"})
    for name, *params in variants:
        cells = []
        for b in ("gpu", "fake", "host"):
            r = results.get("Component", name, b, *params)
            text = fmt_ns(component(results, name, b, *params))
            alloc, free = value(r, "alloc_ns"), value(r, "free_ns")
            if alloc is not None and free is not None:
                text += " (alloc %s, free %s)" % (fmt_ns(alloc), fmt_ns(free))
            cells.append(text)
        if all(c == "—" for c in cells):
            continue
        label = name + (" (" + ", ".join(params) + ")" if params else "")
        rows.append([label, COMPONENT_NOTES.get(name, "")] + cells)
    if not rows:
        return None
    return table(["component", "what it is", "gpu", "fake", "host only"], rows)


def limits_section(results):
    """Sums of components against the targets: where the floor of each design lies."""
    lines = []
    # The GPU's figures when it ran; otherwise the fake's, as an indication.
    for b in (["gpu"] if backend_ran(results, "gpu") else ["fake"]):
        mp = component(results, "memory_pointer_with_finalizer", "host")
        slab = component(results, "slab_allocator_pair_1000_live", "host")
        dispatch = component(results, "context_memalloc_dispatch", b)
        mutex = component(results, "mutex_lock_unlock", "host")
        pool = value(results.get("LivePair", "pool", b, "live:1000", "bytes:256"))
        if None not in (mp, slab, dispatch, mutex, pool):
            floor = mp + slab + dispatch + 2 * mutex
            lines.append(
                "- **pool, %s**: a pair served by the thread cache (as here) takes no lock and "
                "makes no heap allocation (the pointer object's memory is recycled per thread). "
                "For scale, the pieces it still has in some form: host dispatch %s (Context::"
                "memalloc, with its cuCtxGetCurrent) + a MemoryPointer with a finalizer %s (with "
                "a fresh heap object) + the slab bookkeeping %s + two lock/unlock pairs %s = %s "
                "if nothing were cached or recycled; measured pair **%s**."
                % (b, fmt_ns(dispatch), fmt_ns(mp), fmt_ns(slab), fmt_ns(2 * mutex),
                   fmt_ns(floor), fmt_ns(pool)))
        raw = value(results.get("AllocPair", "raw_driver", b, "256"))
        batched = component(results, "driver_batched_pairs", b, "batch:11")
        batched64 = component(results, "driver_batched_pairs", b, "batch:64")
        ref = value(results.get("AllocPair", "reference", b, "256"))
        if None not in (raw, batched, ref):
            line = ("- **reference manager, %s, 256 B**: raw pair %s; the same cuMemAlloc/cuMemFree "
                    "calls with frees batched by 11 (its default flush) and no host work cost %s "
                    "per pair, so deferral alone can reach %s×; the reference manager measures "
                    "%s (%s×), i.e. %s of host overhead per pair on top of the driver."
                    % (b, fmt_ns(raw), fmt_ns(batched), fmt_ratio(ratio(raw, batched)),
                       fmt_ns(ref), fmt_ratio(ratio(raw, ref)), fmt_ns(ref - batched)))
            if batched64 is not None:
                line += (" Batches of 64 (EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT=63) would cost %s "
                         "per pair (%s×)." % (fmt_ns(batched64), fmt_ratio(ratio(raw, batched64))))
                # Per pair = c + F / batch: F is what each batch costs once (the synchronising
                # first free), c what every pair costs; two batch sizes give both.
                fixed = (batched - batched64) / (1 / 11 - 1 / 64)
                each = batched - fixed / 11
                host = ref - batched
                budget = raw / 10 - each - host
                if fixed > 0 and each > 0:
                    line += (" Modelled as %s per pair + %s per flush, a 10× speed-up (≤ %s per "
                             "pair, with today's %s of host overhead) needs"
                             % (fmt_ns(each), fmt_ns(fixed), fmt_ns(raw / 10), fmt_ns(host)))
                    if budget > 0:
                        line += (" flushes of at least %d frees (max_count ≥ %d; the default, "
                                 "NBEP 7's 10, flushes at 11)."
                                 % (math.ceil(fixed / budget), math.ceil(fixed / budget) - 1))
                    else:
                        line += " less per-pair cost than the driver itself allows."
            tried = measured_counts(results, b, 256)
            if tried:
                first = smallest_count_reaching(results, b, 256, 10)
                line += (" Measured with the limit set through the environment (EMM_CUDA_MAX_"
                         "PENDING_DEALLOCS_COUNT): %s; %s." % (
                             ", ".join("max_count %d → %s×" % (c, fmt_ratio(r)) for c, r in tried),
                             ("the smallest measured count that reaches 10× is %d" % first)
                             if first is not None else "none of them reaches 10×"))
            lines.append(line)
        calls = value(results.get("Replay", "pool", "fake", "1000"), "driver_allocs_per_op")
        replay = replay_ns_per_op(results, "pool", b, 1000)
        if None not in (calls, replay, raw) and b == "gpu":
            lines.append(
                "- **pool, random replay N = 1000, gpu**: the pool asks the driver for %.3g slab "
                "allocations per operation (counted on the fake backend; it keeps empty slabs up "
                "to its release threshold, 2 GiB by default, and gives back only those past "
                "it), and a cuMemAlloc + cuMemFree pair costs %s here, so slab traffic accounts "
                "for ≈ %s of the measured %s per operation."
                % (calls, fmt_ns(raw), fmt_ns(calls * raw), fmt_ns(replay)))
        one = throughput(results, "pool", b, 1)
        eight = throughput(results, "pool", b, 8)
        if one and eight:
            lines.append(
                "- **pool scaling, %s**: %.3g M pairs/s on one thread, %.3g M/s on eight "
                "(×%.2f). Each thread allocates from its own arena (Options::arenas: one per "
                "hardware thread, each with its own lock and slabs) and its freed small blocks "
                "come back through its own cache, so threads share no lock and no reference count "
                "on the fast path; the raw driver, cuMemAllocAsync and the reference manager "
                "(whose every allocation is a cuMemAlloc) fall with threads instead, as the "
                "driver serialises them." % (b, one / 1e6, eight / 1e6, eight / one))
    return "\n".join(lines) if lines else None


def driver_calls_section(results):
    rows = []
    for subject in SUBJECTS:
        row = [SUBJECT_TITLES[subject]]
        have = False
        for count in REPLAY_COUNTS:
            r = results.get("Replay", subject, "fake", str(count))
            a, f = value(r, "driver_allocs_per_op"), value(r, "driver_frees_per_op")
            if a is None or f is None:
                row.append("—")
            else:
                have = True
                row.append("%.3g / %.3g" % (a, f))
        if have:
            rows.append(row)
    if not rows:
        return None
    return table(["subject"] + ["N = %d" % c for c in REPLAY_COUNTS], rows)


# --- targets -------------------------------------------------------------------------------------

def verdict(measured, ok):
    if measured is None:
        return "not measured"
    return "**met**" if ok else "**not met**"


def pool_vs_async(results, backend):
    """(row name, pool, raw_async) for every row of the report the pool must win: pairs at every
    size, 1000 live, random replay at every N (ns, lower is better) and every thread count
    (pairs/s, higher is better: returned as ns per pair)."""
    rows = []
    for size in PAIR_SIZES:
        rows.append(("pair %s" % fmt_bytes(size),
                     value(results.get("AllocPair", "pool", backend, str(size))),
                     value(results.get("AllocPair", "raw_async", backend, str(size)))))
    rows.append(("1000 live",
                 value(results.get("LivePair", "pool", backend, "live:1000", "bytes:256")),
                 value(results.get("LivePair", "raw_async", backend, "live:1000", "bytes:256"))))
    for count in REPLAY_COUNTS:
        rows.append(("replay N = %d" % count, replay_ns_per_op(results, "pool", backend, count),
                     replay_ns_per_op(results, "raw_async", backend, count)))
    for threads in THREAD_COUNTS:
        pool = throughput(results, "pool", backend, threads)
        asy = throughput(results, "raw_async", backend, threads)
        rows.append(("%d thread%s" % (threads, "" if threads == 1 else "s"),
                     1e9 / pool if pool else None, 1e9 / asy if asy else None))
    return rows


def pool_beats_async_row(results, backend):
    rows = pool_vs_async(results, backend)
    measured = [(name, pool, asy) for name, pool, asy in rows if None not in (pool, asy)]
    lost = [name for name, pool, asy in measured if pool >= asy]
    if not measured:
        summary = "—"
    elif lost:
        summary = "slower or equal on: " + ", ".join(lost)
    else:
        summary = "faster on all %d rows (smallest margin ×%s)" % (
            len(measured), fmt_ratio(min(asy / pool for _, pool, asy in measured)))
    if measured and len(measured) < len(rows):
        summary += "; %d of %d rows not measured" % (len(rows) - len(measured), len(rows))
    return ["pool faster than cuMemAllocAsync+cuMemFreeAsync on every row (pairs at every size, "
            "1000 live, random replay at every N, 1–16 threads)",
            summary,
            verdict(measured or None, not lost and len(measured) == len(rows))]


def targets_section(results):
    b = "gpu"
    rows = []
    fake_note = lambda v: (" (fake: %s)" % v) if v else ""

    pool_live = value(results.get("LivePair", "pool", b, "live:1000", "bytes:256"))
    pool_live_fake = value(results.get("LivePair", "pool", "fake", "live:1000", "bytes:256"))
    rows.append(["pool: alloc+free pair at 1000 live allocations ≤ 100 ns",
                 fmt_ns(pool_live) + fake_note(pool_live_fake and fmt_ns(pool_live_fake)),
                 verdict(pool_live, pool_live is not None and pool_live <= 100)])

    async_live = value(results.get("LivePair", "raw_async", b, "live:1000", "bytes:256"))
    async_pair = value(results.get("AllocPair", "raw_async", b, "256"))
    speedup = ratio(async_live, pool_live)
    rows.append(["pool ≥ 6× faster than cuMemAllocAsync+cuMemFreeAsync pairs (same run, 1000 live)",
                 ("%s× (async %s; idle async pair %s)" % (fmt_ratio(speedup), fmt_ns(async_live),
                                                         fmt_ns(async_pair)))
                 if speedup else "—",
                 verdict(speedup, speedup is not None and speedup >= 6)])

    rows.append(["pool pair below RMM's published arena figure (330 ns/op)",
                 fmt_ns(pool_live),
                 verdict(pool_live, pool_live is not None and pool_live < RMM_ARENA_NS_PER_OP)])
    pool_pair = value(results.get("AllocPair", "pool", b, "256"))
    rows.append(["pool: alloc+free pair (256 B, nothing else live) ≤ 100 ns",
                 fmt_ns(pool_pair),
                 verdict(pool_pair, pool_pair is not None and pool_pair <= 100)])
    replays = [(count, replay_ns_per_op(results, "pool", b, count)) for count in REPLAY_COUNTS]
    measured = [(c, ns) for c, ns in replays if ns is not None]
    rows.append(["pool, random replay ≤ 330 ns per op at every N (RMM arena 330 ns/op, "
                 "pool 650 ns/op)",
                 "; ".join("N = %d: %s" % (c, fmt_ns(ns)) for c, ns in measured) or "—",
                 verdict(measured or None,
                         len(measured) == len(REPLAY_COUNTS)
                         and all(ns <= RMM_ARENA_NS_PER_OP for _, ns in measured))])
    rows.append(pool_beats_async_row(results, b))

    met_sizes = []
    details = []
    measured_any = False
    for size in PAIR_SIZES:
        raw = value(results.get("AllocPair", "raw_driver", b, str(size)))
        ref = value(results.get("AllocPair", "reference", b, str(size)))
        s = ratio(raw, ref)
        if s is not None:
            measured_any = True
            details.append("%s: %s×" % (fmt_bytes(size), fmt_ratio(s)))
            if s >= 10:
                met_sizes.append(size)
    # Where the limit is: the smallest EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT measured to reach 10×
    # at 256 B. The verdict stays the default manager's.
    deferral_note = ""
    tried = measured_counts(results, b, 256)
    if tried:
        first = smallest_count_reaching(results, b, 256, 10)
        deferral_note = ("; smallest measured EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT reaching 10× "
                         "at 256 B: %s" % (first if first is not None else "none measured")
                         + " (of %s)" % ", ".join(str(c) for c, _ in tried))
    rows.append(["reference manager ≥ 10× faster than raw cuMemAlloc+cuMemFree pairs "
                 "(deferred frees)",
                 ("; ".join(details) + " — met at %d of %d sizes" % (len(met_sizes), len(details)))
                 if details else "—",
                 verdict(True if measured_any else None, 256 in met_sizes)
                 + (" (at 256 B, default max_count %d)" % DEFAULT_MAX_COUNT
                    if measured_any else "")
                 + deferral_note])

    one = throughput(results, "pool", b, 1)
    eight = throughput(results, "pool", b, 8)
    scale = ratio(eight, one)
    rows.append(["pool throughput at 8 threads ≥ 4× one thread",
                 ("×%.2f (%.3g → %.3g M pairs/s)" % (scale, one / 1e6, eight / 1e6))
                 if scale else "—",
                 verdict(scale, scale is not None and scale >= 4)])

    for plugin in PLUGINS:
        ns = value(results.get("Initialize", plugin, b))
        fake = value(results.get("Initialize", plugin, "fake"))
        rows.append(["initialize() on an initialised %s plugin ≤ 50 ns" % plugin,
                     fmt_ns(ns) + fake_note(fake and fmt_ns(fake)),
                     verdict(ns, ns is not None and ns <= 50)])
    return table(["target (measured on the GPU, host time)", "measured", "verdict"], rows)


# --- plot ----------------------------------------------------------------------------------------

COLOURS = {
    "raw_driver": (214, 39, 40),
    "raw_async": (148, 103, 189),
    "reference": (31, 119, 180),
    "pool": (44, 160, 44),
    "stream_ordered": (255, 127, 14),
}


def plot_series(results):
    """{backend: {subject: [(N, ns/op), ...]}} for the backends that have replay data."""
    panels = {}
    for backend in BACKENDS:
        series = {}
        for subject in SUBJECTS:
            points = [(n, replay_ns_per_op(results, subject, backend, n)) for n in REPLAY_COUNTS]
            points = [(n, v) for n, v in points if v]
            if points:
                series[subject] = points
        if series:
            panels[backend] = series
    return panels


def plot_with_matplotlib(panels, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, (backend, series) in zip(axes[0], panels.items()):
        for subject, points in series.items():
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", label=subject, color=[c / 255 for c in COLOURS[subject]])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("allocations in the replay (N)")
        ax.set_ylabel("ns per operation (alloc or free)")
        ax.set_title("random-allocations replay, %s backend" % backend)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# A 5×7 bitmap font (each glyph: 7 rows of 5 bits, most significant bit on the left) for the
# fallback plot; lower-case letters are drawn as capitals.
FONT = {
    " ": [0, 0, 0, 0, 0, 0, 0],
    "0": [14, 17, 19, 21, 25, 17, 14], "1": [4, 12, 4, 4, 4, 4, 14],
    "2": [14, 17, 1, 2, 4, 8, 31], "3": [31, 2, 4, 2, 1, 17, 14],
    "4": [2, 6, 10, 18, 31, 2, 2], "5": [31, 16, 30, 1, 1, 17, 14],
    "6": [6, 8, 16, 30, 17, 17, 14], "7": [31, 1, 2, 4, 8, 8, 8],
    "8": [14, 17, 17, 14, 17, 17, 14], "9": [14, 17, 17, 15, 1, 2, 12],
    "A": [14, 17, 17, 31, 17, 17, 17], "B": [30, 17, 17, 30, 17, 17, 30],
    "C": [14, 17, 16, 16, 16, 17, 14], "D": [28, 18, 17, 17, 17, 18, 28],
    "E": [31, 16, 16, 30, 16, 16, 31], "F": [31, 16, 16, 30, 16, 16, 16],
    "G": [14, 17, 16, 23, 17, 17, 15], "H": [17, 17, 17, 31, 17, 17, 17],
    "I": [14, 4, 4, 4, 4, 4, 14], "J": [7, 2, 2, 2, 2, 18, 12],
    "K": [17, 18, 20, 24, 20, 18, 17], "L": [16, 16, 16, 16, 16, 16, 31],
    "M": [17, 27, 21, 21, 17, 17, 17], "N": [17, 17, 25, 21, 19, 17, 17],
    "O": [14, 17, 17, 17, 17, 17, 14], "P": [30, 17, 17, 30, 16, 16, 16],
    "Q": [14, 17, 17, 17, 21, 18, 13], "R": [30, 17, 17, 30, 20, 18, 17],
    "S": [15, 16, 16, 14, 1, 1, 30], "T": [31, 4, 4, 4, 4, 4, 4],
    "U": [17, 17, 17, 17, 17, 17, 14], "V": [17, 17, 17, 17, 17, 10, 4],
    "W": [17, 17, 17, 21, 21, 21, 10], "X": [17, 17, 10, 4, 10, 17, 17],
    "Y": [17, 17, 10, 4, 4, 4, 4], "Z": [31, 1, 2, 4, 8, 16, 31],
    ".": [0, 0, 0, 0, 0, 12, 12], ",": [0, 0, 0, 0, 12, 4, 8],
    "-": [0, 0, 0, 31, 0, 0, 0], "_": [0, 0, 0, 0, 0, 0, 31],
    "/": [0, 1, 2, 4, 8, 16, 0], ":": [0, 12, 12, 0, 12, 12, 0],
    "(": [2, 4, 8, 8, 8, 4, 2], ")": [8, 4, 2, 2, 2, 4, 8],
    "=": [0, 0, 31, 0, 31, 0, 0], "+": [0, 4, 4, 31, 4, 4, 0],
    "%": [24, 25, 2, 4, 8, 19, 3], "^": [4, 10, 17, 0, 0, 0, 0],
}


class Canvas:
    """An RGB raster with lines, rectangles and bitmap text, written out as a PNG."""

    def __init__(self, width, height, background=(255, 255, 255)):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def dot(self, x, y, colour):
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i:i + 3] = bytes(colour)

    def rect(self, x0, y0, x1, y1, colour):
        for y in range(max(0, y0), min(self.height, y1 + 1)):
            for x in range(max(0, x0), min(self.width, x1 + 1)):
                self.dot(x, y, colour)

    def line(self, x0, y0, x1, y1, colour, width=1):
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        half = width // 2
        while True:
            self.rect(x0 - half, y0 - half, x0 + width - 1 - half, y0 + width - 1 - half, colour)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, string, colour=(0, 0, 0), scale=2, vertical=False):
        for ch in string:
            glyph = FONT.get(ch.upper(), FONT[" "])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (16 >> col):
                        if vertical:  # rotated 90° counter-clockwise, reading upwards
                            px, py = x + row * scale, y - col * scale
                        else:
                            px, py = x + col * scale, y + row * scale
                        self.rect(px, py, px + scale - 1, py + scale - 1, colour)
            if vertical:
                y -= 6 * scale
            else:
                x += 6 * scale

    @staticmethod
    def text_width(string, scale=2):
        return 6 * scale * len(string)

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.pixels[3 * y * self.width:3 * (y + 1) * self.width])
                       for y in range(self.height))

        def chunk(kind, data):
            return (struct.pack(">I", len(data)) + kind + data
                    + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def log_ticks(low, high):
    ticks = []
    e = math.floor(math.log10(low))
    while 10 ** e <= high * 1.0001:
        if 10 ** e >= low / 1.0001:
            ticks.append(10 ** e)
        e += 1
    return ticks


def fmt_tick(v):
    if v >= 1e9:
        return "%g s" % (v / 1e9)
    if v >= 1e6:
        return "%g ms" % (v / 1e6)
    if v >= 1e3:
        return "%g us" % (v / 1e3)
    return "%g ns" % v


def plot_fallback(panels, path):
    panel_w, panel_h = 640, 530
    canvas = Canvas(panel_w * len(panels), panel_h)
    grey, black = (215, 215, 215), (0, 0, 0)
    for index, (backend, series) in enumerate(panels.items()):
        ox = index * panel_w
        left, right, top, bottom = ox + 90, ox + panel_w - 20, 40, panel_h - 140
        ys = [v for pts in series.values() for _, v in pts]
        lo = 10 ** math.floor(math.log10(min(ys)))
        hi = 10 ** math.ceil(math.log10(max(ys)))
        if hi <= lo:
            hi = lo * 10
        xlo, xhi = REPLAY_COUNTS[0] / 1.5, REPLAY_COUNTS[-1] * 1.5

        def px(n):
            return left + (math.log10(n) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo)) \
                * (right - left)

        def py(v):
            return bottom - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) \
                * (bottom - top)

        for t in log_ticks(lo, hi):
            y = int(py(t))
            canvas.line(left, y, right, y, grey)
            label = fmt_tick(t)
            canvas.text(left - 8 - Canvas.text_width(label), y - 7, label)
        for n in REPLAY_COUNTS:
            x = int(px(n))
            canvas.line(x, top, x, bottom, grey)
            label = "%d" % n
            canvas.text(x - Canvas.text_width(label) // 2, bottom + 8, label)
        canvas.line(left, bottom, right, bottom, black)
        canvas.line(left, top, left, bottom, black)
        title = "replay, %s backend" % backend
        canvas.text(left + (right - left - Canvas.text_width(title)) // 2, 12, title)
        xlabel = "allocations (N)"
        canvas.text(left + (right - left - Canvas.text_width(xlabel)) // 2, bottom + 32, xlabel)
        canvas.text(ox + 8, bottom - 40, "ns per op", vertical=True)
        for subject, points in series.items():
            colour = COLOURS[subject]
            prev = None
            for n, v in points:
                x, y = px(n), py(v)
                if prev:
                    canvas.line(prev[0], prev[1], x, y, colour, width=3)
                canvas.rect(int(x) - 4, int(y) - 4, int(x) + 4, int(y) + 4, colour)
                prev = (x, y)
        # The legend under the axis label, two entries a row, clear of the data.
        column = (right - left) // 2
        for i, subject in enumerate(series):
            x = left + (i % 2) * column
            y = bottom + 58 + (i // 2) * 20
            canvas.rect(x, y + 3, x + 20, y + 9, COLOURS[subject])
            canvas.text(x + 28, y, subject, COLOURS[subject])
    with open(path, "wb") as f:
        f.write(canvas.png())


def write_plot(results, path, force_fallback=False):
    panels = plot_series(results)
    if not panels:
        return None
    if not force_fallback and plot_with_matplotlib(panels, path):
        return "matplotlib"
    plot_fallback(panels, path)
    return "the report's built-in PNG writer (matplotlib is not installed here)"


# --- the document --------------------------------------------------------------------------------

def read_meta(directory):
    path = os.path.join(directory, "meta.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def build_document(results, meta, plot_name, plot_tool):
    gpu_ran = backend_ran(results, "gpu")
    out = []
    out.append("# emmkit performance\n")
    out.append("_Generated by `scripts/bench_report.py` from the JSON of the benchmarks in "
               "`suites/benchmarks/`. Do not edit by hand: re-run the command below._\n")
    out.append("## This run\n")
    device = meta.get("device") or "none"
    if device == "none" and gpu_ran:
        device = results.context("emm.gpu") or "none"
    info = [
        ["date (UTC)", meta.get("date", "—")],
        ["commit", meta.get("commit", "—")],
        ["GPU (nvidia-smi)", device],
        ["NVIDIA driver", meta.get("driver_version", "—")],
        ["CUDA driver API version (cuDriverGetVersion)",
         results.context("emm.cuda_driver_version") or "—"],
        ["GPU backend", "ran" if gpu_ran else
         "not run: " + re.sub(r"^not run: ", "", results.context("emm.gpu") or "?")],
        ["fake backend", results.context("emm.fake_device") or "—"],
        ["host", "%s, %s CPUs (%s)" % (meta.get("host", "—"), meta.get("cpus", "?"),
                                        meta.get("cpu_model", "?"))],
        ["build", meta.get("build", "release preset (-O3 via CMAKE_BUILD_TYPE=Release)")],
    ]
    out.append(table(["", ""], info) + "\n")
    out.append("Reproduce (on a machine with a GPU, from the repository root):\n")
    out.append("```sh\n" + meta.get("command", "scripts/bench.sh") + "\n```\n")
    out.append("Every time is wall-clock host time. Speed-ups in brackets: **r** = raw driver "
               "time ÷ this time, **a** = cuMemAllocAsync+cuMemFreeAsync time ÷ this time, both "
               "from the same run and backend (above 1: faster than that baseline). The fake "
               "backend runs the same code over `emm::FakeDriver`, a simulated device in host "
               "memory: its figures show the host-side overhead of the kit and the plugins, "
               "not GPU costs.\n")

    out.append("## Targets\n")
    if not gpu_ran:
        out.append("_The GPU backend did not run, so every target reads “not measured”; the fake "
                   "backend's figure is shown beside it as an indication only._\n")
    out.append(targets_section(results) + "\n")

    sections = [
        ("Pairwise memalloc + release latency", pair_section,
         "One allocation and its release per iteration on an otherwise idle allocator. The "
         "reference manager's releases are deferred (flushed 11 at a time, DEALLOC-1); "
         "cuMemAllocAsync pairs are enqueued on one stream and synchronised after the timed "
         "loop."),
        ("Reference manager against its deferral count", deferral_section,
         "The pairs above for the reference manager alone, with its pending-deallocation "
         "count limit set as a user would set it: EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT in the "
         "environment its Runtime reads (DEALLOC-1, DEALLOC-7; the byte limit stays at its "
         "default). The target is about the default manager (max_count 10); these rows measure "
         "how far deferral alone takes it. **r** against the raw driver pair of the same run."),
        ("With 1000 live allocations", live_section,
         "1000 allocations of sizes uniform in [1 B, 1 MiB] are live while the pairs are timed."),
        ("Random-allocations replay (RMM's pattern)", replay_section,
         "N allocations and N frees, sizes uniform in [1 B, 1 MiB], 73 % allocate probability, "
         "live bytes capped at 1 GiB, fixed seed: every subject replays the same trace. Reported "
         "per operation (one alloc or one free), as RMM's published figures are "
         "(arena 330 ns/op, pool 650 ns/op, cudaMalloc/cudaFree ≈ 35 µs/op)."),
        ("Threads allocating and freeing on one context", threads_section,
         "Pairs per second over all threads (each thread frees its oldest of 16 live "
         "allocations, 1 B – 64 KiB, and allocates anew); ×k = throughput ÷ one thread's."),
    ]
    for backend in BACKENDS:
        if not any(k[2:3] == (backend,) or backend in k for k in results.by_key):
            continue
        out.append("## %s backend\n" % ("GPU" if backend == "gpu" else "Fake"))
        if not backend_ran(results, backend):
            reasons = errors_of(results, backend)
            out.append("_Not run: %s_\n" % (reasons[0] if reasons else "no results"))
            continue
        for title, section, note in sections:
            text = section(results, backend)
            if text is None:  # nothing of it in this run (an older or filtered run)
                continue
            out.append("### %s\n" % title)
            out.append(note + "\n")
            out.append(text + "\n")

    out.append("## initialize() on an initialised plugin\n")
    out.append("`initialize()` called directly on the context's plugin, and "
               "`Context::prepare_for_use()` (make the context current, then initialize()), "
               "which Numba-style hosts call on every activation.\n")
    out.append(initialize_section(results) + "\n")

    components = component_section(results)
    if components:
        out.append("## Where the time goes\n")
        out.append("The building blocks of one pair, each measured alone in the same run:\n")
        out.append(components + "\n")
        limits = limits_section(results)
        if limits:
            out.append("What that means for the targets:\n")
            out.append(limits + "\n")
    calls = driver_calls_section(results)
    if calls:
        out.append("### Driver calls per replay operation\n")
        out.append("Device allocations / frees each subject asked the driver for, per replay "
                   "operation (counted by the fake driver; the logic is the same on a GPU, where "
                   "each costs microseconds):\n")
        out.append(calls + "\n")

    out.append("## Certification wall time\n")
    out.append(certify_section(results) + "\n")

    nep49 = nep49_section(results)
    if nep49:
        out.append("## NumPy arrays in page-locked memory (NEP 49)\n")
        out.append("`emm_bench_nep49`: arrays from `examples/nep49_pinned` (an EMM plugin's "
                   "memhostalloc) against pageable ones (malloc, where NumPy's default handler "
                   "puts them). On the fake backend a copy is a memcpy: only the GPU's figures "
                   "say what pinning buys. The copy that overlaps a kernel "
                   "(cuMemcpyHtoDAsync) is not measured: emm::Driver has no asynchronous copy "
                   "or kernel launch yet.\n")
        out.append(nep49 + "\n")

    if plot_name:
        out.append("## ns per operation against allocation count\n")
        out.append("![ns per operation of the random-allocations replay against the number of "
                   "allocations](%s)\n" % plot_name)
        out.append("_Plot drawn with %s._\n" % plot_tool)

    failures = [(k, r.error) for k, r in sorted(results.by_key.items(), key=lambda kv: str(kv[0]))
                if r.error and not r.error.startswith("no GPU")]
    if failures:
        out.append("## Benchmarks that did not run\n")
        out.append(table(["benchmark", "why"],
                         [["/".join(str(p) for p in k), e.replace("|", "\\|")]
                          for k, e in failures]) + "\n")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder with the benchmark JSON files")
    parser.add_argument("--output", required=True, help="the Markdown file to write")
    parser.add_argument("--plot", help="the PNG to write (default: beside --output)")
    parser.add_argument("--fallback-plot", action="store_true",
                        help="use the built-in PNG writer even when matplotlib is installed")
    args = parser.parse_args(argv)

    results = Results()
    files = sorted(f for f in os.listdir(args.input)
                   if f.endswith(".json") and f != "meta.json")
    if not files:
        print("bench_report: no benchmark JSON in %s" % args.input, file=sys.stderr)
        return 1
    for name in files:
        try:
            results.add_file(os.path.join(args.input, name))
        except (OSError, ValueError) as error:
            print("bench_report: skipping %s: %s" % (name, error), file=sys.stderr)
    meta = read_meta(args.input)

    plot_path = args.plot or os.path.splitext(args.output)[0] + ".png"
    plot_tool = write_plot(results, plot_path, args.fallback_plot)
    plot_name = os.path.relpath(plot_path, os.path.dirname(os.path.abspath(args.output)) or ".") \
        if plot_tool else None

    document = build_document(results, meta, plot_name, plot_tool)
    with open(args.output, "w") as f:
        f.write(document)
    print("bench_report: wrote %s%s" % (args.output, (" and " + plot_path) if plot_tool else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
