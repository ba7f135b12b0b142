"""collect.py (and collect_plan.py) on their own: which items a campaign becomes, their node
ids, names and facts, how they fail, and the helpers the plugin wires in.

Items come from a real in-process collection (``pytester.inline_genitems``) of a campaign
written by CampaignBuilder; the pure helpers are called directly.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from pytest_itera.checks import Check, Context, item_name
from pytest_itera.checks.closure import CAMPAIGN_KEY, CHECK_KEY, SCOPE_KEY, TARGET_KEY
from pytest_itera.checks.engine import Outcome, judge
from pytest_itera.checks.model import item_position
from pytest_itera.core.campaign import FileRecord
from pytest_itera.core.findings import Finding
from pytest_itera.plugin.collect import (
    CheckFailed,
    IteraCheckItem,
    IteraManifest,
    _folder_sizes,
    is_worker,
    loaded_campaign,
    node_id,
    registered_checks,
    selected_targets,
)
from pytest_itera.plugin.collect_plan import VALID, IteraPlanItem
from tests.factory import LEAN, CampaignBuilder
from tests.runner import Itera, only_xdist

MANIFEST = "out/manifest.json"


def collect(pytester: pytest.Pytester, *args: str) -> list[IteraCheckItem]:
    items, _ = pytester.inline_genitems(*LEAN, "--itera-campaign", "out", *args)
    assert all(isinstance(item, IteraCheckItem) for item in items)
    return [item for item in items if isinstance(item, IteraCheckItem)]


def names(items: list[IteraCheckItem]) -> list[str]:
    return [item.nodeid.split("::", 1)[1] for item in items]


# ------------------------------------------------------------------ item names


@pytest.mark.parametrize(
    ("target", "name"),
    [
        (None, "files-intact"),
        ("runs/a.pt", "files-intact[runs/a.pt]"),
        ("odd::name.txt", "files-intact[odd:_:name.txt]"),  # "::" would split the node id
        ("two\nlines", "files-intact[two\\nlines]"),
        ("bell\x07", "files-intact[bell\\x07]"),
        ("café.md", "files-intact[café.md]"),
    ],
)
def test_item_name_is_one_readable_line(target: str | None, name: str) -> None:
    assert item_name("files-intact", target) == name


# ------------------------------------------------------------------ the items of a campaign


def test_node_ids_are_sorted_by_check_order_then_id_then_target(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    items = collect(pytester)
    assert all(item.nodeid.startswith(f"{MANIFEST}::") for item in items)
    keys = [(item_position(item.check.id), item.check.id) for item in items]
    assert keys == sorted(keys)
    files = [item.target for item in items if item.check.id == "files-intact"]
    assert files == sorted(f["path"] for f in json.loads(
        (campaign.root / "manifest.json").read_text())["files"])
    assert names(items)[:4] == ["manifest", "plan-frozen", "expected-ids", "rules-declared"]
    assert len(set(item.nodeid for item in items)) == len(items)


def test_two_collections_give_the_same_node_ids(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    assert [i.nodeid for i in collect(pytester)] == [i.nodeid for i in collect(pytester)]


def test_each_item_carries_its_campaign_check_target_and_scope(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    items = {item.name: item for item in collect(pytester)}
    item = items["files-intact[RELOAD.md]"]
    assert item.user_properties == [
        (CAMPAIGN_KEY, str(campaign.root)), (CHECK_KEY, "files-intact"),
        (TARGET_KEY, "RELOAD.md"), (SCOPE_KEY, "file")]
    whole = items["manifest"]
    assert (whole.target, dict(whole.user_properties)[TARGET_KEY]) == (None, "")
    assert item.get_closest_marker("itera") is not None
    assert item.reportinfo() == (campaign.root / "manifest.json", 0,
                                 "[itera] files-intact[RELOAD.md]")


def test_plan_scoped_checks_are_never_items_of_a_closed_campaign(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    items = collect(pytester)
    scopes = {item.check.scope for item in items}
    assert "plan" not in scopes
    assert {"campaign", "file", "run", "checkpoint"} <= scopes
    assert VALID not in {item.check.id for item in items}


def test_a_broken_manifest_keeps_one_item_per_check_that_needs_it(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    (campaign.root / "manifest.json").write_text("{")
    campaign.seal()
    items = collect(pytester)
    by_check: dict[str, list[str | None]] = {}
    for item in items:
        by_check.setdefault(item.check.id, []).append(item.target)
    assert by_check["files-intact"] == [None]
    assert by_check["checkpoint-reloads"] == [None]
    assert by_check["config-identity"] == [None]
    assert "no-temp-paths[manifest.json]" in names(items)  # from the folder, not the manifest
    assert f"{MANIFEST}::files-intact" in [i.nodeid for i in items]


def test_many_files_are_grouped_by_folder_above_the_ini_threshold(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    for name in ("a", "b", "c"):
        campaign.files[f"logs/{name}.log"] = name.encode()
    campaign.write()
    pytester.makeini("[pytest]\nitera_group_files_above = 5\n")
    items = collect(pytester)
    intact = [n for n in names(items) if n.startswith("files-intact")]
    assert "files-intact[logs/*]" in intact
    assert "files-intact[*]" in intact  # RELOAD.md and analysis.md
    assert "files-intact[configs/control.json]" in intact  # a run names it: alone
    assert not any(n.startswith("files-intact[logs/") and n != "files-intact[logs/*]"
                   for n in intact)
    group = next(i for i in items if i.name == "files-intact[logs/*]")
    assert isinstance(group.parent, IteraManifest)
    assert judge(group.parent.context).members("files-intact", "logs/*") == (
        "logs/a.log", "logs/b.log", "logs/c.log")


def test_the_settings_reach_the_checks_options(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.makeconftest(
        "def pytest_itera_temp_patterns(config):\n    return ['/from-hook/']\n")
    pytester.makeini(f"[pytest]\nitera_temp_patterns = /from-ini/\n"
                     f"itera_plan_sha256 = another-campaign = {'a' * 64}\n")
    items = collect(pytester, "--itera-timeout", "9", "--itera-python", "python3")
    manifest = items[0].parent
    assert isinstance(manifest, IteraManifest)
    options = manifest.context.options
    assert (options.timeout, options.python, options.fast) == (9.0, "python3", False)
    assert options.temp_patterns == ("/from-ini/", "/from-hook/")
    assert (options.plan_pins, options.other_pins) == ((), ("another-campaign",))


def test_selected_targets_group_the_wanted_items_by_campaign_in_item_order(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    items = collect(pytester)
    wanted = selected_targets(items[0].session, lambda c: c.reloads)
    assert list(wanted) == [items[0].parent]
    assert list(wanted.values()) == [[
        "runs/control/step-2.pt", "runs/resume-check/last.pt", "runs/variant-a/weights.pt",
        "runs/control/step-2.pt", "runs/resume-check/last.pt", None]]


# ------------------------------------------------------------------ failures


def test_a_check_failure_is_plain_text_and_a_plugin_bug_keeps_its_traceback(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    item = next(i for i in collect(pytester) if i.name == "files-intact[RELOAD.md]")
    finding = Finding("sha256 differs", where="RELOAD.md", expected="ab", found="cd")
    try:
        raise CheckFailed(Outcome("files-intact", "RELOAD.md", "file", (finding,)))
    except CheckFailed as exc:
        failed = pytest.ExceptionInfo.from_exception(exc)
    assert item.repr_failure(failed) == (
        "files-intact[RELOAD.md]: 1 problem\n"
        "RELOAD.md: sha256 differs\n    expected: ab\n    found:    cd")
    try:
        raise KeyError("a plugin bug")
    except KeyError as exc:
        bug = pytest.ExceptionInfo.from_exception(exc)
    text = str(item.repr_failure(bug))
    assert "KeyError: 'a plugin bug'" in text
    assert "raise KeyError" in text


def test_folder_sizes_add_each_file_to_every_folder_above_it() -> None:
    records = [FileRecord("a/b/x.pt", 10, ""), FileRecord("a/b/y.pt", 5, ""),
               FileRecord("a/z", 1, ""), FileRecord("top", 7, "")]
    assert _folder_sizes(records) == {
        "a/b/x.pt": 10, "a/b/y.pt": 5, "a/b": 15, "a/z": 1, "a": 16, "top": 7}


# ------------------------------------------------------------------ node ids outside the rootdir


def test_node_ids_are_relative_to_the_rootdir_else_as_the_user_can_type_them(
    pytester: pytest.Pytester,
) -> None:
    config = pytester.parseconfigure()
    session = pytest.Session.from_config(config)
    root = config.rootpath
    assert node_id(session, root / "out/manifest.json") == "out/manifest.json"
    assert node_id(session, root.parent / "near/out") == "../near/out"
    far = Path("/", "campaigns", "out")
    assert len(root.parts) > 4  # so that the far folder is more than three levels up
    assert node_id(session, far) == "/campaigns/out"


# ------------------------------------------------------------------ the check registry


class Contributes:
    def __init__(self, *checks: Check) -> None:
        self.checks = list(checks)

    def pytest_itera_checks(self, config: pytest.Config) -> list[Check]:
        return self.checks


def nothing(ctx: Context, target: str | None) -> list[Finding]:
    return []


def test_registered_checks_gathers_every_plugins_checks_and_keeps_the_fast_ones(
    pytester: pytest.Pytester,
) -> None:
    config = pytester.parseconfig()
    config.pluginmanager.register(Contributes(Check("slow", "s", nothing)), "one")
    config.pluginmanager.register(Contributes(Check("quick", "q", nothing, fast=True)), "two")
    assert sorted(registered_checks(config, config.hook, fast=False)) == ["quick", "slow"]
    assert list(registered_checks(config, config.hook, fast=True)) == ["quick"]


def test_two_checks_with_one_id_are_a_usage_error(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    config.pluginmanager.register(Contributes(Check("manifest", "mine", nothing)), "mine")
    config.pluginmanager.register(Contributes(Check("manifest", "theirs", nothing)), "theirs")
    with pytest.raises(pytest.UsageError) as raised:
        registered_checks(config, config.hook, fast=False)
    assert str(raised.value) == "pytest-itera: two checks are registered as 'manifest'"


def test_is_worker_only_with_xdist_worker_input(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    assert not is_worker(config)
    config.workerinput = {"workerid": "gw0"}  # type: ignore[attr-defined]
    assert is_worker(config)


# ------------------------------------------------------------------ a plan judged alone


def plan_items(pytester: pytest.Pytester, path: str) -> list[IteraPlanItem]:
    items, _ = pytester.inline_genitems(*LEAN, "--itera-plan", path)
    return [item for item in items if isinstance(item, IteraPlanItem)]


def test_a_plan_file_becomes_items_named_after_it(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    (pytester.path / "draft.json").write_bytes((campaign.root / "plan.json").read_bytes())
    items = plan_items(pytester, "draft.json")
    assert [i.nodeid for i in items] == [
        "draft.json::plan-valid", "draft.json::plan-frozen-ready",
        "draft.json::plan-schedule-fits"]
    assert {i.check.scope for i in items} == {"plan"}
    assert dict(items[0].user_properties) == {
        "itera_plan": str(pytester.path / "draft.json"), CHECK_KEY: VALID, TARGET_KEY: ""}


def test_a_plan_that_does_not_load_is_one_item_saying_why(pytester: pytest.Pytester) -> None:
    (pytester.path / "draft.json").write_text('{"format": "itera-plan/2", "format": "x"}')
    items = plan_items(pytester, "draft.json")
    assert [i.nodeid for i in items] == ["draft.json::plan-valid"]
    result = pytester.runpytest(*LEAN, "--itera-plan", "draft.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*plan-valid: 1 problem*", "*duplicate key 'format' in one object*"])


# ------------------------------------------------------- the garbage collector

GC_RECORDER = """
import gc
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    kind = "itera" if "manifest.json::" in item.nodeid else "user"
    with open("gc-states.txt", "a") as f:
        f.write(f"{kind} {gc.isenabled()}\\n")
    return (yield)

def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open("gc-states.txt", "a") as f:
            f.write(f"end {gc.isenabled()}\\n")
"""


def gc_states(pytester: pytest.Pytester) -> list[tuple[str, bool]]:
    lines = (pytester.path / "gc-states.txt").read_text().split()
    return [(kind, state == "True") for kind, state in zip(lines[::2], lines[1::2], strict=True)]


def test_the_collector_is_paused_for_the_campaign_items_only(
    pytester: pytest.Pytester, itera: Itera
) -> None:
    """The items run with automatic garbage collection paused (a few long-lived objects per
    listed file; ~1 s of a 100,000-file run was the collector's passes); the user's tests in
    the same run, before and after, run with it on, and it is on again at the end."""
    CampaignBuilder(pytester.path / "out").write()
    pytester.makeconftest(GC_RECORDER)
    pytester.makepyfile(test_user="def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    try:
        result = itera("test_user.py")
    finally:
        gc.enable()  # an in-process run shares this interpreter's collector
    assert result.ret == 0, result.stdout.str()
    states = gc_states(pytester)
    assert {kind for kind, _ in states} == {"itera", "user", "end"}, states
    assert all(not on for kind, on in states if kind == "itera"), states
    assert all(on for kind, on in states if kind != "itera"), states


@only_xdist("absent", "off")  # the user's choice is read back in this process
def test_a_collector_the_user_turned_off_stays_off(
    pytester: pytest.Pytester, itera: Itera
) -> None:
    CampaignBuilder(pytester.path / "out").write()
    pytester.makeconftest("import gc\ngc.disable()\n" + GC_RECORDER)
    pytester.makepyfile(test_user="def test_one():\n    pass\n")
    try:
        result = itera("test_user.py")
    finally:
        gc.enable()
    assert result.ret == 0, result.stdout.str()
    states = gc_states(pytester)
    assert ("end", False) in states, states
    assert ("user", False) in states, states


def test_closing_a_context_lets_go_of_per_file_data(pytester: pytest.Pytester) -> None:
    """What is kept per listed file is dropped at the file node's teardown (the last
    collections of the process would otherwise walk it); asked again, it is read again."""
    CampaignBuilder(pytester.path / "out").write()
    manifest = collect(pytester)[0].parent
    assert isinstance(manifest, IteraManifest)
    context = manifest.context
    assert context.facts("RELOAD.md").error is None
    assert context.entry("RELOAD.md") is not None
    context.close()
    assert not context.reader._facts
    assert context._entries is None
    assert not context._memo
    assert context.facts("RELOAD.md").size == (pytester.path / "out/RELOAD.md").stat().st_size


# ------------------------------------------------------------------ one load per process


def test_loaded_campaign_loads_each_root_once_per_config(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out"
    out.mkdir()
    (out / "plan.json").write_text("{}")
    config = pytester.parseconfig()
    first = loaded_campaign(config, out)
    (out / "plan.json").write_text("not json")
    assert loaded_campaign(config, out) is first
    assert [e.message for e in first.errors_for("manifest.json")] == [
        "missing: a campaign folder has plan.json and manifest.json at its root"]
    assert loaded_campaign(pytester.parseconfig(), out).errors_for("plan.json")[0].message == (
        "not JSON: Expecting value")


# ------------------------------------------------------------------ -k as pytest matches it


def selected(pytester: pytest.Pytester, keyword: str) -> list[str]:
    """The names of the items ``-k keyword`` leaves selected."""
    items, calls = pytester.inline_genitems(*LEAN, "--itera-campaign", "out", "-k", keyword)
    dropped = {id(i) for call in calls.getcalls("pytest_deselected") for i in call.items}
    return [item.nodeid.split("::", 1)[1] for item in items if id(item) not in dropped]


def test_k_selects_the_files_of_a_folder_by_its_name(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """Issue 39: ``-k`` is pytest's own (a case-insensitive substring of the item's name, which
    holds its whole target): ``-k "files-intact and control"`` selects the files-intact
    items whose target says "control" (docs/options.md, "Selecting items")."""
    campaign.write()
    assert selected(pytester, "files-intact and control") == [
        "files-intact[configs/control.json]",
        "files-intact[runs/control/measurements.jsonl]",
        "files-intact[runs/control/predictions.jsonl]",
        "files-intact[runs/control/step-2.pt]"]


def test_k_words_match_the_whole_target_path(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """A folder word selects the files under it, with or without its slash; the file's own
    name selects it too. Node ids keep the whole path."""
    for name in ("config.json", "trainer_state.json"):
        campaign.files[f"runs/control/checkpoint-2/{name}"] = b"{}\n"
    campaign.write()
    under = ["files-intact[runs/control/checkpoint-2/config.json]",
             "files-intact[runs/control/checkpoint-2/trainer_state.json]"]
    assert selected(pytester, "files-intact and checkpoint-2") == under
    assert selected(pytester, "files-intact and checkpoint-2/") == under
    assert selected(pytester, "files-intact and trainer_state") == under[1:]
    assert "checkpoint-reloads[runs/control/step-2.pt]" in selected(pytester, "step-2")


# ------------------------------------------------------------------ -n advice


@pytest.mark.parametrize(("workers", "cores", "advised"), [
    (2, 2, True),  # two cores: the controller and the reload server already take them
    (4, 3, True),  # more workers than cores
    (2, 1, True),
    (2, 8, False),
    (8, 8, False),
    (0, 1, False),  # -n 0: serial already
    (1, 1, False),
])
def test_serial_advice_when_workers_cannot_pay_off(workers: int, cores: int,
                                                   advised: bool) -> None:
    from pytest_itera.plugin.collect import serial_advice

    line = serial_advice(workers, cores)
    assert (line is not None) == advised
    if line is not None:
        assert line == (f"pytest-itera: -n {workers} on {cores} core{'s' if cores > 1 else ''}: "
                        "the checks are CPU-bound, so a serial run (without -n) is faster here")


@only_xdist("on")  # the advice is about -n: only a distributed run can show it
def test_an_xdist_run_on_two_cores_advises_a_serial_run(
    itera: Itera, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_itera.plugin import head_start

    campaign.write()
    monkeypatch.setattr(head_start, "cpus", lambda: 2)  # the controller runs in-process
    result = itera("-k", "no-empty-files")
    result.stdout.fnmatch_lines(["pytest-itera: -n 2 on 2 cores: the checks are CPU-bound, "
                                 "so a serial run (without -n) is faster here"])
    monkeypatch.setattr(head_start, "cpus", lambda: 16)
    itera("-k", "no-empty-files").stdout.no_fnmatch_line("*serial run*")
