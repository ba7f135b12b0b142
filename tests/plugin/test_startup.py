"""What the plugin costs at start-up (issue 29): its own modules load as plain modules, not
through pytest's assertion rewriting (which recompiles them in every run under
PYTHONDONTWRITEBYTECODE=1), while the user's test files and conftests are rewritten as ever.
One fresh interpreter: the import order at start-up is the point."""

from __future__ import annotations

import pytest

from tests.runner import python_path_with_repo

CONFTEST = """
import sys

def helper_checks(value):
    assert value == {"width": 8}

def pytest_unconfigure(config):
    from _pytest.assertion.rewrite import AssertionRewritingHook
    rewritten = sorted(name for name, module in sys.modules.items()
                       if name.startswith("pytest_itera.")
                       and isinstance(getattr(module, "__loader__", None),
                                      AssertionRewritingHook))
    print(f"\\nrewritten pytest_itera modules: {rewritten}")
"""

TESTS = """
from conftest import helper_checks

def test_own_assert():
    widths = [8, 16]
    assert widths == [8, 32]

def test_conftest_helper():
    helper_checks({"width": 4})
"""


def test_own_modules_plain_user_files_rewritten(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_user=TESTS)
    # The entry point imports the plugin (options, check model, campaign loader) in any run.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(failed=2)
    # pytest's introspection of the user's own asserts, in a test file and in a conftest.
    out = result.stdout.str()
    assert "E       assert [8, 16] == [8, 32]" in out
    assert "At index 1 diff: 16 != 32" in out
    assert "E       AssertionError: assert {'width': 4} == {'width': 8}" in out
    assert "rewritten pytest_itera modules: []" in out
