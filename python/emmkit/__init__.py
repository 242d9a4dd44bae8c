"""emmkit from Python: certify a numba EMM plugin class with emm-certify --python.

    import emmkit
    run = emmkit.certify("cupy_manager:CuPyMemoryManager")
    run.status, run.report["verdict"], run.report["results"][0]["outcome"]

A thin layer over emm-certify's JSON report (docs/report.schema.json): emm-certify is found as
$EMMKIT_CERTIFY, else on PATH.
"""
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile

__all__ = ["CertifyRun", "certify", "find_certify"]


@dataclasses.dataclass
class CertifyRun:
    status: int        # emm-certify's exit status (0 certified, 1 not, 2 could not run, 3 partial)
    report: dict       # the JSON report; {} when none was written
    console: str       # what emm-certify printed


def find_certify():
    found = os.environ.get("EMMKIT_CERTIFY") or shutil.which("emm-certify")
    if not found:
        raise FileNotFoundError("emm-certify not found: set EMMKIT_CERTIFY to its path or put it "
                                "on PATH (build/default/conformance/emm-certify)")
    return found


def certify(target, capabilities=None, extra_args=(), certify_path=None):
    """Runs emm-certify --python TARGET and returns its exit status, report and console text."""
    with tempfile.TemporaryDirectory(prefix="emmkit-") as work:
        report_path = os.path.join(work, "report.json")
        command = [certify_path or find_certify(), "--python", target, "--json", report_path]
        if capabilities is not None:
            command += ["--capabilities", capabilities or "none"]
        command += list(extra_args)
        done = subprocess.run(command, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        report = {}
        if os.path.exists(report_path):
            with open(report_path) as stream:
                report = json.load(stream)
        return CertifyRun(done.returncode, report, done.stdout)
