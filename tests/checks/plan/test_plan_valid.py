"""The rules of ``plan-valid`` (pytest_itera/checks/plan/plan_valid.py): a broken plan refused
with its JSON path and line, with its honest twin, judged in process as ``--itera-plan`` does
(tests/checks/judging.py). The gate's items and output: tests/checks/plan/test_gate.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_itera.cli import plan_skeleton
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.plans import seed_plan, step, write

CHECK = "plan-valid"


def test_the_seeds_plan_is_valid(tmp_path: Path) -> None:
    expect_no_finding(judge(write(tmp_path / "out", seed_plan()), CHECK))


def test_a_draft_without_frozen_at_is_valid(tmp_path: Path) -> None:
    """new-plan writes a draft: freeze_plan sets frozen_at (the closure's rule, not the gate's)."""
    plan = seed_plan()
    del plan["frozen_at"]
    expect_no_finding(judge(write(tmp_path / "out", plan), CHECK))


@pytest.mark.parametrize(
    ("text", "code", "where", "says"),
    [
        ('{"format": "itera-plan/2",\n  "campaign": ', "plan-valid.invalid-document",
         "plan.json:2:15 $", "not JSON"),
        ("window", "plan-valid.invalid-document", "plan.json:89:21 $.schedule.window_hours",
         "'72' is not of type 'number'"),
        ("cycle", "plan-valid.schedule-not-computable", "plan.json:98:18 $.schedule.steps[0].after",
         "the schedule cannot be computed: dependency cycle"),
    ],
    ids=["not-json", "schema-invalid", "cycle"],
)
def test_a_broken_plan_is_told_its_json_path_and_line(
    tmp_path: Path, text: str, code: str, where: str, says: str
) -> None:
    plan = seed_plan()
    if text == "window":
        plan["schedule"]["window_hours"] = "72"
    elif text == "cycle":
        step(plan, "prepare")["after"] = ["retrieve"]  # a cycle through every step
    folder = write(tmp_path / "out", plan)
    if text not in ("window", "cycle"):
        (folder / "plan.json").write_text(text)
    expect_finding(judge(folder, CHECK), code, where=where, says=says)


def test_a_truncation_rule_that_contradicts_its_corpus_entry(tmp_path: Path) -> None:
    """The new-plan draft, its corpus entry edited to 48 examples, its rule left at 600."""
    plan = plan_skeleton("guide")
    plan["corpora"][0]["examples"] = 48
    found = judge(write(tmp_path / "out", plan), CHECK)
    finding = expect_finding(found, "plan-valid.rule-contradicts-corpus",
                             where="plan.json:", says="the frozen corpus would trigger the rule")
    assert (finding.where or "").endswith("$.stop_rules[2].parameters.examples")
    assert (finding.expected, finding.found) == ("48, the corpus entry's examples", "600")
    plan["stop_rules"][2]["parameters"]["examples"] = 48  # the way through
    (tmp_path / "out" / "plan.json").write_text(json.dumps(plan, indent=2))
    expect_no_finding(judge(tmp_path / "out", CHECK), "plan-valid.rule-contradicts-corpus")
