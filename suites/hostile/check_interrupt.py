#!/usr/bin/env python3
"""A signal ends a certification cleanly (spec §8, "The run itself").

Runs emm-certify on the hostile plugin with its initialize() hanging (EMM_HOSTILE_SITE=initialize,
EMM_HOSTILE_ACTION=hang: a worker is then stuck in plugin code, as in a CI job that is
cancelled), waits until a worker runs, sends SIGNAL to emm-certify alone, and asserts:

  * emm-certify exits within a few seconds with status 128 + SIGNAL;
  * every requested report exists: the JSON validates against the schema, its verdict is
    NOT CERTIFIED with "interrupted by SIG..." in its line, the clause that was running and
    every clause after it is `not_run` with "interrupted by SIG..." in its message, and no
    result is missing; the JUnit XML parses; the Markdown and HTML certificates hold the
    verdict line;
  * no process of the run survives (EMM_HOSTILE_TOKEN, as in check_hostile.py).

  check_interrupt.py --certify emm-certify --plugin libhostile_plugin.so \\
      --schema docs/report.schema.json --work-dir DIR --signal TERM [--isolation clause]

Exit status 0 when every assertion holds, else 1 with each failed assertion printed.
"""
import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_hostile import plugin_clauses, survivors  # noqa: E402


def descendants(root):
    """The pids whose chain of parents reaches `root`."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                parents[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certify", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--signal", required=True, choices=["INT", "TERM", "HUP"])
    parser.add_argument("--isolation", default="backend", choices=["backend", "clause"])
    args = parser.parse_args()
    number = getattr(signal, "SIG" + args.signal)
    failures = []

    def expect(condition, message):
        if not condition:
            failures.append(message)

    os.makedirs(args.work_dir, exist_ok=True)
    stem = os.path.join(args.work_dir, f"interrupt.{args.signal}.{args.isolation}")
    paths = {kind: f"{stem}.{kind}" for kind in ("json", "xml", "md", "html", "out", "err")}
    for path in paths.values():
        if os.path.exists(path):
            os.remove(path)
    command = [args.certify, "--plugin", args.plugin, "--backend", "fake", "--isolation",
               args.isolation, "--timeout-s", "120", "--json", paths["json"], "--junit",
               paths["xml"], "--markdown", paths["md"], "--html", paths["html"]]
    token = f"interrupt-{args.signal}-{os.getpid()}-{secrets.token_hex(8)}"
    environment = dict(os.environ, EMM_HOSTILE_ACTION="hang", EMM_HOSTILE_SITE="initialize",
                       EMM_HOSTILE_TOKEN=token)
    with open(paths["out"], "wb") as out, open(paths["err"], "wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=environment,
                                   start_new_session=True)
        # A clause's worker is stuck in initialize() once emm-certify has a child that has run
        # for a while (the probe that comes first does not initialize).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            with open(paths["out"], "rb") as seen:
                if b"backend fake:" in seen.read() and descendants(process.pid):
                    break
            time.sleep(0.1)
        time.sleep(1.0)
        run = descendants(process.pid)
        expect(process.poll() is None and run, "emm-certify had no worker running to interrupt")
        sent = time.monotonic()
        process.send_signal(number)
        try:
            status = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            status = process.wait()
            expect(False, f"emm-certify did not exit within 20 s of SIG{args.signal} (killed)")
        took = time.monotonic() - sent
    time.sleep(0.2)
    expect(status == 128 + number, f"exit status {status}, expected {128 + number}")
    alive = [pid for pid in run if os.path.exists(f"/proc/{pid}")
             and open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[0] != b"Z"]
    expect(not alive, f"processes of the run outlived emm-certify: {alive}")
    for pid, what in survivors(token):
        expect(False, f"process {pid} ({what[:120]!r}) outlived emm-certify; killed now")
        os.kill(pid, signal.SIGKILL)

    name = f"SIG{args.signal}"
    try:
        with open(paths["json"], encoding="utf-8") as report_file:
            report = json.load(report_file)
        try:
            import jsonschema
            with open(args.schema, encoding="utf-8") as schema_file:
                jsonschema.validate(report, json.load(schema_file))
        except ImportError:
            pass
        expect(report["verdict"] == "NOT CERTIFIED", f"verdict {report['verdict']!r}")
        expect(f"interrupted by {name}" in report["verdict_line"],
               f"verdict line {report['verdict_line']!r} does not say it was interrupted")
        results = report["results"]
        clauses = plugin_clauses(args.certify)
        expect(sorted(r["clause"] for r in results) == sorted(clauses),
               "the report does not hold exactly one result per plugin clause")
        interrupted = [r for r in results if r["outcome"] == "not_run"
                       and f"interrupted by {name}" in r.get("message", "")]
        expect(interrupted, "no result is not_run \"interrupted by ...\"")
        expect(all(r["outcome"] in ("pass", "not_supported", "not_run") for r in results),
               "a clause failed although the plugin only hung in initialize() until the signal: "
               + ", ".join(f"{r['clause']}={r['outcome']}" for r in results
                           if r["outcome"] not in ("pass", "not_supported", "not_run")))
    except (OSError, ValueError, KeyError) as error:
        expect(False, f"the JSON report is missing or unreadable: {error}")
    except Exception as error:  # jsonschema.ValidationError
        expect(False, f"the JSON report does not validate: {str(error)[:300]}")
    try:
        ElementTree.parse(paths["xml"])
    except (OSError, ElementTree.ParseError) as error:
        expect(False, f"the JUnit report is missing or does not parse: {error}")
    for kind in ("md", "html"):
        try:
            with open(paths[kind], encoding="utf-8") as certificate:
                expect(f"interrupted by {name}" in certificate.read(),
                       f"the {kind} certificate does not say it was interrupted")
        except OSError as error:
            expect(False, f"the {kind} certificate is missing: {error}")

    label = f"interrupt.{args.signal} [{args.isolation} isolation]"
    if failures:
        print(f"{label}: {len(failures)} assertion(s) failed")
        for failure in failures:
            print(f"  - {failure}")
        with open(paths["err"], "rb") as err:
            print(f"  stderr: {err.read()[-2000:].decode('utf-8', 'replace')!r}")
        return 1
    print(f"{label}: ok (exit {status} {took:.1f} s after the signal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
