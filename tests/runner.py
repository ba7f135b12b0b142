"""The one way a test runs pytest on a campaign: the ``itera`` fixture's :class:`Itera`.

Every behavioural plugin test runs three times, as pytest-mypy's tests do: with xdist
absent (``-p no:xdist``), installed but off (``-n 0``) and on (``-n 2``), so that what the
plugin says is the same whether the checks run in one process or on workers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

XDIST_ARGS = {"absent": ("-p", "no:xdist"), "off": ("-n", "0"), "on": ("-n", "2")}
XDIST_MODES = tuple(XDIST_ARGS)

# One in-process session without xdist, for inline_genitems and the like (the itera fixture
# adds its own xdist arguments; hypothesis and anyio are dropped by conftest for all runs).
LEAN = ("-p", "no:xdist", "-p", "no:cacheprovider")


def only_xdist(mode: str) -> pytest.MarkDecorator:
    """Pin a test that uses ``itera`` to one xdist mode; say why where it is used."""
    return pytest.mark.parametrize("xdist", [mode], ids=[f"xdist-{mode}"])


class Itera:
    """Runs pytest in the test's pytester folder, in one xdist mode.

    ``itera(*args)`` is ``pytest --itera-campaign out <xdist args> -p no:cacheprovider
    *args``; ``check="files-intact"`` adds ``-k files-intact``; ``campaign=None`` runs
    without ``--itera-campaign`` (the plan gate, a plain session); ``subprocess=True`` runs
    a new interpreter; ``xdist="off"`` overrides the mode for one call (a test comparing
    modes); ``cache=True`` keeps pytest's cache provider on.
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


def python_path_with_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """New interpreters (xdist workers, runpytest_subprocess) import this checkout's package."""
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(dict.fromkeys(paths)))
