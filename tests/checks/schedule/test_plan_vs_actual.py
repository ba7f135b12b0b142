"""The rules of ``plan-vs-actual`` (pytest_itera/checks/schedule/plan_vs_actual.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

schedule-fits and plan-vs-actual: the source's 48 h / 72 h / 78 h, and each failure cause.

The factory's campaign: 4 h of human preparation, then 44 h on gpu0 (lot
rtx4090-3d) ending with retrieval at 48 h, in a 72 h window.

Issue 24, points 5, 6 and 9: the evidence agrees with itself in time, resolution and
deliverables. Each rule broken alone on the factory's good /2 campaign, with its honest twin,
judged in process (tests/checks/judging.py: ``judge`` on the check concerned).

The factory's /2 runs on gpu0, one after another, each as long as its steps
(tests.factory.RUN_TIMES): control 2026-11-20T10:00 to 2026-11-21T01:00 (train-control 14 h
+ save-ckpt 1 h), data-check to 03:00, resume-check to 04:00, variant-a to 18:00; closed at
2026-11-22T08:00; tolerable loss 2 h; deviation tolerance 10 %.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks import Context, Options
from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.checks.schedule import CHECKS
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.journal import JOURNAL_FILE
from tests.checks.campaigns import (
    add_pilot,
    decided,
    drop_the_variant,
    drop_variant,
    journal,
    journaled,
    never_ran,
    restate,
    save,
    second_lot,
    step,
    times,
    with_receipt,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CampaignBuilder,
)
from tests.runner import Itera

# ====================================== R2/R9: the decision at the decision point


def decision_point(campaign: CampaignBuilder, decided_at: str) -> None:
    """A decision step after the control's training, before the variant's, and its decision."""
    campaign.plan["schedule"]["steps"].append(
        {"id": "decide", "kind": "decision", "resource": "human", "hours": 1,
         "after": ["train-control"]})
    step(campaign, "train-variant-a")["after"] = ["train-control", "decide"]
    restate(campaign)
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-control", "text": "the control learns: the variant runs",
         "at": decided_at}]


def test_a_decision_taken_after_the_runs_it_precedes_started_is_refused(
    campaign: CampaignBuilder
) -> None:
    decision_point(campaign, "2026-11-21T05:00:00Z")  # variant-a started at 04:00
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.decision-after-point",
        says=("2026-11-21T04:00:00+00:00",
              "'after-control'",
              "2026-11-21T05:00:00+00:00",
              "'train-variant-a'"))
    assert found.where == "manifest.json $.schedule.decisions[0].at"
    assert found.expected == "a decision at or before 2026-11-21T04:00:00+00:00"
    assert found.hint is not None
    assert found.hint.startswith("decide at the decision point, before the runs that follow")


def test_a_decision_taken_before_the_runs_it_precedes_passes(campaign: CampaignBuilder) -> None:
    decision_point(campaign, "2026-11-21T04:00:00Z")
    expect_no_finding(judge(campaign, PVA))


# ======================================================== R2/R9: a dropped run never ran


def dropped(campaign: CampaignBuilder) -> None:
    drop_variant(campaign, "after-pilot")
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "the control already saturates: drop variant-a",
         "drops": ["variant-a"]}]
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def test_a_dropped_run_whose_step_was_observed_is_refused(campaign: CampaignBuilder) -> None:
    dropped(campaign)  # train-variant-a stays observed at its planned 14 h
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.dropped-step-ran",
        says=("'after-pilot'", "'train-variant-a'", "14 h"))
    assert found.where == "manifest.json $.schedule.steps[4].observed_hours"
    assert found.expected == ("0 h: a dropped run never ran (manifest.json $.runs[3].outcome "
                              "is 'dropped')")
    assert found.hint is not None
    assert found.hint.startswith("a run that started and was then abandoned is not dropped")


def test_a_dropped_run_whose_step_did_not_run_passes(campaign: CampaignBuilder) -> None:
    dropped(campaign)
    never_ran(campaign, "train-variant-a")
    expect_no_finding(judge(campaign, PVA))


# ================================================= R3/v3: times never run backwards


def resume_on_gpu1(campaign: CampaignBuilder) -> None:
    """The resume check's restore on a second GPU of the lot: only the order can be wrong."""
    campaign.plan["budget"]["lots"][0]["gpus_per_lot"] = 2
    step(campaign, "restore-ckpt")["resource"] = "gpu1"
    restate(campaign)


def test_a_run_recorded_before_the_run_its_steps_follow_is_refused(
    campaign: CampaignBuilder
) -> None:
    resume_on_gpu1(campaign)  # restore-ckpt comes after save-ckpt, after train-control
    times(campaign, "resume-check", "2026-11-20T20:00:00Z", "2026-11-20T21:00:00Z")
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.run-order",
        says=("2026-11-20T20:00:00+00:00", "5 h", "2026-11-21T01:00:00+00:00", "'restore-ckpt'"))
    assert found.where == "manifest.json $.runs[2].started_at"
    assert found.expected == "at or after 2026-11-21T01:00:00+00:00"


def test_a_run_recorded_after_the_run_its_steps_follow_passes(
    campaign: CampaignBuilder
) -> None:
    resume_on_gpu1(campaign)
    times(campaign, "resume-check", "2026-11-21T01:00:00Z", "2026-11-21T02:00:00Z")
    expect_no_finding(judge(campaign, PVA))


def test_runs_recorded_over_more_than_their_lots_days_are_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["closed_at"] = "2026-11-24T00:00:00Z"
    times(campaign, "variant-a", "2026-11-23T08:00:00Z", "2026-11-23T22:00:00Z")
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.lot-recorded-span",
        says=("'rtx4090-3d'",
              "84 h",
              "'s start at 2026-11-20T10:00:00+00:00 to variant-a'",
              "2026-11-23T22:00:00+00:00"))
    assert found.where == "manifest.json $.runs[3].ended_at"


def test_runs_recorded_within_their_lots_days_pass(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-24T00:00:00Z"
    times(campaign, "variant-a", "2026-11-22T20:00:00Z", "2026-11-23T10:00:00Z")
    expect_no_finding(judge(campaign, PVA))


def test_a_save_timed_before_its_run_started_is_refused(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-20T09:30:00Z"))
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.save-before-start",
        says=("runs/control/step-2.pt",
              "2026-11-20T09:30:00+00:00",
              "0.5 h",
              "2026-11-20T10:00:00+00:00"))
    assert found.where == "itera-journal.jsonl:1"
    assert found.expected == ("a save at or after 2026-11-20T10:00:00+00:00 (manifest.json "
                              "$.runs[0].started_at)")


def test_a_save_at_the_runs_start_passes(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-20T10:00:00Z"))
    expect_no_finding(judge(campaign, PVA))


def test_run_ends_and_decisions_at_their_journaled_moments_pass(
    campaign: CampaignBuilder
) -> None:
    expect_no_finding(journaled(campaign, *decided(campaign, "2026-11-21T04:00:00Z")))


# ================================ R7/v3: a receipt is dated by its date line (audit3)


def _advised_then_strict(itera: Itera, campaign: CampaignBuilder, first: str) -> None:
    """A reading of a receipt's text (checks/prose/receipts.py): it advises by default and
    fails under strict text, its first line ``first``."""

    expect_no_finding(judge(campaign, "budget-consistent"))
    strict = judge(campaign, "budget-consistent", strict=True)
    assert [f.render().splitlines()[0] for f in strict] == [first]


def test_a_receipt_issued_a_year_before_with_a_later_print_date_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Storage: 12.00 USD\nPrinted 2026-11-21.\n")
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(b"Date: 2026-11-21",
                                                              b"Date: 2025-11-21")
    _advised_then_strict(
        itera, campaign,
        "manifest.json $.budget.included_expenses[0].source.file: included expense "
        "'bucket storage' (12.00 USD): its receipt receipts/storage.txt is dated "
        "2025-11-21 (its issue date, line 2), outside the campaign's window")


# ======================== R3/v3: a save is never timed inside another run on its GPU (audit3)


def test_a_save_timed_while_another_run_held_the_gpu_is_refused(
    campaign: CampaignBuilder
) -> None:
    # variant-a ran on gpu0 from 04:00 to 18:00; the journal times a control save at 10:00.
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-21T10:00:00Z"))
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.save-during-run",
        says=("runs/control/step-2.pt",
              "2026-11-21T10:00:00+00:00",
              "'gpu0'",
              "2026-11-21T04:00:00+00:00"))
    assert found.where == "itera-journal.jsonl:1"
    assert found.expected == ("a save outside variant-a's recorded span (manifest.json "
                              "$.runs[3].started_at to ended_at): one GPU trains one run at "
                              "a time")
    assert found.hint is not None
    assert found.hint.startswith("record when each run really started and ended")


def test_a_save_at_the_boundary_of_another_run_passes(campaign: CampaignBuilder) -> None:
    # An artifact of a run trained after it ended (an adapter) is saved between two runs.
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-21T04:00:00Z"))
    expect_no_finding(judge(campaign, PVA))


def test_a_receipt_addressed_to_another_campaign_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    # Issued by the provider the label names (which alone would address it), but bought by
    # another campaign.
    with_receipt(campaign, "Seller: Northbridge\nStorage: 12.00 USD\n",
                 label="Northbridge: bucket storage")
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(
        b"Buyer: campaign tiny-2026-11", b"Buyer: campaign tiny-2025-03")
    _advised_then_strict(
        itera, campaign,
        "manifest.json $.budget.included_expenses[0].source.file: included expense "
        "'Northbridge: bucket storage' (12.00 USD): its receipt receipts/storage.txt is "
        "addressed to campaign 'tiny-2025-03', not 'tiny-2026-11'")


def observed(campaign: CampaignBuilder, step_id: str, hours: float) -> None:
    entry = next(s for s in campaign.manifest["schedule"]["steps"] if s["id"] == step_id)
    entry["observed_hours"] = hours


# ================================================================= plan-vs-actual

PVA = "plan-vs-actual"


def test_plan_vs_actual_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, PVA))


def test_reserved_hours_unrelated_to_the_plan(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["reserved_hours"] = 100
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.reserved-hours",
                             where="manifest.json $.schedule.reserved_hours",
                             says="reserved_hours is 100 h: neither the plan's 72 h window nor "
                                  "the engaged lots' 72 h")
    assert finding.expected == "72 h"


def test_reserved_hours_of_a_longer_engaged_lot_pass(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["budget"]["lots"][0].update(days=7, price="110.00")
    campaign.manifest["schedule"]["reserved_hours"] = 168
    expect_no_finding(judge(campaign, PVA))


def test_reserved_hours_missing(campaign: CampaignBuilder) -> None:
    campaign.manifest["schedule"]["reserved_hours"] = 0
    expect_finding(judge(campaign, PVA), "plan-vs-actual.reserved-hours",
                   where="manifest.json $.schedule.reserved_hours",
                   says="reserved_hours is 0 h: neither the plan's 72 h window")


def test_observed_beyond_reserved(campaign: CampaignBuilder) -> None:
    overrun_training(campaign, 40)
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-control", "explanation": "the loss plateaued: trained 26 h longer"}]
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.observed-over-reserved",
                             where="manifest.json $.schedule.observed_hours",
                             says="observed_hours 74 h exceed the 72 h reserved")
    assert "work past the reservation" in (finding.hint or "")


def test_observed_work_past_the_lots_end_inside_a_longer_window(
    campaign: CampaignBuilder
) -> None:
    """R4: a 96 h window reserved, one 3-day lot engaged; training ran 31 h longer (explained)
    and the GPU steps on that lot now span more than its 72 h: past its end, they ran on a
    lot the budget does not show."""
    campaign.plan["schedule"].update(window_hours=96, uncommitted_hours=48)
    campaign.manifest["schedule"]["reserved_hours"] = 96
    overrun_training(campaign, 45)  # 79 h observed: 75 h on gpu0 after 4 h of preparation
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-control", "explanation": "the loss plateaued: trained 31 h longer"}]
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.lot-duration",
                             where="manifest.json $.schedule.steps",
                             says="the observed steps on lot 'rtx4090-3d' span 75 h, past its "
                                  "3-day duration (72 h) by 3 h")
    assert "a lot is fixed-price for its duration" in (finding.hint or "")


def test_observed_work_inside_the_lot_in_a_longer_window_passes(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"].update(window_hours=96, uncommitted_hours=48)
    campaign.manifest["schedule"]["reserved_hours"] = 96
    expect_no_finding(judge(campaign, PVA))


def reserved_findings(campaign: CampaignBuilder, reserved: float) -> list[str]:
    """The factory's campaign with a second 3-day lot engaged, taken when train-control ends
    (22 h) for 6 h of training on gpu1, in a 96 h window; its reserved-hours findings."""
    first = campaign.plan["budget"]["lots"][0]
    campaign.plan["budget"]["lots"].append(dict(first, id="second"))
    campaign.plan["schedule"].update(window_hours=96, uncommitted_hours=48)
    campaign.plan["schedule"]["steps"].append(
        {"id": "train-extra", "kind": "training", "resource": "gpu1", "hours": 6,
         "after": ["train-control"], "lot": "second"})
    campaign.manifest["budget"]["lots"].append("second")
    campaign.manifest["schedule"]["steps"].append({"id": "train-extra", "observed_hours": 6})
    campaign.manifest["schedule"]["reserved_hours"] = reserved
    ctx = Context(load_campaign(campaign.write()), Options(), {c.id: c for c in CHECKS})
    return [f.render().splitlines()[0] for f in engine_judge(ctx).findings(PVA)
            if f.code in ("plan-vs-actual.reserved-hours",
                          "plan-vs-actual.observed-over-reserved")]


def test_overlapping_lots_reserve_the_union_of_their_windows(tmp_path: Path) -> None:
    """The first lot runs from setup (4 h) to 76 h, the second from 22 h to 94 h: together
    90 h (72 + 72 - 54 overlapping), never one lot's 72 h."""
    assert reserved_findings(CampaignBuilder(tmp_path / "union"), 90) == []
    assert reserved_findings(CampaignBuilder(tmp_path / "window"), 96) == []
    assert reserved_findings(CampaignBuilder(tmp_path / "one-lot"), 72) == [
        "manifest.json $.schedule.reserved_hours: reserved_hours is 72 h: neither the plan's "
        "96 h window nor the engaged lots' 90 h"]


def add_overlapping_human_step(campaign: CampaignBuilder) -> None:
    """A human drafts the analysis while gpu0 trains: 52 h of work in a 48 h makespan."""
    campaign.plan["schedule"]["steps"].append(
        {"id": "draft-analysis", "kind": "evaluation", "resource": "human", "hours": 4,
         "after": ["train-control"]})
    campaign.manifest["schedule"]["steps"].append({"id": "draft-analysis", "observed_hours": 4})


def test_observed_hours_are_the_makespan_not_the_sum(
    campaign: CampaignBuilder
) -> None:
    add_overlapping_human_step(campaign)
    campaign.manifest["schedule"]["observed_hours"] = 52
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.observed-hours",
                             where="manifest.json $.schedule.observed_hours",
                             says="observed_hours says 52 h, but the observed steps, run as the "
                                  "plan orders them, take 48 h")
    assert (
        "observed_hours is the observed makespan (first start to last end, overlapping steps "
        "counted once), not the sum of the steps' hours") in (finding.hint or "")


def test_observed_makespan_with_an_overlapping_step_passes(
    campaign: CampaignBuilder
) -> None:
    add_overlapping_human_step(campaign)
    expect_no_finding(judge(campaign, PVA))


def test_planned_step_without_observed_hours(
    campaign: CampaignBuilder
) -> None:
    steps = campaign.manifest["schedule"]["steps"]
    steps[:] = [s for s in steps if s["id"] != "check-data"]
    campaign.manifest["schedule"]["observed_hours"] = 46
    expect_finding(judge(campaign, PVA), "plan-vs-actual.short-step",
                   where="manifest.json $.schedule.steps",
                   says="planned step 'check-data' has no observed hours and no explanation")


def test_planned_step_not_observed_but_explained_passes(
    campaign: CampaignBuilder
) -> None:
    steps = campaign.manifest["schedule"]["steps"]
    steps[:] = [s for s in steps if s["id"] != "check-data"]
    campaign.manifest["schedule"].update(observed_hours=46, deviations=[
        {"step": "check-data", "explanation": "the corpus hash matched: the check was skipped"}])
    record = campaign.run_record("data-check")  # a run whose step did not run takes no time
    record["ended_at"] = record["started_at"]
    expect_no_finding(judge(campaign, PVA))


def test_unplanned_observed_step(campaign: CampaignBuilder) -> None:
    campaign.manifest["schedule"]["steps"].append({"id": "reinstall-driver", "observed_hours": 3})
    campaign.manifest["schedule"]["observed_hours"] = 51
    expect_finding(judge(campaign, PVA), "plan-vs-actual.unplanned-step",
                   where="manifest.json $.schedule.steps",
                   says="observed step 'reinstall-driver' is not in the plan and has no "
                        "explanation")


def test_unplanned_step_explained_passes(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["steps"].append({"id": "reinstall-driver", "observed_hours": 3})
    campaign.manifest["schedule"].update(observed_hours=51, deviations=[
        {"step": "reinstall-driver", "explanation": "the image's CUDA driver did not load"}])
    expect_no_finding(judge(campaign, PVA))


def overrun_training(campaign: CampaignBuilder, hours: float) -> None:
    observed(campaign, "train-control", hours)
    campaign.manifest["schedule"]["observed_hours"] = 48 - 14 + hours


def test_a_deviation_above_tolerance_needs_an_explanation(
    campaign: CampaignBuilder
) -> None:
    overrun_training(campaign, 16)
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.deviation-unexplained",
                             where="manifest.json $.schedule.deviations",
                             says="step 'train-control' took 16 h against 14 h planned (+14 %), "
                                  "above the 10 % tolerance, without an explanation")
    assert finding.expected == "14 h ± 10 %"
    assert finding.found == "16 h"


def test_an_explained_deviation_passes(
    campaign: CampaignBuilder
) -> None:
    overrun_training(campaign, 16)
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-control", "explanation": "the dataloader was CPU-bound for 2 h"}]
    expect_no_finding(judge(campaign, PVA))


def test_a_deviation_within_tolerance_passes(
    campaign: CampaignBuilder
) -> None:
    overrun_training(campaign, 15)
    expect_no_finding(judge(campaign, PVA))


def test_the_ini_tolerance_applies(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_deviation_tolerance = 0.2\n")
    overrun_training(campaign, 16)
    itera.passes(campaign, PVA)


def test_the_plans_tolerance_wins_over_the_ini(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_deviation_tolerance = 0.2\n")
    campaign.plan["schedule"]["deviation_tolerance"] = 0.05
    overrun_training(campaign, 15)
    expect_finding(judge(campaign, PVA), "plan-vs-actual.deviation-unexplained",
                   where="manifest.json $.schedule.deviations",
                   says="step 'train-control' took 15 h against 14 h planned (+7 %), above the 5 "
                        "% tolerance, without an explanation")


def test_an_explanation_for_a_step_that_does_not_exist(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["deviations"] = [{"step": "tain-control", "explanation": "x"}]
    expect_finding(judge(campaign, PVA), "plan-vs-actual.stray-explanation",
                   where="manifest.json $.schedule.deviations[0].step",
                   says="deviation explains step 'tain-control', which is neither planned nor "
                        "observed")


def test_a_dropped_run_with_its_decision_passes(
    campaign: CampaignBuilder
) -> None:
    drop_variant(campaign, "after-pilot")
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "the control already saturates: drop variant-a",
         "drops": ["variant-a"]}]
    never_ran(campaign, "train-variant-a")
    expect_no_finding(judge(campaign, PVA))


def test_a_dropped_run_without_a_decision(
    campaign: CampaignBuilder
) -> None:
    drop_variant(campaign, None)
    expect_finding(judge(campaign, PVA), "plan-vs-actual.no-decision",
                   where="manifest.json $.runs[3]",
                   says="run variant-a was dropped without a recorded decision")


def test_a_run_citing_a_decision_never_recorded(
    campaign: CampaignBuilder
) -> None:
    drop_variant(campaign, "after-pilot")
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.decision-unknown",
                             where="manifest.json $.runs[3].decision",
                             says="run variant-a cites decision 'after-pilot', which is not "
                                  "recorded")
    assert finding.expected == "one of: (none recorded)"


def test_an_added_run_needs_a_decision(
    campaign: CampaignBuilder
) -> None:
    extra = dict(campaign.manifest["runs"][3], id="variant-b")
    campaign.manifest["runs"].append(extra)
    expect_finding(judge(campaign, PVA), "plan-vs-actual.no-decision",
                   where="manifest.json $.runs[4]",
                   says="run variant-b was added after the plan without a recorded decision")


def test_an_added_run_with_its_decision_passes(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][3], id="variant-b"))
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "add-b", "text": "variant-a is close: try variant-b", "adds": ["variant-b"]}]
    expect_no_finding(judge(campaign, PVA))


def test_decisions_that_name_wrong_runs(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "d1", "text": "drop", "drops": ["variant-a", "variant-z"]},
        {"id": "d1", "text": "again"}]
    found = judge(campaign, PVA)
    expect_finding(found, "plan-vs-actual.decision-repeated",
                   where="manifest.json $.schedule.decisions",
                   says="decision id 'd1' is recorded 2 times")
    expect_finding(found, "plan-vs-actual.decision-drop-outcome",
                   where="manifest.json $.schedule.decisions[0].drops",
                   says="decision 'd1' drops run variant-a, but its outcome is 'accepted'")
    expect_finding(found, "plan-vs-actual.decision-target",
                   where="manifest.json $.schedule.decisions[0].drops",
                   says="decision 'd1' drops run 'variant-z', which the manifest does not record")


def test_the_factory_timeline_fits(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, PVA))


# ======================================================================= one GPU


def test_two_runs_overlapping_on_one_gpu_are_refused(campaign: CampaignBuilder) -> None:
    times(campaign, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.gpu-overlap",
        says=("'gpu0'", "'rtx4090-3d'", "2026-11-21T01:00:00+00:00", "2026-11-21T03:00:00+00:00"))
    assert found.where == "manifest.json $.runs[2].started_at"
    assert found.expected == ("resume-check starts at or after 2026-11-21T03:00:00+00:00 "
                              "(data-check's ended_at): one GPU trains one run at a time")
    assert found.hint is not None
    assert "gpus_per_lot x quantity" in found.hint


def _two_gpus_of_one_lot(campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["gpus_per_lot"] = 2
    step(campaign, "restore-ckpt")["resource"] = "gpu1"


def _a_gpu_of_a_second_lot(campaign: CampaignBuilder) -> None:
    second_lot(campaign)
    step(campaign, "restore-ckpt").update(resource="gpu1", lot="rtx4090-3d-b")


@pytest.mark.parametrize("apart", [_two_gpus_of_one_lot, _a_gpu_of_a_second_lot],
                         ids=["different-gpus", "two-lots"])
def test_runs_on_other_gpus_may_overlap(
    campaign: CampaignBuilder, apart: Callable[[CampaignBuilder], None]
) -> None:
    apart(campaign)
    restate(campaign)
    times(campaign, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")
    expect_no_finding(judge(campaign, PVA))


# ============================================================ span vs observed hours


def test_a_span_longer_than_its_steps_is_refused(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T20:00:00Z")
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.run-span",
        says=("16 h", "2026-11-21T04:00:00+00:00", "2026-11-21T20:00:00+00:00", "14 h"))
    assert found.where == "manifest.json $.runs[3].ended_at"
    assert found.expected == ("at most 14 h + 10 % (the deviation tolerance) + 0.01 h "
                              "(rounding): 15.41 h")
    assert found.found == "16 h"


def test_the_issue_case_seven_hours_for_a_five_hour_step(campaign: CampaignBuilder) -> None:
    restate(campaign, observed={"train-variant-a": 5})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-variant-a", "explanation": "converged early: stopped at 5 h"}]
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T11:00:00Z")
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.run-span")
    assert "span 7 h" in found.message
    assert "observed to take 5 h" in found.message


def test_a_span_within_the_tolerance_passes(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T19:24:00Z")  # 15.4 h
    expect_no_finding(judge(campaign, PVA))


def test_a_span_shorter_than_its_steps_passes(campaign: CampaignBuilder) -> None:
    """Steps may be timed apart from the run's start and end (the recorder's step timers)."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T04:00:05Z")
    expect_no_finding(judge(campaign, PVA))


@pytest.mark.parametrize(("seconds", "fits"), [(30, True), (39, True), (50, False)])
def test_tiny_spans_are_judged_to_the_hundredth_of_an_hour(
    campaign: CampaignBuilder, seconds: int, fits: bool
) -> None:
    """A step timed at 3.6 s (0.001 h): 10 % of it is 0.36 s, under the timestamps' second;
    the allowance is the tolerance plus the 36 s that stated hours may be rounded to."""
    restate(campaign, observed={"check-data": 0.001})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "check-data", "explanation": "the tiny corpus was checked in seconds"}]
    times(campaign, "data-check", "2026-11-21T01:00:00Z", f"2026-11-21T01:00:{seconds:02d}Z")
    found = judge(campaign, PVA)
    if fits:
        expect_no_finding(found, "plan-vs-actual.run-span")
    else:
        expect_finding(found, "plan-vs-actual.run-span")


# ==================================================================== order of moments


def test_a_run_ending_before_it_starts_is_refused(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T03:00:00Z")
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.end-before-start",
        says=("2026-11-21T03:00:00+00:00", "1 h", "2026-11-21T04:00:00+00:00"))
    assert found.where == "manifest.json $.runs[3].ended_at"


def test_a_run_ending_in_the_second_it_started_passes(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T04:00:00Z")
    expect_no_finding(judge(campaign, PVA))


def test_closed_before_a_run_ended_is_refused(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-21T17:00:00Z"
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.closed-before",
        says=("2026-11-21T17:00:00+00:00", "1 h"))
    assert found.expected == "at or after 2026-11-21T18:00:00+00:00, the last recorded moment"


def test_closed_at_the_last_moment_passes(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-21T18:00:00Z"
    expect_no_finding(judge(campaign, PVA))


def test_saves_further_apart_than_the_tolerable_loss_are_refused(
    campaign: CampaignBuilder
) -> None:
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/last.pt", "2026-11-20T12:30:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T15:30:00Z"))
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.save-interval",
        says=("runs/control/last.pt",
              "2026-11-20T12:30:00+00:00",
              "runs/control/step-2.pt",
              "2026-11-20T15:30:00+00:00"))
    assert found.where == f"{JOURNAL_FILE}:3"
    assert found.expected == ("consecutive saves at most 2 h apart (plan.json "
                              "$.checkpoint_policy.tolerable_loss_hours)")


def test_saves_within_the_tolerable_loss_pass(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T13:00:00Z"),
            save("variant-a", "runs/variant-a/weights.pt", "2026-11-21T17:00:00Z"))
    expect_no_finding(judge(campaign, PVA))


def interrupted(since: str, until: str) -> dict[str, Any]:
    """A step resumed after its process died, as the recorder journals it."""
    return {"event": "step", "step": "train-control", "hours": 1.0, "at": since,
            "interrupted": {"since": since, "until": until, "hours": 1.5}}


def test_an_interruption_between_two_saves_is_not_work_at_risk(
    campaign: CampaignBuilder
) -> None:
    """Killed an hour after a save, resumed 1.5 h later from that save, saved again 2 h
    after the resumption: 3.5 h apart on the clock, 2 h of work at risk (the tolerable
    loss): a campaign resumed after an interruption is not refused for it."""
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T14:30:00Z"))
    events = campaign.files[JOURNAL_FILE].decode().splitlines(keepends=True)
    events.insert(1, json.dumps(interrupted("2026-11-20T11:00:00+00:00",
                                            "2026-11-20T12:30:00+00:00")) + "\n")
    campaign.files[JOURNAL_FILE] = "".join(events).encode()
    expect_no_finding(judge(campaign, PVA))


def test_an_interruption_does_not_excuse_saves_too_far_apart(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T14:30:00Z"))
    campaign.files[JOURNAL_FILE] += (json.dumps(interrupted(
        "2026-11-20T12:00:00+00:00", "2026-11-20T12:30:00+00:00")) + "\n").encode()
    expect_finding(judge(campaign, PVA), "plan-vs-actual.save-interval",
        says=("runs/control/last.pt",
              "2026-11-20T11:00:00+00:00",
              "runs/control/step-2.pt",
              "2026-11-20T14:30:00+00:00"))


def test_a_run_span_less_its_interruption_fits_its_steps(campaign: CampaignBuilder) -> None:
    """variant-a pre-empted for 2 h in the middle of its 14 h step: its recorded times span
    16 h, of which 14 h of work, as its step's observed hours say (they never count the
    interruption). The same span without the journaled interruption is refused."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T20:00:00Z")
    campaign.files[JOURNAL_FILE] = (json.dumps(interrupted(
        "2026-11-21T09:00:00+00:00", "2026-11-21T11:00:00+00:00")) + "\n").encode()
    expect_no_finding(judge(campaign, PVA))
    campaign.files[JOURNAL_FILE] = (json.dumps(interrupted(
        "2026-11-21T09:00:00+00:00", "2026-11-21T09:30:00+00:00")) + "\n").encode()
    expect_finding(judge(campaign, PVA), "plan-vs-actual.run-span",
        says=("15.5 h", "2026-11-21T04:00:00+00:00", "2026-11-21T20:00:00+00:00", "0.5 h"))


def test_a_run_resumed_between_its_steps_is_judged_on_its_work(
    campaign: CampaignBuilder
) -> None:
    """The recorder's ``resumed`` event (runs left open outside any step, continued later):
    those hours are not the run's work either."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T22:00:00Z")
    resumed = {"event": "resumed", "runs": ["variant-a"], "at": "2026-11-21T22:00:00Z",
               "interrupted": {"since": "2026-11-21T18:00:00Z", "until": "2026-11-21T22:00:00Z",
                               "hours": 4.0}}
    campaign.files[JOURNAL_FILE] = (json.dumps(resumed) + "\n").encode()
    expect_no_finding(judge(campaign, PVA))


def test_a_journal_that_times_no_save_is_not_judged(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", None),
            save("variant-a", "runs/variant-a/weights.pt", None))
    expect_no_finding(judge(campaign, PVA))


def test_a_journal_that_times_some_saves_cannot_prove_the_others(
    campaign: CampaignBuilder
) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-20T11:00:00Z"),
            save("variant-a", "runs/variant-a/weights.pt", None))
    expect_finding(judge(campaign, PVA), "plan-vs-actual.save-times-unproven",
        says=("2 h", "runs/variant-a/weights.pt"))


def test_a_save_after_the_closure_is_refused(campaign: CampaignBuilder) -> None:
    journal(campaign, save("variant-a", "runs/variant-a/weights.pt", "2026-11-22T09:00:00Z"))
    found = expect_finding(judge(campaign, PVA), "plan-vs-actual.closed-before")
    assert "before checkpoint runs/variant-a/weights.pt of run variant-a was saved " \
        f"({JOURNAL_FILE}:1)" in found.message


# ---------------------------------------- first written in test_schedule_evidence.py


def test_a_decision_before_the_pilot_ended_is_refused(
    campaign: CampaignBuilder
) -> None:
    add_pilot(campaign, "2026-11-20T09:00:00Z")
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.decision-before-pilot",
                             where="manifest.json $.schedule.decisions[0].at",
                             says="decision 'after-pilot' is dated 2026-11-20T09:00:00+00:00, "
                                  "before the pilot run 'pilot' ended "
                                  "(2026-11-20T09:30:00+00:00, manifest.json $.runs[4].ended_at)")
    assert finding.expected == "at or after 2026-11-20T09:30:00+00:00"


def test_a_decision_before_a_stopped_pilot_stopped_is_refused(
    campaign: CampaignBuilder
) -> None:
    add_pilot(campaign, "2026-11-20T09:00:00Z", outcome="stopped", ended_at=None,
              stop={"rule": "non-finite-loss", "reason": "NaN", "at": "2026-11-20T09:10:00Z"})
    campaign.manifest["runs"][4].pop("ended_at")
    expect_finding(judge(campaign, PVA), "plan-vs-actual.decision-before-pilot",
                   where="manifest.json $.schedule.decisions[0].at",
                   says="decision 'after-pilot' is dated 2026-11-20T09:00:00+00:00, before the "
                        "pilot run 'pilot' ended (2026-11-20T09:10:00+00:00, manifest.json "
                        "$.runs[4].stop.at)")


def test_a_decision_at_the_pilots_end_passes(
    campaign: CampaignBuilder
) -> None:
    add_pilot(campaign, "2026-11-20T09:30:00Z")
    expect_no_finding(judge(campaign, PVA))


# ================================================================ plan vs actual


def test_a_step_that_did_not_run_needs_an_explanation(
    campaign: CampaignBuilder
) -> None:
    restate(campaign, observed={"check-data": 0})
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.short-step",
                             where="manifest.json $.schedule.deviations",
                             says="step 'check-data' did not run (0 h observed against 2 h "
                                  "planned) and no explanation")
    assert finding.expected == "an explanation in schedule.deviations, whatever the tolerance"


def test_a_step_that_did_not_run_with_its_explanation_passes(
    campaign: CampaignBuilder
) -> None:
    restate(campaign, observed={"check-data": 0})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "check-data", "explanation": "the corpus hash matched the plan's: not re-run"}]
    record = campaign.run_record("data-check")  # a run whose step did not run takes no time
    record["ended_at"] = record["started_at"]
    expect_no_finding(judge(campaign, PVA))


def test_less_than_half_needs_an_explanation_even_at_the_largest_tolerance(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.5
    restate(campaign, observed={"train-control": 6.5})
    expect_finding(judge(campaign, PVA), "plan-vs-actual.short-step",
                   where="manifest.json $.schedule.deviations",
                   says="step 'train-control' ran 6.5 h of 14 h planned, less than half and no "
                        "explanation")


def test_half_of_the_planned_hours_is_within_the_largest_tolerance(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.5
    restate(campaign, observed={"train-control": 7})
    campaign.run_record("control")["ended_at"] = "2026-11-20T18:00:00Z"  # 7 h + 1 h save
    expect_no_finding(judge(campaign, PVA))


def test_an_ini_tolerance_above_half_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_deviation_tolerance = 0.75\n")
    campaign.write()
    result = itera(check=PVA)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*itera_deviation_tolerance: 0.75: at most 0.5*"])


@pytest.mark.parametrize("blank", ["   ", "\u00a0\u3000", "\u200b\t\n", ".", " - "])
def test_a_blank_explanation_explains_nothing(campaign: CampaignBuilder, blank: str) -> None:
    restate(campaign, observed={"train-control": 16})
    campaign.manifest["schedule"]["deviations"] = [{"step": "train-control", "explanation": blank}]
    found = judge(campaign, PVA)
    finding = expect_finding(found, "plan-vs-actual.blank-explanation",
                             where="manifest.json $.schedule.deviations[0].explanation",
                             says="the explanation of step 'train-control' is blank")
    assert finding.found == repr(blank)
    expect_finding(found, "plan-vs-actual.deviation-unexplained",
                   where="manifest.json $.schedule.deviations",
                   says="step 'train-control' took 16 h against 14 h planned (+14 %), above the "
                   "10 % tolerance, without an explanation")


def test_a_blank_decision_text_is_missing(
    campaign: CampaignBuilder
) -> None:
    drop_the_variant(campaign, " \u2060 ")
    finding = expect_finding(judge(campaign, PVA), "plan-vs-actual.decision-blank",
                             where="manifest.json $.schedule.decisions[0].text",
                             says="decision 'after-control' has a blank text")
    assert finding.expected == "what was decided and why"


def test_a_dropped_run_with_a_written_decision_passes(
    campaign: CampaignBuilder
) -> None:
    drop_the_variant(campaign, "the control already saturates the corpus: drop variant-a")
    expect_no_finding(judge(campaign, PVA))

