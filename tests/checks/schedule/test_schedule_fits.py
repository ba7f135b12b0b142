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
from collections.abc import Callable
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


STEPS = "plan.json $.schedule.steps"
OVERFLOW = "plan.json $.schedule.steps (lot 'rtx4090-3d')"

# ================================================================ the arrangements


def variant_beside_the_control(campaign: CampaignBuilder, resource: str, lot: str) -> None:
    """variant-a trains on another GPU at the same time as the control."""
    step(campaign, "train-variant-a").update(resource=resource, lot=lot, after=["load-data"])
    restate(campaign)


def lot_of_two_gpus(campaign: CampaignBuilder, **composition: int) -> None:
    """The one lot holds two GPUs (``composition``); variant-a trains beside the control."""
    campaign.plan["budget"]["lots"][0].update(composition)
    variant_beside_the_control(campaign, "gpu1", LOT_A)


def variant_on_a_second_lot(campaign: CampaignBuilder, *, engaged: bool = True,
                            trained: bool = True) -> None:
    """variant-a trains on the GPU of a second lot (``engaged`` by the manifest, or not) beside
    the control; not ``trained``: dropped, its step observed at 0 h."""
    second_lot(campaign, engaged=engaged)
    variant_beside_the_control(campaign, "gpu1", LOT_B)
    assert campaign.plan["schedule"]["sequential_hours"] == 34  # the variants overlap
    if not trained:
        restate(campaign, observed={"train-variant-a": 0})


def variant_naming_no_lot(campaign: CampaignBuilder, *, lots: int) -> None:
    """train-variant-a names no lot, in a plan renting ``lots`` lots (1 or 2)."""
    if lots == 2:
        second_lot(campaign)
    del step(campaign, "train-variant-a")["lot"]


def split_the_control(campaign: CampaignBuilder, after: list[str]) -> None:
    """The control's training in two halves, the second on the other lot's GPU."""
    second_lot(campaign)
    step(campaign, "train-control")["hours"] = 7
    steps_of(campaign).insert(4, {
        "id": "train-control-2", "kind": "training", "resource": "gpu1", "hours": 7,
        "after": after, "lot": LOT_B, "run": "control",
    })
    restate(campaign)


def inserted(campaign: CampaignBuilder, at: int, **planned: Any) -> None:
    """A step ``planned`` inserted at ``at`` in the plan's steps, every total restated."""
    steps_of(campaign).insert(at, planned)
    restate(campaign)


def a_cpu_evaluation_beside_its_training(campaign: CampaignBuilder) -> None:
    inserted(campaign, 4, id="eval-control-cpu", kind="evaluation", resource="cpu", hours=6,
             after=["load-data"], lot=LOT_A, run="control")
    timeline = makespan(_steps(campaign))
    assert timeline.slot("eval-control-cpu").overlaps(timeline.slot("train-control"))


def planned(campaign: CampaignBuilder, step_id: str, hours: float) -> None:
    """``step_id`` planned at ``hours``, every total restated."""
    step(campaign, step_id)["hours"] = hours
    restate(campaign)


def a_longer_h100_lot(campaign: CampaignBuilder) -> None:
    """78 h on an H100 lot of 3 days; the plan holds a 5-day H100 lot too."""
    grow_to_78_hours_on_the_lot(campaign)
    campaign.plan["budget"]["lots"].append(
        {"id": "h100-5d", "offer": "Other H100, 5 days", "gpu": "H100", "gpus_per_lot": 1,
         "days": 5, "price": "300.00", "quantity": 1})
    campaign.plan["budget"]["lots"][0]["gpu"] = "H100"


def no_step_names_a_lot(campaign: CampaignBuilder) -> None:
    grow_to_78_hours_on_the_lot(campaign)
    for one in campaign.plan["schedule"]["steps"]:
        one.pop("lot", None)


def a_40_hour_window(campaign: CampaignBuilder) -> None:
    """48 h of steps in a 40 h window, on a 7-day lot."""
    campaign.plan["schedule"].update(window_hours=40, uncommitted_hours=-8)
    campaign.plan["budget"]["lots"][0]["days"] = 7


def without_restore_and_retrieval(campaign: CampaignBuilder) -> None:
    steps = campaign.plan["schedule"]["steps"]
    steps[:] = [s for s in steps if s["kind"] not in ("checkpoint_restore", "retrieval")]
    campaign.plan["schedule"].update(sequential_hours=45, uncommitted_hours=27)


def hours_stated_to_the_hundredth(campaign: CampaignBuilder) -> None:
    step(campaign, "prepare")["hours"] = 4.004
    campaign.plan["schedule"].update(sequential_hours=48.0, uncommitted_hours=23.999999999999996)


# ======================================================== each break refused, alone

# (the break, the code, where, a few words; the finding's expected and found as asserted, and a
# few words of its hint, None where not asserted)
@pytest.mark.parametrize(("break_", "code", "where", "says", "facts", "hint"), [
    # ------------------------------------------------------------------ capacity
    pytest.param(lambda c: variant_beside_the_control(c, "gpu1", LOT_A),
                 "schedule-fits.lot-capacity", "plan.json $.schedule.steps[4].resource",
                 "lot 'rtx4090-3d' provides 1 GPU (1 per lot x 1), but its steps",
                 {"expected": f"at most 1 distinct GPU resources on lot '{LOT_A}'",
                  "found": "2: gpu0, gpu1"}, None, id="a-1-gpu-lot-with-steps-on-two-gpus-at-once"),
    pytest.param(lambda c: variant_on_a_second_lot(c, engaged=False),
                 "schedule-fits.lot-not-engaged", "manifest.json $.budget.lots",
                 "step 'train-variant-a' ran 14 h on 'gpu1' of lot 'rtx4090-3d-b', which", {},
                 None, id="a-machine-step-on-a-lot-the-manifest-did-not-engage"),
    pytest.param(lambda c: variant_naming_no_lot(c, lots=2), "schedule-fits.lotless-step",
                 "plan.json $.schedule.steps[4].lot",
                 "step 'train-variant-a' runs on GPU resource 'gpu0' but names no lot, and", {},
                 None, id="a-gpu-step-naming-no-lot-when-the-plan-rents-several"),
    # ------------------------------------------------------------ one run, one resource
    pytest.param(lambda c: split_the_control(c, ["load-data"]), "schedule-fits.run-overlap",
                 "plan.json $.schedule.steps[4].after",
                 ("run 'control' is on two resources at once", "overlap from 8 h to 15 h"),
                 {"found": "7 h of overlap"}, "add 'train-control' to the 'after' of "
                 "'train-control-2' (chained, the schedule takes 41 h)",
                 id="one-run-on-two-lots-at-once"),
    pytest.param(lambda c: step(c, "train-variant-a").pop("run"),
                 "schedule-fits.training-without-run", "plan.json $.schedule.steps[4].run",
                 "training step 'train-variant-a' names no run", {}, None,
                 id="a-training-step-without-its-run"),
    pytest.param(lambda c: step(c, "train-variant-a").update(run="variant-b"),
                 "schedule-fits.unknown-run", "plan.json $.schedule.steps[4].run",
                 "step 'train-variant-a' serves run 'variant-b', which the plan does not", {},
                 None, id="a-step-serving-a-run-the-plan-lacks"),
    # --------------------------------------------------------------------- order
    # Listed after them on gpu0, retrieval still ends last; no dependency says it must.
    pytest.param(lambda c: step(c, "validate").update(after=["train-variant-a"]),
                 "schedule-fits.retrieval-order", "plan.json $.schedule.steps[10].after",
                 "retrieval step 'retrieve' does not come after 'save-ckpt', 'restore-ckpt'", {},
                 None, id="retrieval-after-the-checkpoints-only-by-time"),
    pytest.param(lambda c: step(c, "retrieve").update(after=["validate"]),
                 "schedule-fits.retrieval-order", "plan.json $.schedule.steps[10].after",
                 "retrieval step 'retrieve' does not come after 'write-outputs' (through", {},
                 None, id="retrieval-not-after-the-outputs"),
    pytest.param(lambda c: step(c, "restore-ckpt").update(after=["train-control"]),
                 "schedule-fits.restore-order", "plan.json $.schedule.steps[7].after",
                 "checkpoint restore step 'restore-ckpt' does not come after",
                 {"expected": "after one of 'save-ckpt'"}, None, id="a-restore-not-after-a-save"),
    # a required step planned at 0 h is no plan
    pytest.param(lambda c: planned(c, "save-ckpt", 0), "schedule-fits.zero-hours-kind",
                 "plan.json $.schedule.steps[6].hours",
                 "the schedule plans 0 h for checkpoint_save (step 'save-ckpt')", {}, None,
                 id="save-ckpt-at-0-h"),
    pytest.param(lambda c: planned(c, "restore-ckpt", 0), "schedule-fits.zero-hours-kind",
                 "plan.json $.schedule.steps[7].hours",
                 "the schedule plans 0 h for checkpoint_restore (step 'restore-ckpt')", {}, None,
                 id="restore-ckpt-at-0-h"),
    pytest.param(lambda c: planned(c, "write-outputs", 0), "schedule-fits.zero-hours-kind",
                 "plan.json $.schedule.steps[9].hours",
                 "the schedule plans 0 h for output (step 'write-outputs')", {}, None,
                 id="write-outputs-at-0-h"),
    # --------------------------------------------------------- the window and the lots
    pytest.param(grow_to_78_hours_on_the_lot, "schedule-fits.lot-overflow", OVERFLOW,
                 "lot 'rtx4090-3d': 78 h exceeds the 3-day lot (72 h) by 6 h: consider the", {},
                 None, id="78-hours-overflow-the-3-day-lot-by-6"),
    # 78 h over a 72 h window, 74 h on the lot: the 4 h of preparation run off the lot.
    pytest.param(lambda c: step(c, "train-variant-a").update(hours=44), "schedule-fits.window",
                 "plan.json $.schedule.window_hours",
                 "the schedule takes 78 h, 6 h more than the 72 h window", {}, None,
                 id="78-hours-over-the-72-hour-window"),
    pytest.param(lambda c: step(c, "train-variant-a").update(hours=44),
                 "schedule-fits.lot-overflow", OVERFLOW,
                 "74 h exceeds the 3-day lot (72 h) by 2 h", {
                     "found": "74 h; the lot runs from 4 h to 78 h of the 78 h schedule; off "
                              "the lot: prepare, 4 h before it"}, None,
                 id="a-lot-overflow-says-which-hours-run-off-the-lot"),
    pytest.param(a_longer_h100_lot, "schedule-fits.lot-overflow", OVERFLOW,
                 "lot 'rtx4090-3d': 78 h exceeds the 3-day lot (72 h) by 6 h: consider the", {},
                 None, id="the-plans-own-longer-lot-is-suggested"),
    pytest.param(no_step_names_a_lot, "schedule-fits.lot-overflow", OVERFLOW,
                 "the machine steps (no step names a lot): 78 h exceeds the 3-day lot (72", {},
                 None, id="no-step-names-a-lot-the-machine-steps-must-fit-the-longest"),
    # The reduced protocol that fits (issue 16): the optional run to drop, named.
    pytest.param(a_40_hour_window, "schedule-fits.window", "plan.json $.schedule.window_hours",
                 "the schedule takes 48 h, 8 h more than the 40 h window", {},
                 "reduce the protocol: drop useful run 'variant-a' (14 h of planned steps): the "
                 "schedule then takes 34 h", id="the-makespan-overflows-the-window"),
    pytest.param(a_40_hour_window, "schedule-fits.retrieval-after-window", STEPS,
                 "results are retrieved at 48 h, after the 40 h window closes", {}, None,
                 id="results-retrieved-after-the-window"),
    # Two rows on gpu0 never run in parallel: 40 h would assume they did.
    pytest.param(lambda c: c.plan["schedule"].update(sequential_hours=40, uncommitted_hours=32),
                 "schedule-fits.sequential-hours", "plan.json $.schedule.sequential_hours",
                 "sequential_hours says 40 h, but the steps take 48 h", {}, None,
                 id="stated-sequential-hours-are-recomputed"),
    pytest.param(lambda c: c.plan["schedule"].update(sequential_hours=40, uncommitted_hours=32),
                 "schedule-fits.uncommitted-hours", "plan.json $.schedule.uncommitted_hours",
                 "uncommitted_hours says 32 h, but the 72 h window minus the 48 h makespan "
                 "leaves 24 h", {}, None, id="stated-uncommitted-hours-are-recomputed"),
    pytest.param(without_restore_and_retrieval, "schedule-fits.missing-kind", STEPS,
                 "the schedule has no checkpoint_restore, retrieval step", {}, None,
                 id="required-step-kinds-missing"),
    pytest.param(lambda c: c.plan["checkpoint_policy"].update(
        interval_hours=2, tolerable_loss_hours=2, save_hours=0.5),
                 "schedule-fits.checkpoint-interval",
                 "plan.json $.checkpoint_policy.interval_hours",
                 "a crash can lose 2.5 h of work (interval 2 h + 0.5 h per",
                 {"expected": "at most 1.5 h"}, None,
                 id="checkpoint-interval-beyond-the-tolerable-loss"),
    pytest.param(lambda c: step(c, "setup").update(after=["load-data"]),
                 "schedule-fits.not-computable", STEPS,
                 "dependency cycle: 'setup' waits for 'load-data' (after), 'load-data' waits for "
                 "'setup' (after); no order can run these steps", {}, None,
                 id="a-dependency-cycle"),
    pytest.param(lambda c: step(c, "setup").update(after=["prepare", "unpack"]),
                 "schedule-fits.not-computable", STEPS,
                 "step 'setup' comes after 'unpack', which is not a step of the schedule", {},
                 None, id="after-a-step-that-is-not-planned"),
    pytest.param(lambda c: step(c, "retrieve").update(lot="rtx4090-7d"),
                 "schedule-fits.unknown-lot", "plan.json $.schedule.steps[10].lot",
                 "step 'retrieve' runs on lot 'rtx4090-7d', which the budget does not have", {},
                 None, id="a-step-on-a-lot-the-budget-lacks"),
])
def test_each_break_is_refused(
    campaign: CampaignBuilder, break_: Callable[[CampaignBuilder], object], code: str,
    where: str, says: str | tuple[str, ...], facts: dict[str, str], hint: str | None,
) -> None:
    break_(campaign)
    expect_finding(judge(campaign, FITS), code, where=where, says=says, fix=hint,
                   expected=facts.get("expected"), found=facts.get("found"))


@pytest.mark.parametrize("arrange", [
    # ------------------------------------------------------------------ capacity
    pytest.param(lambda c: lot_of_two_gpus(c, quantity=2), id="two-lots-of-one-gpu"),
    pytest.param(lambda c: lot_of_two_gpus(c, gpus_per_lot=2), id="a-lot-of-two-gpus"),
    pytest.param(variant_on_a_second_lot, id="two-lots-can-host-independent-variants"),
    pytest.param(lambda c: variant_on_a_second_lot(c, engaged=False, trained=False),
                 id="a-planned-lot-left-unrented-for-a-dropped-variant"),
    pytest.param(lambda c: variant_naming_no_lot(c, lots=1),
                 id="a-gpu-step-naming-no-lot-runs-on-the-only-lot"),
    # ------------------------------------------------------------ one run, one resource
    pytest.param(lambda c: split_the_control(c, ["train-control"]),
                 id="one-run-chained-across-two-lots"),
    pytest.param(a_cpu_evaluation_beside_its_training,
                 id="a-cpu-evaluation-beside-its-runs-gpu-training"),
    # --------------------------------------------------------------------- order
    pytest.param(lambda c: inserted(c, 7, id="copy-ckpt", kind="retrieval", resource="network",
                                    hours=1, after=["save-ckpt"]),
                 id="an-early-retrieval-of-a-checkpoint"),
    pytest.param(lambda c: inserted(c, 11, id="write-notebook", kind="output", resource="human",
                                    hours=2, after=["retrieve"]),
                 id="an-output-written-by-a-human-after-retrieval"),
    pytest.param(lambda c: planned(c, "save-ckpt", 0.25),
                 id="a-short-but-positive-checkpoint-save"),
    # --------------------------------------------------------- the window and the lots
    pytest.param(hours_stated_to_the_hundredth, id="stated-hours-rounded-to-the-hundredth"),
])
def test_each_honest_twin_passes(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object]
) -> None:
    arrange(campaign)
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
