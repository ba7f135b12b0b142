"""The one way a test runs pytest on a campaign: the ``itera`` fixture's :class:`Itera`.

Every behavioural plugin test runs three times, as pytest-mypy's tests do: with xdist
absent (``-p no:xdist``), installed but off (``-n 0``) and on (``-n 2``), so that what the
plugin says is the same whether the checks run in one process or on workers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.factory import CampaignBuilder, expect, tree_digest

REPO = Path(__file__).resolve().parents[1]

XDIST_ARGS = {"absent": ("-p", "no:xdist"), "off": ("-n", "0"), "on": ("-n", "2")}
XDIST_MODES = tuple(XDIST_ARGS)


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

    ``itera.gate()`` runs the plan gate; ``itera.reported(root)`` runs on a folder with a JSON
    report and returns it; ``itera.passes(campaign, check)`` and ``itera.fails(campaign,
    check, *lines)`` write a campaign, run the items ``-k check`` selects and assert their
    outcomes (and the lines the failures say).
    """

    def __init__(self, pytester: pytest.Pytester, xdist: str) -> None:
        assert xdist in XDIST_ARGS, xdist
        self.pytester = pytester
        self.xdist = xdist

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
            return self.pytester.runpytest_subprocess(*line)
        return self.pytester.runpytest(*line)

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


def python_path_with_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """New interpreters (xdist workers, runpytest_subprocess) import this checkout's package."""
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(dict.fromkeys(paths)))
