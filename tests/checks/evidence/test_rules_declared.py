"""The rules of ``rules-declared`` (pytest_itera/checks/evidence/rules_declared.py): each break
refused, with its honest twin.
"""
from __future__ import annotations

from tests.checks.campaigns import Campaign, Pytester, _pilot, add_rule
from tests.factory import (
    CampaignBuilder,
    expect,
)
from tests.runner import Itera

# ---------------------------------------- first written in test_evidence_runs.py


# ===================================================================== rules-declared


def test_rules_declared_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="rules-declared").assert_outcomes(passed=1)


def test_no_stop_rule_in_a_v1_plan(itera: Itera, pytester: Pytester) -> None:
    """itera-plan/1's schema lets the list be empty: the rule is rules-declared's."""
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    campaign.plan["stop_rules"] = []
    itera.fails(campaign, "rules-declared",
                "plan.json $.stop_rules: the plan declares no stop rule (stop_rules is empty)",
                "    expected: at least one rule, written before any run starts: non-finite loss, "
                "quality under a threshold, a truncated input, no usable resume")


def test_pilot_without_a_decision_point(itera: Itera, campaign: Campaign) -> None:
    _pilot(campaign)
    itera.fails(
        campaign, "rules-declared",
        "plan.json $.decision.point: the plan has a pilot (pilot) but fixes no decision point "
        "after it",
        "    expected: decision.point (when the post-pilot decision is taken), or a schedule "
        "step of kind 'decision' after the pilot's steps (through 'after')",
        "    found:    no step of kind 'decision' comes after the pilot's steps (train-pilot)",
    )


def test_pilot_with_a_decision_point(itera: Itera, campaign: Campaign) -> None:
    _pilot(campaign)
    campaign.plan["decision"]["point"] = "after the pilot: continue, drop variant-a, or revise"
    campaign.write()
    itera(check="rules-declared").assert_outcomes(passed=1)


def test_pilot_with_a_decision_step_after_it(itera: Itera, campaign: Campaign) -> None:
    _pilot(campaign)
    campaign.plan["decision"]["point"] = "  "  # blank: the step decides
    steps = campaign.plan["schedule"]["steps"]
    steps.append({"id": "review", "kind": "validation", "resource": "human", "hours": 1,
                  "after": ["train-pilot"]})
    steps.append({"id": "go-no-go", "kind": "decision", "resource": "human", "hours": 0.5,
                  "after": ["review"]})  # after the pilot through another step
    itera.passes(campaign, "rules-declared")
    steps[-1]["after"] = ["load-data"]  # before the pilot has run
    campaign.write()
    itera(check="rules-declared").assert_outcomes(failed=1)


def test_no_resume_rule_names_a_run_that_is_not_a_resume_check(
    itera: Itera, campaign: Campaign
) -> None:
    add_rule(campaign, "resume-usable", "no_resume", resume_check="control")
    campaign.write()
    result = itera(check="rules-declared")
    expect(result, "plan.json $.stop_rules[1].parameters.resume_check: stop rule 'resume-usable' "
           "(no_resume) names 'control', which is not a planned resume check",
           "    expected: one of ['resume-check']")


def test_repeated_stop_rule_id(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "non-finite-loss", "non_finite_loss", series="val_loss")
    campaign.write()
    result = itera(check="rules-declared")
    expect(result, "plan.json $.stop_rules: stop rule id 'non-finite-loss' appears 2 times")


def test_v1_free_form_rule_parameters(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    campaign.write()
    result = itera(check="rules-declared")
    expect(result, "plan.json $.stop_rules[0].parameters: itera-plan/1 cannot prove that stop rule "
           "'non-finite-loss' (non_finite_loss) is applied: its parameters are free-form*")
