"""The pytest items of a certification: run with -p emmkit.pytest_plugin --emm-plugin M:A."""
from emmkit.pytest_plugin import check


def test_clause(emm_result):
    check(emm_result)
