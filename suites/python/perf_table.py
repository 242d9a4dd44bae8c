#!/usr/bin/env python3
"""Prints the PERF side-by-side table for docs/performance.md from emm-certify JSON reports.

    perf_table.py "numba-cuda default=numba_default.json" "CuPy plugin=cupy.json" ...

Each argument is LABEL=REPORT; the rows read PERF-1 (alloc+free pair, 256 B and 1 MiB) and
PERF-2 (initialize) on the gpu backend."""
import json
import sys


def row(label, path):
    try:
        with open(path) as stream:
            report = json.load(stream)
    except (OSError, ValueError) as error:
        return "| %s | (no report: %s) | | |" % (label, error)
    values = {}
    for result in report.get("results", []):
        if result.get("backend") == "gpu" and result.get("clause") in ("PERF-1", "PERF-2"):
            values.update(result.get("properties", {}))

    def cell(key):
        value = values.get(key)
        return "%.2f" % float(value) if value is not None else "-"

    return "| %s | %s | %s | %s |" % (label, cell("alloc_free_256B_median_us"),
                                      cell("alloc_free_1MiB_median_us"),
                                      cell("initialize_median_us"))


def main(args):
    print("| plugin | alloc+free 256 B (µs, median) | alloc+free 1 MiB (µs, median) "
          "| initialize() (µs, median) |")
    print("| --- | ---: | ---: | ---: |")
    for argument in args:
        label, _, path = argument.partition("=")
        print(row(label, path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
