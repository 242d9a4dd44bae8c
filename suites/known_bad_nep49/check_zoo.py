#!/usr/bin/env python3
"""Runs one row of the known-bad NEP 49 handler zoo (manifest.tsv) through emm-certify.

    emm-certify --nep49-library LIB | --nep49 MODULE:ATTR --backend fake --json REPORT [ARGS]

and asserts: the exit code (0 CERTIFIED, 1 NOT CERTIFIED) and the JSON verdict; the target
clause's outcome (fail | crash | timeout) with a message naming it; every must_pass clause is
`pass`; and the report is complete: every nep49 clause of the catalogue (`emm-certify --list`)
has a result, whatever the handler did. Exit 0 when every assertion holds, else 1, printing each
failed assertion with the clause, what was expected and what was seen.
"""

import argparse
import json
import os
import subprocess
import sys


def read_manifest(path):
    rows, header = {}, None
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
                raise SystemExit(f"{path}: {len(fields)} fields, expected {len(header)}: {line!r}")
            row = dict(zip(header, fields))
            rows[row["test"]] = row
    return rows


def nep49_clauses(certify):
    listing = subprocess.run([certify, "--list"], capture_output=True, text=True, timeout=60)
    clauses = [line.split()[0] for line in listing.stdout.splitlines()
               if len(line.split()) > 2 and line.split()[2] == "nep49"]
    if not clauses:
        raise SystemExit(f"emm-certify --list printed no nep49 clause:\n{listing.stdout}")
    return clauses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certify", required=True)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--handlers", required=True, help="directory of the zoo's libraries")
    parser.add_argument("--modules", required=True, help="directory of the zoo's modules")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--schema", help="docs/report.schema.json: the report must validate "
                                         "(needs python3-jsonschema)")
    args = parser.parse_args()

    row = read_manifest(args.manifest)[args.test]
    kind, _, name = row["subject"].partition(":")
    if kind == "library":
        subject = ["--nep49-library", os.path.join(args.handlers, f"lib{name}.so")]
    else:
        subject = ["--nep49", name]
    os.makedirs(args.work_dir, exist_ok=True)
    report_path = os.path.join(args.work_dir, f"{args.test}.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    extra = [] if row["args"] == "-" else row["args"].split()
    command = [args.certify] + subject + ["--backend", "fake", "--json", report_path] + extra
    env = dict(os.environ, PYTHONPATH=args.modules)
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    context = (f"command: {' '.join(command)}\nexit code: {run.returncode}\n"
               f"output (last 4000 characters):\n{(run.stdout + run.stderr)[-4000:]}")
    failures = []

    def expect(condition, message):
        if not condition:
            failures.append(message)

    try:
        with open(report_path, encoding="utf-8") as report_file:
            report = json.load(report_file)
    except (OSError, ValueError) as error:
        print(f"known_bad_nep49.{args.test}: no readable JSON report: {error}\n{context}")
        return 1
    if args.schema:
        try:
            import jsonschema
        except ImportError:
            print(f"known_bad_nep49.{args.test}: python3 jsonschema is not installed "
                  "(scripts/setup.sh installs python3-jsonschema)")
            return 1
        with open(args.schema, encoding="utf-8") as schema_file:
            schema = json.load(schema_file)
        try:
            jsonschema.validate(report, schema)
        except jsonschema.ValidationError as error:
            failures.append(f"the JSON report does not validate against {args.schema}: "
                            f"{error.message} (at {list(error.absolute_path)})")
    expect(report.get("subject") == "nep49_handler",
           f"expected the report's subject 'nep49_handler', got {report.get('subject')!r}")
    expect("capabilities" not in report.get("plugin", {}),
           "a NEP 49 handler's report carries EMM plugin capabilities")
    certified = row["verdict"] == "CERTIFIED"
    expect(run.returncode == (0 if certified else 1),
           f"expected exit code {0 if certified else 1} ({row['verdict']}), got {run.returncode}")
    expect(report.get("verdict") == row["verdict"],
           f"expected verdict {row['verdict']!r}, the report says {report.get('verdict')!r}")
    results = {r["clause"]: r for r in report.get("results", []) if r.get("backend") == "fake"}
    catalogue = nep49_clauses(args.certify)
    missing = sorted(set(catalogue) - set(results))
    expect(not missing, f"the report lacks nep49 clauses: {missing}")

    def describe(clause):
        r = results.get(clause)
        return "no result" if r is None else f"{r.get('outcome')} ({r.get('message', '')!r})"

    target = row["clause"]
    if target != "-":
        expect(results.get(target, {}).get("outcome") == row["outcome"],
               f"{target}: expected outcome {row['outcome']}, got {describe(target)}")
        expect(target in results.get(target, {}).get("message", ""),
               f"{target}: the message does not name the clause: {describe(target)}")
    must_pass = (set(catalogue) - {target}) if row["must_pass"] == "*" else \
        ({c for c in row["must_pass"].split(",") if c} if row["must_pass"] != "-" else set())
    for clause in sorted(must_pass):
        level = results.get(clause, {}).get("level")
        if row["must_pass"] == "*" and level == "SHOULD":
            continue  # a SHOULD clause of a baseline may warn (NumPy's own default does, NEP49-7)
        expect(results.get(clause, {}).get("outcome") == "pass",
               f"{clause}: expected pass (unrelated to the defect), got {describe(clause)}")
    if failures:
        print(f"known_bad_nep49.{args.test}: {len(failures)} assertion(s) failed")
        for failure in failures:
            print(f"  - {failure}")
        print(context)
        return 1
    print(f"known_bad_nep49.{args.test}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
