"""Schedule and plan-vs-actual on the evidence (issue 12): each rule broken alone, with every
stated total kept consistent, and its honest twin.

The factory's /2 campaign: 4 h of human preparation, then 44 h on gpu0 of the 1-GPU lot
rtx4090-3d (training steps name their run; retrieval comes after the outputs and the
checkpoint steps), ending at 48 h in a 72 h window.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from pytest_itera.core.campaign import Step
from pytest_itera.core.schedule import as_observed, makespan
from pytest_itera.report import PLAN_INTEGRITY_NOTE
from tests.factory import CampaignBuilder, expect, sha256
from tests.runner import Itera

FITS = "schedule-fits"
PVA = "plan-vs-actual"
FROZEN = "plan-frozen"
LOT_A = "rtx4090-3d"
LOT_B = "rtx4090-3d-b"


def steps_of(campaign: CampaignBuilder) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = campaign.plan["schedule"]["steps"]
    return steps


def step(campaign: CampaignBuilder, step_id: str) -> dict[str, Any]:
    return next(s for s in steps_of(campaign) if s["id"] == step_id)


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _steps(campaign: CampaignBuilder) -> list[Step]:
    return [
        Step(id=s["id"], kind=s["kind"], resource=s["resource"], hours=s["hours"],
             after=tuple(s.get("after", ())), lot=s.get("lot"), run=s.get("run"))
        for s in steps_of(campaign)
    ]


def restate(campaign: CampaignBuilder, observed: dict[str, float] | None = None) -> None:
    """Keep every total consistent: stated sequential/uncommitted hours, observed steps
    (as planned unless ``observed`` says otherwise) and the observed makespan."""
    planned = _steps(campaign)
    span = makespan(planned).makespan
    schedule = campaign.plan["schedule"]
    schedule["sequential_hours"] = _number(span)
    schedule["uncommitted_hours"] = _number(Decimal(schedule["window_hours"]) - span)
    hours = {s["id"]: s["hours"] for s in steps_of(campaign)} | (observed or {})
    campaign.manifest["schedule"]["steps"] = [
        {"id": sid, "observed_hours": h} for sid, h in hours.items()
    ]
    actual = makespan(as_observed(planned, {k: Decimal(str(v)) for k, v in hours.items()}))
    campaign.manifest["schedule"]["observed_hours"] = _number(actual.makespan)


def second_lot(campaign: CampaignBuilder, *, engaged: bool = True) -> None:
    """A second 1-GPU 3-day lot in the plan (and engaged in the manifest)."""
    lot = dict(campaign.plan["budget"]["lots"][0], id=LOT_B)
    campaign.plan["budget"]["lots"].append(lot)
    if engaged:
        campaign.manifest["budget"]["lots"].append(LOT_B)
        campaign.manifest["budget"]["rental_total"] = "94.28"


# ====================================================================== capacity


def variant_beside_the_control(campaign: CampaignBuilder, resource: str, lot: str) -> None:
    """variant-a trains on another GPU at the same time as the control."""
    step(campaign, "train-variant-a").update(resource=resource, lot=lot, after=["load-data"])
    restate(campaign)


def test_a_1_gpu_lot_with_steps_on_two_gpus_at_once_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    variant_beside_the_control(campaign, "gpu1", LOT_A)
    itera.fails(
        campaign, FITS,
        f"plan.json $.schedule.steps[4].resource: lot '{LOT_A}' provides 1 GPU (1 per lot x 1), "
        "but its steps use 2 GPU resources: 'gpu0', 'gpu1'; 2 of them at once in the computed "
        "schedule",
        f"    expected: at most 1 distinct GPU resources on lot '{LOT_A}'",
        "    found:    2: gpu0, gpu1",
        "    fix:      run the lot's steps on the GPUs it has*engage a lot with more GPUs*",
    )


@pytest.mark.parametrize("composition", [{"quantity": 2}, {"gpus_per_lot": 2}])
def test_a_lot_with_two_gpus_may_use_two_at_once(
    itera: Itera, campaign: CampaignBuilder, composition: dict[str, int]
) -> None:
    campaign.plan["budget"]["lots"][0].update(composition)
    variant_beside_the_control(campaign, "gpu1", LOT_A)
    itera.passes(campaign, FITS)


def test_two_lots_can_host_independent_variants(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    second_lot(campaign)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    assert campaign.plan["schedule"]["sequential_hours"] == 34  # the variants overlap
    itera.passes(campaign, FITS)


def test_human_and_cpu_steps_overlapping_the_gpu_are_fine(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    steps_of(campaign)[4:4] = [
        {"id": "draft-analysis", "kind": "evaluation", "resource": "human", "hours": 10,
         "after": ["train-control"]},
        {"id": "tokenize", "kind": "data_load", "resource": "cpu", "hours": 6,
         "after": ["setup"], "lot": LOT_A},
    ]
    restate(campaign)
    itera.passes(campaign, FITS)
    itera(check=PVA).assert_outcomes(passed=1)


def test_a_machine_step_on_a_lot_the_manifest_did_not_engage(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    second_lot(campaign, engaged=False)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    itera.fails(
        campaign, FITS,
        f"manifest.json $.budget.lots: step 'train-variant-a' ran 14 h on 'gpu1' of lot "
        f"'{LOT_B}', which the manifest does not engage",
        f"    expected: '{LOT_B}' among the engaged lots",
        f"    found:    '{LOT_A}'",
    )


def test_a_planned_lot_left_unrented_for_a_dropped_variant_is_fine(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    second_lot(campaign, engaged=False)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    restate(campaign, observed={"train-variant-a": 0})
    itera.passes(campaign, FITS)


def test_a_gpu_step_naming_no_lot_when_the_plan_rents_several(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    second_lot(campaign)
    del step(campaign, "train-variant-a")["lot"]
    itera.fails(
        campaign, FITS,
        "plan.json $.schedule.steps[4].lot: step 'train-variant-a' runs on GPU resource 'gpu0' "
        "but names no lot, and the plan rents 2 lots",
        f"    expected: one of '{LOT_A}', '{LOT_B}'",
    )


def test_a_gpu_step_naming_no_lot_runs_on_the_only_lot(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    del step(campaign, "train-variant-a")["lot"]
    itera.passes(campaign, FITS)


# ============================================================= one run, one resource


def split_the_control(campaign: CampaignBuilder, after: list[str]) -> None:
    """The control's training in two halves, the second on the other lot's GPU."""
    second_lot(campaign)
    step(campaign, "train-control")["hours"] = 7
    steps_of(campaign).insert(4, {
        "id": "train-control-2", "kind": "training", "resource": "gpu1", "hours": 7,
        "after": after, "lot": LOT_B, "run": "control",
    })
    restate(campaign)


def test_one_run_on_two_lots_at_once_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    split_the_control(campaign, ["load-data"])
    itera.fails(
        campaign, FITS,
        "plan.json $.schedule.steps[4].after: run 'control' is on two resources at once: step "
        f"'train-control' (gpu0, lot {LOT_A}) and step 'train-control-2' (gpu1, lot {LOT_B}) "
        "overlap from 8 h to 15 h in the computed schedule",
        "    expected: the steps of run 'control' one after another",
        "    found:    7 h of overlap",
        "    fix:      add 'train-control' to the 'after' of 'train-control-2' (chained, the "
        "schedule takes 41 h): two lots can host independent variants but never shorten one run",
    )


def test_one_run_chained_across_two_lots_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    split_the_control(campaign, ["train-control"])
    itera.passes(campaign, FITS)


def test_a_cpu_evaluation_beside_its_runs_gpu_training_is_fine(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    steps_of(campaign).insert(4, {
        "id": "eval-control-cpu", "kind": "evaluation", "resource": "cpu", "hours": 6,
        "after": ["load-data"], "lot": LOT_A, "run": "control",
    })
    restate(campaign)
    timeline = makespan(_steps(campaign))
    assert timeline.slot("eval-control-cpu").overlaps(timeline.slot("train-control"))
    itera.passes(campaign, FITS)


def test_a_training_step_without_its_run(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    del step(campaign, "train-variant-a")["run"]
    itera.fails(
        campaign, FITS,
        "plan.json $.schedule.steps[4].run: training step 'train-variant-a' names no run",
        "    expected: the planned run it trains: one of 'control', 'data-check', "
        "'resume-check', 'variant-a'",
    )


def test_a_step_serving_a_run_the_plan_lacks(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    step(campaign, "train-variant-a")["run"] = "variant-b"
    itera.fails(campaign, FITS, "plan.json $.schedule.steps[4].run: step 'train-variant-a' "
                "serves run 'variant-b', which the plan does not have")


def v1_campaign(pytester: pytest.Pytester) -> CampaignBuilder:
    return CampaignBuilder(pytester.path / "out", version=1)


def test_a_v1_plan_cannot_prove_one_run_per_resource(
    itera: Itera, pytester: pytest.Pytester
) -> None:
    campaign = v1_campaign(pytester)
    step(campaign, "validate")["after"] = ["train-variant-a", "restore-ckpt"]
    itera.fails(
        campaign, FITS,
        "plan.json $.schedule.steps[3].run: itera-plan/1 cannot prove that one run is never on "
        "two resources at once: training steps 'train-control', 'train-variant-a' name no run",
        "    fix:      re-close the campaign with itera-plan/2 and itera-manifest/2*",
    )


def test_a_v1_plan_whose_training_steps_name_their_run_passes(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    campaign = v1_campaign(pytester)
    step(campaign, "validate")["after"] = ["train-variant-a", "restore-ckpt"]
    step(campaign, "train-control")["run"] = "control"
    step(campaign, "train-variant-a")["run"] = "variant-a"
    itera.passes(campaign, FITS)


# ========================================================================= order


def test_retrieval_after_the_checkpoints_only_by_time_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    # Listed after them on gpu0, retrieval still ends last; no dependency says it must.
    step(campaign, "validate")["after"] = ["train-variant-a"]
    itera.fails(
        campaign, FITS,
        "plan.json $.schedule.steps[10].after: retrieval step 'retrieve' does not come after "
        "'save-ckpt', 'restore-ckpt' (through its 'after' dependencies)",
        "    expected: a retrieval that comes after every output, checkpoint_save and "
        "checkpoint_restore step",
        "    found:    after ['write-outputs']",
    )


def test_retrieval_not_after_the_outputs_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    step(campaign, "retrieve")["after"] = ["validate"]
    itera.fails(campaign, FITS, "plan.json $.schedule.steps[10].after: retrieval step "
                "'retrieve' does not come after 'write-outputs' (through its 'after' dependencies)")


def test_an_early_retrieval_of_a_checkpoint_is_fine(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    steps_of(campaign).insert(7, {"id": "copy-ckpt", "kind": "retrieval", "resource": "network",
                                  "hours": 1, "after": ["save-ckpt"]})
    restate(campaign)
    itera.passes(campaign, FITS)


def test_an_output_written_by_a_human_after_retrieval_is_fine(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    steps_of(campaign).append({"id": "write-notebook", "kind": "output", "resource": "human",
                               "hours": 2, "after": ["retrieve"]})
    campaign.plan["schedule"]["window_hours"] = 72
    restate(campaign)
    itera.passes(campaign, FITS)


def test_a_restore_not_after_a_save_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    step(campaign, "restore-ckpt")["after"] = ["train-control"]
    itera.fails(
        campaign, FITS,
        "plan.json $.schedule.steps[7].after: checkpoint restore step 'restore-ckpt' does not "
        "come after a checkpoint save",
        "    expected: after one of 'save-ckpt'",
    )


@pytest.mark.parametrize("kind_step", ["save-ckpt", "restore-ckpt", "write-outputs"])
def test_a_required_step_planned_at_0_h_is_no_plan(
    itera: Itera, campaign: CampaignBuilder, kind_step: str
) -> None:
    step(campaign, kind_step)["hours"] = 0
    restate(campaign)
    kind = step(campaign, kind_step)["kind"]
    index = next(i for i, s in enumerate(steps_of(campaign)) if s["id"] == kind_step)
    itera.fails(
        campaign, FITS,
        f"plan.json $.schedule.steps[{index}].hours: the schedule plans 0 h for {kind} "
        f"(step '{kind_step}')",
        "    expected: more than 0 h",
    )


def test_a_short_but_positive_checkpoint_save_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    step(campaign, "save-ckpt")["hours"] = 0.25
    restate(campaign)
    itera.passes(campaign, FITS)


# ========================================================================== time


def test_a_plan_frozen_after_a_run_ended_is_refused_without_started_at(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    for record in campaign.manifest["runs"]:
        del record["started_at"]
    campaign.run_record("control")["ended_at"] = "2026-11-21T10:00:00Z"
    campaign.plan["frozen_at"] = "2026-11-21T12:00:00Z"
    itera.fails(
        campaign, FROZEN,
        "manifest.json $.runs[0].ended_at: run control ended before the plan (and its stop "
        "rules) was frozen",
        "    expected: at or after 2026-11-21T12:00:00+00:00",
        "    found:    2026-11-21T10:00:00+00:00",
    )


def test_a_plan_frozen_after_a_run_was_stopped_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    record = campaign.run_record("variant-a")
    record.pop("started_at")
    record.pop("ended_at")
    record.update(outcome="stopped", stop={"rule": "non-finite-loss", "reason": "NaN at step 3",
                                           "at": "2026-11-20T07:00:00Z"})
    itera.fails(campaign, FROZEN, "manifest.json $.runs[3].stop.at: run variant-a was "
                "stopped before the plan (and its stop rules) was frozen")


def test_a_decision_dated_before_the_plan_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "go", "text": "continue with every run", "at": "2026-11-19T18:00:00Z"}]
    itera.fails(campaign, FROZEN, "manifest.json $.schedule.decisions[0].at: decision 'go' "
                "was taken before the plan (and its stop rules) was frozen")


def test_moments_at_the_freeze_itself_pass(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.run_record("control")["started_at"] = "2026-11-20T08:00:00Z"
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "go", "text": "continue with every run", "at": "2026-11-20T08:00:00Z"}]
    itera.passes(campaign, FROZEN)


def add_pilot(campaign: CampaignBuilder, decided_at: str, **record: Any) -> None:
    campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "must",
                                  "config_sha256": "0" * 64})
    campaign.manifest["runs"].append(
        {"id": "pilot", "outcome": "accepted", "started_at": "2026-11-20T08:30:00Z",
         "ended_at": "2026-11-20T09:30:00Z", **record})
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "the pilot learns: every variant continues",
         "at": decided_at}]


def test_a_decision_before_the_pilot_ended_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    add_pilot(campaign, "2026-11-20T09:00:00Z")
    itera.fails(
        campaign, PVA,
        "manifest.json $.schedule.decisions[0].at: decision 'after-pilot' is dated "
        "2026-11-20T09:00:00+00:00, before the pilot run 'pilot' ended (2026-11-20T09:30:00+00:00, "
        "manifest.json $.runs[4].ended_at)",
        "    expected: at or after 2026-11-20T09:30:00+00:00",
    )


def test_a_decision_before_a_stopped_pilot_stopped_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    add_pilot(campaign, "2026-11-20T09:00:00Z", outcome="stopped", ended_at=None,
              stop={"rule": "non-finite-loss", "reason": "NaN", "at": "2026-11-20T09:10:00Z"})
    campaign.manifest["runs"][4].pop("ended_at")
    itera.fails(campaign, PVA, "*decision 'after-pilot' is dated 2026-11-20T09:00:00+00:00, "
                "before the pilot run 'pilot' ended (2026-11-20T09:10:00+00:00, manifest.json "
                "$.runs[4].stop.at)")


def test_a_decision_at_the_pilots_end_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    add_pilot(campaign, "2026-11-20T09:30:00Z")
    itera.passes(campaign, PVA)


# ================================================================ plan vs actual


def test_a_step_that_did_not_run_needs_an_explanation(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    restate(campaign, observed={"check-data": 0})
    itera.fails(
        campaign, PVA,
        "manifest.json $.schedule.deviations: step 'check-data' did not run (0 h observed "
        "against 2 h planned) and no explanation",
        "    expected: an explanation in schedule.deviations, whatever the tolerance",
    )


def test_a_step_that_did_not_run_with_its_explanation_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    restate(campaign, observed={"check-data": 0})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "check-data", "explanation": "the corpus hash matched the plan's: not re-run"}]
    record = campaign.run_record("data-check")  # a run whose step did not run takes no time
    record["ended_at"] = record["started_at"]
    itera.passes(campaign, PVA)


def test_less_than_half_needs_an_explanation_even_at_the_largest_tolerance(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.5
    restate(campaign, observed={"train-control": 6.5})
    itera.fails(campaign, PVA, "manifest.json $.schedule.deviations: step 'train-control' "
                "ran 6.5 h of 14 h planned, less than half and no explanation")


def test_half_of_the_planned_hours_is_within_the_largest_tolerance(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.5
    restate(campaign, observed={"train-control": 7})
    campaign.run_record("control")["ended_at"] = "2026-11-20T18:00:00Z"  # 7 h + 1 h save
    itera.passes(campaign, PVA)


def test_a_plan_tolerance_above_half_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.6
    campaign.write()
    result = itera("out/manifest.json::manifest")
    result.assert_outcomes(failed=1)
    expect(result, "*$.schedule.deviation_tolerance*0.6 is greater than the maximum of 0.5*")


def test_an_ini_tolerance_above_half_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_deviation_tolerance = 0.75\n")
    campaign.write()
    result = itera(check=PVA)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*itera_deviation_tolerance: 0.75: at most 0.5*"])


@pytest.mark.parametrize("blank", ["   ", "\u00a0\u3000", "\u200b\t\n", ".", " - "])
def test_a_blank_explanation_explains_nothing(
    itera: Itera, campaign: CampaignBuilder, blank: str
) -> None:
    restate(campaign, observed={"train-control": 16})
    campaign.manifest["schedule"]["deviations"] = [{"step": "train-control", "explanation": blank}]
    result = itera.fails(campaign, PVA)
    expect(
        result,
        "manifest.json $.schedule.deviations[0].explanation: the explanation of step "
        "'train-control' is blank",
        "manifest.json $.schedule.deviations: step 'train-control' took 16 h against 14 h "
        "planned (+14 %), above the 10 % tolerance, without an explanation",
    )


def drop_the_variant(campaign: CampaignBuilder, text: str) -> None:
    record = campaign.run_record("variant-a")
    for key in ("started_at", "ended_at", "predictions", "metrics", "corpus", "measurements"):
        record.pop(key, None)
    record.update(outcome="dropped", decision="after-control")
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-control", "text": text, "at": "2026-11-21T10:00:00Z",
         "drops": ["variant-a"]}]
    restate(campaign, observed={"train-variant-a": 0})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-variant-a", "explanation": "variant-a was dropped: it did not run"}]


def test_a_blank_decision_text_is_missing(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    drop_the_variant(campaign, " \u2060 ")
    itera.fails(
        campaign, PVA,
        "manifest.json $.schedule.decisions[0].text: decision 'after-control' has a blank text",
        "    expected: what was decided and why",
    )


def test_a_dropped_run_with_a_written_decision_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    drop_the_variant(campaign, "the control already saturates the corpus: drop variant-a")
    itera.passes(campaign, PVA)


# ======================================================== the plan's seal, from outside


def plan_digest(campaign: CampaignBuilder) -> str:
    return sha256((campaign.root / "plan.json").read_bytes())


def summary(result: pytest.RunResult) -> str:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "= pytest-itera =" in line)
    return "\n".join(lines[start:])


@pytest.mark.parametrize("key", ["", "out = ", "tiny-2026-11=", "  out  =  "])
def test_an_ini_pin_of_the_frozen_plan_passes_and_removes_the_note(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, key: str
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {key}{plan_digest(campaign)}\n")
    result = itera(check=FROZEN)
    result.assert_outcomes(passed=1)
    assert "plan integrity rests" not in summary(result)


@pytest.mark.parametrize(("key", "origin"), [("", "every campaign"), ("out=", "out"),
                                             ("tiny-2026-11 = ", "tiny-2026-11")])
def test_an_ini_pin_of_another_plan_fails(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, key: str, origin: str
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {key}{'ab' * 32}\n")
    result = itera(check=FROZEN)
    result.assert_outcomes(failed=1)
    expect(
        result,
        f"plan.json: plan.json is not the plan pinned by itera_plan_sha256 ({origin})",
        f"    expected: {'ab' * 32}",
        f"    found:    {plan_digest(campaign)}",
    )


def test_ini_pins_for_other_campaigns_only_fail(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """A renamed campaign is not the pinned one: pins exist, none names it."""
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    elsewhere = {plan_digest(campaign)}\n")
    result = itera(check=FROZEN)
    result.assert_outcomes(failed=1)
    expect(result, "plan.json: itera_plan_sha256 pins no plan for this campaign (folder 'out', "
           "id 'tiny-2026-11')", "    found:    pins for 'elsewhere'")


def test_the_command_line_pin_wins_over_the_ini(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 = {'ab' * 32}\n")
    result = itera("--itera-plan-sha256", plan_digest(campaign), check=FROZEN)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("line", ["main", "out = main", "= " + "ab" * 32])
def test_a_malformed_ini_pin_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, line: str
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 = {line}\n")
    result = itera(check=FROZEN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*itera_plan_sha256: *"])


def test_without_a_pin_every_report_notes_where_integrity_rests(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--itera-report", "r.json", "--itera-report", "r.md",
                   "--itera-report", "r.html", check=FROZEN)
    result.assert_outcomes(passed=1)  # a note, not a failure
    assert f"  note: {PLAN_INTEGRITY_NOTE}" in summary(result).splitlines()
    written = json.loads((pytester.path / "r.json").read_text())
    assert PLAN_INTEGRITY_NOTE in written["notes"]
    assert f"Note: {PLAN_INTEGRITY_NOTE}" in (pytester.path / "r.md").read_text()
    assert "plan integrity rests on the manifest&#x27;s own record" in (
        pytester.path / "r.html").read_text()


def test_with_a_pin_no_report_carries_the_note(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--itera-plan-sha256", plan_digest(campaign),
                   "--itera-report", "r.json", "--itera-report", "r.md", check=FROZEN)
    result.assert_outcomes(passed=1)
    assert "plan integrity rests" not in summary(result)
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    assert not [note for note in notes if "plan integrity" in note], notes
    assert "plan integrity rests" not in (pytester.path / "r.md").read_text()
