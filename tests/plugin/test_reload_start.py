"""When the reload server starts: at configure when a campaign lists checkpoints (its torch
import then overlaps collection and hashing), stopped when the selection needs no reload,
never for --itera-fast or --collect-only. Observed from a conftest of the inner session."""

from __future__ import annotations

import json

import pytest

from tests.factory import CampaignBuilder
from tests.runner import Itera, only_xdist

# What is observed is the pytest process's own reload server; under xdist ("on") the
# controller never starts one and each worker starts its own at its first reload (tested
# in tests/plugin/test_collection.py and tests/checks/test_artifact_checks.py).
pytestmark = only_xdist("absent", "off")

OBSERVER = """
import json
from pathlib import Path

def _servers(config):
    from pytest_itera.plugin.collect import _reloader_key
    reloader = config.stash.get(_reloader_key, None)
    return [] if reloader is None else [s.proc.poll() is None for s in reloader._holder]

def pytest_sessionstart(session):
    session.config._seen = {"sessionstart": _servers(session.config)}

def pytest_runtestloop(session):
    session.config._seen["runtestloop"] = _servers(session.config)
    Path("seen.json").write_text(json.dumps(session.config._seen))
"""


def seen(itera: Itera, *args: str,
         conftest: str = "") -> tuple[pytest.RunResult, dict[str, list[bool]]]:
    itera.pytester.makeconftest(OBSERVER + conftest)
    result = itera(*args)
    path = itera.pytester.path / "seen.json"
    return result, json.loads(path.read_text()) if path.exists() else {}


BEFORE_CONFIGURE = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    Path("configure.json").write_text(json.dumps(_servers(config)))
"""


DESELECT_RELOADS = """
def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if "reload" not in i.name and "resume" not in i.name
            and "adapter" not in i.name and "budget" not in i.name]
    config.hook.pytest_deselected(items=[i for i in items if i not in kept])
    items[:] = kept
"""


@pytest.mark.parametrize(
    ("args", "plugin", "verdict", "configure", "servers"),
    [pytest.param((), "", "ACCEPTED", [True], {"sessionstart": [True], "runtestloop": [True]},
                  id="starts-before-configure"),
     pytest.param((), DESELECT_RELOADS, "INCOMPLETE", [True],
                  {"sessionstart": [True], "runtestloop": []},
                  id="stopped-when-no-item-reloads"),
     pytest.param(("-k", "checkpoint-reloads or files-intact"), DESELECT_RELOADS, "INCOMPLETE",
                  [], {"sessionstart": [], "runtestloop": []},
                  id="plugin-narrows-further")],
)
def test_the_server_runs_from_before_configure_until_no_selected_item_reloads(
    itera: Itera, campaign: CampaignBuilder, args: tuple[str, ...], plugin: str, verdict: str,
    configure: list[bool], servers: dict[str, list[bool]],
) -> None:
    """It starts at pytest_cmdline_main (issue 29): torch's import gets the earliest head
    start. A plugin's deselection is known only after collection: the server started ahead is
    stopped when no selected item reloads. When -k selects the reloads and a plugin then
    deselects them, the server waits for both and never starts."""
    campaign.write()
    result, seen_servers = seen(itera, *args, conftest=BEFORE_CONFIGURE + plugin)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"campaign tiny-2026-11: {verdict} *"])
    assert json.loads((itera.pytester.path / "configure.json").read_text()) == configure
    assert seen_servers == servers


# (arguments, started at configure, running when the items run)
SELECTIONS = {
    # -k/-m: pytest selects; the server starts once the selection is known, if it reloads.
    "k-no-reload": (("-k", "files-intact"), False, False),
    "k-reloads": (("-k", "checkpoint-reloads"), False, True),
    "k-one-checkpoint": (("-k", "reloads and step-2"), False, True),
    "k-folder": (("-k", "out and not manifest"), False, True),
    "k-not-reloads": (("-k", "not checkpoint-reloads and not resume and not adapter and not "
                       "budget and not artifacts"), False, False),
    "m-itera": (("-m", "itera"), False, True),
    "m-other": (("-m", "slow"), False, False),
    # --deselect: the server starts after collection if the selection reloads.
    "deselect": (("--deselect", "out/manifest.json::manifest"), False, True),
}


@pytest.mark.parametrize("selection", SELECTIONS.values(), ids=SELECTIONS.keys())
def test_a_chosen_selection_starts_the_server_only_if_it_reloads(
    itera: Itera, campaign: CampaignBuilder, selection: tuple[tuple[str, ...], bool, bool]
) -> None:
    args, early, running = selection
    campaign.write()
    result, servers = seen(itera, *args)
    assert result.ret in (0, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str()
    assert servers == {"sessionstart": [True] if early else [],
                       "runtestloop": [True] if running else []}


def test_an_expression_pytest_refuses_starts_nothing(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result, servers = seen(itera, "-k", "reloads and (")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*Wrong expression passed to '-k'*"])
    assert servers.get("sessionstart", []) == []


@pytest.mark.parametrize("option", ["--itera-fast", "--collect-only"])
def test_no_server_starts_when_the_run_reloads_nothing(
    itera: Itera, campaign: CampaignBuilder, option: str
) -> None:
    campaign.write()
    result, servers = seen(itera, option)
    assert result.ret == 0
    assert servers.get("sessionstart", []) == []
    assert servers.get("runtestloop", []) == []


def test_no_server_starts_for_a_campaign_without_checkpoints(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["checkpoints"] = []
    campaign.manifest["adapters"] = []
    campaign.write()
    _, servers = seen(itera, "-k", "files-intact")
    assert servers == {"sessionstart": [], "runtestloop": []}


def test_a_bad_reload_interpreter_is_still_a_usage_error_before_any_item_runs(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """The probe now runs beside collection; its verdict is still judged before the items."""
    campaign.write()
    result = itera("--itera-python", "/nonexistent/python")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--itera-python /nonexistent/python: not an executable file*"])
    assert "passed" not in result.stdout.str()
