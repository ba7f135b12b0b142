"""The rules of ``plan-frozen-ready`` (pytest_itera/checks/plan/plan_frozen_ready.py): each break
of the seed's plan refused, with its honest twin, judged in process as ``--itera-plan`` does
(tests/checks/judging.py). The gate's items and output: tests/checks/plan/test_gate.py.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.checks.plan.seeds import judge_broken_seed
from tests.factory import CampaignBuilder
from tests.plans import seed_plan, step, write

CHECK = "plan-frozen-ready"
Plan = dict[str, Any]


def test_the_seeds_plan_is_frozen_ready(tmp_path: Path) -> None:
    expect_no_finding(judge(write(tmp_path / "out", seed_plan()), CHECK))


def _undeclared_corpus(plan: Plan) -> None:
    plan["runs"][0]["corpus"] = "other"


def _two_corpora_the_control_names_none(plan: Plan) -> None:
    plan["corpora"].append(dict(plan["corpora"][0], id="corpus-b", path="corpus/b.jsonl"))
    for run in plan["runs"][1:]:
        run["corpus"] = "corpus-v1"


def _data_check_not_a_must(plan: Plan) -> None:
    plan["runs"][1]["category"] = "useful"


def _no_control(plan: Plan) -> None:
    plan["runs"][0]["role"] = "variant"


def _no_storage(plan: Plan) -> None:
    del plan["checkpoint_policy"]["storage"]


def _no_resume_state(plan: Plan) -> None:
    plan["checkpoint_policy"]["resume_state"] = []


def _decision_before_the_pilot(plan: Plan) -> None:
    step(plan, "decide")["after"] = ["load-data"]


def _repeated_rule(plan: Plan) -> None:
    plan["stop_rules"].append(dict(plan["stop_rules"][0]))


def _resume_rule_names_the_control(plan: Plan) -> None:
    plan["stop_rules"][1]["parameters"]["resume_check"] = "control"


@pytest.mark.parametrize(
    ("breaks", "code", "where", "says"),
    [
        (_undeclared_corpus, "plan-frozen-ready.corpus-undeclared", "plan.json $.runs[0].corpus",
         "run control works on corpus 'other', which the plan does not declare"),
        (_two_corpora_the_control_names_none, "plan-frozen-ready.no-corpus",
         "plan.json $.runs[0].corpus", "run control names no corpus, and the plan has 2"),
        (_data_check_not_a_must, "plan-frozen-ready.must-role-missing", "plan.json $.runs",
         "the must category has no data check run"),
        (_no_control, "plan-frozen-ready.no-control", "plan.json $.runs",
         "the plan has no control run"),
        (_no_storage, "plan-frozen-ready.no-checkpoint-place",
         "plan.json $.checkpoint_policy.storage", "does not say where checkpoints live"),
        (_no_resume_state, "plan-frozen-ready.no-resume-state",
         "plan.json $.checkpoint_policy.resume_state", "requires no resume state"),
        (_decision_before_the_pilot, "plan-frozen-ready.no-decision-point",
         "plan.json $.decision.point", "the plan has a pilot (pilot) but fixes no decision"),
        (_repeated_rule, "plan-frozen-ready.repeated-id", "plan.json $.stop_rules",
         "stop rule id 'non-finite-loss' appears 2 times"),
        (_resume_rule_names_the_control, "plan-frozen-ready.unknown-resume-check",
         "plan.json $.stop_rules[1].parameters.resume_check",
         "names 'control', which is not a planned resume check"),
    ],
    ids=["corpus-undeclared", "no-corpus", "must-role-missing", "no-control",
         "no-checkpoint-place", "no-resume-state", "decision-before-pilot", "repeated-rule-id",
         "unknown-resume-check"],
)
def test_each_break_of_the_seeds_plan_is_refused(
    tmp_path: Path, breaks: Callable[[Plan], None], code: str, where: str, says: str
) -> None:
    expect_finding(judge_broken_seed(tmp_path / "out", breaks, CHECK), code, where=where,
                   says=says)


def test_no_decision_point_at_all(tmp_path: Path) -> None:
    """Without a pilot: the gate's own rule (with a pilot, rules-declared's too)."""
    plan = seed_plan()
    plan["runs"] = [r for r in plan["runs"] if r["id"] != "pilot"]
    plan["schedule"]["steps"] = [s for s in plan["schedule"]["steps"]
                                 if s["id"] not in ("train-pilot", "decide")]
    step(plan, "train-control")["after"] = ["check-data"]
    found = judge(write(tmp_path / "out", plan), CHECK)
    expect_finding(found, "plan-frozen-ready.no-decision-point", where="plan.json $.decision.point",
                   says="the plan fixes no decision point")


@pytest.mark.parametrize(
    ("code", "where", "says"),
    [
        ("plan-frozen-ready.plan-v1", "plan.json $.format", "cannot be closed with evidence"),
        ("plan-frozen-ready.parameters", "plan.json $.stop_rules[0].parameters",
         "its parameters are free-form"),
    ],
    ids=["plan-v1", "free-form-parameters"],
)
def test_a_v1_plan_cannot_be_closed_with_evidence(
    tmp_path: Path, code: str, where: str, says: str
) -> None:
    expect_finding(judge(CampaignBuilder(tmp_path / "out", version=1), CHECK), code,
                   where=where, says=says)


def test_a_v1_plan_without_a_stop_rule(tmp_path: Path) -> None:
    """itera-plan/1's schema lets the list be empty; /2's refuses it (plan-valid)."""
    campaign = CampaignBuilder(tmp_path / "out", version=1)
    campaign.plan["stop_rules"] = []
    expect_finding(judge(campaign, CHECK), "plan-frozen-ready.no-rules",
                   where="plan.json $.stop_rules", says="the plan declares no stop rule")
