"""The rules of ``expected-ids`` (pytest_itera/checks/contract/expected_ids.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

manifest, plan-frozen, expected-ids, analysis-present: each passes, and fails for its reasons.
"""
from __future__ import annotations

import pytest

from tests.checks.campaigns import selecting
from tests.factory import CampaignBuilder, expect
from tests.runner import Itera

# ----------------------------------------------------------------- manifest


def test_manifest_passes_on_a_good_campaign(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    itera("-k", "manifest and not files and not temp").assert_outcomes(passed=1)


def test_a_draft_plan_is_never_accepted(itera: Itera, campaign: CampaignBuilder) -> None:
    """frozen_at is optional in a draft, still required when a campaign is accepted."""
    del campaign.plan["frozen_at"]
    campaign.write()
    result = itera(*selecting("manifest and not files and not temp"))
    result.assert_outcomes(failed=1)
    expect(result,
           "plan.json $.frozen_at: plan.json is a draft: it has no frozen_at, so no one froze "
           "it before the runs",
           "*fix:      freeze the plan with CampaignRecorder.freeze_plan before the first run*")


def test_plan_not_json(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    (campaign.root / "plan.json").write_text('{"format": "itera-plan/1",\n  "campaign": }\n')
    campaign.seal()
    result = itera(*selecting("manifest and not files and not temp"))
    result.assert_outcomes(failed=1)
    expect(result, "plan.json:2:15 $: not JSON: Expecting value")


def test_unknown_field_is_rejected(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["colour"] = "red"
    campaign.write()
    result = itera(*selecting("manifest and not files and not temp"))
    expect(
        result,
        "plan.json:*:* $.budget.lots[0]: unknown field 'colour' "
        "(typo? unknown fields are rejected)",
    )


def test_float_money_is_a_schema_error(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["budget"]["rental_total"] = 47.14
    campaign.write()
    result = itera(*selecting("manifest and not files and not temp"))
    expect(
        result,
        "manifest.json:* $.budget.rental_total: 47.14 is a float; "
        'money and identifiers are strings (write "47.14")',
    )


def test_a_final_newline_does_not_satisfy_a_pattern(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """JSON Schema patterns are ECMA-262 regexes, where `$` is the end of the string:
    "47.14\n" is no money string, although Python's re would let `$` match before it."""
    campaign.manifest["budget"]["rental_total"] = "47.14\n"
    campaign.write()
    result = itera(*selecting("manifest and not files and not temp"))
    result.assert_outcomes(failed=1)
    expect(result, 'manifest.json:*:* $.budget.rental_total: "47.14\\n" does not match *')


def test_every_schema_error_is_listed(itera: Itera, campaign: CampaignBuilder) -> None:
    del campaign.manifest["analysis"]
    campaign.manifest["runs"][0]["outcome"] = 3
    campaign.write()
    result = itera(*selecting("manifest and not files and not temp"))
    expect(
        result,
        "*manifest: 2 problems*",
        "manifest.json:*:* $: 'analysis' is a required property",
        "manifest.json:*:* $.runs[0].outcome: 3 is not one of *",
    )


def test_campaign_ids_must_agree(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.manifest["campaign"] = "another-campaign"
    campaign.write()
    result = itera(*selecting("manifest and not files and not temp"))
    expect(
        result,
        "manifest.json $.campaign: plan.json and manifest.json name different campaigns",
        "    expected: 'tiny-2026-11'",
        "    found:    'another-campaign'",
    )


# ------------------------------------------------------------- expected-ids


def test_expected_ids_passes(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    itera(*selecting("expected-ids")).assert_outcomes(passed=1)


def test_planned_run_missing(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"] = [r for r in campaign.manifest["runs"] if r["id"] != "variant-a"]
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(result, "manifest.json $.runs: planned run variant-a is unaccounted for")


def test_unplanned_run(itera: Itera, campaign: CampaignBuilder) -> None:
    extra = dict(campaign.manifest["runs"][3], id="variant-z")
    campaign.manifest["runs"].append(extra)
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(result, "manifest.json $.runs[4].id: run variant-z is not in the plan")


def test_unplanned_run_added_by_a_decision_is_accepted(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][3], id="variant-a2"))
    campaign.manifest["schedule"]["decisions"] = [
        {
            "id": "after-pilot",
            "text": "variant-a with a fixed tokenizer gets a new id",
            "adds": ["variant-a2"],
        }
    ]
    campaign.write()
    itera(*selecting("expected-ids")).assert_outcomes(passed=1)


def test_duplicate_run_id(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"].append(dict(campaign.manifest["runs"][0]))
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(result, "manifest.json $.runs: run id control appears 2 times")


def test_no_control(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.plan["runs"][0]["role"] = "variant"
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(
        result,
        "plan.json $.runs: the plan has no control run",
        "plan.json $.runs: the must category has no control run",
    )


def test_must_category_lacks_the_resume_check(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.plan["runs"][2]["category"] = "useful"
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(result, "plan.json $.runs: the must category has no resume check run")


def _drop(campaign: CampaignBuilder, run_id: str = "variant-a", **fields: object) -> None:
    runs = campaign.manifest["runs"]
    index = next(i for i, r in enumerate(runs) if r["id"] == run_id)
    runs[index] = {"id": run_id, "outcome": "dropped", "decision": "after-pilot", **fields}
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": f"{run_id} is not needed to conclude", "drops": [run_id]}
    ]


def test_dropped_run_with_its_decision_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    _drop(campaign)
    campaign.write()
    itera(*selecting("expected-ids")).assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("decision", "drops", "expected"),
    [
        (
            None,
            ["variant-a"],
            [
                "manifest.json $.runs[3].decision: dropped run variant-a names no decision",
                "    fix:      a run is dropped at a decision point*",
            ],
        ),
        (
            "mid-week",
            ["variant-a"],
            [
                "manifest.json $.runs[3].decision: "
                "dropped run variant-a names decision 'mid-week', which is not recorded",
                "    expected: one of ['after-pilot']",
            ],
        ),
        (
            "after-pilot",
            [],
            [
                "manifest.json $.runs[3].decision: dropped run variant-a names decision "
                "'after-pilot', which does not drop it",
                "    found:    drops []",
            ],
        ),
    ],
    ids=["no-decision", "unknown-decision", "decision-does-not-drop-it"],
)
def test_dropped_run_without_a_matching_decision(
    itera: Itera,
    campaign: CampaignBuilder,
    decision: str | None,
    drops: list[str],
    expected: list[str],
) -> None:
    _drop(campaign)
    if decision is None:
        del campaign.manifest["runs"][3]["decision"]
    else:
        campaign.manifest["runs"][3]["decision"] = decision
    campaign.manifest["schedule"]["decisions"][0]["drops"] = drops
    campaign.write()
    result = itera(*selecting("expected-ids"))
    result.assert_outcomes(failed=1)
    expect(result, "*expected-ids: 1 problem*", *expected)


def test_must_run_dropped(itera: Itera, campaign: CampaignBuilder) -> None:
    _drop(campaign, "control")
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(
        result,
        "manifest.json $.runs[0].outcome: must-category run control was dropped",
        "    fix:      only optional (useful or exploratory) runs are dropped*",
    )


def test_decision_drops_a_run_that_ran(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "variant-a is dropped", "drops": ["variant-a"]}
    ]
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(
        result,
        "manifest.json $.schedule.decisions[0].drops: decision after-pilot drops run "
        "variant-a, recorded as accepted",
    )


@pytest.mark.parametrize("blank", [None, " \t", "\u200b"])
def test_rejected_run_needs_a_reason(
    itera: Itera, campaign: CampaignBuilder, blank: str | None
) -> None:
    campaign.manifest["runs"][3]["outcome"] = "rejected"
    if blank is not None:
        campaign.manifest["runs"][3]["rejection"] = blank
    campaign.write()
    result = itera(*selecting("expected-ids"))
    expect(result, "manifest.json $.runs[3].rejection: rejected run variant-a does not say why")
    campaign.manifest["runs"][3]["rejection"] = "predictions written for the old corpus"
    campaign.write()
    itera(*selecting("expected-ids")).assert_outcomes(passed=1)
