"""The rules of ``expected-ids`` (pytest_itera/checks/contract/expected_ids.py): each break
refused, with its honest twin, judged in process (tests/checks/judging.py).

Where the cases come from (the files they were first written in):

manifest, plan-frozen, expected-ids, analysis-present: each passes, and fails for its reasons.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder

CHECK = "expected-ids"

# ------------------------------------------------------------- expected-ids


def test_expected_ids_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, CHECK))


def _variant_missing(campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"] = [r for r in campaign.manifest["runs"] if r["id"] != "variant-a"]


def _unplanned(campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][3], id="variant-z"))


def _control_twice(campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][0]))


def _no_resume_check_in_must(campaign: CampaignBuilder) -> None:
    campaign.plan["runs"][2]["category"] = "useful"


def _checkpoint_of_an_unknown_run(campaign: CampaignBuilder) -> None:
    campaign.manifest["checkpoints"][2]["run"] = "variant-q"


@pytest.mark.parametrize(
    ("breaks", "code", "where", "says"),
    [
        (_variant_missing, "expected-ids.unaccounted", "manifest.json $.runs",
         "planned run variant-a is unaccounted for"),
        (_unplanned, "expected-ids.unplanned", "manifest.json $.runs[4].id",
         "run variant-z is not in the plan"),
        (_control_twice, "expected-ids.repeated", "manifest.json $.runs",
         "run id control appears 2 times"),
        (_no_resume_check_in_must, "expected-ids.must-role-missing", "plan.json $.runs",
         "the must category has no resume check run"),
        (_checkpoint_of_an_unknown_run, "expected-ids.unknown-run",
         "manifest.json $.checkpoints[2].run", "variant-q"),
    ],
    ids=["planned-run-missing", "unplanned-run", "duplicate-run-id",
         "must-lacks-the-resume-check", "checkpoint-of-an-unknown-run"],
)
def test_each_break_is_refused(campaign: CampaignBuilder,
                               breaks: Callable[[CampaignBuilder], None], code: str, where: str,
                               says: str) -> None:
    breaks(campaign)
    expect_finding(judge(campaign, CHECK), code, where=where, says=says)


def test_unplanned_run_added_by_a_decision_is_accepted(campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][3], id="variant-a2"))
    campaign.manifest["schedule"]["decisions"] = [
        {
            "id": "after-pilot",
            "text": "variant-a with a fixed tokenizer gets a new id",
            "adds": ["variant-a2"],
        }
    ]
    expect_no_finding(judge(campaign, CHECK))


def test_no_control(campaign: CampaignBuilder) -> None:
    campaign.plan["runs"][0]["role"] = "variant"
    found = judge(campaign, CHECK)
    expect_finding(found, "expected-ids.no-control", where="plan.json $.runs",
                   says="the plan has no control run")
    expect_finding(found, "expected-ids.must-role-missing", where="plan.json $.runs",
                   says="the must category has no control run")


def _drop(campaign: CampaignBuilder, run_id: str = "variant-a", **fields: object) -> None:
    runs = campaign.manifest["runs"]
    index = next(i for i, r in enumerate(runs) if r["id"] == run_id)
    runs[index] = {"id": run_id, "outcome": "dropped", "decision": "after-pilot", **fields}
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": f"{run_id} is not needed to conclude", "drops": [run_id]}
    ]


def test_dropped_run_with_its_decision_passes(campaign: CampaignBuilder) -> None:
    _drop(campaign)
    expect_no_finding(judge(campaign, CHECK))


@pytest.mark.parametrize(
    ("decision", "drops", "code", "says"),
    [
        (None, ["variant-a"], "expected-ids.drop-without-decision",
         "dropped run variant-a names no decision"),
        ("mid-week", ["variant-a"], "expected-ids.drop-decision-unknown",
         "dropped run variant-a names decision 'mid-week', which is not recorded"),
        ("after-pilot", [], "expected-ids.drop-decision-disagrees",
         "dropped run variant-a names decision 'after-pilot', which does not drop it"),
    ],
    ids=["no-decision", "unknown-decision", "decision-does-not-drop-it"],
)
def test_dropped_run_without_a_matching_decision(
    campaign: CampaignBuilder, decision: str | None, drops: list[str], code: str, says: str,
) -> None:
    _drop(campaign)
    if decision is None:
        del campaign.manifest["runs"][3]["decision"]
    else:
        campaign.manifest["runs"][3]["decision"] = decision
    campaign.manifest["schedule"]["decisions"][0]["drops"] = drops
    found = judge(campaign, CHECK)
    assert len(found) == 1, [f.render() for f in found]
    finding = expect_finding(found, code, where="manifest.json $.runs[3].decision", says=says)
    if decision is None:
        assert (finding.hint or "").startswith("a run is dropped at a decision point")
    elif drops:
        assert finding.expected == "one of ['after-pilot']"
    else:
        assert finding.found == "drops []"


def test_must_run_dropped(campaign: CampaignBuilder) -> None:
    _drop(campaign, "control")
    expect_finding(judge(campaign, CHECK), "expected-ids.must-dropped",
                   where="manifest.json $.runs[0].outcome",
                   says="must-category run control was dropped",
                   fix="only optional (useful or exploratory) runs are dropped")


def test_decision_drops_a_run_that_ran(campaign: CampaignBuilder) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "variant-a is dropped", "drops": ["variant-a"]}
    ]
    expect_finding(judge(campaign, CHECK), "expected-ids.drop-decision-disagrees",
                   where="manifest.json $.schedule.decisions[0].drops",
                   says="decision after-pilot drops run variant-a, recorded as accepted")


@pytest.mark.parametrize("blank", [None, " \t", "\u200b"])
def test_rejected_run_needs_a_reason(campaign: CampaignBuilder, blank: str | None) -> None:
    campaign.manifest["runs"][3]["outcome"] = "rejected"
    if blank is not None:
        campaign.manifest["runs"][3]["rejection"] = blank
    expect_finding(judge(campaign, CHECK), "expected-ids.rejection-unexplained",
                   where="manifest.json $.runs[3].rejection",
                   says="rejected run variant-a does not say why")
    campaign.manifest["runs"][3]["rejection"] = "predictions written for the old corpus"
    expect_no_finding(judge(campaign, CHECK), "expected-ids.rejection-unexplained")
    expect_no_finding(judge(campaign, CHECK, write=False))
