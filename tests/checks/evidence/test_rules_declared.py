"""The rules of ``rules-declared`` (pytest_itera/checks/evidence/rules_declared.py): each break
refused, with its honest twin, judged in process (tests/checks/judging.py).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks.campaigns import Campaign, _pilot, add_rule
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder

CHECK = "rules-declared"


def test_rules_declared_passes(campaign: Campaign) -> None:
    expect_no_finding(judge(campaign, CHECK))


def _no_rules(campaign: Campaign) -> None:
    campaign.plan["stop_rules"] = []


def _repeated(campaign: Campaign) -> None:
    add_rule(campaign, "non-finite-loss", "non_finite_loss", series="val_loss")


def _resume_check_is_the_control(campaign: Campaign) -> None:
    add_rule(campaign, "resume-usable", "no_resume", resume_check="control")


def _as_given(campaign: Campaign) -> None:
    """The break is the plan's version: itera-plan/1's free-form parameters."""


@pytest.mark.parametrize(
    ("version", "breaks", "code", "where", "says"),
    [
        # itera-plan/1's schema lets the list be empty: the rule is rules-declared's.
        (1, _no_rules, "rules-declared.no-rules", "plan.json $.stop_rules",
         "the plan declares no stop rule"),
        (2, _pilot, "rules-declared.no-decision-point", "plan.json $.decision.point",
         "the plan has a pilot (pilot) but fixes no decision point after it"),
        (2, _resume_check_is_the_control, "rules-declared.unknown-resume-check",
         "plan.json $.stop_rules[1].parameters.resume_check",
         "names 'control', which is not a planned resume check"),
        (2, _repeated, "rules-declared.repeated-id", "plan.json $.stop_rules",
         "stop rule id 'non-finite-loss' appears 2 times"),
        (1, _as_given, "rules-declared.parameters", "plan.json $.stop_rules[0].parameters",
         "its parameters are free-form"),
    ],
    ids=["no-rule-in-a-v1-plan", "pilot-without-decision-point", "resume-check-not-planned",
         "repeated-rule-id", "v1-free-form-parameters"],
)
def test_each_break_is_refused(tmp_path: Path, version: int,
                               breaks: Callable[[Campaign], None], code: str, where: str,
                               says: str) -> None:
    campaign = CampaignBuilder(tmp_path / "out", version=version)
    breaks(campaign)
    expect_finding(judge(campaign, CHECK), code, where=where, says=says)


def test_a_pilot_without_a_decision_point_is_told_what_would_fix_it(campaign: Campaign) -> None:
    _pilot(campaign)
    finding = expect_finding(judge(campaign, CHECK), "rules-declared.no-decision-point")
    assert "a schedule step of kind 'decision' after the pilot's steps" in (
        finding.expected or "")
    assert "(train-pilot)" in (finding.found or "")


def test_pilot_with_a_decision_point(campaign: Campaign) -> None:
    _pilot(campaign)
    campaign.plan["decision"]["point"] = "after the pilot: continue, drop variant-a, or revise"
    expect_no_finding(judge(campaign, CHECK), "rules-declared.no-decision-point")


def test_pilot_with_a_decision_step_after_it(campaign: Campaign) -> None:
    _pilot(campaign)
    campaign.plan["decision"]["point"] = "  "  # blank: the step decides
    steps = campaign.plan["schedule"]["steps"]
    steps.append({"id": "review", "kind": "validation", "resource": "human", "hours": 1,
                  "after": ["train-pilot"]})
    steps.append({"id": "go-no-go", "kind": "decision", "resource": "human", "hours": 0.5,
                  "after": ["review"]})  # after the pilot through another step
    expect_no_finding(judge(campaign, CHECK))
    steps[-1]["after"] = ["load-data"]  # before the pilot has run
    expect_finding(judge(campaign, CHECK), "rules-declared.no-decision-point")


def test_a_resume_rule_naming_another_run_is_told_the_resume_checks(campaign: Campaign) -> None:
    _resume_check_is_the_control(campaign)
    finding = expect_finding(judge(campaign, CHECK), "rules-declared.unknown-resume-check")
    assert finding.expected == "one of ['resume-check']"


def test_a_resume_rule_naming_the_planned_resume_check_passes(campaign: Campaign) -> None:
    add_rule(campaign, "resume-usable", "no_resume", resume_check="resume-check")
    expect_no_finding(judge(campaign, CHECK), "rules-declared.unknown-resume-check")
