#!/usr/bin/env python3
"""Stands in for emm-certify in the pytest-plugin test: writes a report with one result of each
kind to --json and exits 1, as a NOT CERTIFIED run would."""
import json
import sys

args = sys.argv[1:]
report = args[args.index("--json") + 1]
results = [
    {"clause": "ALLOC-1", "level": "MUST", "backend": "gpu", "outcome": "pass", "message": ""},
    {"clause": "ALLOC-5", "level": "MUST", "backend": "gpu", "outcome": "fail",
     "message": "[ALLOC-5] memalloc(4096)->refct() is 0 at rest"},
    {"clause": "IPC-1", "level": "MUST", "backend": "gpu", "outcome": "not_supported",
     "message": "[IPC-1] the plugin declares no IPC"},
]
with open(report, "w") as stream:
    json.dump({"verdict": "NOT CERTIFIED", "results": results}, stream)
print("VERDICT: NOT CERTIFIED (1 MUST clause failed)")
sys.exit(1)
