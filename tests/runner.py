"""The one way a test runs pytest on a campaign: the ``itera`` fixture's :class:`Itera`.

Every test of the pytest wiring (tests/plugin/) runs three times, as pytest-mypy's tests do:
with xdist absent (``-p no:xdist``), installed but off (``-n 0``) and on (``-n 2``), so that
what the plugin says is the same whether the checks run in one process or on workers
(tests/plugin/test_xdist_modes.py also compares the JSON reports of the three, byte for byte).
A wiring test whose answer no process model can change (what a report or a seal says, a usage
error raised before any worker starts) runs once, xdist absent: ``@pytest.mark.one_mode(why)``
(tests/plugin/conftest.py; ``ITERA_TESTS_XDIST=all`` runs it in the three modes as well).

Elsewhere the xdist mode cannot change the answer: a test runs once, with xdist absent. A
rule test (tests/checks/) asks only what the items say: its calls that need nothing but
``-k``, ``-rf`` or ``-rA`` are answered in-process (tests/inprocess.py: the same checks, the
same failure text, no pytest session), the others by a pytest session.
ITERA_TESTS_BACKEND=session sends every call to a session; =crosscheck answers in-process
and also runs the session, and asserts both give every item the same outcome and text.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.reload import Reloader
from tests import inprocess
from tests.factory import CampaignBuilder, expect, tree_digest

REPO = Path(__file__).resolve().parents[1]

XDIST_ARGS = {"absent": ("-p", "no:xdist"), "off": ("-n", "0"), "on": ("-n", "2")}
XDIST_MODES = tuple(XDIST_ARGS)
# What the tests' own session exports to the sessions they run (tests/conftest.py).
LEAN_ADDOPTS = "-p no:hypothesispytest -p no:anyio"
BACKEND_ENV = "ITERA_TESTS_BACKEND"  # "session" or "crosscheck"; unset: in-process
# "all": the wiring's one_mode tests run in the three xdist modes too (tests/plugin/conftest.py).
ALL_MODES_ENV = "ITERA_TESTS_XDIST"
# Files of a pytester folder that a session would read and the in-process backend ignores.
SESSION_FILES = ("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg",
                 "pyproject.toml")


# Reasons of one_mode tests (tests/plugin/conftest.py): a usage error, and what a report says.
BEFORE_WORKERS = ("a usage error: pytest-itera reads its options as pytest starts, before any "
                  "xdist worker exists")
SAME_REPORT = ("what the JSON report says: tests/plugin/test_xdist_modes.py shows it "
               "byte-identical in every xdist mode")


def only_xdist(*modes: str) -> pytest.MarkDecorator:
    """Pin a test that uses ``itera`` to some xdist modes; say why where it is used."""
    return pytest.mark.parametrize("xdist", modes, ids=[f"xdist-{mode}" for mode in modes])


class Itera:
    """Runs pytest in the test's pytester folder, in one xdist mode.

    ``itera(*args)`` is ``pytest --itera-campaign out <xdist args> -p no:cacheprovider
    *args``; ``check="files-intact"`` adds ``-k files-intact``; ``campaign=None`` runs
    without ``--itera-campaign`` (a plain session); ``subprocess=True`` runs a new
    interpreter; ``xdist="off"`` overrides the mode for one call (a test comparing modes);
    ``cache=True`` keeps pytest's cache provider on.

    With ``reloader`` (the rule tests'), a call that the in-process backend can answer is
    answered there (see :meth:`in_process`), reloading through that one shared server.

    ``itera.gate()`` runs the plan gate; ``itera.reported(root)`` runs on a folder with a JSON
    report and returns it; ``itera.passes(campaign, check)`` and ``itera.fails(campaign,
    check, *lines)`` write a campaign, run the items ``-k check`` selects and assert their
    outcomes (and the lines the failures say).
    """

    def __init__(self, pytester: pytest.Pytester, xdist: str,
                 reloader: Callable[[], Reloader] | None = None) -> None:
        assert xdist in XDIST_ARGS, xdist
        self.pytester = pytester
        self.xdist = xdist
        self.reloader = reloader

    @property
    def distributed(self) -> bool:
        """Whether items run on xdist workers (the controller prints the summary)."""
        return self.xdist == "on"

    def args(self, *args: str, check: str | None = None, campaign: str | None = "out",
             xdist: str | None = None, cache: bool = False) -> tuple[str, ...]:
        """The command line (after ``pytest``) of a call with the same arguments."""
        return (
            *(("--itera-campaign", campaign) if campaign is not None else ()),
            *XDIST_ARGS[xdist or self.xdist],
            *(() if cache else ("-p", "no:cacheprovider")),
            *(("-k", check) if check is not None else ()),
            *args,
        )

    def __call__(self, *args: str, check: str | None = None, campaign: str | None = "out",
                 xdist: str | None = None, cache: bool = False,
                 subprocess: bool = False) -> pytest.RunResult:
        line = self.args(*args, check=check, campaign=campaign, xdist=xdist, cache=cache)
        if subprocess:
            return run_pytest_command(*line, basetemp=self.pytester.path / "runpytest-0")
        asked = self.in_process(args, check=check, campaign=campaign, xdist=xdist, cache=cache)
        backend = os.environ.get(BACKEND_ENV, "")
        if asked is None or backend == "session" or self.reloader is None:
            return self.pytester.runpytest(*line)
        keyword, report = asked
        answer = inprocess.judge(self.pytester.path / "out", keyword, report, self.reloader)
        if backend == "crosscheck":
            rerun = (*(a for a in line if a not in inprocess.REPORT_CHARS), "-rA")
            inprocess.same_items(answer, self.pytester.runpytest(*rerun))
        return answer

    def in_process(self, args: tuple[str, ...], *, check: str | None, campaign: str | None,
                   xdist: str | None, cache: bool) -> tuple[str | None, str | None] | None:
        """(the ``-k`` expression, the ``-r`` option) of a call the in-process backend answers
        as a session would; None for one that needs a session: other options, another
        campaign folder, an xdist mode of its own, no ``-k`` (a whole run, whose verdict
        section the tests read), a conftest.py or an ini file in the folder, plugins or
        options from the environment, or a campaign whose output has other pytest-side
        lines (stop rules the plugin says it did not evaluate)."""
        if self.reloader is None or campaign != "out" or xdist is not None or cache \
                or self.xdist != "absent":
            return None
        keyword, report, rest = check, None, list(args)
        while rest:
            arg = rest.pop(0)
            if arg in inprocess.REPORT_CHARS and report is None:
                report = arg
            elif arg == "-k" and rest and keyword is None:
                keyword = rest.pop(0)
            else:
                return None
        if keyword is None:  # a whole run: its verdict section (pytest-itera) is pytest-side
            return None
        here = self.pytester.path
        if any((here / name).exists() for name in SESSION_FILES) \
                or os.environ.get("PYTEST_ADDOPTS", LEAN_ADDOPTS) != LEAN_ADDOPTS \
                or "PYTEST_PLUGINS" in os.environ or inprocess.session_only(here / campaign):
            return None
        return keyword, report

    def reported(self, root: Path, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
        """Run on the campaign at ``root`` with ``-rf`` and a JSON report: the result and the
        report; the run must leave the folder exactly as it was."""
        before = tree_digest(root)
        report = self.pytester.path / "report.json"
        result = self("-rf", "--itera-report", str(report), *args, campaign=str(root))
        assert tree_digest(root) == before, "the plugin modified the campaign folder"
        data: dict[str, Any] = json.loads(report.read_text())
        return result, data

    def gate(self, *args: str, plan: str = "out", **options: Any) -> pytest.RunResult:
        """The plan gate: ``pytest --itera-plan <plan> ...`` (no campaign)."""
        return self("--itera-plan", plan, *args, campaign=None, **options)

    def passes(
        self, campaign: CampaignBuilder, check: str, *, passed: int = 1
    ) -> pytest.RunResult:
        """Write ``campaign``: the items ``-k check`` selects (one by default) all pass."""
        campaign.write()
        result = self(check=check)
        result.assert_outcomes(passed=passed)
        return result

    def fails(self, campaign: CampaignBuilder, check: str, *lines: str, failed: int = 1,
              passed: int = 0) -> pytest.RunResult:
        """Write ``campaign``: of the items ``-k check`` selects, ``failed`` fail (one by
        default) and ``passed`` pass; the output says ``lines``, in order (see ``expect``)."""
        campaign.write()
        result = self(check=check)
        result.assert_outcomes(passed=passed, failed=failed)
        expect(result, *lines)
        return result


    def advises(self, campaign: CampaignBuilder, check: str, *lines: str,
                passed: int = 0) -> pytest.RunResult:
        """Write ``campaign``: a reading of words advises — the items ``-k check`` selects
        pass by default — and decides under --itera-strict-text: one fails, saying
        ``lines`` (see ``expect``). The strict run's result."""
        campaign.write()
        self(check=check).assert_outcomes(passed=passed + 1)
        result = self("--itera-strict-text", check=check)
        result.assert_outcomes(passed=passed, failed=1)
        expect(result, *lines)
        return result


def run_pytest_command(*args: str, basetemp: Path | None = None, cwd: Path | None = None,
                       env: dict[str, str] | None = None) -> pytest.RunResult:
    """``pytest ARGS`` in a new interpreter, in the current folder (or ``cwd``), as a user
    types it: `python -P -m pytest` has the `pytest` command's sys.path (pytester's
    runpytest_subprocess puts the current folder on PYTHONPATH, and a judged folder on
    sys.path is refused)."""
    import subprocess
    import time

    line = [sys.executable, "-P", "-m", "pytest",
            *((f"--basetemp={basetemp}",) if basetemp is not None else ()), *args]
    start = time.monotonic()
    done = subprocess.run(line, cwd=cwd, capture_output=True, text=True, timeout=600,
                          check=False, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    return pytest.RunResult(done.returncode, done.stdout.splitlines(),
                            done.stderr.splitlines(), time.monotonic() - start)


def python_path_with_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """New interpreters (xdist workers, runpytest_subprocess) import this checkout's package."""
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(dict.fromkeys(paths)))
