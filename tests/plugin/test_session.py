"""session.py on its own: how test reports become check results, how counts and waivers are
gathered, the gate, and what the end of a run writes.

The pure parts are fed real ``pytest.TestReport`` objects, a real ``IteraSession`` over a
parsed config, and real items of a collected campaign; a few whole runs (pytester) check
what only a run shows: the written report, a report that cannot be written, the gate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_itera import report
from pytest_itera.checks.closure import (
    EVIDENCE_KEY,
    FINDINGS_KEY,
    PLAN_KEY,
    RELOADS_KEY,
    WAIVER_KEY,
    FindingFacts,
    ReloadFacts,
    WaiverFacts,
    item_properties,
)
from pytest_itera.checks.engine import judge
from pytest_itera.checks.model import ITEM_ORDER
from pytest_itera.core.campaign import load_campaign
from pytest_itera.plugin.collect import IteraCheckItem
from pytest_itera.plugin.options import build_settings
from pytest_itera.plugin.session import ItemTally, IteraSession, _fail, _result
from pytest_itera.report import PARTIAL_NOTE, CheckResult
from tests.factory import LEAN, CampaignBuilder

NODE = "out/manifest.json::files-intact[RELOAD.md]"
GATE = "--itera-require-accepted"


def props(*extra: tuple[str, object], check: str = "files-intact",
          target: str | None = "RELOAD.md", scope: str = "file") -> list[tuple[str, object]]:
    """An item's user_properties as the collector writes them, then ``extra``."""
    return [*item_properties("/c/out", check, target, scope), *extra]


def make_report(
    outcome: str = "passed", *, when: str = "call", longrepr: Any = None, nodeid: str = NODE,
    properties: Sequence[tuple[str, object]] | None = None, **extra: Any,
) -> pytest.TestReport:
    return pytest.TestReport(
        nodeid, ("out/manifest.json", 0, nodeid), {}, outcome, longrepr, when,  # type: ignore[arg-type]
        user_properties=props() if properties is None else list(properties), **extra)




def result_of(rep: pytest.TestReport) -> CheckResult:
    return _result(rep, dict(rep.user_properties), "failed" if rep.failed else rep.outcome)


def itera_session(pytester: pytest.Pytester, *args: str) -> IteraSession:
    config = pytester.parseconfig(*args)
    settings = build_settings(config)
    return IteraSession(config, settings, ItemTally(config, settings))


def item_tally(pytester: pytest.Pytester, *args: str) -> ItemTally:
    config = pytester.parseconfig(*args)
    return ItemTally(config, build_settings(config))


# ------------------------------------------------------------------ a report becomes a result


def test_a_passing_item_is_a_passed_result_with_its_check_target_and_scope() -> None:
    assert result_of(make_report()) == CheckResult(
        "files-intact", "RELOAD.md", "passed", "", NODE, "file")


def test_a_campaign_scoped_item_has_no_target() -> None:
    rep = make_report(properties=props(check="manifest", target=None, scope="campaign"))
    assert result_of(rep).target is None


def test_a_failure_keeps_its_text_and_its_findings_as_facts() -> None:
    finding = {"code": "files-intact.sha256", "message": "sha256 differs", "where": "RELOAD.md",
               "expected": "ab", "found": "cd", "hint": None}
    reload = {"path": "runs/a.pt", "ok": False, "format": "torch", "cause": "truncated"}
    rep = make_report("failed", longrepr="  files-intact[RELOAD.md]: 1 problem\n",
                      properties=props((FINDINGS_KEY, [finding, "not a dict"]),
                                       (RELOADS_KEY, [reload])))
    result = result_of(rep)
    assert (result.outcome, result.message) == ("failed", "files-intact[RELOAD.md]: 1 problem")
    assert result.findings == (FindingFacts("files-intact.sha256", "sha256 differs", "RELOAD.md",
                                            "ab", "cd", None),)
    assert result.reloads == (ReloadFacts("runs/a.pt", False, "torch", cause="truncated"),)


def test_a_passing_item_with_evidence_carries_it_as_its_message() -> None:
    rep = make_report(properties=props((EVIDENCE_KEY, ["diverged at step 3", "kept"])))
    assert result_of(rep).message == "diverged at step 3\nkept"


def test_a_skipped_item_keeps_the_skip_reason() -> None:
    rep = make_report("skipped", longrepr=("out/manifest.json", 1, "Skipped: no torch"))
    assert (result_of(rep).outcome, result_of(rep).message) == ("skipped", "Skipped: no torch")


def test_an_xfail_from_a_waivers_file_is_waived_with_the_waivers_facts() -> None:
    facts = {"source": "waivers file", "reason": "agreed", "approved_by": "M. R.",
             "expires": "2999-01-01", "check": "files-intact", "target": "*", "file": "w.toml"}
    rep = make_report("skipped", longrepr="boom", wasxfail="waived by M. R.",
                      properties=props((WAIVER_KEY, facts)))
    result = result_of(rep)
    assert (result.outcome, result.message) == ("waived", "boom")
    assert result.waiver == WaiverFacts("waivers file", "agreed", "M. R.", "2999-01-01",
                                        "files-intact", "*", "w.toml")


@pytest.mark.parametrize(
    ("reason", "outcome", "message", "waiver"),
    [
        ("flaky disk, ticket 12", "waived", "boom", WaiverFacts("xfail", "flaky disk, ticket 12")),
        ("[NOTRUN] not today", "skipped", "[NOTRUN] not today", None),
        ("  ", "failed", "an xfail without a reason waives nothing: give it a reason, or use a "
                         "waivers file (--itera-waivers)\nboom", None),
    ],
    ids=["with-reason", "never-ran", "no-reason"],
)
def test_an_xfail_waives_only_with_a_reason(
    reason: str, outcome: str, message: str, waiver: WaiverFacts | None
) -> None:
    rep = make_report("skipped", longrepr="boom", wasxfail=reason)
    result = result_of(rep)
    assert (result.outcome, result.message, result.waiver) == (outcome, message, waiver)


# ------------------------------------------------------------------ gathering results


def test_passing_setup_and_teardown_reports_are_not_results(pytester: pytest.Pytester) -> None:
    session = itera_session(pytester)
    session.pytest_runtest_logreport(make_report(when="setup"))
    session.pytest_runtest_logreport(make_report(when="teardown"))
    assert dict(session.results) == {}
    session.pytest_runtest_logreport(make_report())
    assert session.results["/c/out"][NODE].outcome == "passed"


def test_a_failing_setup_stays_failed_whatever_comes_after(pytester: pytest.Pytester) -> None:
    session = itera_session(pytester)
    session.pytest_runtest_logreport(make_report("failed", when="setup", longrepr="no fixture"))
    session.pytest_runtest_logreport(make_report(when="teardown"))
    session.pytest_runtest_logreport(make_report("failed", when="teardown", longrepr="later"))
    result = session.results["/c/out"][NODE]
    assert (result.outcome, result.message) == ("failed", "no fixture")


def test_a_failing_teardown_fails_an_item_that_passed(pytester: pytest.Pytester) -> None:
    session = itera_session(pytester)
    session.pytest_runtest_logreport(make_report())
    session.pytest_runtest_logreport(make_report("failed", when="teardown", longrepr="leak"))
    assert session.results["/c/out"][NODE].outcome == "failed"


def test_reports_of_tests_outside_any_campaign_are_ignored(pytester: pytest.Pytester) -> None:
    session = itera_session(pytester)
    session.pytest_runtest_logreport(make_report("failed", longrepr="x", nodeid="test_a.py::t",
                                                 properties=[]))
    assert (dict(session.results), dict(session.plan_results)) == ({}, {})


def test_plan_items_are_gathered_per_plan_file(pytester: pytest.Pytester) -> None:
    session = itera_session(pytester)
    plan = [(PLAN_KEY, "/p/draft.json"), ("itera_check", "plan-valid"), ("itera_target", "")]
    node = "draft.json::plan-valid"
    session.pytest_runtest_logreport(make_report("failed", when="setup", longrepr="bad",
                                                 nodeid=node, properties=plan))
    session.pytest_runtest_logreport(make_report(when="teardown", nodeid=node, properties=plan))
    assert dict(session.results) == {}
    result = session.plan_results["/p/draft.json"][node]
    assert (result.check, result.outcome, result.message) == ("plan-valid", "failed", "bad")


# ------------------------------------------------------------------ which process judges


@pytest.mark.parametrize("worker", [False, True], ids=["reporting", "xdist-worker"])
def test_only_the_reporting_process_judges_a_worker_sends_its_tally_back(
    pytester: pytest.Pytester, worker: bool
) -> None:
    from pytest_itera.plugin import _register_session
    from pytest_itera.plugin.session import WorkerOutput

    config = pytester.parseconfig()
    if worker:
        config.workerinput = {}  # type: ignore[attr-defined]  # as pytest-xdist sets it
    _register_session(config, build_settings(config))
    plugins = config.pluginmanager
    tally = plugins.get_plugin("itera.tally")
    assert isinstance(tally, ItemTally)
    session, output = plugins.get_plugin("itera.session"), plugins.get_plugin("itera.worker")
    if worker:
        assert session is None
        assert isinstance(output, WorkerOutput)
        assert output.tally is tally
    else:
        assert output is None
        assert isinstance(session, IteraSession)
        assert session.tally is tally


def test_a_worker_sends_its_counts_in_its_output(pytester: pytest.Pytester) -> None:
    from pytest_itera.plugin.session import WorkerOutput

    tally = item_tally(pytester)
    tally.collected["/c/out"], tally.deselected["/c/out"] = 68, 2
    config = SimpleNamespace(workeroutput={})
    WorkerOutput(tally).pytest_sessionfinish(
        SimpleNamespace(exitstatus=pytest.ExitCode.OK, config=config))  # type: ignore[arg-type]
    assert config.workeroutput == {"itera_collected": {"/c/out": 68},
                                   "itera_deselected": {"/c/out": 2}}


# ------------------------------------------------------------------ counting items


def test_workers_counts_are_merged_by_their_maximum(pytester: pytest.Pytester) -> None:
    session = itera_session(pytester)
    for collected, deselected in ((68, 60), (68, 66)):
        node = SimpleNamespace(workeroutput={"itera_collected": {"/c/out": collected},
                                             "itera_deselected": {"/c/out": deselected}})
        session.pytest_testnodedown(node, None)
    session.pytest_testnodedown(SimpleNamespace(), None)  # a worker that died: no output
    assert (dict(session.tally.collected), dict(session.tally.deselected)) == (
        {"/c/out": 68}, {"/c/out": 66})


def two_campaigns(pytester: pytest.Pytester) -> tuple[Path, Path]:
    roots = []
    for name in ("out", "other"):
        root = pytester.mkdir(name)
        (root / "plan.json").write_text("{}")
        roots.append(root)
    return roots[0], roots[1]


def test_the_controller_counts_a_workers_ids_per_campaign_once(
    pytester: pytest.Pytester,
) -> None:
    out, other = two_campaigns(pytester)
    session = itera_session(pytester, "--itera-campaign", "out", "--itera-campaign", "other")
    ids = ["out/manifest.json::manifest", "out/manifest.json::files-intact[a]",
           "other/manifest.json::manifest", "test_user.py::test_x"]
    session.pytest_xdist_node_collection_finished(object(), ids)
    session.pytest_xdist_node_collection_finished(object(), ids)  # a second worker: same ids
    assert dict(session.tally.collected) == {str(out): 2, str(other): 1}


def test_a_node_id_names_its_campaign_from_the_rootdir_or_the_invocation_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _ = two_campaigns(pytester)
    pytester.makeini("[pytest]\n")
    monkeypatch.chdir(pytester.mkdir("sub"))
    session = itera_session(pytester, "--itera-campaign", "../out")
    assert session._root_of("out/manifest.json::manifest") == str(out)  # rootdir-relative
    assert session._root_of("../out/manifest.json::x[y]") == str(out)  # cwd-relative
    assert session._root_of("other/manifest.json::manifest") is None  # not given
    assert session._root_of("out/sub/manifest.json::manifest") is None


@pytest.mark.parametrize(
    ("arg", "inside"),
    [(NODE, True), ("out/runs", True), ("out", False), ("out/manifest.json", False),
     ("out/manifest.json::manifest", True), ("test_user.py", False)],
)
def test_a_selection_inside_the_campaign_is_partial(
    pytester: pytest.Pytester, arg: str, inside: bool
) -> None:
    out, _ = two_campaigns(pytester)
    session = itera_session(pytester, "--itera-campaign", "out", arg)
    assert session._selected_inside(out) is inside


# ------------------------------------------------------------------ waivers at collection


def waivers_file(path: Path, *entries: dict[str, str]) -> Path:
    base = {"reason": "agreed with the team", "approved_by": "M. Reviewer",
            "expires": (date.today() + timedelta(days=30)).isoformat()}
    path.write_text(json.dumps({"waivers": [base | e for e in entries]}))
    return path


def collected(pytester: pytest.Pytester) -> dict[str, IteraCheckItem]:
    items, _ = pytester.inline_genitems(*LEAN, "--itera-campaign", "out")
    return {i.name: i for i in items if isinstance(i, IteraCheckItem)}


def waiver_tally(pytester: pytest.Pytester, campaign: CampaignBuilder,
                 *entries: dict[str, str]) -> ItemTally:
    """The campaign written, ``entries`` in the waivers file w.json, and the item tally of a
    session given both."""
    campaign.write()
    waivers_file(pytester.path / "w.json", *entries)
    return item_tally(pytester, "--itera-campaign", "out", "--itera-waivers", "w.json")


def test_a_valid_waiver_marks_the_items_it_matches_xfail(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    tally = waiver_tally(
        pytester, campaign, {"check": "files-intact", "target": "runs/control/*"},
        {"check": "files-intact", "target": "RELOAD.md", "campaign": "someone-else"},
        {"check": "files-intact", "target": "analysis.md", "expires": "2000-01-01"})
    items = collected(pytester)
    for item in items.values():
        tally.pytest_itemcollected(item)
    waived = sorted(name for name, item in items.items() if item.get_closest_marker("xfail"))
    assert waived == [
        "files-intact[runs/control/measurements.jsonl]",
        "files-intact[runs/control/predictions.jsonl]",
        "files-intact[runs/control/step-2.pt]",
    ]
    item = items["files-intact[runs/control/step-2.pt]"]
    facts = dict(item.user_properties)[WAIVER_KEY]
    assert isinstance(facts, dict)
    assert (facts["index"], facts["target"]) == (1, "runs/control/*")
    mark = item.get_closest_marker("xfail")
    assert mark is not None
    assert mark.kwargs["strict"] is False
    assert mark.kwargs["reason"].startswith("waived by M. Reviewer until ")
    assert ("files-intact", "RELOAD.md") in tally.universe[str(campaign.root)]
    assert len(tally.universe[str(campaign.root)]) == len(items)


def test_each_waiver_is_an_item_of_the_campaigns_it_applies_to(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    tally = waiver_tally(pytester, campaign,
                         {"check": "files-intact", "target": "nothing-matches"},
                         {"check": "no-empty-files", "target": "*", "campaign": "tiny-*"},
                         {"check": "manifest", "target": "*", "campaign": "other-*"})
    check, = tally.pytest_itera_checks(tally.config)
    assert (check.id, check.fast, check.needs) == ("waiver", True, frozenset())
    assert ITEM_ORDER[-1] == "waiver"  # judged last
    from pytest_itera.checks import Context, Options

    ctx = Context(load_campaign(campaign.root), Options(), {"waiver": check})
    assert judge(ctx).targets(check) == ("1-files-intact", "2-no-empty-files")
    tally.universe[str(campaign.root)] = {("no-empty-files", "")}
    assert judge(ctx).findings("waiver", "2-no-empty-files") == ()
    unmatched, = judge(ctx).findings("waiver", "1-files-intact")
    assert unmatched.message == ("waiver #1 matches no item of campaign tiny-2026-11: check "
                                 "'files-intact', target 'nothing-matches'")


def test_without_waivers_there_are_no_waiver_items(pytester: pytest.Pytester) -> None:
    tally = item_tally(pytester)
    assert tally.pytest_itera_checks(tally.config) == []


# ------------------------------------------------------------------ the gate


def gate_report(campaign: CampaignBuilder, *outcomes: str) -> report.CampaignReport:
    results = [CheckResult("c", f"t{i}", outcome, "", f"n{i}", "file")
               for i, outcome in enumerate(outcomes)]
    return report.build(load_campaign(campaign.root), results, collected=len(outcomes),
                        fast=False)


@pytest.mark.parametrize(
    ("required", "outcomes", "status", "failure"),
    [
        (True, ("passed", "passed"), pytest.ExitCode.OK, None),
        (True, ("passed", "waived"), pytest.ExitCode.OK, None),
        (True, ("passed", "failed"), pytest.ExitCode.TESTS_FAILED,
         "--itera-require-accepted: exit status 1: campaign tiny-2026-11: REJECTED — 1 of 2 "
         "checks failed"),
        (True, ("passed", "skipped"), pytest.ExitCode.TESTS_FAILED,
         "--itera-require-accepted: exit status 1: campaign tiny-2026-11: INCOMPLETE — 1 of 2 "
         "checks ran (1 skipped)"),
        (False, ("passed", "failed"), pytest.ExitCode.OK, None),
    ],
    ids=["accepted", "with-waivers", "rejected", "incomplete", "not-required"],
)
def test_the_gate_fails_the_run_unless_every_campaign_is_accepted(
    pytester: pytest.Pytester, campaign: CampaignBuilder, required: bool,
    outcomes: tuple[str, ...], status: pytest.ExitCode, failure: str | None,
) -> None:
    campaign.write()
    session = itera_session(pytester, "--itera-campaign", "out", *([GATE] if required else []))
    session.reports = [gate_report(campaign, *outcomes)]
    run = pytest.Session.from_config(session.config)
    run.exitstatus = pytest.ExitCode.OK
    session._gate(run)
    assert (run.exitstatus, session.gate_failure) == (status, failure)


def test_fail_keeps_an_earlier_failure(pytester: pytest.Pytester) -> None:
    run = pytest.Session.from_config(pytester.parseconfig())
    run.exitstatus = pytest.ExitCode.OK
    assert _fail(run, pytest.ExitCode.INTERNAL_ERROR) == 3
    assert _fail(run, pytest.ExitCode.TESTS_FAILED) == 3
    assert run.exitstatus == pytest.ExitCode.INTERNAL_ERROR


# ------------------------------------------------------------------ whole runs


def test_a_selection_reports_every_collected_item_and_an_incomplete_verdict(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = pytester.runpytest(*LEAN, "--itera-campaign", "out", "-k", "manifest",
                                "--itera-report", "r.json")
    assert result.ret == pytest.ExitCode.OK
    document = json.loads((pytester.path / "r.json").read_text())
    assert (document["verdict"], document["collected"]) == ("incomplete", 70)
    assert [(c["nodeid"], c["outcome"]) for c in document["checks"]] == [
        ("out/manifest.json::manifest", "passed"),
        ("out/manifest.json::no-temp-paths[manifest.json]", "passed")]
    assert document["root"] == str(campaign.root)
    assert document["provenance"]["command"][:3] == ["pytest", *LEAN[:2]]
    result.stdout.fnmatch_lines([f"closure report: {pytester.path / 'r.json'}"])


def test_a_node_id_inside_the_campaign_notes_a_partial_report(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.runpytest(*LEAN, "--itera-campaign", "out", NODE, "--itera-report", "r.json")
    document = json.loads((pytester.path / "r.json").read_text())
    assert document["verdict"] == "incomplete"
    assert document["notes"][0] == PARTIAL_NOTE
    assert [c["nodeid"] for c in document["checks"]] == [NODE]


def test_a_report_that_cannot_be_written_fails_the_run_saying_so(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.mkdir("taken.json")
    result = pytester.runpytest(*LEAN, "--itera-campaign", "out", "-k", "manifest",
                                "--itera-report", "taken.json", "--itera-report", "ok.md")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(
        [f"closure report NOT written: {pytester.path / 'taken.json'}: Is a directory"])
    assert (pytester.path / "ok.md").is_file()  # the other report is still written


@pytest.mark.parametrize("args", [("--collect-only",), ("--itera-timeout", "0")],
                         ids=["collect-only", "usage-error"])
def test_no_report_when_nothing_ran(
    pytester: pytest.Pytester, campaign: CampaignBuilder, args: tuple[str, ...]
) -> None:
    campaign.write()
    result = pytester.runpytest(*LEAN, "--itera-campaign", "out", "--itera-report", "r.json",
                                GATE, *args)
    assert not (pytester.path / "r.json").exists()
    result.stdout.no_fnmatch_line("*pytest-itera*")
    result.stdout.no_fnmatch_line(f"{GATE}:*")


def test_the_gate_line_says_why_a_selection_fails_it(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = pytester.runpytest(*LEAN, "--itera-campaign", "out", "-k", "manifest", GATE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, deselected=68)
    result.stdout.fnmatch_lines([
        f"{GATE}: exit status 1: campaign tiny-2026-11: INCOMPLETE — 2 of 70 checks ran"])


def test_only_campaign_items_count_toward_a_campaign(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.makepyfile(test_user="def test_plain():\n    assert False\n")
    result = pytester.runpytest(*LEAN, "--itera-campaign", "out", "test_user.py", "-k",
                                "manifest or plain", "--itera-report", "r.json")
    result.assert_outcomes(passed=2, failed=1, deselected=68)
    document = json.loads((pytester.path / "r.json").read_text())
    assert (document["collected"], len(document["checks"])) == (70, 2)
    assert {c["outcome"] for c in document["checks"]} == {"passed"}

