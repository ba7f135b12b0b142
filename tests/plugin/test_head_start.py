"""The reload server's head start (plugin/head_start.py): what the command line alone tells,
and sessions in a new interpreter each (the plugin is imported once per process): the server
started at import is the one the items use, or it is stopped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_itera.plugin.head_start import worth_it
from tests.factory import CampaignBuilder
from tests.runner import Itera, only_xdist


@pytest.mark.parametrize(("args", "environ", "expected"), [
    (["--itera-campaign", "out"], {}, True),
    (["--itera-campaign=out", "-q", "-p", "no:xdist", "-rA"], {}, True),
    (["-q"], {"PYTEST_ADDOPTS": "--itera-campaign out"}, True),
    (["out"], {}, False),  # no campaign on the command line: pytest's ini may name one
    (["--itera-campaign", "out", "-n", "0"], {}, True),  # xdist off: a whole run
    (["--itera-campaign", "out", "-n0", "--dist=no"], {}, True),
    (["--itera-campaign", "out", "-n", "2"], {}, False),  # the controller reloads nothing
    (["--itera-campaign", "out", "-nauto"], {}, False),
    (["--itera-campaign", "out", "--numprocesses=4"], {}, False),
    (["--itera-campaign", "out", "--dist", "load"], {}, False),
    (["--itera-campaign", "out", "-d"], {}, False),
    (["--itera-campaign", "out", "-k", "files-intact"], {}, False),  # a selection
    (["--itera-campaign", "out", "-mitera"], {}, False),
    (["--itera-campaign", "out", "out/manifest.json::files-intact"], {}, False),
    (["--itera-campaign", "out", "--deselect", "out/manifest.json::manifest"], {}, False),
    (["--itera-campaign", "out", "--itera-python", "/opt/train/bin/python"], {}, False),
    (["--itera-campaign", "out", "--itera-fast"], {}, False),
    (["--itera-campaign", "out", "--co"], {}, False),
    (["--itera-campaign", "out", "--help"], {}, False),
    (["-q"], {"PYTEST_ADDOPTS": "--itera-campaign 'out"}, False),  # unbalanced quote
])
def test_the_command_line_alone_decides_the_head_start(
    args: list[str], environ: dict[str, str], expected: bool
) -> None:
    assert worth_it(args, environ) is expected


# A conftest is imported after the plugin and before pytest_cmdline_main: what it sees of
# the head start was started at the plugin's import.
HEAD_START = """
import json, os
from pathlib import Path
from pytest_itera.plugin import head_start

_early = head_start._started
_pid = _early._holder[0].proc.pid if _early is not None and _early._holder else None

def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

def pytest_runtestloop(session):
    from pytest_itera.plugin.collect import _reloader_key
    reloader = session.config.stash.get(_reloader_key, None)
    Path("head.json").write_text(json.dumps({
        "started": _pid is not None, "taken": reloader is not None and reloader is _early,
        "alive": _pid is not None and _alive(_pid)}))
"""


def head_start(itera: Itera, *args: str) -> tuple[pytest.RunResult, dict[str, bool]]:
    itera.pytester.makeconftest(HEAD_START)
    result = itera(*args, subprocess=True)
    path = itera.pytester.path / "head.json"
    return result, json.loads(path.read_text()) if path.exists() else {}


# The head start is for a command line without xdist distribution; -n 0 is the same path
# (test_the_command_line_alone_decides_the_head_start).
@only_xdist("absent")
def test_the_server_starts_at_the_plugins_import_and_the_session_takes_it(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """A new interpreter (the plugin is imported once per process): the server started
    before pytest read its options is the one the items reload with."""
    campaign.write()
    result, seen_ = head_start(itera)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*ACCEPTED*"])
    assert seen_ == {"started": True, "taken": True, "alive": True}


@only_xdist("absent")
@pytest.mark.parametrize("how", ["ini-python", "no-artifacts-family"])
def test_a_head_start_the_options_rule_out_is_stopped(
    itera: Itera, campaign: CampaignBuilder, how: str
) -> None:
    """What the command line did not say (an ini file's reload interpreter, a family switched
    off by -p): the server started at import is stopped; the run is judged as without it."""
    campaign.write()
    if how == "ini-python":
        # The same interpreter by another path: another server, started by the session.
        other = Path(sys.executable).parent / ".." / Path(sys.executable).parent.name / "python"
        itera.pytester.makeini(f"[pytest]\nitera_python = {other}\n")
        args: tuple[str, ...] = ()
    else:
        args = ("-p", "no:itera.artifacts")
    result, seen_ = head_start(itera, *args)
    assert result.ret == 0, result.stdout.str()
    assert seen_ == {"started": True, "taken": False, "alive": False}
