"""The rules of ``plan-schedule-fits`` (pytest_itera/checks/plan/plan_schedule_fits.py): each break
of the seed's plan refused, with its honest twin, judged in process as ``--itera-plan`` does
(tests/checks/judging.py); schedule-fits' rules on the plan alone.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.checks.plan.seeds import judge_broken_seed
from tests.factory import CampaignBuilder
from tests.plans import grown_by_30, seed_plan, step, write
from tests.runner import Itera

CHECK = "plan-schedule-fits"
Plan = dict[str, Any]


def test_the_seeds_48_hours_fit_the_72_hour_window_and_the_lot(tmp_path: Path) -> None:
    expect_no_finding(judge(write(tmp_path / "out", seed_plan()), CHECK))


def _second_lot(plan: Plan) -> None:
    plan["budget"]["lots"].append(dict(plan["budget"]["lots"][0], id="lot-b"))


def _no_retrieval(plan: Plan) -> None:
    step(plan, "retrieve")["kind"] = "output"


def _save_at_0_h(plan: Plan) -> None:
    step(plan, "save-ckpt")["hours"] = 0
    plan["schedule"].update(sequential_hours=47, uncommitted_hours=25)


def _retrieval_before_the_outputs(plan: Plan) -> None:
    step(plan, "retrieve")["after"] = ["validate"]


def _restore_before_the_save(plan: Plan) -> None:
    step(plan, "restore-ckpt")["after"] = ["train-control"]


def _unknown_lot(plan: Plan) -> None:
    step(plan, "retrieve")["lot"] = "rtx4090-7d"


def _lotless_among_two(plan: Plan) -> None:
    _second_lot(plan)
    del step(plan, "train-variant-a")["lot"]


def _unknown_run(plan: Plan) -> None:
    step(plan, "train-variant-a")["run"] = "variant-x"


def _training_without_run(plan: Plan) -> None:
    del step(plan, "train-variant-a")["run"]


def _two_gpus_on_a_1_gpu_lot(plan: Plan) -> None:
    step(plan, "train-variant-b").update(resource="gpu1", after=["restore-ckpt"])
    plan["schedule"].update(sequential_hours=42, uncommitted_hours=30)


def _cycle_through_an_unknown_step(plan: Plan) -> None:
    step(plan, "setup")["after"] = ["unpack"]


def _one_run_on_two_lots_at_once(plan: Plan) -> None:
    _second_lot(plan)
    step(plan, "train-control")["hours"] = 6
    plan["schedule"]["steps"].insert(7, {
        "id": "train-control-2", "kind": "training", "resource": "gpu1", "hours": 6,
        "after": ["decide"], "lot": "lot-b", "run": "control"})
    plan["schedule"].update(sequential_hours=42, uncommitted_hours=30)


def _interval_too_long(plan: Plan) -> None:
    plan["checkpoint_policy"].update(interval_hours=2, save_hours=0.5)


def _sequential_hours_stated_40(plan: Plan) -> None:
    plan["schedule"]["sequential_hours"] = 40


def _uncommitted_hours_stated_30(plan: Plan) -> None:
    plan["schedule"]["uncommitted_hours"] = 30


def _grown_by_30(plan: Plan) -> None:
    grown_by_30(plan)


@pytest.mark.parametrize(
    ("breaks", "code", "where", "says"),
    [
        (_no_retrieval, "plan-schedule-fits.missing-kind", "plan.json $.schedule.steps",
         "the schedule has no retrieval step"),
        (_save_at_0_h, "plan-schedule-fits.zero-hours-kind", "plan.json $.schedule.steps[7].hours",
         "the schedule plans 0 h for checkpoint_save (step 'save-ckpt')"),
        (_retrieval_before_the_outputs, "plan-schedule-fits.retrieval-order",
         "plan.json $.schedule.steps[13].after",
         "retrieval step 'retrieve' does not come after 'write-outputs'"),
        (_restore_before_the_save, "plan-schedule-fits.restore-order",
         "plan.json $.schedule.steps[8].after",
         "checkpoint restore step 'restore-ckpt' does not come after a checkpoint save"),
        (_unknown_lot, "plan-schedule-fits.unknown-lot", "plan.json $.schedule.steps[13].lot",
         "runs on lot 'rtx4090-7d', which the budget does not have"),
        (_lotless_among_two, "plan-schedule-fits.lotless-step",
         "plan.json $.schedule.steps[9].lot", "names no lot, and the plan rents 2 lots"),
        (_unknown_run, "plan-schedule-fits.unknown-run", "plan.json $.schedule.steps[9].run",
         "serves run 'variant-x', which the plan does not have"),
        (_training_without_run, "plan-schedule-fits.training-without-run",
         "plan.json $.schedule.steps[9].run", "training step 'train-variant-a' names no run"),
        (_two_gpus_on_a_1_gpu_lot, "plan-schedule-fits.lot-capacity",
         "plan.json $.schedule.steps[10].resource",
         "lot 'rtx4090-3d' provides 1 GPU (1 per lot x 1), but its steps use 2 GPU resources"),
        (_cycle_through_an_unknown_step, "plan-schedule-fits.not-computable",
         "plan.json $.schedule.steps", "step 'setup' comes after 'unpack', which is not a step"),
        (_one_run_on_two_lots_at_once, "plan-schedule-fits.run-overlap",
         "plan.json $.schedule.steps[7].after", "run 'control' is on two resources at once"),
        (_interval_too_long, "plan-schedule-fits.checkpoint-interval",
         "plan.json $.checkpoint_policy.interval_hours",
         "a crash can lose 2.5 h of work (interval 2 h + 0.5 h per save)"),
        (_sequential_hours_stated_40, "plan-schedule-fits.sequential-hours",
         "plan.json $.schedule.sequential_hours",
         "sequential_hours says 40 h, but the steps take 48 h"),
        (_uncommitted_hours_stated_30, "plan-schedule-fits.uncommitted-hours",
         "plan.json $.schedule.uncommitted_hours",
         "uncommitted_hours says 30 h, but the 72 h window minus the 48 h makespan leaves 24 h"),
        (_grown_by_30, "plan-schedule-fits.window", "plan.json $.schedule.window_hours",
         "the schedule takes 78 h, 6 h more than the 72 h window"),
        (_grown_by_30, "plan-schedule-fits.retrieval-after-window", "plan.json $.schedule.steps",
         "results are retrieved at 78 h, after the 72 h window closes"),
        (_grown_by_30, "plan-schedule-fits.lot-overflow",
         "plan.json $.schedule.steps (lot 'rtx4090-3d')",
         "78 h exceeds the 3-day lot (72 h) by 6 h: consider the 7-day lot (110.00 USD)"),
    ],
    ids=["missing-kind", "zero-hours-kind", "retrieval-order", "restore-order", "unknown-lot",
         "lotless-step", "unknown-run", "training-without-run", "lot-capacity", "not-computable",
         "run-overlap", "checkpoint-interval", "sequential-hours", "uncommitted-hours",
         "window", "retrieval-after-window", "lot-overflow"],
)
def test_each_break_of_the_seeds_plan_is_refused(
    tmp_path: Path, breaks: Callable[[Plan], None], code: str, where: str, says: str
) -> None:
    expect_finding(judge_broken_seed(tmp_path / "out", breaks, CHECK), code, where=where,
                   says=says)


def test_a_v1_plan_cannot_prove_one_run_per_resource(tmp_path: Path) -> None:
    campaign = CampaignBuilder(tmp_path / "out", version=1)
    step(campaign.plan, "validate")["after"] = ["train-variant-a", "restore-ckpt"]
    expect_finding(judge(campaign, CHECK), "plan-schedule-fits.v1-runs-unproven",
                   where="plan.json $.schedule.steps[3].run",
                   says="itera-plan/1 cannot prove that one run is never on two resources")

# ---------------------------------------- first written in test_plan_gate.py


def test_the_reports_carry_the_plan_its_verdict_and_its_schedule(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    """--itera-report on a plan gate: the plans, their checks and the summary's lines."""
    import jsonschema

    from pytest_itera.core.campaign import schema

    write(pytester.path / "ready", seed_plan())
    write(pytester.path / "late", grown_by_30(seed_plan()))
    itera.gate("--itera-plan", "late", "--itera-report", "r.json", "--itera-report", "r.md",
               "--itera-report", "r.html", plan="ready")
    data = json.loads((pytester.path / "r.json").read_text())
    jsonschema.validate(data, schema("report"))
    assert (data["verdict"], data["campaigns"]) == ("not ready", [])
    plans = {p["plan"]: p for p in data["plans"]}
    assert plans["ready/plan.json"]["verdict"] == "ready"
    late = plans["late/plan.json"]
    assert late["verdict"] == "not ready"
    failed = [c for c in late["checks"] if c["outcome"] == "failed"]
    assert [c["check"] for c in failed] == ["plan-schedule-fits"]
    assert "78 h exceeds the 3-day lot (72 h) by 6 h" in failed[0]["message"]
    assert any("uncommitted" in line for line in plans["ready/plan.json"]["summary"])
    markdown = (pytester.path / "r.md").read_text()
    assert "# Plan late/plan.json: NOT READY" in markdown
    assert "# Plan ready/plan.json: READY" in markdown
    assert "Plan late/plan.json</h1>" in (pytester.path / "r.html").read_text()
