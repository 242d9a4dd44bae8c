#!/usr/bin/env python3
"""Runs emm-certify on the hostile plugin for one case and asserts what the certifier did.

The hostile plugin (libhostile_plugin.so: hostile_plugin.cpp, hostile_action.cpp) is the zoo's
correct BaselinePool with one attack, chosen by the environment this script gives emm-certify:
EMM_HOSTILE_ACTION (what) and EMM_HOSTILE_SITE (where: load = a static initialiser, entry = the
entry point, constructor, initialize, memalloc, reset). A case is one (site, action) and runs
emm-certify once per isolation mode (--isolation backend, the default, and clause), asserting
for each run:

  * the exit status: 2 and "could not load" with the cause on stderr for an attack while the
    library loads; 1 (NOT CERTIFIED) with the right outcome on the clause the attack hit while
    the others pass; 3 (PARTIAL) or 0 (CERTIFIED) when the attack cannot change a result; a
    forged answer never yields pass;
  * the reports: the JSON validates against docs/report.schema.json and holds exactly one result
    for every selected (clause, backend) — every plugin clause of `emm-certify --list` in a
    full run — and nothing else; the JUnit XML parses and has one testcase per result; the
    Markdown and HTML certificates and emm-certify's console output are valid UTF-8 holding no
    raw control character other than newline and tab (nor U+FFFE, U+FFFF);
  * no process left behind: EMM_HOSTILE_TOKEN, unique to the run, is in the environment of
    emm-certify and so of every process it or the plugin starts; after emm-certify exits no
    running process may carry it (survivors are named, then killed);
  * a time bound.

  check_hostile.py --list                 the case names (CTest makes hostile.<case> of each)
  check_hostile.py --certify emm-certify --plugin libhostile_plugin.so \\
      --schema docs/report.schema.json --work-dir DIR --case memalloc.segv

Exit status 0 when every assertion holds, else 1 with each failed assertion printed.
Standard library and jsonschema only.
"""

import argparse
import dataclasses
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

try:
    import jsonschema
except ImportError:  # reported as a failed assertion: scripts/setup.sh installs it
    jsonschema = None

# --- the cases --------------------------------------------------------------------------------

# The clauses of a short run: DEFER-6 only reads the declaration and REG-2 builds null-context
# instances, so no attack at a real context's constructor, initialize() or memalloc() reaches
# them; ALLOC-1 reaches all three. With backend isolation DEFER-6 runs in the first worker before
# the attack and REG-2 in the worker that replaces a crashed or hung one.
AROUND_ALLOC = ("DEFER-6", "ALLOC-1", "REG-2")
# LIFE-5 calls reset() first.
AROUND_RESET = ("DEFER-6", "LIFE-5", "REG-2")

ISOLATIONS = ("backend", "clause")


@dataclasses.dataclass
class Expect:
    """What one emm-certify run must show."""
    exit_status: int
    # A load failure: this regular expression must match the cause on stderr and in the JSON
    # report's load_failure.
    load_cause: str = ""
    # clause -> allowed outcomes. In a short (--only) run every other clause must pass; in a
    # full run the attack may reach many, and only these are pinned.
    outcomes: dict = dataclasses.field(default_factory=dict)
    # clause -> regular expression its message must match.
    messages: dict = dataclasses.field(default_factory=dict)
    # Largest report or console output (bytes): what a flood of plugin output may cost.
    max_report_bytes: int = 4 << 20
    # outcome -> (fewest, most) clauses with it, where which clauses does not matter.
    outcome_counts: dict = dataclasses.field(default_factory=dict)
    # Regular expressions each of which some clause's message must match.
    messages_somewhere: tuple = ()
    # clause -> regular expression its captured output (the JSON result's "output") must match.
    outputs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Run:
    isolation: str
    only: tuple  # () : every plugin clause
    expect: Expect
    # --timeout-s: short where the attack hangs (the run then waits for it), else generous, so
    # that a slow clause on a busy machine is not taken for a hang.
    timeout_s: int = 20
    bound_s: float = 45.0  # the run must end within this many seconds
    memory_limit: str = ""  # "" : emm-certify's default
    # Certify a copy of the plugin library made for this run (for an attack that removes it).
    copy_plugin: bool = False


@dataclasses.dataclass
class Case:
    action: str
    site: str
    runs: list
    why: str
    # More environment for emm-certify (a setting of the kit's, not of the attack).
    environment: dict = dataclasses.field(default_factory=dict)


def each_isolation(**run):
    return [Run(isolation=isolation, **run) for isolation in ISOLATIONS]


def load_failure(action, cause, site="load", timeout_s=20, bound_s=45.0):
    """The library cannot be loaded: exit 2, every clause of the catalogue not_run."""
    return Case(action, site, each_isolation(
        only=(), timeout_s=timeout_s, bound_s=bound_s,
        expect=Expect(exit_status=2, load_cause=cause)),
        f"an attack while the library loads ({site}) is a load failure: {cause}")


def clause_hit(action, site, clause, outcome, message, around=AROUND_ALLOC, timeout_s=20,
               bound_s=45.0, memory_limit="", messages_by_isolation=None):
    """The attack hits `clause` (one outcome of `outcome`, a message matching `message`);
    the clauses around it pass."""
    allowed = {outcome} if isinstance(outcome, str) else set(outcome)
    runs = []
    for isolation in ISOLATIONS:
        text = (messages_by_isolation or {}).get(isolation, message)
        runs.append(Run(isolation=isolation, only=around, timeout_s=timeout_s, bound_s=bound_s,
                        memory_limit=memory_limit,
                        expect=Expect(exit_status=1, outcomes={clause: allowed},
                                      messages={clause: text})))
    return Case(action, site, runs, f"{clause} {'/'.join(sorted(allowed))}: {message}")


def harmless(action, site, around=AROUND_ALLOC, why=""):
    """The attack cannot change a result: every selected clause passes (PARTIAL, exit 3)."""
    return Case(action, site, each_isolation(only=around, expect=Expect(exit_status=3)), why)


# A clause's own process that exits 0 without a word: no answer at all.
EXIT0_CLAUSE = {"clause": r"did not send exactly one result \(no bytes\)"}
# A clause process that could not load a plugin the probe loaded (the file is gone).
NOT_REPEATABLE = r"could not load it, although the probe before the clauses did: .*no such file"
CRASH = "crash"
TIMEOUT = "timeout"

CASES = {
    # The control: without an attack the plugin is the correct baseline, CERTIFIED by the whole
    # catalogue in both isolation modes.
    "none": Case("none", "none", each_isolation(only=(), timeout_s=60, bound_s=120.0,
                                                expect=Expect(exit_status=0)),
                 "no attack: CERTIFIED, every plugin clause passes"),

    # --- while the library loads: a static initialiser ---
    "load.exit0": load_failure("exit0", r"ended without a load report"),
    "load.exit3": load_failure("exit3", r"exited with status 3"),
    "load.abort": load_failure("abort", r"SIGABRT"),
    "load.segv": load_failure("segv", r"SIGSEGV"),
    "load.terminate": load_failure("terminate", r"SIGABRT"),
    "load.hang": load_failure("hang", r"did not finish within 2 s", timeout_s=2),
    "load.killpg": load_failure("killpg", r"SIGTERM"),
    "load.close_fds": load_failure("close_fds", r"did not finish within 2 s", timeout_s=2),
    "load.sigchld_ign": harmless(
        "sigchld_ign", "load",
        why="SIGCHLD ignored in a child that loads the plugin changes nothing the certifier "
            "sees"),
    "load.flood": harmless(
        "flood", "load", why="200 MB printed by every process that loads the plugin: captured "
                             "with a cap, every clause passes"),
    "load.weird_exit": load_failure("weird_exit", r"exited with status 3.*it printed"),
    "load.fork_holder": harmless(
        "fork_holder", "load", why="every process that loads the plugin leaves a child holding "
                                   "its pipes: killed with the loading process's group"),
    "load.setsid_grandchild": harmless(
        "setsid_grandchild", "load", why="every process that loads the plugin leaves a detached "
                                         "grandchild: swept"),
    "load.exit120": load_failure("exit120", r"exited with status 120"),
    # The library removes its own file while the probe loads it: the probe succeeds, every
    # clause process then fails to load it and says so in a typed answer (not an exit status).
    "load.unlink_library": Case("unlink_library", "load", [
        Run(isolation=isolation, only=AROUND_ALLOC, copy_plugin=True,
            expect=Expect(exit_status=1, outcomes={clause: {CRASH} for clause in AROUND_ALLOC},
                          messages={clause: NOT_REPEATABLE for clause in AROUND_ALLOC}))
        for isolation in ISOLATIONS],
        "a library that cannot be loaded a second time: every clause crashes, its message "
        "says the clause process could not load the plugin and why"),
    # --- the entry point ---
    "entry.exit0": load_failure("exit0", r"ended without a load report", site="entry"),
    "entry.segv": load_failure("segv", r"SIGSEGV", site="entry"),
    "entry.hang": load_failure("hang", r"did not finish within 2 s", site="entry", timeout_s=2),

    # --- memalloc(): every attack ---
    "memalloc.exit0": clause_hit("exit0", "memalloc", "ALLOC-1", CRASH, r"exit status 0",
                                 messages_by_isolation=EXIT0_CLAUSE),
    # A clause process that cannot load the plugin says so in an answer, so no exit status can
    # pass for a load failure: the message must not blame loading for a plugin that loaded and
    # then exited, whatever the status (120 was once the certifier's own "could not load").
    "memalloc.exit3": clause_hit("exit3", "memalloc", "ALLOC-1", CRASH,
                                 r"^(?!.*could not load).*exit status 3"),
    "memalloc.exit120": clause_hit("exit120", "memalloc", "ALLOC-1", CRASH,
                                   r"^(?!.*could not load).*ended \(exit status 120\)"),
    # 121 is the status a clause process gives up with when its result channel was taken: the
    # message names that only as a possible cause.
    "memalloc.exit121": clause_hit("exit121", "memalloc", "ALLOC-1", CRASH,
                                   r"^(?!.*could not load).*ended \(exit status 121\)"),
    "memalloc.abort": clause_hit("abort", "memalloc", "ALLOC-1", CRASH, r"SIGABRT"),
    "memalloc.segv": Case("segv", "memalloc", [
        # The full catalogue in both modes: every clause has its one result after crashes.
        Run(isolation=isolation, only=(), timeout_s=60, bound_s=120.0,
            expect=Expect(exit_status=1,
                          outcomes={"ALLOC-1": {CRASH}, "DEFER-6": {"pass"}, "REG-2": {"pass"}},
                          messages={"ALLOC-1": r"SIGSEGV"}))
        for isolation in ISOLATIONS],
        "every clause that allocates crashes (SIGSEGV), those that do not pass; the full "
        "catalogue stays complete"),
    # EMMKIT_CRASH_STACK: the crashing worker's native stack, down to the plugin's frame, is in
    # the clause's output, and the clause is still a crash.
    "memalloc.segv_stack": Case("segv", "memalloc", [
        Run(isolation=isolation, only=AROUND_ALLOC,
            expect=Expect(exit_status=1, outcomes={"ALLOC-1": {CRASH}},
                          messages={"ALLOC-1": r"SIGSEGV"},
                          outputs={"ALLOC-1": r"SEGV in the worker; native stack "
                                              r"\(EMMKIT_CRASH_STACK\):\n.*libhostile_plugin\.so"
                                              r"\(.*libemm_reference"}))
        for isolation in ISOLATIONS],
        "ALLOC-1 crash, with the native stack from the plugin's frame down",
        environment={"EMMKIT_CRASH_STACK": "1"}),
    "memalloc.terminate": clause_hit("terminate", "memalloc", "ALLOC-1", CRASH, r"SIGABRT"),
    "memalloc.hang": clause_hit("hang", "memalloc", "ALLOC-1", TIMEOUT, r"no answer within 2 s",
                                timeout_s=2),
    "memalloc.killpg": clause_hit("killpg", "memalloc", "ALLOC-1", CRASH, r"SIGTERM"),
    "memalloc.close_fds": clause_hit("close_fds", "memalloc", "ALLOC-1", TIMEOUT,
                                     r"no answer within 2 s", timeout_s=2),
    "memalloc.sigchld_ign": harmless("sigchld_ign", "memalloc",
                                     why="SIGCHLD ignored inside a clause child"),
    "memalloc.flood": harmless("flood", "memalloc",
                               why="200 MB printed in a clause: captured with a cap"),
    "memalloc.fork_holder": harmless(
        "fork_holder", "memalloc",
        why="a child holding stdout and every channel open and sleeping: the clause ends when "
            "its process is reaped, and the holder is killed with its process group"),
    "memalloc.setsid_grandchild": Case("setsid_grandchild", "memalloc", [
        # The full catalogue with a process per clause: one detached grandchild per clause.
        Run(isolation="backend", only=AROUND_ALLOC, expect=Expect(exit_status=3)),
        Run(isolation="clause", only=(), timeout_s=60, bound_s=120.0,
            expect=Expect(exit_status=0)),
    ], "a detached (setsid) grandchild sleeping forever: swept, every clause passes"),
    "memalloc.devnull_channel": clause_hit("devnull_channel", "memalloc", "ALLOC-1", CRASH,
                                           r"closed or replaced the process's result channel"),
    "memalloc.close_channel": clause_hit("close_channel", "memalloc", "ALLOC-1", CRASH,
                                         r"closed or replaced the process's result channel"),
    "memalloc.forge_nonce": clause_hit("forge_nonce", "memalloc", "ALLOC-1", CRASH,
                                       r"wrong nonce"),
    "memalloc.forge_other_clause": clause_hit(
        "forge_other_clause", "memalloc", "ALLOC-1", CRASH, r"wrong nonce",
        messages_by_isolation={"clause": r"did not send exactly one result"}),
    "memalloc.forge_two": clause_hit(
        "forge_two", "memalloc", "ALLOC-1", CRASH, r"wrong nonce",
        messages_by_isolation={"clause": r"did not send exactly one result"}),
    "memalloc.forge_garbage": clause_hit(
        "forge_garbage", "memalloc", "ALLOC-1", CRASH, r"garbage",
        messages_by_isolation={"clause": r"did not send exactly one result \(not a frame"}),
    "memalloc.forge_truncated": clause_hit(
        "forge_truncated", "memalloc", "ALLOC-1", CRASH, r"exit status 0",
        messages_by_isolation={"clause": r"did not send exactly one result \(truncated"}),
    "memalloc.malloc_loop": clause_hit(
        "malloc_loop", "memalloc", "ALLOC-1", ("fail", CRASH), r"bad_alloc|memory",
        memory_limit="768M"),
    "memalloc.default_memory_limit": harmless(
        "require_memory_limit", "memalloc",
        why="without --memory-limit a clause's process still has a data-segment limit (the "
            "plugin fails memalloc when it has none)"),
    "memalloc.weird_text": Case("weird_text", "memalloc", [
        Run(isolation=isolation, only=AROUND_ALLOC,
            expect=Expect(exit_status=1, outcomes={"ALLOC-1": {"fail"}},
                          messages={"ALLOC-1": r"memalloc refuses"}))
        for isolation in ISOLATIONS],
        "a name, defer_cleanup text, exception message and output holding noncharacters, "
        "invalid UTF-8 and terminal escapes: every report stays valid"),

    # --- the constructor (a real context), initialize(), reset(): a selection ---
    "constructor.segv": clause_hit("segv", "constructor", "ALLOC-1", CRASH, r"SIGSEGV"),
    "constructor.exit0": clause_hit("exit0", "constructor", "ALLOC-1", CRASH, r"exit status 0",
                                    messages_by_isolation=EXIT0_CLAUSE),
    "constructor.hang": clause_hit("hang", "constructor", "ALLOC-1", TIMEOUT,
                                   r"no answer within 2 s", timeout_s=2),
    "constructor.forge_nonce": clause_hit("forge_nonce", "constructor", "ALLOC-1", CRASH,
                                          r"wrong nonce"),
    # Fail fast (spec §8): every clause that initializes hangs; the first waits the whole
    # timeout, later ones a quarter of it (at least 5 s), and once two fresh processes of a
    # worker in a row hung, that worker's other clauses are not run: the verdict comes in under
    # two timeouts. The fake's two workers hang side by side (24 + 3 x 6 s in the longer).
    "initialize.hang": Case("hang", "initialize", [
        Run(isolation="backend", only=(), timeout_s=24, bound_s=60.0,
            expect=Expect(exit_status=1, outcome_counts={"timeout": (2, 6), "not_run": (20, 99)},
                          messages_somewhere=(
                              r"no answer within 24 s: the plugin hangs",
                              r"not run: [2-9] fresh processes in a row hung before answering any "
                              r"clause"))),
        # Clauses that share one worker: the second waits only the shortened limit.
        Run(isolation="backend", only=("REG-1", "LIFE-2", "LIFE-4", "LIFE-5"), timeout_s=24,
            bound_s=50.0,
            expect=Expect(exit_status=1,
                          outcomes={"REG-1": {TIMEOUT}, "LIFE-2": {TIMEOUT},
                                    "LIFE-4": {"not_run"}, "LIFE-5": {"not_run"}},
                          messages={
                              "REG-1": r"no answer within 24 s: the plugin hangs",
                              "LIFE-2": r"no answer within 6 s \(shortened: REG-1 hung "
                                        r"before\): the plugin hangs",
                              "LIFE-4": r"not run: 2 fresh processes in a row hung before "
                                        r"answering any clause \(REG-1, LIFE-2\)"}))],
        "a hang in initialize(): one whole timeout, then short ones, the rest not_run"),
    "initialize.abort": clause_hit("abort", "initialize", "ALLOC-1", CRASH, r"SIGABRT"),
    "initialize.killpg": clause_hit("killpg", "initialize", "ALLOC-1", CRASH, r"SIGTERM"),
    "initialize.devnull_channel": clause_hit("devnull_channel", "initialize", "ALLOC-1", CRASH,
                                             r"closed or replaced the process's result channel"),
    "initialize.fork_holder": harmless("fork_holder", "initialize",
                                       why="a child holding every pipe, from initialize()"),
    "reset.segv": clause_hit("segv", "reset", "LIFE-5", CRASH, r"SIGSEGV", around=AROUND_RESET),
    "reset.exit3": clause_hit("exit3", "reset", "LIFE-5", CRASH,
                              r"^(?!.*could not load).*exit status 3", around=AROUND_RESET),
    "reset.close_fds": clause_hit("close_fds", "reset", "LIFE-5", TIMEOUT,
                                  r"no answer within 2 s", around=AROUND_RESET, timeout_s=2),
    "reset.setsid_grandchild": harmless("setsid_grandchild", "reset", around=AROUND_RESET,
                                        why="a detached grandchild, from reset()"),
}

# --- checks -------------------------------------------------------------------------------------

OUTCOMES = {"pass", "fail", "not_supported", "crash", "timeout", "not_run"}


class Checker:
    def __init__(self, name, schema):
        self.name = name
        self.schema = schema  # path of docs/report.schema.json
        self.failures = []

    def expect(self, condition, message):
        if not condition:
            self.failures.append(message)
        return condition


def plugin_clauses(certify):
    """The plugin-target clause ids of the catalogue, in its order (`emm-certify --list`)."""
    listing = subprocess.run([certify, "--list"], capture_output=True, text=True, timeout=60)
    if listing.returncode != 0:
        raise SystemExit(f"emm-certify --list exited {listing.returncode}: {listing.stderr}")
    clauses = []
    for line in listing.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 3 and re.fullmatch(r"[A-Z]+-[0-9]+", fields[0]) and \
                "plugin" in fields[2]:
            clauses.append(fields[0])
    if not clauses:
        raise SystemExit(f"emm-certify --list printed no plugin clause:\n{listing.stdout}")
    return clauses


# C0 controls but tab and newline, DEL, C1 controls, and the two noncharacters XML forbids.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]")


def check_text(checker, what, data):
    """`data` (bytes) is valid UTF-8 without raw control characters."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        checker.expect(False, f"{what} is not valid UTF-8: {error}")
        return
    found = RAW_CONTROL.search(text)
    if found:
        start = max(found.start() - 40, 0)
        checker.expect(False, f"{what} holds the raw control character "
                              f"U+{ord(found.group()):04X} at offset {found.start()}: "
                              f"{text[start:found.start() + 40]!r}")


def check_one_verdict(checker, what, data, fenced_blocks=False):
    """Only the certifier's own verdict line starts with "VERDICT:" (plugin text cannot add a
    line that reads like one), outside fenced code blocks in Markdown (there, plugin output is
    quoted as it was printed)."""
    lines, fence = [], None
    for line in data.decode("utf-8", "replace").splitlines():
        marker = re.match(r"\s*(`{3,})", line) if fenced_blocks else None
        if marker and (fence is None or marker.group(1).startswith(fence)):
            fence = None if fence else marker.group(1)
            continue
        if fence is None and line.startswith("VERDICT:"):
            lines.append(line)
    checker.expect(len(lines) <= 1, f"{what} has {len(lines)} lines that start with "
                                    f"'VERDICT:', expected the certifier's one: {lines!r}")


def survivors(token):
    """Running processes whose environment carries EMM_HOSTILE_TOKEN=token: (pid, command)."""
    needle = b"EMM_HOSTILE_TOKEN=" + token.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if needle not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state != b"Z":
            found.append((int(entry), command))
    return found


def check_survivors(checker, token):
    left = survivors(token)
    if left:
        time.sleep(0.5)  # a process SIGKILLed just before emm-certify exited may still be dying
        left = survivors(token)
    for pid, command in left:
        checker.expect(False, f"process {pid} ({command[:160]!r}) outlived emm-certify (it "
                              f"carries the run's EMM_HOSTILE_TOKEN); killed now")
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except OSError:
                pass


def check_reports(checker, run, paths, selected, stderr):
    expect = run.expect
    try:
        with open(paths["json"], "rb") as report_file:
            raw = report_file.read()
        report = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as error:
        checker.expect(False, f"no readable JSON report at {paths['json']}: {error}")
        return
    checker.expect(len(raw) <= expect.max_report_bytes,
                   f"the JSON report is {len(raw)} bytes, more than {expect.max_report_bytes}")
    if jsonschema is None:
        checker.expect(False, "python3 jsonschema is not installed (scripts/setup.sh installs "
                              "python3-jsonschema)")
    else:
        with open(checker.schema, encoding="utf-8") as schema_file:
            schema = json.load(schema_file)
        try:
            jsonschema.validate(report, schema)
        except jsonschema.ValidationError as error:
            checker.expect(False, f"the JSON report does not validate against the schema: "
                                  f"{error.message} at {list(error.absolute_path)}")

    # Exactly one result for every selected (clause, backend), and nothing else.
    results = report.get("results", [])
    seen = {}
    for result in results:
        key = (result.get("clause"), result.get("backend"))
        checker.expect(key not in seen, f"{key[0]} on {key[1]}: two results in the JSON report")
        seen[key] = result
    wanted = {(clause, "fake") for clause in selected}
    missing = sorted(wanted - set(seen))
    extra = sorted(set(seen) - wanted)
    checker.expect(not missing, f"the JSON report has no result for {missing}")
    checker.expect(not extra, f"the JSON report has results nobody asked for: {extra}")

    verdicts = {0: "CERTIFIED", 1: "NOT CERTIFIED", 2: "NOT CERTIFIED", 3: "PARTIAL"}
    checker.expect(report.get("verdict") == verdicts.get(expect.exit_status),
                   f"verdict {report.get('verdict')!r}, expected "
                   f"{verdicts.get(expect.exit_status)!r}")

    def describe(clause):
        result = seen.get((clause, "fake"))
        return "no result" if result is None else \
            f"{result.get('outcome')} ({result.get('message', '')[:600]!r})"

    if expect.load_cause:
        checker.expect("could not load" in stderr,
                       f"stderr does not say 'could not load': {stderr[-2000:]!r}")
        checker.expect(re.search(expect.load_cause, stderr) is not None,
                       f"stderr does not give the cause /{expect.load_cause}/: "
                       f"{stderr[-2000:]!r}")
        checker.expect(re.search(expect.load_cause, report.get("load_failure", "")) is not None,
                       f"the JSON report's load_failure does not give the cause "
                       f"/{expect.load_cause}/: {report.get('load_failure')!r}")
        for clause in selected:
            outcome = seen.get((clause, "fake"), {}).get("outcome")
            checker.expect(outcome == "not_run",
                           f"{clause}: expected not_run (the plugin could not be loaded), got "
                           f"{describe(clause)}")
    else:
        for clause in selected:
            outcome = seen.get((clause, "fake"), {}).get("outcome")
            if clause in expect.outcomes:
                allowed = expect.outcomes[clause]
                checker.expect(outcome in allowed,
                               f"{clause}: expected {'/'.join(sorted(allowed))}, got "
                               f"{describe(clause)}")
                # The message (its start shown on a mismatch) and the captured output (its end).
                for field, patterns, shown in (("message", expect.messages, slice(0, 600)),
                                               ("output", expect.outputs, slice(-1200, None))):
                    pattern = patterns.get(clause)
                    text = seen.get((clause, "fake"), {}).get(field, "")
                    if pattern:
                        checker.expect(re.search(pattern, text, re.S) is not None,
                                       f"{clause}: the {field} does not match /{pattern}/: "
                                       f"{text[shown]!r}")
            elif run.only:
                checker.expect(outcome == "pass",
                               f"{clause} (not reached by the attack): expected pass, got "
                               f"{describe(clause)}")
            else:
                # A full run: the attack may reach many clauses, but it never makes one pass
                # that would not, and a forged answer never yields pass.
                checker.expect(outcome in OUTCOMES, f"{clause}: outcome {outcome!r}")
        for outcome, (fewest, most) in expect.outcome_counts.items():
            having = [c for c in selected if seen.get((c, "fake"), {}).get("outcome") == outcome]
            checker.expect(fewest <= len(having) <= most,
                           f"expected {fewest} to {most} clauses {outcome}, got {len(having)}: "
                           f"{having}")
        messages = [seen.get((c, "fake"), {}).get("message", "") for c in selected]
        for pattern in expect.messages_somewhere:
            checker.expect(any(re.search(pattern, m, re.S) for m in messages),
                           f"no clause's message matches /{pattern}/")
        if expect.exit_status == 0:
            # A DEV clause on the one-device fake machine is not_supported ("needs two
            # devices"): the backend's limit, not the plugin's.
            failed = [c for c in selected if seen.get((c, "fake"), {}).get("outcome") != "pass"
                      and seen.get((c, "fake"), {}).get("level") == "MUST"
                      and "needs two devices" not in seen.get((c, "fake"), {}).get("message", "")]
            checker.expect(not failed, f"MUST clauses that did not pass: "
                                       f"{[(c, describe(c)) for c in failed]}")

    # JUnit: a real XML parser, one testcase per result.
    try:
        tree = ElementTree.parse(paths["junit"])
        cases = list(tree.getroot().iter("testcase"))
        checker.expect(len(cases) == len(results),
                       f"the JUnit report has {len(cases)} testcases for {len(results)} results")
    except (OSError, ElementTree.ParseError) as error:
        checker.expect(False, f"the JUnit report does not parse: {error}")
    for kind in ("junit", "markdown", "html"):
        try:
            with open(paths[kind], "rb") as report_file:
                data = report_file.read()
        except OSError as error:
            checker.expect(False, f"no {kind} report: {error}")
            continue
        checker.expect(len(data) <= expect.max_report_bytes,
                       f"the {kind} report is {len(data)} bytes, more than "
                       f"{expect.max_report_bytes}")
        if kind != "junit":
            check_text(checker, f"the {kind} report", data)
        if kind == "markdown":
            check_one_verdict(checker, "the Markdown report", data, fenced_blocks=True)


def run_once(args, case_name, case, index, run, selected):
    checker = Checker(f"hostile.{case_name} [{run.isolation} isolation, "
                      f"{'--only ' + ','.join(run.only) if run.only else 'full catalogue'}]",
                      args.schema)
    stem = os.path.join(args.work_dir, f"{case_name}.{index}.{run.isolation}")
    paths = {"json": stem + ".json", "junit": stem + ".xml", "markdown": stem + ".md",
             "html": stem + ".html", "stdout": stem + ".stdout", "stderr": stem + ".stderr"}
    for path in paths.values():
        if os.path.exists(path):
            os.remove(path)
    plugin = args.plugin
    if run.copy_plugin:
        plugin = stem + ".so"
        shutil.copyfile(args.plugin, plugin)
    command = [args.certify, "--plugin", plugin, "--backend", "fake",
               "--isolation", run.isolation, "--timeout-s", str(run.timeout_s),
               "--json", paths["json"], "--junit", paths["junit"],
               "--markdown", paths["markdown"], "--html", paths["html"]]
    if run.only:
        command += ["--only", ",".join(run.only)]
    if run.memory_limit:
        command += ["--memory-limit", run.memory_limit]
    token = f"hostile-{case_name}-{index}-{os.getpid()}-{secrets.token_hex(8)}"
    environment = dict(os.environ, EMM_HOSTILE_ACTION=case.action, EMM_HOSTILE_SITE=case.site,
                       EMM_HOSTILE_TOKEN=token, **case.environment)

    # Console output goes to files: a pipe held open by a leftover process would stall a reader.
    # Its own session, so that a signal to emm-certify's process group cannot reach this script.
    started = time.monotonic()
    with open(paths["stdout"], "wb") as stdout, open(paths["stderr"], "wb") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=environment,
                                   start_new_session=True)
        try:
            status = process.wait(timeout=run.bound_s + 30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            status = process.wait()
            checker.expect(False, f"emm-certify did not finish within {run.bound_s + 30:.0f} s "
                                  f"(killed)")
    elapsed = time.monotonic() - started
    check_survivors(checker, token)
    with open(paths["stdout"], "rb") as stdout, open(paths["stderr"], "rb") as stderr:
        out, err = stdout.read(), stderr.read()

    checker.expect(status == run.expect.exit_status,
                   f"exit status {status}, expected {run.expect.exit_status}")
    checker.expect(elapsed <= run.bound_s,
                   f"emm-certify took {elapsed:.1f} s, more than the bound {run.bound_s:.0f} s")
    for what, data in (("stdout", out), ("stderr", err)):
        check_text(checker, f"emm-certify's {what}", data)
        check_one_verdict(checker, f"emm-certify's {what}", data)
        checker.expect(len(data) <= run.expect.max_report_bytes,
                       f"emm-certify's {what} is {len(data)} bytes, more than "
                       f"{run.expect.max_report_bytes}")
    check_reports(checker, run, paths, selected, err.decode("utf-8", "replace"))

    if checker.failures:
        print(f"{checker.name}: {len(checker.failures)} assertion(s) failed ({elapsed:.1f} s)")
        for failure in checker.failures:
            print(f"  - {failure}")
        settings = "".join(f"{name}={value} " for name, value in case.environment.items())
        print(f"  command: {settings}EMM_HOSTILE_ACTION={case.action} "
              f"EMM_HOSTILE_SITE={case.site} {' '.join(command)}")
        print(f"  stderr (last 3000 bytes): {err[-3000:].decode('utf-8', 'replace')!r}")
        return False
    print(f"{checker.name}: ok ({elapsed:.1f} s)")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument("--certify", help="path of emm-certify")
    parser.add_argument("--plugin", help="path of libhostile_plugin.so")
    parser.add_argument("--schema", help="path of docs/report.schema.json")
    parser.add_argument("--work-dir", help="where the reports and console output go")
    parser.add_argument("--case", help="the case to run")
    args = parser.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    for option in ("certify", "plugin", "schema", "work_dir", "case"):
        if getattr(args, option) is None:
            parser.error(f"--{option.replace('_', '-')} is required")
    if args.case not in CASES:
        parser.error(f"no case {args.case!r}; --list names them")
    case = CASES[args.case]
    os.makedirs(args.work_dir, exist_ok=True)
    catalogue = plugin_clauses(args.certify)
    print(f"hostile.{args.case}: {case.why}")
    ok = True
    for index, run in enumerate(case.runs):
        selected = list(run.only) if run.only else catalogue
        ok &= run_once(args, args.case, case, index, run, selected)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
