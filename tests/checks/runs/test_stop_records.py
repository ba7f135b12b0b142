"""The rules of ``stop-records`` (pytest_itera/checks/runs/stop_records.py): each break refused,
with its honest twin.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.checks.campaigns import (
    Campaign,
    Pytester,
    long_resume,
    record,
    stop,
    stopped_at,
    times,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CampaignBuilder,
    expect_each,
)
from tests.runner import Itera

# ------------------------------------------------------------- stop-records


def test_stop_record_passes(itera: Itera, plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    result = itera.passes(plan2_campaign, "stop-records")
    result.stdout.no_fnmatch_line("*stop-records?control*")  # one item: the stopped run only


def test_no_stopped_run_no_item(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    itera(check="stop-records").assert_outcomes()


CHECK = "stop-records"
RECORD = "manifest.json $.runs[3]"


def stopped(campaign: Campaign, **fields: Any) -> dict[str, Any]:
    """variant-a stopped by its NaN loss (``stop``), its stop record's ``fields`` changed (None:
    left out); its manifest record."""
    stop(campaign, **fields)
    rec = record(campaign, "variant-a")
    rec["stop"] = {k: v for k, v in rec["stop"].items() if v is not None}
    return rec


def frozen_after_the_runs_began(campaign: Campaign) -> None:
    """The plan (and its stop rules) was frozen at noon; the runs started at 10:00."""
    campaign.plan["frozen_at"] = "2026-11-20T12:00:00Z"
    stop(campaign)


# The one finding: (the break, the code, where, a few words; the finding's expected, found and
# a few words of its hint, None where not asserted).
@pytest.mark.parametrize(("break_", "code", "where", "says", "expected", "found", "hint"), [
    # variant-a ended at 18:00
    pytest.param(lambda c: stopped_at(c, "2026-11-21T19:30:00Z"), "stop-records.stop-after-end",
                 f"{RECORD}.stop.at", ("2026-11-21T19:30:00+00:00", "2026-11-21T18:00:00+00:00"),
                 "at or before 2026-11-21T18:00:00+00:00 (ended_at)", None, None,
                 id="a-stop-after-the-run-ended"),
    pytest.param(lambda c: stopped(c, reason="  "), "stop-records.no-reason",
                 f"{RECORD}.stop.reason", "stopped run variant-a has no stop reason", None, None,
                 None, id="empty-reason"),
    # one rule for text everywhere (pytest_itera.core.text.is_blank): zero-width is blank too
    pytest.param(lambda c: stopped(c, reason="\u200b\u00a0"), "stop-records.no-reason",
                 f"{RECORD}.stop.reason", "stopped run variant-a has no stop reason", None, None,
                 None, id="zero-width-reason"),
    pytest.param(lambda c: stopped(c, rule="out-of-memory"), "stop-records.undeclared-rule",
                 f"{RECORD}.stop.rule", "stopped run variant-a cites stop rule 'out-of-memory', "
                 "which the plan does not declare", "one of ['non-finite-loss']",
                 "'out-of-memory'", "stop rules are written in the plan before any run starts",
                 id="rule-not-in-plan"),
    pytest.param(lambda c: stopped(c, rule=""), "stop-records.no-rule", f"{RECORD}.stop.rule",
                 "stopped run variant-a does not name the stop rule that fired", None, None, None,
                 id="no-rule"),
    pytest.param(lambda c: stopped(c, step=None), "stop-records.no-time", f"{RECORD}.stop",
                 "stopped run variant-a does not say when it was stopped", None, None, None,
                 id="no-when"),
    pytest.param(lambda c: stopped(c, at="2026-11-20T09:00:00Z").update(
        started_at="2026-11-20T10:00:00Z"), "stop-records.stop-before-start",
                 f"{RECORD}.stop.at", "run variant-a was stopped before it started",
                 "at or after 2026-11-20T10:00:00+00:00", None, None,
                 id="stopped-before-it-started"),
    pytest.param(lambda c: stopped(c).pop("stop"), "stop-records.no-stop-record",
                 f"{RECORD}.stop", "stopped run variant-a has no stop record", None, None, None,
                 id="stopped-run-without-stop-record"),
    # the stop rule fired, but the run was still recorded as an accepted deliverable
    pytest.param(lambda c: record(c, "variant-a").update(
        stop={"rule": "non-finite-loss", "reason": "loss nan", "step": 3}),
                 "stop-records.stopped-but-accepted", f"{RECORD}.outcome",
                 "run variant-a was stopped by rule 'non-finite-loss' but is counted as accepted",
                 "'stopped'", "'accepted'", "a stopped run keeps its ID and reason, is not an "
                 "accepted deliverable, and still counts as an expense",
                 id="stopped-run-counted-as-accepted"),
    pytest.param(lambda c: stopped(c).update(outcome="rejected"),
                 "stop-records.stop-record-on-unstopped", f"{RECORD}.outcome",
                 "run variant-a carries a stop record but its outcome is 'rejected'", None,
                 "'rejected'", None, id="a-stop-record-on-a-rejected-run"),
    pytest.param(frozen_after_the_runs_began, "stop-records.rule-after-start",
                 "plan.json $.frozen_at", "stop rule 'non-finite-loss' of run variant-a was "
                 "declared after the runs began: the plan was frozen at "
                 "2026-11-20T12:00:00+00:00, run control started at 2026-11-20T10:00:00+00:00",
                 None, None, "stop rules are written before any run starts",
                 id="stop-rules-declared-after-the-runs"),
])
def test_each_break_is_refused(
    plan2_campaign: Campaign, break_: Callable[[Campaign], object], code: str, where: str,
    says: str | tuple[str, ...], expected: str | None, found: str | None, hint: str | None,
) -> None:
    break_(plan2_campaign)
    expect_finding(judge(plan2_campaign, CHECK), code, where=where, says=says,
                   expected=expected, found=found, fix=hint, alone=True)


@pytest.mark.parametrize("arrange", [
    pytest.param(lambda c: stopped_at(c, "2026-11-21T18:00:00Z"), id="a-stop-at-the-runs-end"),
    pytest.param(lambda c: stopped(c, at="2026-11-21T12:00:00Z", step=None),
                 id="stop-at-time-is-enough"),
    # variant-a keeps runs/variant-a/weights.pt, where it stopped
    pytest.param(stop, id="a-stopped-run-keeping-its-evidence-checkpoint"),
])
def test_each_honest_stop_record_passes(
    plan2_campaign: Campaign, arrange: Callable[[Campaign], object]
) -> None:
    arrange(plan2_campaign)
    expect_no_finding(judge(plan2_campaign, CHECK))


def test_plan_frozen_says_the_stop_rules_came_after_the_runs_too(plan2_campaign: Campaign) -> None:
    """The same campaign as stop-rules-declared-after-the-runs, from plan-frozen's side (its
    rule tests: tests/checks/contract/)."""
    frozen_after_the_runs_began(plan2_campaign)
    frozen = judge(plan2_campaign, "plan-frozen")
    assert [(f.where, f.message) for f in frozen] == [
        ("manifest.json $.runs[0].started_at", "run control started before the plan (and its "
         "stop rules) was frozen")]


def test_stopped_run_concluded_and_delivered(pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)  # /1 records deliverables
    stop(campaign)
    record(campaign, "variant-a")["deliverable"] = "tiny-corpus"
    campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a"]
    found = judge(campaign, CHECK)
    assert len(found) == 2, [f.render() for f in found]
    expect_finding(found, "stop-records.meets-threshold",
                   where="manifest.json $.conclusion.meets_threshold",
                   says="stopped run variant-a is listed as meeting the threshold")
    expect_finding(found, "stop-records.deliverable", where=f"{RECORD}.deliverable",
                   says="stopped run variant-a records a deliverable ('tiny-corpus')")
    # the conclusion check says the same from its side
    expect_finding(judge(campaign, "conclusion-consistent", write=False),
                   "conclusion-consistent.not-accepted",
                   where="manifest.json $.conclusion.meets_threshold",
                   says="the conclusion lists variant-a, whose outcome is 'stopped'")


# ---------------------------------------- first written in test_times_fit.py


# ======================================================= stopped runs deliver nothing


def test_a_stopped_run_with_predictions_and_a_corpus_is_refused(
    campaign: CampaignBuilder
) -> None:
    stop(campaign)
    campaign.run_record("variant-a").update(predictions="runs/variant-a/predictions.jsonl",
                                            corpus="tiny-corpus")
    found = judge(campaign, "stop-records")
    assert [f.code for f in found] == ["stop-records.delivers"] * 2
    assert [f.render().splitlines()[0] for f in found] == [
        "manifest.json $.runs[3].predictions: stopped run variant-a records predictions "
        "(runs/variant-a/predictions.jsonl)",
        "manifest.json $.runs[3].corpus: stopped run variant-a records the corpus its "
        "predictions cover ('tiny-corpus')"]
    assert found[0].hint is not None
    assert found[0].hint.startswith("a stopped run delivers nothing")


def test_a_stopped_run_shipping_an_adapter_and_two_checkpoints_is_refused(
    campaign: CampaignBuilder
) -> None:
    stop(campaign)
    campaign.files["runs/variant-a/last.pt"] = campaign.files["runs/variant-a/weights.pt"]
    campaign.manifest["checkpoints"].append(
        {"path": "runs/variant-a/last.pt", "run": "variant-a", "format": "torch",
         "kind": "weights"})
    campaign.files["runs/variant-a/adapter/adapter_config.json"] = b"{}"
    campaign.manifest["adapters"].append(
        {"path": "runs/variant-a/adapter", "run": "variant-a", "base_model": "tiny",
         "base_revision": "0" * 40})
    found = judge(campaign, "stop-records")
    assert [f.render().splitlines()[0] for f in found] == [
        "manifest.json $.adapters[0]: stopped run variant-a ships adapter runs/variant-a/adapter",
        "manifest.json $.checkpoints[2]: stopped run variant-a ships 2 checkpoints "
        "(runs/variant-a/weights.pt, runs/variant-a/last.pt): only one, the evidence of where "
        "it stopped, may stay"]
    assert found[1].hint is not None
    assert "(runs/variant-a/weights.pt)" in found[1].hint


# ============================================== through pytest, in the three xdist modes


def test_each_rule_fails_its_item_in_every_xdist_mode(
    itera: Itera, pytester: pytest.Pytester
) -> None:
    """One broken campaign: a GPU overlap (plan-vs-actual), a sparse resume log
    (role-evidence), a stopped run with predictions (stop-records): the same items fail,
    saying the same, with or without xdist."""
    campaign = CampaignBuilder(pytester.path / "out")
    times(campaign, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")
    long_resume(campaign, range(10, 41, 10))
    campaign.write()
    result = itera("-rf", check="plan-vs-actual or role-evidence")
    result.assert_outcomes(failed=2, passed=1)
    expect_each(
        result,
        "manifest.json $.runs[2].started_at: runs data-check and resume-check overlap on GPU "
        "'gpu0' of lot 'rtx4090-3d'*",
        "runs/resume-check/measurements.jsonl: resume check resume-check does not log 'loss' at "
        "the resolution of control*34 missing: 3, 4, 5, 6, 7, …")
    stopped = CampaignBuilder(pytester.path / "stopped")
    stop(stopped)
    stopped.run_record("variant-a")["predictions"] = "runs/variant-a/predictions.jsonl"
    stopped.write()
    result = itera("-rf", check="stop-records", campaign="stopped")
    result.assert_outcomes(failed=1)
    expect_each(result, "manifest.json $.runs[3].predictions: stopped run variant-a records "
                "predictions (runs/variant-a/predictions.jsonl)")
