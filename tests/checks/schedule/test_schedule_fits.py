"""The rules of ``schedule-fits`` (pytest_itera/checks/schedule/schedule_fits.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

Schedule and plan-vs-actual on the evidence (issue 12): each rule broken alone, with every
stated total kept consistent, and its honest twin.

The factory's /2 campaign: 4 h of human preparation, then 44 h on gpu0 of the 1-GPU lot
rtx4090-3d (training steps name their run; retrieval comes after the outputs and the
checkpoint steps), ending at 48 h in a 72 h window.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from pytest_itera import strategies as its
from pytest_itera.checks import Context, Options
from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.checks.schedule import CHECKS
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.schedule import makespan
from tests.checks.campaigns import (
    LOT_B,
    PVA,
    _steps,
    grow_to_78_hours_on_the_lot,
    restate,
    second_lot,
    step,
    steps_of,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder, expect
from tests.plans import seed_plan, write
from tests.runner import Itera

FITS = "schedule-fits"
LOT_A = "rtx4090-3d"


# ====================================================================== capacity


def variant_beside_the_control(campaign: CampaignBuilder, resource: str, lot: str) -> None:
    """variant-a trains on another GPU at the same time as the control."""
    step(campaign, "train-variant-a").update(resource=resource, lot=lot, after=["load-data"])
    restate(campaign)


def test_a_1_gpu_lot_with_steps_on_two_gpus_at_once_is_refused(
    campaign: CampaignBuilder
) -> None:
    variant_beside_the_control(campaign, "gpu1", LOT_A)
    capacity = expect_finding(judge(campaign, FITS), "schedule-fits.lot-capacity",
                              where="plan.json $.schedule.steps[4].resource",
                              says="lot 'rtx4090-3d' provides 1 GPU (1 per lot x 1), but its steps")
    assert (capacity.expected, capacity.found) == (
        f"at most 1 distinct GPU resources on lot '{LOT_A}'", "2: gpu0, gpu1")


@pytest.mark.parametrize("composition", [{"quantity": 2}, {"gpus_per_lot": 2}])
def test_a_lot_with_two_gpus_may_use_two_at_once(
    campaign: CampaignBuilder, composition: dict[str, int]
) -> None:
    campaign.plan["budget"]["lots"][0].update(composition)
    variant_beside_the_control(campaign, "gpu1", LOT_A)
    expect_no_finding(judge(campaign, FITS))


def test_two_lots_can_host_independent_variants(
    campaign: CampaignBuilder
) -> None:
    second_lot(campaign)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    assert campaign.plan["schedule"]["sequential_hours"] == 34  # the variants overlap
    expect_no_finding(judge(campaign, FITS))


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
    expect_no_finding(judge(campaign, FITS))
    itera(check=PVA).assert_outcomes(passed=1)


def test_a_machine_step_on_a_lot_the_manifest_did_not_engage(
    campaign: CampaignBuilder
) -> None:
    second_lot(campaign, engaged=False)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    expect_finding(judge(campaign, FITS), "schedule-fits.lot-not-engaged",
                   where="manifest.json $.budget.lots",
                   says="step 'train-variant-a' ran 14 h on 'gpu1' of lot 'rtx4090-3d-b', which")


def test_a_planned_lot_left_unrented_for_a_dropped_variant_is_fine(
    campaign: CampaignBuilder
) -> None:
    second_lot(campaign, engaged=False)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    restate(campaign, observed={"train-variant-a": 0})
    expect_no_finding(judge(campaign, FITS))


def test_a_gpu_step_naming_no_lot_when_the_plan_rents_several(
    campaign: CampaignBuilder
) -> None:
    second_lot(campaign)
    del step(campaign, "train-variant-a")["lot"]
    expect_finding(judge(campaign, FITS), "schedule-fits.lotless-step",
                   where="plan.json $.schedule.steps[4].lot",
                   says="step 'train-variant-a' runs on GPU resource 'gpu0' but names no lot, and")


def test_a_gpu_step_naming_no_lot_runs_on_the_only_lot(
    campaign: CampaignBuilder
) -> None:
    del step(campaign, "train-variant-a")["lot"]
    expect_no_finding(judge(campaign, FITS))


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
    campaign: CampaignBuilder
) -> None:
    split_the_control(campaign, ["load-data"])
    overlap = expect_finding(judge(campaign, FITS), "schedule-fits.run-overlap",
                             where="plan.json $.schedule.steps[4].after",
                             says=["run 'control' is on two resources at once",
                                   "overlap from 8 h to 15 h"])
    assert overlap.found == "7 h of overlap"
    assert "add 'train-control' to the 'after' of 'train-control-2' (chained, the schedule " \
        "takes 41 h)" in (overlap.hint or "")


def test_one_run_chained_across_two_lots_passes(
    campaign: CampaignBuilder
) -> None:
    split_the_control(campaign, ["train-control"])
    expect_no_finding(judge(campaign, FITS))


def test_a_cpu_evaluation_beside_its_runs_gpu_training_is_fine(
    campaign: CampaignBuilder
) -> None:
    steps_of(campaign).insert(4, {
        "id": "eval-control-cpu", "kind": "evaluation", "resource": "cpu", "hours": 6,
        "after": ["load-data"], "lot": LOT_A, "run": "control",
    })
    restate(campaign)
    timeline = makespan(_steps(campaign))
    assert timeline.slot("eval-control-cpu").overlaps(timeline.slot("train-control"))
    expect_no_finding(judge(campaign, FITS))


def test_a_training_step_without_its_run(
    campaign: CampaignBuilder
) -> None:
    del step(campaign, "train-variant-a")["run"]
    expect_finding(judge(campaign, FITS), "schedule-fits.training-without-run",
                   where="plan.json $.schedule.steps[4].run",
                   says="training step 'train-variant-a' names no run")


def test_a_step_serving_a_run_the_plan_lacks(
    campaign: CampaignBuilder
) -> None:
    step(campaign, "train-variant-a")["run"] = "variant-b"
    expect_finding(judge(campaign, FITS), "schedule-fits.unknown-run",
                   where="plan.json $.schedule.steps[4].run",
                   says="step 'train-variant-a' serves run 'variant-b', which the plan does not")


def v1_campaign(pytester: pytest.Pytester) -> CampaignBuilder:
    return CampaignBuilder(pytester.path / "out", version=1)


def test_a_v1_plan_cannot_prove_one_run_per_resource(
    pytester: pytest.Pytester
) -> None:
    campaign = v1_campaign(pytester)
    step(campaign, "validate")["after"] = ["train-variant-a", "restore-ckpt"]
    expect_finding(judge(campaign, FITS), "schedule-fits.v1-runs-unproven",
                   where="plan.json $.schedule.steps[3].run",
                   says="itera-plan/1 cannot prove that one run is never on two resources at once:")


def test_a_v1_plan_whose_training_steps_name_their_run_passes(
    pytester: pytest.Pytester,
) -> None:
    campaign = v1_campaign(pytester)
    step(campaign, "validate")["after"] = ["train-variant-a", "restore-ckpt"]
    step(campaign, "train-control")["run"] = "control"
    step(campaign, "train-variant-a")["run"] = "variant-a"
    expect_no_finding(judge(campaign, FITS))


# ========================================================================= order


def test_retrieval_after_the_checkpoints_only_by_time_is_refused(
    campaign: CampaignBuilder
) -> None:
    # Listed after them on gpu0, retrieval still ends last; no dependency says it must.
    step(campaign, "validate")["after"] = ["train-variant-a"]
    expect_finding(judge(campaign, FITS), "schedule-fits.retrieval-order",
                   where="plan.json $.schedule.steps[10].after",
                   says="retrieval step 'retrieve' does not come after 'save-ckpt', 'restore-ckpt'")


def test_retrieval_not_after_the_outputs_is_refused(
    campaign: CampaignBuilder
) -> None:
    step(campaign, "retrieve")["after"] = ["validate"]
    expect_finding(judge(campaign, FITS), "schedule-fits.retrieval-order",
                   where="plan.json $.schedule.steps[10].after",
                   says="retrieval step 'retrieve' does not come after 'write-outputs' (through")


def test_an_early_retrieval_of_a_checkpoint_is_fine(
    campaign: CampaignBuilder
) -> None:
    steps_of(campaign).insert(7, {"id": "copy-ckpt", "kind": "retrieval", "resource": "network",
                                  "hours": 1, "after": ["save-ckpt"]})
    restate(campaign)
    expect_no_finding(judge(campaign, FITS))


def test_an_output_written_by_a_human_after_retrieval_is_fine(
    campaign: CampaignBuilder
) -> None:
    steps_of(campaign).append({"id": "write-notebook", "kind": "output", "resource": "human",
                               "hours": 2, "after": ["retrieve"]})
    campaign.plan["schedule"]["window_hours"] = 72
    restate(campaign)
    expect_no_finding(judge(campaign, FITS))


def test_a_restore_not_after_a_save_is_refused(
    campaign: CampaignBuilder
) -> None:
    step(campaign, "restore-ckpt")["after"] = ["train-control"]
    restore = expect_finding(judge(campaign, FITS), "schedule-fits.restore-order",
                             where="plan.json $.schedule.steps[7].after",
                             says="checkpoint restore step 'restore-ckpt' does not come after")
    assert restore.expected == "after one of 'save-ckpt'"


@pytest.mark.parametrize("kind_step", ["save-ckpt", "restore-ckpt", "write-outputs"])
def test_a_required_step_planned_at_0_h_is_no_plan(
    campaign: CampaignBuilder, kind_step: str
) -> None:
    step(campaign, kind_step)["hours"] = 0
    restate(campaign)
    kind = step(campaign, kind_step)["kind"]
    index = next(i for i, s in enumerate(steps_of(campaign)) if s["id"] == kind_step)
    expect_finding(judge(campaign, FITS), "schedule-fits.zero-hours-kind",
                   where=f"plan.json $.schedule.steps[{index}].hours",
                   says=f"the schedule plans 0 h for {kind} (step '{kind_step}')")


def test_a_short_but_positive_checkpoint_save_passes(
    campaign: CampaignBuilder
) -> None:
    step(campaign, "save-ckpt")["hours"] = 0.25
    restate(campaign)
    expect_no_finding(judge(campaign, FITS))


def test_a_plan_tolerance_above_half_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"]["deviation_tolerance"] = 0.6
    campaign.write()
    result = itera("out/manifest.json::manifest")
    result.assert_outcomes(failed=1)
    expect(result, "*$.schedule.deviation_tolerance*0.6 is greater than the maximum of 0.5*")


# ---------------------------------------- first written in test_plan_gate.py


def test_campaign_checks_never_see_the_plan_gates(itera: Itera, pytester: pytest.Pytester) -> None:
    from pytest_itera.checks.plan import CHECKS

    assert {c.scope for c in CHECKS} == {"plan"}
    write(pytester.path / "out", seed_plan())
    result = itera("--collect-only", "-q")
    out = result.stdout.str()
    assert "schedule-fits" in out
    assert not any(c.id in out for c in CHECKS)


# ---------------------------------------- first written in test_schedule_checks.py


def test_48_sequential_hours_in_a_72_hour_window_leave_24(
    campaign: CampaignBuilder
) -> None:
    assert campaign.plan["schedule"]["sequential_hours"] == 48
    assert campaign.plan["schedule"]["uncommitted_hours"] == 24
    expect_no_finding(judge(campaign, FITS))


def test_78_hours_overflow_the_3_day_lot_by_6_and_point_at_the_7_day_lot(
    campaign: CampaignBuilder
) -> None:
    grow_to_78_hours_on_the_lot(campaign)
    expect_finding(judge(campaign, FITS), "schedule-fits.lot-overflow",
                   where="plan.json $.schedule.steps (lot 'rtx4090-3d')",
                   says="lot 'rtx4090-3d': 78 h exceeds the 3-day lot (72 h) by 6 h: consider the")


def test_a_lot_overflow_says_which_hours_run_off_the_lot(
    campaign: CampaignBuilder
) -> None:
    """78 h over a 72 h window, 74 h on the lot: the 4 h of preparation run off the lot."""
    step(campaign, "train-variant-a")["hours"] = 44
    found = judge(campaign, FITS)
    expect_finding(found, "schedule-fits.window", where="plan.json $.schedule.window_hours",
                   says="the schedule takes 78 h, 6 h more than the 72 h window")
    overflow = expect_finding(found, "schedule-fits.lot-overflow",
                              where="plan.json $.schedule.steps (lot 'rtx4090-3d')",
                              says="74 h exceeds the 3-day lot (72 h) by 2 h")
    assert overflow.found == ("74 h; the lot runs from 4 h to 78 h of the 78 h schedule; off "
                              "the lot: prepare, 4 h before it")


def test_a_catalogue_from_the_hook_gives_the_advice(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeconftest(
        """
        from pytest_itera.core.money import parse_catalogue

        def pytest_itera_catalogue(config):
            return parse_catalogue('''{"format": "itera-catalogue/1", "provider": "Acme",
                "currency": "USD", "offers": [
                {"offer": "Acme 4090, 4 days", "gpu": "RTX 4090", "gpus_per_lot": 1,
                 "days": 4, "price": "60.00"}]}''')
        """
    )
    grow_to_78_hours_on_the_lot(campaign)
    itera.fails(campaign, FITS, "*78 h exceeds the 3-day lot (72 h) by 6 h: consider the "
                "4-day lot (60.00 USD) or a reduced protocol")


def test_a_hook_that_returns_no_catalogue_is_reported(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeconftest("def pytest_itera_catalogue(config):\n    return {'offers': []}\n")
    grow_to_78_hours_on_the_lot(campaign)
    itera.fails(campaign, FITS, "*78 h exceeds the 3-day lot (72 h) by 6 h: * (the "
                "pytest_itera_catalogue hook returned dict, not a "
                "pytest_itera.core.money.Catalogue, so "
                "no catalogue lot can be suggested)")


def test_the_plans_own_longer_lot_is_suggested(
    campaign: CampaignBuilder
) -> None:
    grow_to_78_hours_on_the_lot(campaign)
    campaign.plan["budget"]["lots"].append(
        {"id": "h100-5d", "offer": "Other H100, 5 days", "gpu": "H100", "gpus_per_lot": 1,
         "days": 5, "price": "300.00", "quantity": 1})
    campaign.plan["budget"]["lots"][0]["gpu"] = "H100"
    expect_finding(judge(campaign, FITS), "schedule-fits.lot-overflow",
                   where="plan.json $.schedule.steps (lot 'rtx4090-3d')",
                   says="lot 'rtx4090-3d': 78 h exceeds the 3-day lot (72 h) by 6 h: consider the")


def test_no_step_names_a_lot_the_machine_steps_must_fit_the_longest(
    campaign: CampaignBuilder
) -> None:
    grow_to_78_hours_on_the_lot(campaign)
    for planned in campaign.plan["schedule"]["steps"]:
        planned.pop("lot", None)
    expect_finding(judge(campaign, FITS), "schedule-fits.lot-overflow",
                   where="plan.json $.schedule.steps (lot 'rtx4090-3d')",
                   says="the machine steps (no step names a lot): 78 h exceeds the 3-day lot (72")


def test_the_makespan_overflows_the_window(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["schedule"].update(window_hours=40, uncommitted_hours=-8)
    campaign.plan["budget"]["lots"][0]["days"] = 7
    found = judge(campaign, FITS)
    window = expect_finding(found, "schedule-fits.window",
                            where="plan.json $.schedule.window_hours",
                            says="the schedule takes 48 h, 8 h more than the 40 h window")
    # The reduced protocol that fits (issue 16): the optional run to drop, named.
    assert "reduce the protocol: drop useful run 'variant-a' (14 h of planned steps): the " \
        "schedule then takes 34 h" in (window.hint or "")
    expect_finding(found, "schedule-fits.retrieval-after-window",
                   where="plan.json $.schedule.steps",
                   says="results are retrieved at 48 h, after the 40 h window closes")


def test_stated_sequential_and_uncommitted_hours_are_recomputed(
    campaign: CampaignBuilder
) -> None:
    # Two rows on gpu0 never run in parallel: 40 h would assume they did.
    campaign.plan["schedule"].update(sequential_hours=40, uncommitted_hours=32)
    found = judge(campaign, FITS)
    expect_finding(found, "schedule-fits.sequential-hours",
                   where="plan.json $.schedule.sequential_hours",
                   says="sequential_hours says 40 h, but the steps take 48 h")
    expect_finding(found, "schedule-fits.uncommitted-hours",
                   where="plan.json $.schedule.uncommitted_hours",
                   says="uncommitted_hours says 32 h, but the 72 h window minus the 48 h makespan "
                   "leaves 24 h")


def test_stated_hours_rounded_to_the_hundredth_pass(
    campaign: CampaignBuilder
) -> None:
    step(campaign, "prepare")["hours"] = 4.004
    campaign.plan["schedule"].update(sequential_hours=48.0, uncommitted_hours=23.999999999999996)
    expect_no_finding(judge(campaign, FITS))


def test_required_step_kinds_missing(campaign: CampaignBuilder) -> None:
    steps = campaign.plan["schedule"]["steps"]
    steps[:] = [s for s in steps if s["kind"] not in ("checkpoint_restore", "retrieval")]
    campaign.plan["schedule"].update(sequential_hours=45, uncommitted_hours=27)
    expect_finding(judge(campaign, FITS), "schedule-fits.missing-kind",
                   where="plan.json $.schedule.steps",
                   says="the schedule has no checkpoint_restore, retrieval step")


def test_checkpoint_interval_beyond_the_tolerable_loss(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["checkpoint_policy"].update(interval_hours=2, tolerable_loss_hours=2,
                                              save_hours=0.5)
    interval = expect_finding(judge(campaign, FITS), "schedule-fits.checkpoint-interval",
                              where="plan.json $.checkpoint_policy.interval_hours",
                              says="a crash can lose 2.5 h of work (interval 2 h + 0.5 h per")
    assert interval.expected == "at most 1.5 h"


@pytest.mark.parametrize(
    ("after", "message"),
    [
        (["load-data"], "dependency cycle: 'setup' waits for 'load-data' (after), 'load-data' "
         "waits for 'setup' (after); no order can run these steps"),
        (["prepare", "unpack"], "step 'setup' comes after 'unpack', which is not a step of the "
         "schedule"),
    ],
)
def test_a_schedule_that_cannot_be_computed(
    campaign: CampaignBuilder, after: list[str], message: str
) -> None:
    step(campaign, "setup")["after"] = after
    expect_finding(judge(campaign, FITS), "schedule-fits.not-computable",
                   where="plan.json $.schedule.steps", says=message)


def test_a_step_on_a_lot_the_budget_lacks(
    campaign: CampaignBuilder
) -> None:
    step(campaign, "retrieve")["lot"] = "rtx4090-7d"
    expect_finding(judge(campaign, FITS), "schedule-fits.unknown-lot",
                   where="plan.json $.schedule.steps[10].lot",
                   says="step 'retrieve' runs on lot 'rtx4090-7d', which the budget does not have")


# ======================================== generated plans: no false alarm

@settings(derandomize=True, max_examples=25, deadline=None, database=None)
@given(its.plans())
def test_every_self_consistent_generated_plan_fits(plan: dict[str, Any]) -> None:
    """Plans from pytest_itera.strategies fit by construction: schedule-fits must agree."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "plan.json").write_text(json.dumps(plan))
        ctx = Context(load_campaign(root), Options(), {c.id: c for c in CHECKS})
        assert ctx.campaign.plan is not None, ctx.campaign.errors
        assert [f.render() for f in engine_judge(ctx).findings("schedule-fits")] == []
