#!/usr/bin/env python3
"""Runs one row of the known-bad plugin zoo (manifest.tsv) through emm-certify and checks it.

The known-good set (suites/known_good/manifest.tsv, the same columns, every row CERTIFIED) is
run by this script too, with --suite known_good; on a GPU machine with --backend gpu.

For a plugin row it runs

    emm-certify --plugin LIB --backend BACKEND --json REPORT [ARGS] [--devices 2]

(BACKEND: fake by default; --devices 2 unless ARGS name --devices: the fake machine has two
devices, so that the DEV clauses run)

and asserts, on that backend:
  * the exit code (0 for CERTIFIED, 1 for NOT CERTIFIED) and the JSON verdict;
  * the target clause's outcome (fail | crash | timeout) and its message naming the clause;
  * every pinned clause (must_pass) is `pass`, and every `also` clause has its outcome;
  * the report is complete: every plugin clause of the catalogue (`emm-certify --list`) has a
    result, whatever the plugin did (crash and timeout included, spec §3).
A clause the backend could not run for want of a second device (not_supported, "needs two
devices": a machine with one GPU) is exempt from the row's expectations and printed; a row whose
target clause is such a clause is skipped.
For a load_error row (REG-6) it asserts exit 2 and a message saying the plugin could not be
loaded, with the PluginLoadError text and the cause.

Exit status 0 when every assertion holds; 77 (skipped) when the backend could not run, with
emm-certify's reason (no GPU); otherwise 1, and each failed assertion is printed, naming the
clause, what was expected and what was seen.
"""

import argparse
import json
import os
import subprocess
import sys

SKIPPED = 77
# not_run: a backend given up after its fresh workers hung (spec §8), or an interrupted run.
OUTCOMES = {"pass", "fail", "not_supported", "crash", "timeout", "not_run"}


def read_manifest(path):
    rows = {}
    header = None
    with open(path, encoding="utf-8") as manifest:
        for line in manifest:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if header is None:
                header = fields
                continue
            if len(fields) != len(header):
                raise SystemExit(f"{path}: row has {len(fields)} fields, expected {len(header)}: "
                                 f"{line!r}")
            row = dict(zip(header, fields))
            rows[row["test"]] = row
    return rows


def gpu_gaps(manifest):
    """test -> why, from gpu_gaps.tsv beside the manifest (rows the gpu backend cannot judge)."""
    path = os.path.join(os.path.dirname(os.path.abspath(manifest)), "gpu_gaps.tsv")
    gaps = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as table:
            for line in table:
                fields = line.rstrip("\n").split("\t")
                if line.startswith("#") or len(fields) != 2 or fields[0] == "test":
                    continue
                gaps[fields[0]] = fields[1]
    return gaps


def split_list(value):
    return [] if value in ("", "-") else [item.strip() for item in value.split(",") if item.strip()]


def plugin_clauses(certify):
    """The plugin-target clauses of the catalogue, from `emm-certify --list`."""
    listing = subprocess.run([certify, "--list"], capture_output=True, text=True, timeout=60)
    if listing.returncode != 0:
        raise SystemExit(f"emm-certify --list exited {listing.returncode}: {listing.stderr}")
    clauses = {}
    for line in listing.stdout.splitlines():
        fields = line.split()
        if len(fields) < 3 or "-" not in fields[0] or not fields[0].split("-")[-1].isdigit():
            continue
        clause_id, level, target = fields[0], fields[1], fields[2]
        if "plugin" in target:
            clauses[clause_id] = level
    if not clauses:
        raise SystemExit(f"emm-certify --list printed no plugin clause:\n{listing.stdout}")
    return clauses


class Checker:
    def __init__(self, suite, test):
        self.name = f"{suite}.{test}"
        self.failures = []

    def expect(self, condition, message):
        if not condition:
            self.failures.append(message)

    def finish(self, context):
        if self.failures:
            print(f"{self.name}: {len(self.failures)} assertion(s) failed")
            for failure in self.failures:
                print(f"  - {failure}")
            print(context)
            return 1
        print(f"{self.name}: ok")
        return 0


def check_load_error(row, args, checker):
    command = ([args.certify, "--plugin", args.plugin, "--backend", args.backend] +
               split_list_args(row))
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    checker.expect(run.returncode == 2,
                   f"REG-6: expected exit code 2 (could not load), got {run.returncode}")
    checker.expect("could not load" in output.lower(),
                   "REG-6: expected the output to say 'could not load'")
    checker.expect(f"Failed to use memory manager from {args.plugin}" in output,
                   "REG-6: expected the PluginLoadError text 'Failed to use memory manager from "
                   f"{args.plugin}'")
    for item in split_list(row["also"]):
        key, _, text = item.partition("=")
        if key == "cause":
            checker.expect(text in output, f"REG-6: expected the cause '{text}' in the message")
    return checker.finish(f"command: {' '.join(command)}\noutput:\n{output}")


def split_list_args(row):
    extra = [] if row["args"] in ("", "-") else row["args"].split()
    if not any(arg == "--devices" or arg.startswith("--devices=") for arg in extra):
        extra += ["--devices", "2"]
    return extra


def check_report(row, args, checker):
    os.makedirs(args.work_dir, exist_ok=True)
    report_path = os.path.join(args.work_dir, f"{row['test']}.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    command = ([args.certify, "--plugin", args.plugin, "--backend", args.backend, "--json",
                report_path] + split_list_args(row))
    run = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    context = (f"command: {' '.join(command)}\nexit code: {run.returncode}\n"
               f"output (last 4000 characters):\n{(run.stdout + run.stderr)[-4000:]}")

    try:
        with open(report_path, encoding="utf-8") as report_file:
            report = json.load(report_file)
    except (OSError, ValueError) as error:
        checker.expect(False, f"no readable JSON report at {report_path}: {error}")
        return checker.finish(context)
    for backend in report.get("backends", []):
        if backend.get("name") == args.backend and not backend.get("ran"):
            print(f"{checker.name}: skipped: the {args.backend} backend did not run: "
                  f"{backend.get('reason', 'no reason given')}")
            return SKIPPED

    gap = gpu_gaps(args.manifest).get(row["test"]) if args.backend == "gpu" else None
    certified = row["verdict"] == "CERTIFIED"
    checker.expect(gap is not None or run.returncode == (0 if certified else 1),
                   f"expected exit code {0 if certified else 1} ({row['verdict']}), "
                   f"got {run.returncode}")

    checker.expect(gap is not None or report.get("verdict") == row["verdict"],
                   f"expected verdict {row['verdict']!r}, the report says "
                   f"{report.get('verdict')!r}")
    for key in ("kit_version", "catalogue_version", "plugin", "backends", "results"):
        checker.expect(key in report, f"the JSON report has no {key!r} (spec §5)")

    results = {}
    for result in report.get("results", []):
        if result.get("backend") != args.backend:
            continue
        clause = result.get("clause")
        checker.expect(clause not in results,
                       f"{clause}: two results on the {args.backend} backend")
        checker.expect(result.get("outcome") in OUTCOMES,
                       f"{clause}: outcome {result.get('outcome')!r} is not one of the spec's")
        results[clause] = result

    def outcome(clause):
        return results.get(clause, {}).get("outcome")

    def needs_two_devices(clause):
        result = results.get(clause, {})
        return (result.get("outcome") == "not_supported" and
                "needs two devices" in result.get("message", ""))

    def describe(clause):
        result = results.get(clause)
        if result is None:
            return "no result"
        return f"{result.get('outcome')} ({result.get('message', '')!r})"

    # The report is complete: every plugin clause has a result, also after a crash or timeout.
    catalogue = plugin_clauses(args.certify)
    missing = sorted(set(catalogue) - set(results))
    checker.expect(not missing,
                   f"the report lacks plugin clauses on the {args.backend} backend: {missing}")

    target = row["clause"]
    if target != "-" and needs_two_devices(target):
        print(f"{checker.name}: skipped: {describe(target)}")
        return SKIPPED
    exempt = sorted(clause for clause in results if needs_two_devices(clause))
    if exempt:
        print(f"{checker.name}: not checked, the {args.backend} backend has one device: "
              f"{', '.join(exempt)}")
    also = {}
    message_parts = []
    for item in split_list(row["also"]):
        # CLAUSE=outcome@fake: an expectation met on the fake backend only (the GPU runs shorter
        # sequences, so a second clause's failure that needs a long one may not be generated).
        item, at, where = item.partition("@")
        if at and where != args.backend:
            print(f"{checker.name}: not checked on {args.backend}: {item} (expected on {where} "
                  f"only)")
            continue
        if "~" in item:
            clause, _, text = item.partition("~")
            message_parts.append((clause, text))
        elif "=" in item:
            clause, _, expected = item.partition("=")
            also[clause] = expected
        else:
            checker.expect(False, f"manifest row {row['test']}: cannot read also item {item!r}")
    if gap is not None:
        print(f"{checker.name}: a known gap on the gpu backend (gpu_gaps.tsv): {gap}; only the "
              f"report's completeness and the pinned clauses are checked")
        pinned = split_list(row["must_pass"])
        if pinned == ["*"]:
            named = set(also) | {clause for clause, _ in message_parts}
            pinned = [c for c in catalogue if c != target and c not in named]
        for clause in pinned:
            checker.expect(outcome(clause) in ("pass", "not_supported"),
                           f"{clause} (pinned): expected pass, got {describe(clause)}")
        return checker.finish(context)
    if target != "-":
        checker.expect(outcome(target) == row["outcome"],
                       f"{target}: expected outcome {row['outcome']}, got {describe(target)}")
        if row["outcome"] == "fail":
            message = results.get(target, {}).get("message", "")
            checker.expect(target in message,
                           f"{target}: the failure message does not name the clause: {message!r}")
    for clause, expected in also.items():
        checker.expect(outcome(clause) == expected or clause in exempt,
                       f"{clause}: expected outcome {expected}, got {describe(clause)}")
    for clause, text in message_parts:
        message = results.get(clause, {}).get("message", "")
        # TEXT|OTHER: either diagnosis names the defect (the property's, or the fixed
        # scenario's where the backend's exploration did not meet it first).
        checker.expect(any(part in message for part in text.split("|")) or clause in exempt,
                       f"{clause}: expected the message to contain {text!r}, "
                       f"got {describe(clause)}")

    pinned = split_list(row["must_pass"])
    if pinned == ["*"]:
        pinned = [c for c in catalogue if c != target and c not in also]
    why = "pinned, unrelated to the defect" if target != "-" else "a correct plugin"
    for clause in pinned:
        checker.expect(outcome(clause) == "pass" or clause in exempt,
                       f"{clause} ({why}): expected pass, got {describe(clause)}")
    return checker.finish(context)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certify", required=True, help="path of emm-certify")
    parser.add_argument("--plugin", required=True, help="path of the plugin library")
    parser.add_argument("--manifest", required=True, help="path of manifest.tsv")
    parser.add_argument("--test", required=True, help="the manifest row (its test column)")
    parser.add_argument("--work-dir", required=True, help="where the JSON reports go")
    parser.add_argument("--timeout", type=int, default=540, help="seconds for emm-certify")
    parser.add_argument("--backend", default="fake", choices=("fake", "gpu"),
                        help="the backend to certify on")
    parser.add_argument("--suite", default="known_bad",
                        help="the CTest name prefix in messages (known_bad, known_good)")
    args = parser.parse_args()

    rows = read_manifest(args.manifest)
    if args.test not in rows:
        raise SystemExit(f"{args.manifest} has no row {args.test!r}")
    row = rows[args.test]
    checker = Checker(args.suite, args.test)
    if row["outcome"] == "load_error":
        return check_load_error(row, args, checker)
    return check_report(row, args, checker)


if __name__ == "__main__":
    sys.exit(main())
