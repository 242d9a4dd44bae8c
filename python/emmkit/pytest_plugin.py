"""pytest --emm-plugin MODULE[:ATTR]: one pytest item per (clause, backend) of emm-certify.

    pytest -p emmkit.pytest_plugin --emm-plugin cupy_manager python/emmkit/certified_plugin_test.py

emm-certify --python runs once per session; each result becomes an item named by its clause and
backend ("test_clause[ALLOC-1-gpu]"): pass passes, fail/crash/timeout fail with the clause's
message as pytest shows a failure, not_supported and not_run skip with theirs. Any test module
asking for the `emm_result` fixture gets the items (certified_plugin_test.py is one).
"""
import pytest

from . import certify

_runs = {}


def pytest_addoption(parser):
    group = parser.getgroup("emmkit")
    group.addoption("--emm-plugin", help="the Python EMM plugin class to certify, MODULE[:ATTR]")
    group.addoption("--emm-capabilities", default=None,
                    help="capabilities to certify instead of the class's emmkit_capabilities "
                         "(or, without one, those inferred from what it overrides)")


def _run(config):
    target = config.getoption("--emm-plugin")
    if target not in _runs:
        _runs[target] = certify(target, config.getoption("--emm-capabilities"))
    return _runs[target]


def pytest_generate_tests(metafunc):
    if "emm_result" not in metafunc.fixturenames:
        return
    if not metafunc.config.getoption("--emm-plugin"):
        metafunc.parametrize("emm_result", [pytest.param(None, marks=pytest.mark.skip(
            reason="no --emm-plugin given"))])
        return
    run = _run(metafunc.config)
    results = run.report.get("results", [])
    if not results and run.status == 2 and "gpu backend only" in run.console:
        metafunc.parametrize("emm_result", [pytest.param(None, marks=pytest.mark.skip(
            reason="no GPU: a Python plugin is certified on the gpu backend only"))])
        return
    if not results:
        metafunc.parametrize("emm_result", [{"clause": "load", "backend": "-", "outcome": "fail",
                                             "message": run.console}], ids=["emm-certify"])
        return
    metafunc.parametrize("emm_result", results,
                         ids=["%s-%s" % (r["clause"], r["backend"]) for r in results])


def check(result):
    """Maps one emm-certify outcome onto pytest's."""
    outcome, message = result["outcome"], result.get("message", "")
    if outcome == "pass":
        return
    if outcome in ("not_supported", "not_run"):
        pytest.skip(message or outcome)
    pytest.fail("%s on %s: %s\n%s" % (result["clause"], result["backend"], outcome, message),
                pytrace=False)
