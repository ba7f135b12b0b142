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
from collections.abc import Callable, Sequence
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

PVA = "plan-vs-actual"
Change = Callable[[CampaignBuilder], object]
# A case's change to the campaign: one function, or several made in turn.
Changes = Change | tuple[Change, ...]

# ================================================================ the arrangements


def change(campaign: CampaignBuilder, changes: Changes) -> None:
    """Make a case's ``changes`` to ``campaign``, in turn."""
    for one in changes if isinstance(changes, tuple) else (changes,):
        one(campaign)


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


def dropped(campaign: CampaignBuilder, *, concluded: bool = True) -> None:
    """R2/R9: variant-a dropped by its decision (its step still observed at its planned 14 h
    unless the case says it never ran); ``concluded``: the conclusion says so."""
    drop_variant(campaign, "after-pilot")
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "the control already saturates: drop variant-a",
         "drops": ["variant-a"]}]
    if concluded:
        campaign.manifest["conclusion"] = {
            "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def resume_on_gpu1(campaign: CampaignBuilder) -> None:
    """The resume check's restore on a second GPU of the lot: only the order can be wrong."""
    campaign.plan["budget"]["lots"][0]["gpus_per_lot"] = 2
    step(campaign, "restore-ckpt")["resource"] = "gpu1"
    restate(campaign)


def closed_later(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-24T00:00:00Z"


def observed(campaign: CampaignBuilder, step_id: str, hours: float) -> None:
    entry = next(s for s in campaign.manifest["schedule"]["steps"] if s["id"] == step_id)
    entry["observed_hours"] = hours


def overrun_training(campaign: CampaignBuilder, hours: float) -> None:
    observed(campaign, "train-control", hours)
    campaign.manifest["schedule"]["observed_hours"] = 48 - 14 + hours


def explained(campaign: CampaignBuilder, step_id: str, explanation: str) -> None:
    campaign.manifest["schedule"]["deviations"] = [{"step": step_id, "explanation": explanation}]


def a_96_hour_window(campaign: CampaignBuilder) -> None:
    """R4: a 96 h window reserved, one 3-day lot engaged."""
    campaign.plan["schedule"].update(window_hours=96, uncommitted_hours=48)
    campaign.manifest["schedule"]["reserved_hours"] = 96


def add_overlapping_human_step(campaign: CampaignBuilder) -> None:
    """A human drafts the analysis while gpu0 trains: 52 h of work in a 48 h makespan."""
    campaign.plan["schedule"]["steps"].append(
        {"id": "draft-analysis", "kind": "evaluation", "resource": "human", "hours": 4,
         "after": ["train-control"]})
    campaign.manifest["schedule"]["steps"].append({"id": "draft-analysis", "observed_hours": 4})


def check_data_not_observed(campaign: CampaignBuilder) -> None:
    steps = campaign.manifest["schedule"]["steps"]
    steps[:] = [s for s in steps if s["id"] != "check-data"]
    campaign.manifest["schedule"]["observed_hours"] = 46


def took_no_time(campaign: CampaignBuilder, run_id: str) -> None:
    """A run whose step did not run takes no time."""
    record = campaign.run_record(run_id)
    record["ended_at"] = record["started_at"]


def reinstalled_the_driver(campaign: CampaignBuilder) -> None:
    campaign.manifest["schedule"]["steps"].append({"id": "reinstall-driver", "observed_hours": 3})
    campaign.manifest["schedule"]["observed_hours"] = 51


def variant_b_added(campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][3], id="variant-b"))


def decisions_naming_wrong_runs(campaign: CampaignBuilder) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "d1", "text": "drop", "drops": ["variant-a", "variant-z"]},
        {"id": "d1", "text": "again"}]


def _two_gpus_of_one_lot(campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["gpus_per_lot"] = 2
    step(campaign, "restore-ckpt")["resource"] = "gpu1"


def _a_gpu_of_a_second_lot(campaign: CampaignBuilder) -> None:
    second_lot(campaign)
    step(campaign, "restore-ckpt").update(resource="gpu1", lot="rtx4090-3d-b")


def interrupted(since: str, until: str) -> dict[str, Any]:
    """A step resumed after its process died, as the recorder journals it."""
    return {"event": "step", "step": "train-control", "hours": 1.0, "at": since,
            "interrupted": {"since": since, "until": until, "hours": 1.5}}


def two_saves_around(campaign: CampaignBuilder, since: str, until: str, *, first: bool) -> None:
    """The control saved at 11:00 and 14:30, its process killed at ``since`` and resumed at
    ``until``: journaled between the saves (``first``: as the first event after the first
    save), or after them."""
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T14:30:00Z"))
    events = campaign.files[JOURNAL_FILE].decode().splitlines(keepends=True)
    events.insert(1 if first else len(events), json.dumps(interrupted(since, until)) + "\n")
    campaign.files[JOURNAL_FILE] = "".join(events).encode()


def variant_interrupted(campaign: CampaignBuilder, until: str) -> None:
    """variant-a pre-empted from 09:00 to ``until`` in the middle of its 14 h step, its
    recorded times spanning 16 h (04:00 to 20:00)."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T20:00:00Z")
    campaign.files[JOURNAL_FILE] = (json.dumps(interrupted(
        "2026-11-21T09:00:00+00:00", until)) + "\n").encode()


def resumed_between_its_steps(campaign: CampaignBuilder) -> None:
    """The recorder's ``resumed`` event (runs left open outside any step, continued later):
    those hours are not the run's work either."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T22:00:00Z")
    resumed = {"event": "resumed", "runs": ["variant-a"], "at": "2026-11-21T22:00:00Z",
               "interrupted": {"since": "2026-11-21T18:00:00Z", "until": "2026-11-21T22:00:00Z",
                               "hours": 4.0}}
    campaign.files[JOURNAL_FILE] = (json.dumps(resumed) + "\n").encode()


def a_stopped_pilot(campaign: CampaignBuilder) -> None:
    add_pilot(campaign, "2026-11-20T09:00:00Z", outcome="stopped", ended_at=None,
              stop={"rule": "non-finite-loss", "reason": "NaN", "at": "2026-11-20T09:10:00Z"})
    campaign.manifest["runs"][4].pop("ended_at")


def check_data_did_not_run(campaign: CampaignBuilder, explanation: str | None) -> None:
    restate(campaign, observed={"check-data": 0})
    if explanation is not None:
        explained(campaign, "check-data", explanation)
        took_no_time(campaign, "data-check")


def tiny_check_data(campaign: CampaignBuilder, seconds: int) -> None:
    """A step timed at 3.6 s (0.001 h), its run recorded ``seconds`` long: 10 % of it is 0.36 s,
    under the timestamps' second; the allowance is the tolerance plus the 36 s that stated
    hours may be rounded to (to the hundredth of an hour)."""
    restate(campaign, observed={"check-data": 0.001})
    explained(campaign, "check-data", "the tiny corpus was checked in seconds")
    times(campaign, "data-check", "2026-11-21T01:00:00Z", f"2026-11-21T01:00:{seconds:02d}Z")


def at_the_largest_tolerance(campaign: CampaignBuilder, train_control: float) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.5
    restate(campaign, observed={"train-control": train_control})


# ======================================================== each break refused, alone

DECISIONS = "manifest.json $.schedule.decisions"
DEVIATIONS = "manifest.json $.schedule.deviations"


# (the change, the code, where exactly, a few words; the finding's expected, found and a few
# words of its hint, None where not asserted)
@pytest.mark.parametrize(("break_", "code", "where", "says", "expected", "found", "hint"), [
    # ====================================== R2/R9: the decision at the decision point
    # variant-a started at 04:00
    pytest.param(lambda c: decision_point(c, "2026-11-21T05:00:00Z"),
                 "plan-vs-actual.decision-after-point", f"{DECISIONS}[0].at",
                 ("2026-11-21T04:00:00+00:00", "'after-control'", "2026-11-21T05:00:00+00:00",
                  "'train-variant-a'"), "a decision at or before 2026-11-21T04:00:00+00:00", None,
                 "decide at the decision point, before the runs that follow",
                 id="a-decision-taken-after-the-runs-it-precedes-started"),
    # ======================================================== R2/R9: a dropped run never ran
    # train-variant-a stays observed at its planned 14 h
    pytest.param(dropped, "plan-vs-actual.dropped-step-ran",
                 "manifest.json $.schedule.steps[4].observed_hours",
                 ("'after-pilot'", "'train-variant-a'", "14 h"),
                 "0 h: a dropped run never ran (manifest.json $.runs[3].outcome is 'dropped')",
                 None, "a run that started and was then abandoned is not dropped",
                 id="a-dropped-run-whose-step-was-observed"),
    # ================================================= R3/v3: times never run backwards
    # restore-ckpt comes after save-ckpt, after train-control
    pytest.param((resume_on_gpu1, lambda c: times(c, "resume-check", "2026-11-20T20:00:00Z",
                                                  "2026-11-20T21:00:00Z")),
                 "plan-vs-actual.run-order", "manifest.json $.runs[2].started_at",
                 ("2026-11-20T20:00:00+00:00", "5 h", "2026-11-21T01:00:00+00:00",
                  "'restore-ckpt'"), "at or after 2026-11-21T01:00:00+00:00", None, None,
                 id="a-run-recorded-before-the-run-its-steps-follow"),
    pytest.param((closed_later, lambda c: times(c, "variant-a", "2026-11-23T08:00:00Z",
                                                "2026-11-23T22:00:00Z")),
                 "plan-vs-actual.lot-recorded-span", "manifest.json $.runs[3].ended_at",
                 ("'rtx4090-3d'", "84 h", "'s start at 2026-11-20T10:00:00+00:00 to variant-a'",
                  "2026-11-23T22:00:00+00:00"), None, None, None,
                 id="runs-recorded-over-more-than-their-lots-days"),
    pytest.param(lambda c: journal(c, save("control", "runs/control/step-2.pt",
                                           "2026-11-20T09:30:00Z")),
                 "plan-vs-actual.save-before-start", f"{JOURNAL_FILE}:1",
                 ("runs/control/step-2.pt", "2026-11-20T09:30:00+00:00", "0.5 h",
                  "2026-11-20T10:00:00+00:00"),
                 "a save at or after 2026-11-20T10:00:00+00:00 (manifest.json "
                 "$.runs[0].started_at)", None, None, id="a-save-timed-before-its-run-started"),
    # ======================== R3/v3: a save is never timed inside another run on its GPU (audit3)
    # variant-a ran on gpu0 from 04:00 to 18:00; the journal times a control save at 10:00.
    pytest.param(lambda c: journal(c, save("control", "runs/control/step-2.pt",
                                           "2026-11-21T10:00:00Z")),
                 "plan-vs-actual.save-during-run", f"{JOURNAL_FILE}:1",
                 ("runs/control/step-2.pt", "2026-11-21T10:00:00+00:00", "'gpu0'",
                  "2026-11-21T04:00:00+00:00"),
                 "a save outside variant-a's recorded span (manifest.json $.runs[3].started_at "
                 "to ended_at): one GPU trains one run at a time", None,
                 "record when each run really started and ended",
                 id="a-save-timed-while-another-run-held-the-gpu"),
    # ================================================================= reserved hours
    pytest.param(lambda c: c.manifest["schedule"].update(reserved_hours=100),
                 "plan-vs-actual.reserved-hours", "manifest.json $.schedule.reserved_hours",
                 "reserved_hours is 100 h: neither the plan's 72 h window nor the engaged lots' "
                 "72 h", "72 h", None, None, id="reserved-hours-unrelated-to-the-plan"),
    pytest.param(lambda c: c.manifest["schedule"].update(reserved_hours=0),
                 "plan-vs-actual.reserved-hours", "manifest.json $.schedule.reserved_hours",
                 "reserved_hours is 0 h: neither the plan's 72 h window", None, None, None,
                 id="reserved-hours-missing"),
    pytest.param((lambda c: overrun_training(c, 40), lambda c: explained(
        c, "train-control", "the loss plateaued: trained 26 h longer")),
                 "plan-vs-actual.observed-over-reserved", "manifest.json $.schedule.observed_hours",
                 "observed_hours 74 h exceed the 72 h reserved", None, None,
                 "work past the reservation", id="observed-beyond-reserved"),
    # training ran 31 h longer (explained) and the GPU steps on that lot now span more than its
    # 72 h: past its end, they ran on a lot the budget does not show.
    pytest.param((a_96_hour_window, lambda c: overrun_training(c, 45), lambda c: explained(
        c, "train-control", "the loss plateaued: trained 31 h longer")),
                 "plan-vs-actual.lot-duration", "manifest.json $.schedule.steps",
                 "the observed steps on lot 'rtx4090-3d' span 75 h, past its 3-day duration "
                 "(72 h) by 3 h", None, None, "a lot is fixed-price for its duration",
                 id="observed-work-past-the-lots-end-inside-a-longer-window"),
    # ================================================================ observed hours
    pytest.param((add_overlapping_human_step,
                  lambda c: c.manifest["schedule"].update(observed_hours=52)),
                 "plan-vs-actual.observed-hours", "manifest.json $.schedule.observed_hours",
                 "observed_hours says 52 h, but the observed steps, run as the plan orders them, "
                 "take 48 h", None, None, "observed_hours is the observed makespan (first start "
                 "to last end, overlapping steps counted once), not the sum of the steps' hours",
                 id="observed-hours-are-the-makespan-not-the-sum"),
    pytest.param(check_data_not_observed, "plan-vs-actual.short-step",
                 "manifest.json $.schedule.steps",
                 "planned step 'check-data' has no observed hours and no explanation", None, None,
                 None, id="planned-step-without-observed-hours"),
    pytest.param(reinstalled_the_driver, "plan-vs-actual.unplanned-step",
                 "manifest.json $.schedule.steps",
                 "observed step 'reinstall-driver' is not in the plan and has no explanation",
                 None, None, None, id="unplanned-observed-step"),
    pytest.param(lambda c: overrun_training(c, 16), "plan-vs-actual.deviation-unexplained",
                 DEVIATIONS, "step 'train-control' took 16 h against 14 h planned (+14 %), above "
                 "the 10 % tolerance, without an explanation", "14 h ± 10 %", "16 h", None,
                 id="a-deviation-above-tolerance-unexplained"),
    pytest.param(lambda c: explained(c, "tain-control", "x"), "plan-vs-actual.stray-explanation",
                 f"{DEVIATIONS}[0].step",
                 "deviation explains step 'tain-control', which is neither planned nor observed",
                 None, None, None, id="an-explanation-for-a-step-that-does-not-exist"),
    pytest.param(lambda c: check_data_did_not_run(c, None), "plan-vs-actual.short-step",
                 DEVIATIONS, "step 'check-data' did not run (0 h observed against 2 h planned) "
                 "and no explanation", "an explanation in schedule.deviations, whatever the "
                 "tolerance", None, None, id="a-step-that-did-not-run-unexplained"),
    pytest.param(lambda c: at_the_largest_tolerance(c, 6.5), "plan-vs-actual.short-step",
                 DEVIATIONS, "step 'train-control' ran 6.5 h of 14 h planned, less than half and "
                 "no explanation", None, None, None,
                 id="less-than-half-unexplained-even-at-the-largest-tolerance"),
    # ===================================================================== decisions
    pytest.param(lambda c: drop_variant(c, None), "plan-vs-actual.no-decision",
                 "manifest.json $.runs[3]", "run variant-a was dropped without a recorded decision",
                 None, None, None, id="a-dropped-run-without-a-decision"),
    pytest.param(lambda c: drop_variant(c, "after-pilot"), "plan-vs-actual.decision-unknown",
                 "manifest.json $.runs[3].decision",
                 "run variant-a cites decision 'after-pilot', which is not recorded",
                 "one of: (none recorded)", None, None,
                 id="a-run-citing-a-decision-never-recorded"),
    pytest.param(variant_b_added, "plan-vs-actual.no-decision", "manifest.json $.runs[4]",
                 "run variant-b was added after the plan without a recorded decision", None, None,
                 None, id="an-added-run-without-a-decision"),
    pytest.param(decisions_naming_wrong_runs, "plan-vs-actual.decision-repeated", DECISIONS,
                 "decision id 'd1' is recorded 2 times", None, None, None,
                 id="a-decision-id-repeated"),
    pytest.param(decisions_naming_wrong_runs, "plan-vs-actual.decision-drop-outcome",
                 f"{DECISIONS}[0].drops",
                 "decision 'd1' drops run variant-a, but its outcome is 'accepted'", None, None,
                 None, id="a-decision-dropping-an-accepted-run"),
    pytest.param(decisions_naming_wrong_runs, "plan-vs-actual.decision-target",
                 f"{DECISIONS}[0].drops",
                 "decision 'd1' drops run 'variant-z', which the manifest does not record", None,
                 None, None, id="a-decision-dropping-an-unknown-run"),
    pytest.param(lambda c: drop_the_variant(c, " \u2060 "), "plan-vs-actual.decision-blank",
                 f"{DECISIONS}[0].text", "decision 'after-control' has a blank text",
                 "what was decided and why", None, None, id="a-blank-decision-text"),
    pytest.param(lambda c: add_pilot(c, "2026-11-20T09:00:00Z"),
                 "plan-vs-actual.decision-before-pilot", f"{DECISIONS}[0].at",
                 "decision 'after-pilot' is dated 2026-11-20T09:00:00+00:00, before the pilot run "
                 "'pilot' ended (2026-11-20T09:30:00+00:00, manifest.json $.runs[4].ended_at)",
                 "at or after 2026-11-20T09:30:00+00:00", None, None,
                 id="a-decision-before-the-pilot-ended"),
    pytest.param(a_stopped_pilot, "plan-vs-actual.decision-before-pilot", f"{DECISIONS}[0].at",
                 "before the pilot run 'pilot' ended (2026-11-20T09:10:00+00:00, manifest.json "
                 "$.runs[4].stop.at)", None, None, None,
                 id="a-decision-before-a-stopped-pilot-stopped"),
    # ======================================================================= one GPU
    pytest.param(lambda c: times(c, "resume-check", "2026-11-21T02:30:00Z",
                                 "2026-11-21T03:30:00Z"),
                 "plan-vs-actual.gpu-overlap", "manifest.json $.runs[2].started_at",
                 ("'gpu0'", "'rtx4090-3d'", "2026-11-21T01:00:00+00:00",
                  "2026-11-21T03:00:00+00:00"),
                 "resume-check starts at or after 2026-11-21T03:00:00+00:00 (data-check's "
                 "ended_at): one GPU trains one run at a time", None, "gpus_per_lot x quantity",
                 id="two-runs-overlapping-on-one-gpu"),
    # ============================================================ span vs observed hours
    pytest.param(lambda c: times(c, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T20:00:00Z"),
                 "plan-vs-actual.run-span", "manifest.json $.runs[3].ended_at",
                 ("16 h", "2026-11-21T04:00:00+00:00", "2026-11-21T20:00:00+00:00", "14 h"),
                 "at most 14 h + 10 % (the deviation tolerance) + 0.01 h (rounding): 15.41 h",
                 "16 h", None, id="a-span-longer-than-its-steps"),
    pytest.param((lambda c: restate(c, observed={"train-variant-a": 5}),
                  lambda c: explained(c, "train-variant-a", "converged early: stopped at 5 h"),
                  lambda c: times(c, "variant-a", "2026-11-21T04:00:00Z",
                                  "2026-11-21T11:00:00Z")),
                 "plan-vs-actual.run-span", "manifest.json $.runs[3].ended_at",
                 ("span 7 h", "observed to take 5 h"), None, None, None,
                 id="the-issue-case-seven-hours-for-a-five-hour-step"),
    pytest.param(lambda c: tiny_check_data(c, 50), "plan-vs-actual.run-span",
                 "manifest.json $.runs[1].ended_at", ("span 0.0139 h", "observed to take 0.001 h"),
                 None, None, None,
                 id="a-tiny-span-past-the-hundredth-of-an-hour"),
    # The same span as an interruption of 2 h excuses (an honest twin), interrupted 0.5 h.
    pytest.param(lambda c: variant_interrupted(c, "2026-11-21T09:30:00+00:00"),
                 "plan-vs-actual.run-span", "manifest.json $.runs[3].ended_at",
                 ("15.5 h", "2026-11-21T04:00:00+00:00", "2026-11-21T20:00:00+00:00", "0.5 h"),
                 None, None, None, id="a-run-span-less-a-shorter-interruption"),
    # ==================================================================== order of moments
    pytest.param(lambda c: times(c, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T03:00:00Z"),
                 "plan-vs-actual.end-before-start", "manifest.json $.runs[3].ended_at",
                 ("2026-11-21T03:00:00+00:00", "1 h", "2026-11-21T04:00:00+00:00"), None, None,
                 None, id="a-run-ending-before-it-starts"),
    pytest.param(lambda c: c.manifest.update(closed_at="2026-11-21T17:00:00Z"),
                 "plan-vs-actual.closed-before", "manifest.json $.closed_at",
                 ("2026-11-21T17:00:00+00:00", "1 h"),
                 "at or after 2026-11-21T18:00:00+00:00, the last recorded moment", None, None,
                 id="closed-before-a-run-ended"),
    pytest.param(lambda c: journal(c, save("variant-a", "runs/variant-a/weights.pt",
                                           "2026-11-22T09:00:00Z")),
                 "plan-vs-actual.closed-before", "manifest.json $.closed_at",
                 "before checkpoint runs/variant-a/weights.pt of run variant-a was saved "
                 f"({JOURNAL_FILE}:1)", None, None, None, id="a-save-after-the-closure"),
    pytest.param(lambda c: journal(
        c, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
        save("control", "runs/control/last.pt", "2026-11-20T12:30:00Z"),
        save("control", "runs/control/step-2.pt", "2026-11-20T15:30:00Z")),
                 "plan-vs-actual.save-interval", f"{JOURNAL_FILE}:3",
                 ("runs/control/last.pt", "2026-11-20T12:30:00+00:00", "runs/control/step-2.pt",
                  "2026-11-20T15:30:00+00:00"),
                 "consecutive saves at most 2 h apart (plan.json "
                 "$.checkpoint_policy.tolerable_loss_hours)", None, None,
                 id="saves-further-apart-than-the-tolerable-loss"),
    pytest.param(lambda c: two_saves_around(c, "2026-11-20T12:00:00+00:00",
                                            "2026-11-20T12:30:00+00:00", first=False),
                 "plan-vs-actual.save-interval", f"{JOURNAL_FILE}:2",
                 ("runs/control/last.pt", "2026-11-20T11:00:00+00:00", "runs/control/step-2.pt",
                  "2026-11-20T14:30:00+00:00"), None, None, None,
                 id="an-interruption-does-not-excuse-saves-too-far-apart"),
    pytest.param(lambda c: journal(c, save("control", "runs/control/step-2.pt",
                                           "2026-11-20T11:00:00Z"),
                                   save("variant-a", "runs/variant-a/weights.pt", None)),
                 "plan-vs-actual.save-times-unproven", f"{JOURNAL_FILE}:2",
                 ("2 h", "runs/variant-a/weights.pt"), None, None, None,
                 id="a-journal-that-times-some-saves-cannot-prove-the-others"),
])
def test_each_break_is_refused(
    campaign: CampaignBuilder, break_: Changes, code: str, where: str,
    says: str | Sequence[str], expected: str | None, found: str | None, hint: str | None,
) -> None:
    change(campaign, break_)
    finding = expect_finding(judge(campaign, PVA), code, says=says, expected=expected,
                             found=found, fix=hint)
    assert finding.where == where  # the whole place, not its start


# ===================================================================== the honest twins


@pytest.mark.parametrize("arrange", [
    pytest.param(lambda c: None, id="the-factory-timeline-fits"),
    pytest.param(lambda c: decision_point(c, "2026-11-21T04:00:00Z"),
                 id="a-decision-taken-before-the-runs-it-precedes"),
    pytest.param((dropped, lambda c: never_ran(c, "train-variant-a")),
                 id="a-dropped-run-whose-step-did-not-run"),
    pytest.param((resume_on_gpu1, lambda c: times(c, "resume-check", "2026-11-21T01:00:00Z",
                                                  "2026-11-21T02:00:00Z")),
                 id="a-run-recorded-after-the-run-its-steps-follow"),
    pytest.param((closed_later, lambda c: times(c, "variant-a", "2026-11-22T20:00:00Z",
                                                "2026-11-23T10:00:00Z")),
                 id="runs-recorded-within-their-lots-days"),
    pytest.param(lambda c: journal(c, save("control", "runs/control/step-2.pt",
                                           "2026-11-20T10:00:00Z")),
                 id="a-save-at-the-runs-start"),
    # An artifact of a run trained after it ended (an adapter) is saved between two runs.
    pytest.param(lambda c: journal(c, save("control", "runs/control/step-2.pt",
                                           "2026-11-21T04:00:00Z")),
                 id="a-save-at-the-boundary-of-another-run"),
    # ================================================================= reserved hours
    pytest.param((lambda c: c.plan["budget"]["lots"][0].update(days=7, price="110.00"),
                  lambda c: c.manifest["schedule"].update(reserved_hours=168)),
                 id="reserved-hours-of-a-longer-engaged-lot"),
    pytest.param(a_96_hour_window, id="observed-work-inside-the-lot-in-a-longer-window"),
    # ================================================================ observed hours
    pytest.param(add_overlapping_human_step, id="observed-makespan-with-an-overlapping-step"),
    pytest.param((check_data_not_observed, lambda c: explained(
        c, "check-data", "the corpus hash matched: the check was skipped"),
                  lambda c: took_no_time(c, "data-check")),
                 id="planned-step-not-observed-but-explained"),
    pytest.param((reinstalled_the_driver, lambda c: explained(
        c, "reinstall-driver", "the image's CUDA driver did not load")),
                 id="unplanned-step-explained"),
    pytest.param((lambda c: overrun_training(c, 16), lambda c: explained(
        c, "train-control", "the dataloader was CPU-bound for 2 h")),
                 id="an-explained-deviation"),
    pytest.param(lambda c: overrun_training(c, 15), id="a-deviation-within-tolerance"),
    pytest.param(lambda c: check_data_did_not_run(
        c, "the corpus hash matched the plan's: not re-run"),
                 id="a-step-that-did-not-run-with-its-explanation"),
    # 7 h + 1 h save
    pytest.param((lambda c: at_the_largest_tolerance(c, 7),
                  lambda c: c.run_record("control").update(ended_at="2026-11-20T18:00:00Z")),
                 id="half-of-the-planned-hours-is-within-the-largest-tolerance"),
    # ===================================================================== decisions
    pytest.param((lambda c: dropped(c, concluded=False), lambda c: never_ran(c, "train-variant-a")),
                 id="a-dropped-run-with-its-decision"),
    pytest.param((variant_b_added, lambda c: c.manifest["schedule"].update(decisions=[
        {"id": "add-b", "text": "variant-a is close: try variant-b", "adds": ["variant-b"]}])),
                 id="an-added-run-with-its-decision"),
    pytest.param(lambda c: drop_the_variant(
        c, "the control already saturates the corpus: drop variant-a"),
                 id="a-dropped-run-with-a-written-decision"),
    pytest.param(lambda c: add_pilot(c, "2026-11-20T09:30:00Z"), id="a-decision-at-the-pilots-end"),
    # ======================================================================= one GPU
    pytest.param((_two_gpus_of_one_lot, restate, lambda c: times(
        c, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")),
                 id="runs-on-different-gpus-may-overlap"),
    pytest.param((_a_gpu_of_a_second_lot, restate, lambda c: times(
        c, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")),
                 id="runs-on-two-lots-may-overlap"),
    # ============================================================ span vs observed hours
    # 15.4 h
    pytest.param(lambda c: times(c, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T19:24:00Z"),
                 id="a-span-within-the-tolerance"),
    # Steps may be timed apart from the run's start and end (the recorder's step timers).
    pytest.param(lambda c: times(c, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T04:00:05Z"),
                 id="a-span-shorter-than-its-steps"),
    pytest.param(lambda c: tiny_check_data(c, 30), id="a-tiny-span-of-30-s"),
    pytest.param(lambda c: tiny_check_data(c, 39), id="a-tiny-span-of-39-s"),
    # variant-a's recorded times span 16 h, of which 14 h of work, as its step's observed
    # hours say (they never count the interruption).
    pytest.param(lambda c: variant_interrupted(c, "2026-11-21T11:00:00+00:00"),
                 id="a-run-span-less-its-interruption-fits-its-steps"),
    pytest.param(resumed_between_its_steps, id="a-run-resumed-between-its-steps"),
    # ==================================================================== order of moments
    pytest.param(lambda c: times(c, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T04:00:00Z"),
                 id="a-run-ending-in-the-second-it-started"),
    pytest.param(lambda c: c.manifest.update(closed_at="2026-11-21T18:00:00Z"),
                 id="closed-at-the-last-moment"),
    pytest.param(lambda c: journal(
        c, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
        save("control", "runs/control/step-2.pt", "2026-11-20T13:00:00Z"),
        save("variant-a", "runs/variant-a/weights.pt", "2026-11-21T17:00:00Z")),
                 id="saves-within-the-tolerable-loss"),
    # Killed an hour after a save, resumed 1.5 h later from that save, saved again 2 h after
    # the resumption: 3.5 h apart on the clock, 2 h of work at risk (the tolerable loss): a
    # campaign resumed after an interruption is not refused for it.
    pytest.param(lambda c: two_saves_around(c, "2026-11-20T11:00:00+00:00",
                                            "2026-11-20T12:30:00+00:00", first=True),
                 id="an-interruption-between-two-saves-is-not-work-at-risk"),
    pytest.param(lambda c: journal(c, save("control", "runs/control/step-2.pt", None),
                                   save("variant-a", "runs/variant-a/weights.pt", None)),
                 id="a-journal-that-times-no-save-is-not-judged"),
])
def test_each_honest_twin_passes(campaign: CampaignBuilder, arrange: Changes) -> None:
    change(campaign, arrange)
    expect_no_finding(judge(campaign, PVA))


# ================================ R7/v3: a receipt is dated and addressed by its lines (audit3)


def receipt_edited(campaign: CampaignBuilder, text: str, line: bytes, instead: bytes,
                   **expense: str) -> None:
    """The storage receipt stating ``text``, its ``line`` (Date:, Buyer:) written ``instead``."""
    with_receipt(campaign, text, **expense)
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(line, instead)


# A reading of a receipt's text (checks/prose/receipts.py): it advises by default and fails
# under strict text, its first line said.
@pytest.mark.parametrize(("arrange", "first"), [
    pytest.param(lambda c: receipt_edited(c, "Storage: 12.00 USD\nPrinted 2026-11-21.\n",
                                          b"Date: 2026-11-21", b"Date: 2025-11-21"),
                 "manifest.json $.budget.included_expenses[0].source.file: included expense "
                 "'bucket storage' (12.00 USD): its receipt receipts/storage.txt is dated "
                 "2025-11-21 (its issue date, line 2), outside the campaign's window",
                 id="issued-a-year-before-with-a-later-print-date"),
    # Issued by the provider the label names (which alone would address it), but bought by
    # another campaign.
    pytest.param(lambda c: receipt_edited(c, "Seller: Northbridge\nStorage: 12.00 USD\n",
                                          b"Buyer: campaign tiny-2026-11",
                                          b"Buyer: campaign tiny-2025-03",
                                          label="Northbridge: bucket storage"),
                 "manifest.json $.budget.included_expenses[0].source.file: included expense "
                 "'Northbridge: bucket storage' (12.00 USD): its receipt receipts/storage.txt is "
                 "addressed to campaign 'tiny-2025-03', not 'tiny-2026-11'",
                 id="addressed-to-another-campaign"),
])
def test_a_receipt_read_out_of_its_campaign_advises_then_fails(
    campaign: CampaignBuilder, arrange: Change, first: str
) -> None:
    arrange(campaign)
    expect_no_finding(judge(campaign, "budget-consistent"))
    strict = judge(campaign, "budget-consistent", strict=True)
    assert [f.render().splitlines()[0] for f in strict] == [first]


# ============================================================== through the journal


def test_run_ends_and_decisions_at_their_journaled_moments_pass(
    campaign: CampaignBuilder
) -> None:
    expect_no_finding(journaled(campaign, *decided(campaign, "2026-11-21T04:00:00Z")))


# ======================================================================= other shapes


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
