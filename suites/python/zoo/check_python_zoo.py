#!/usr/bin/env python3
"""Certifies every class of the known-bad Python zoo on the gpu backend and checks that each is
rejected the way manifest.tsv says. Exit 0: all as expected; 1: some plugin was not caught;
77: no GPU (emm-certify --python says so with exit 2 for a class that loads)."""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BAD_OUTCOMES = {"fail", "crash", "timeout"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--certify", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(os.path.join(HERE, "manifest.tsv")) as manifest:
        rows = [r for r in csv.DictReader((l for l in manifest if not l.startswith("#")),
                                          delimiter="\t")]
    problems = []
    for row in rows:
        name = row["class"]
        report = os.path.join(args.work_dir, name + ".json")
        command = [args.certify, "--python", "python_zoo:" + name, "--json", report,
                   "--logs", os.path.join(args.work_dir, name + ".logs")]
        print("==================== python zoo: %s ====================" % name, flush=True)
        done = subprocess.run(command, env=env, timeout=args.timeout, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        print(done.stdout, flush=True)
        if done.returncode == 2 and "runs on the gpu backend only" in done.stdout:
            print("python zoo: SKIPPED (no GPU)")
            return 77
        if done.returncode != int(row["status"]):
            problems.append("%s: exit %d, expected %s" % (name, done.returncode, row["status"]))
            continue
        if row["must_fail"] == "-":
            continue
        results = json.load(open(report))["results"]
        wanted = set(row["must_fail"].split(","))
        caught = [r["clause"] for r in results
                  if r["clause"] in wanted and r["backend"] == "gpu" and r["outcome"] in BAD_OUTCOMES]
        if not caught:
            problems.append("%s: none of %s failed on gpu" % (name, ", ".join(sorted(wanted))))
        else:
            print("python zoo: %s caught by %s" % (name, ", ".join(caught)))
    for problem in problems:
        print("python zoo: NOT CAUGHT: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
