"""Issue 24, points 5, 6 and 9: the evidence agrees with itself in time, resolution and
deliverables. Each rule broken alone on the factory's good /2 campaign, with its honest twin,
judged in process (``check_campaign`` on the checks concerned).

The factory's /2 runs on gpu0, one after another, each as long as its steps
(tests.factory.RUN_TIMES): control 2026-11-20T10:00 to 2026-11-21T01:00 (train-control 14 h
+ save-ckpt 1 h), data-check to 03:00, resume-check to 04:00, variant-a to 18:00; closed at
2026-11-22T08:00; tolerable loss 2 h; deviation tolerance 10 %.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.report.verify import Problem, builtin_checks, check_campaign
from tests.checks.test_run_checks import stop
from tests.checks.test_schedule_evidence import restate, second_lot, step
from tests.factory import CampaignBuilder, expect_each, measurements_path
from tests.runner import Itera

PVA = "plan-vs-actual"


def problems(campaign: CampaignBuilder, *checks: str) -> list[Problem]:
    """Write the campaign; the failing findings of ``checks`` (the others are not run)."""
    campaign.write()
    registry = {k: v for k, v in builtin_checks().items() if k in checks}
    assert set(registry) == set(checks)
    return list(check_campaign(campaign.root, checks=registry).findings)


def only(found: list[Problem], code: str) -> Problem:
    """The one failing finding, which has ``code``."""
    assert len(found) == 1, "\n".join(p.render() for p in found)
    assert found[0].finding.code == code
    return found[0]


def times(campaign: CampaignBuilder, run_id: str, start: str | None, end: str | None) -> None:
    record = campaign.run_record(run_id)
    record["started_at"], record["ended_at"] = start, end
    for key in ("started_at", "ended_at"):
        if record[key] is None:
            del record[key]


def test_the_factory_timeline_fits(campaign: CampaignBuilder) -> None:
    assert problems(campaign, PVA) == []


# ======================================================================= one GPU


def test_two_runs_overlapping_on_one_gpu_are_refused(campaign: CampaignBuilder) -> None:
    times(campaign, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")
    found = only(problems(campaign, PVA), "plan-vs-actual.gpu-overlap").finding
    assert found.message == (
        "runs data-check and resume-check overlap on GPU 'gpu0' of lot 'rtx4090-3d': data-check "
        "ran from 2026-11-21T01:00:00+00:00 to 2026-11-21T03:00:00+00:00, resume-check started "
        "at 2026-11-21T02:30:00+00:00 (0.5 h of overlap)")
    assert found.where == "manifest.json $.runs[2].started_at"
    assert found.expected == ("resume-check starts at or after 2026-11-21T03:00:00+00:00 "
                              "(data-check's ended_at): one GPU trains one run at a time")
    assert found.hint is not None
    assert "gpus_per_lot x quantity" in found.hint


def test_runs_on_different_gpus_may_overlap(campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["gpus_per_lot"] = 2
    step(campaign, "restore-ckpt")["resource"] = "gpu1"
    restate(campaign)
    times(campaign, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")
    assert problems(campaign, PVA) == []


def test_runs_on_two_lots_may_overlap(campaign: CampaignBuilder) -> None:
    second_lot(campaign)
    step(campaign, "restore-ckpt").update(resource="gpu1", lot="rtx4090-3d-b")
    restate(campaign)
    times(campaign, "resume-check", "2026-11-21T02:30:00Z", "2026-11-21T03:30:00Z")
    assert problems(campaign, PVA) == []


# ============================================================ span vs observed hours


def test_a_span_longer_than_its_steps_is_refused(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T20:00:00Z")
    found = only(problems(campaign, PVA), "plan-vs-actual.run-span").finding
    assert found.message == (
        "run variant-a's recorded times span 16 h (started_at 2026-11-21T04:00:00+00:00 to "
        "ended_at 2026-11-21T20:00:00+00:00), but the steps that name it were observed to take "
        "14 h ('train-variant-a' 14 h)")
    assert found.where == "manifest.json $.runs[3].ended_at"
    assert found.expected == ("at most 14 h + 10 % (the deviation tolerance) + 0.01 h "
                              "(rounding): 15.41 h")
    assert found.found == "16 h"


def test_the_issue_case_seven_hours_for_a_five_hour_step(campaign: CampaignBuilder) -> None:
    restate(campaign, observed={"train-variant-a": 5})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-variant-a", "explanation": "converged early: stopped at 5 h"}]
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T11:00:00Z")
    found = only(problems(campaign, PVA), "plan-vs-actual.run-span").finding
    assert "span 7 h" in found.message
    assert "observed to take 5 h" in found.message


def test_a_span_within_the_tolerance_passes(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T19:24:00Z")  # 15.4 h
    assert problems(campaign, PVA) == []


def test_a_span_shorter_than_its_steps_passes(campaign: CampaignBuilder) -> None:
    """Steps may be timed apart from the run's start and end (the recorder's step timers)."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T04:00:05Z")
    assert problems(campaign, PVA) == []


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
    found = [p for p in problems(campaign, PVA) if p.finding.code == "plan-vs-actual.run-span"]
    assert (found == []) is fits, [p.message for p in found]


# ==================================================================== order of moments


def test_a_run_ending_before_it_starts_is_refused(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T03:00:00Z")
    found = only(problems(campaign, PVA), "plan-vs-actual.end-before-start").finding
    assert found.message == (
        "run variant-a ends before it starts: ended_at 2026-11-21T03:00:00+00:00 is 1 h before "
        "started_at 2026-11-21T04:00:00+00:00")
    assert found.where == "manifest.json $.runs[3].ended_at"


def test_a_run_ending_in_the_second_it_started_passes(campaign: CampaignBuilder) -> None:
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T04:00:00Z")
    assert problems(campaign, PVA) == []


def test_closed_before_a_run_ended_is_refused(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-21T17:00:00Z"
    found = only(problems(campaign, PVA), "plan-vs-actual.closed-before").finding
    assert found.message == (
        "the manifest was closed at 2026-11-21T17:00:00+00:00, 1 h before run variant-a ended "
        "(manifest.json $.runs[3].ended_at)")
    assert found.expected == "at or after 2026-11-21T18:00:00+00:00, the last recorded moment"


def test_closed_at_the_last_moment_passes(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-21T18:00:00Z"
    assert problems(campaign, PVA) == []


# ====================================================================== save intervals


def journal(campaign: CampaignBuilder, *events: dict[str, Any]) -> None:
    """A listed journal holding ``events`` (checkpoint events, as a recorder would journal
    each save)."""
    campaign.files[JOURNAL_FILE] = "".join(
        json.dumps({"event": "checkpoint", **e}) + "\n" for e in events).encode()


def save(run: str, path: str, at: str | None) -> dict[str, Any]:
    return {"run": run, "path": path, "format": "torch", "kind": "resume",
            **({"at": at} if at is not None else {})}


def test_saves_further_apart_than_the_tolerable_loss_are_refused(
    campaign: CampaignBuilder
) -> None:
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/last.pt", "2026-11-20T12:30:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T15:30:00Z"))
    found = only(problems(campaign, PVA), "plan-vs-actual.save-interval").finding
    assert found.message == (
        "run control saved runs/control/last.pt at 2026-11-20T12:30:00+00:00 and its next "
        "checkpoint runs/control/step-2.pt at 2026-11-20T15:30:00+00:00: 3 h apart, more than "
        "the 2 h the plan tolerates losing")
    assert found.where == f"{JOURNAL_FILE}:3"
    assert found.expected == ("consecutive saves at most 2 h apart (plan.json "
                              "$.checkpoint_policy.tolerable_loss_hours)")


def test_saves_within_the_tolerable_loss_pass(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T13:00:00Z"),
            save("variant-a", "runs/variant-a/weights.pt", "2026-11-21T17:00:00Z"))
    assert problems(campaign, PVA) == []


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
    assert problems(campaign, PVA) == []


def test_an_interruption_does_not_excuse_saves_too_far_apart(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/last.pt", "2026-11-20T11:00:00Z"),
            save("control", "runs/control/step-2.pt", "2026-11-20T14:30:00Z"))
    campaign.files[JOURNAL_FILE] += (json.dumps(interrupted(
        "2026-11-20T12:00:00+00:00", "2026-11-20T12:30:00+00:00")) + "\n").encode()
    found = only(problems(campaign, PVA), "plan-vs-actual.save-interval").finding
    assert found.message == (
        "run control saved runs/control/last.pt at 2026-11-20T11:00:00+00:00 and its next "
        "checkpoint runs/control/step-2.pt at 2026-11-20T14:30:00+00:00: 3 h apart (not "
        "counting 0.5 h of interruption), more than the 2 h the plan tolerates losing")


def test_a_run_span_less_its_interruption_fits_its_steps(campaign: CampaignBuilder) -> None:
    """variant-a pre-empted for 2 h in the middle of its 14 h step: its recorded times span
    16 h, of which 14 h of work, as its step's observed hours say (they never count the
    interruption). The same span without the journaled interruption is refused."""
    times(campaign, "variant-a", "2026-11-21T04:00:00Z", "2026-11-21T20:00:00Z")
    campaign.files[JOURNAL_FILE] = (json.dumps(interrupted(
        "2026-11-21T09:00:00+00:00", "2026-11-21T11:00:00+00:00")) + "\n").encode()
    assert problems(campaign, PVA) == []
    campaign.files[JOURNAL_FILE] = (json.dumps(interrupted(
        "2026-11-21T09:00:00+00:00", "2026-11-21T09:30:00+00:00")) + "\n").encode()
    found = only(problems(campaign, PVA), "plan-vs-actual.run-span").finding
    assert found.message == (
        "run variant-a's recorded times span 15.5 h (started_at 2026-11-21T04:00:00+00:00 to "
        "ended_at 2026-11-21T20:00:00+00:00, not counting 0.5 h of interruption), but the steps "
        "that name it were observed to take 14 h ('train-variant-a' 14 h)")


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
    assert problems(campaign, PVA) == []


def test_a_journal_that_times_no_save_is_not_judged(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", None),
            save("variant-a", "runs/variant-a/weights.pt", None))
    assert problems(campaign, PVA) == []


def test_a_journal_that_times_some_saves_cannot_prove_the_others(
    campaign: CampaignBuilder
) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-20T11:00:00Z"),
            save("variant-a", "runs/variant-a/weights.pt", None))
    found = only(problems(campaign, PVA), "plan-vs-actual.save-times-unproven").finding
    assert found.message == (
        "cannot prove that run variant-a saved a checkpoint at least every 2 h "
        "(checkpoint_policy.tolerable_loss_hours): itera-journal.jsonl line 2 records "
        "checkpoint runs/variant-a/weights.pt without the moment it was saved")


def test_a_save_after_the_closure_is_refused(campaign: CampaignBuilder) -> None:
    journal(campaign, save("variant-a", "runs/variant-a/weights.pt", "2026-11-22T09:00:00Z"))
    found = only(problems(campaign, PVA), "plan-vs-actual.closed-before").finding
    assert "before checkpoint runs/variant-a/weights.pt of run variant-a was saved " \
        f"({JOURNAL_FILE}:1)" in found.message


# ============================================================ resume at full resolution


def long_resume(campaign: CampaignBuilder, resumed_steps: range) -> None:
    """The control logs its loss at every step 1..40; the resume check (resumed at step 2)
    logs the control's values at ``resumed_steps``."""
    losses = {s: round(1.0 / s, 6) for s in range(1, 41)}
    metrics = [r for r in campaign.measurements["control"] if "metrics" in r]
    campaign.measurements["control"] = [*({"step": s, "loss": v} for s, v in losses.items()),
                                        *metrics]
    campaign.measurements["resume-check"] = [{"step": s, "loss": losses[s]}
                                             for s in resumed_steps]


def test_a_resume_logged_every_tenth_step_is_refused(campaign: CampaignBuilder) -> None:
    long_resume(campaign, range(10, 41, 10))
    found = only(problems(campaign, "role-evidence"), "role-evidence.resume-resolution")
    assert found.target == "resume-check"
    assert found.finding.message == (
        "resume check resume-check does not log 'loss' at the resolution of control: control "
        "logged it at 38 steps after the resume step 2 (up to step 40, the resume check's "
        "last), the resume check at 4 of them; 34 missing: 3, 4, 5, 6, 7, …")
    assert found.finding.where == measurements_path("resume-check")
    assert found.finding.expected == "a 'loss' point at every step control logged from 3 to 40"


def test_a_resume_logged_at_every_step_passes(campaign: CampaignBuilder) -> None:
    long_resume(campaign, range(3, 41))
    assert problems(campaign, "role-evidence") == []


def test_a_resume_shorter_than_its_reference_needs_only_its_own_steps(
    campaign: CampaignBuilder
) -> None:
    long_resume(campaign, range(3, 21))  # stops at step 20: steps 21..40 are not required
    assert problems(campaign, "role-evidence") == []


# ======================================================= stopped runs deliver nothing


def test_a_stopped_run_with_predictions_and_a_corpus_is_refused(
    campaign: CampaignBuilder
) -> None:
    stop(campaign)
    campaign.run_record("variant-a").update(predictions="runs/variant-a/predictions.jsonl",
                                            corpus="tiny-corpus")
    found = problems(campaign, "stop-records")
    assert [p.finding.code for p in found] == ["stop-records.delivers"] * 2
    assert [p.finding.render().splitlines()[0] for p in found] == [
        "manifest.json $.runs[3].predictions: stopped run variant-a records predictions "
        "(runs/variant-a/predictions.jsonl)",
        "manifest.json $.runs[3].corpus: stopped run variant-a records the corpus its "
        "predictions cover ('tiny-corpus')"]
    assert found[0].finding.hint is not None
    assert found[0].finding.hint.startswith("a stopped run delivers nothing")


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
    found = problems(campaign, "stop-records")
    assert [p.finding.render().splitlines()[0] for p in found] == [
        "manifest.json $.adapters[0]: stopped run variant-a ships adapter runs/variant-a/adapter",
        "manifest.json $.checkpoints[2]: stopped run variant-a ships 2 checkpoints "
        "(runs/variant-a/weights.pt, runs/variant-a/last.pt): only one, the evidence of where "
        "it stopped, may stay"]
    assert found[1].finding.hint is not None
    assert "(runs/variant-a/weights.pt)" in \
        found[1].finding.hint


def test_a_stopped_run_keeping_its_evidence_checkpoint_passes(
    campaign: CampaignBuilder
) -> None:
    stop(campaign)  # variant-a keeps runs/variant-a/weights.pt, where it stopped
    assert problems(campaign, "stop-records") == []


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
