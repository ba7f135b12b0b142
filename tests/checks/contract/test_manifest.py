"""The rules of ``manifest`` (pytest_itera/checks/contract/manifest.py): each break refused, with
its honest twin (judged in process, tests/checks/judging.py, where no pytest session's wiring is
the point).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from tests.checks.campaigns import BUDGET, budget, selecting
from tests.checks.judging import advises_then_fails, expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder, expect, sha256
from tests.plans import seed_plan, write
from tests.runner import Itera

MANIFEST = "manifest"

# ---------------------------------------- first written in test_budget_checks.py


@pytest.mark.parametrize(
    ("where", "text"),
    [("manifest", "GPU time at 0.65 USD/h"), ("manifest", "RTX 4090, billed hourly"),
     ("plan", "IteraGPU RTX 4090 per hour")],
)
def test_hourly_billing_is_refused(campaign: CampaignBuilder, where: str, text: str) -> None:
    """A rate per hour written in words advises; under strict text it decides (the option's
    wiring, --itera-strict-text: tests/plugin/test_advisories.py)."""
    if where == "plan":
        campaign.plan["budget"]["lots"][0]["offer"] = text
        path = "plan.json $.budget.lots[0].offer"
    else:
        budget(campaign, external_expenses=[{"label": text, "amount": "3.00"}])
        path = "manifest.json $.budget.external_expenses[0].label"
    found = advises_then_fails(campaign, BUDGET, "budget-consistent.hourly-billing")
    assert found.render().startswith(f"{path}: hourly billing: {text!r} states a rate per hour")
    assert "    fix:      lots are fixed-price for their whole duration (R4)" in found.render()


# ---------------------------------------- first written in test_contract_checks.py

# ------------------------------------------------- the documents, judged in process


def test_manifest_passes_on_a_good_campaign(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, MANIFEST))


def test_a_draft_plan_is_never_accepted(campaign: CampaignBuilder) -> None:
    """frozen_at is optional in a draft, still required when a campaign is accepted."""
    del campaign.plan["frozen_at"]
    expect_finding(judge(campaign, MANIFEST), "manifest.plan-draft",
                   where="plan.json $.frozen_at", says="plan.json is a draft: it has no frozen_at",
                   fix="freeze the plan with CampaignRecorder.freeze_plan before the first run")


def test_plan_not_json(campaign: CampaignBuilder) -> None:
    campaign.write()
    (campaign.root / "plan.json").write_text('{"format": "itera-plan/1",\n  "campaign": }\n')
    campaign.seal()
    expect_finding(judge(campaign, MANIFEST, write=False), "manifest.invalid-document",
                   where="plan.json:2:15 $", says="not JSON: Expecting value")


def _unknown_field(campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["colour"] = "red"


def _float_money(campaign: CampaignBuilder) -> None:
    campaign.manifest["budget"]["rental_total"] = 47.14


def _final_newline(campaign: CampaignBuilder) -> None:
    """JSON Schema patterns are ECMA-262 regexes, where `$` is the end of the string:
    "47.14\n" is no money string, although Python's re would let `$` match before it."""
    campaign.manifest["budget"]["rental_total"] = "47.14\n"


@pytest.mark.parametrize(
    ("breaks", "where", "says"),
    [
        (_unknown_field, ("plan.json:", "$.budget.lots[0]"),
         "unknown field 'colour' (typo? unknown fields are rejected)"),
        (_float_money, ("manifest.json:", "$.budget.rental_total"),
         '47.14 is a float; money and identifiers are strings (write "47.14")'),
        (_final_newline, ("manifest.json:", "$.budget.rental_total"),
         '"47.14\\n" does not match '),
    ],
    ids=["unknown-field", "float-money", "final-newline-in-a-pattern"],
)
def test_a_schema_error_is_told_with_its_line_and_path(
    campaign: CampaignBuilder, breaks: Callable[[CampaignBuilder], None],
    where: tuple[str, str], says: str,
) -> None:
    breaks(campaign)
    finding = expect_finding(judge(campaign, MANIFEST), "manifest.invalid-document",
                             where=where[0], says=says)
    assert (finding.where or "").endswith(f" {where[1]}")


def test_every_schema_error_is_listed(campaign: CampaignBuilder) -> None:
    del campaign.manifest["analysis"]
    campaign.manifest["runs"][0]["outcome"] = 3
    found = judge(campaign, MANIFEST)
    assert [(f.code, (f.where or "").rsplit(" ", 1)[1], f.message.split(" is ", 1)[0])
            for f in found] == [
        ("manifest.invalid-document", "$", "'analysis'"),
        ("manifest.invalid-document", "$.runs[0].outcome", "3"),
    ]


def test_campaign_ids_must_agree(campaign: CampaignBuilder) -> None:
    campaign.manifest["campaign"] = "another-campaign"
    finding = expect_finding(judge(campaign, MANIFEST), "manifest.campaign-mismatch",
                             where="manifest.json $.campaign",
                             says="plan.json and manifest.json name different campaigns")
    assert (finding.expected, finding.found) == ("'tiny-2026-11'", "'another-campaign'")




def test_manifest_missing(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    (campaign.root / "manifest.json").unlink()
    campaign.seal()
    result = itera()
    expect(
        result,
        "*manifest: 1 problem*",
        "manifest.json $: missing: a campaign folder has plan.json and manifest.json at its root",
        "*fix:      write manifest.json with pytest_itera.record (see docs/campaign-format.md)",
    )
    # One cause, one failure: the checks that need the manifest do not vanish, and are not
    # failures of their own; each says, once, whose failure it waits on.
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1, outcomes
    assert outcomes["skipped"] > 10, outcomes
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result = itera("-rA", "-k", "manifest or expected-ids")
    result.assert_outcomes(failed=1, skipped=1)
    expect(result, "SKIPPED [1] out/manifest.json:1: not judged: manifest failed (manifest.json "
           "did not load)", "FAILED out/manifest.json::manifest")
    # Alone, without the item that owns the cause, the dependent item fails saying why.
    expect(itera(check="expected-ids"), "*expected-ids: 1 problem*",
           "not judged: manifest failed (manifest.json did not load)")


def test_schema_error_names_json_path_and_line(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["runs"][2]["outcome"] = "acepted"
    campaign.write()
    text = (campaign.root / "manifest.json").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if '"acepted"' in t)
    column = text[line - 1].index('"acepted"') + 1
    result = itera(*selecting("manifest and not files and not temp"))
    result.assert_outcomes(failed=1)
    expect(result, f"manifest.json:{line}:{column} $.runs[2].outcome: 'acepted' is not one of *")


def test_duplicate_keys_are_refused(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    path = campaign.root / "manifest.json"
    path.write_text(path.read_text().replace('"format"', '"campaign": "other",\n  "format"', 1))
    campaign.seal()
    result = itera(*selecting("manifest and not files and not temp"))
    expect(result, "manifest.json $: not acceptable JSON: duplicate key 'campaign' in one object")


# ---------------------------------------- first written in test_file_checks.py


@pytest.mark.parametrize(
    ("listed", "reason"),
    [
        ("../secrets.txt", "'..' leaves the campaign folder"),
        ("/etc/hostname", "is absolute"),
    ],
)
def test_listed_path_outside_the_folder(
    itera: Itera, campaign: CampaignBuilder, listed: str, reason: str
) -> None:
    campaign.write()
    manifest = json.loads((campaign.root / "manifest.json").read_text())
    manifest["files"].append({"path": listed, "bytes": 1, "sha256": "0" * 64})
    (campaign.root / "manifest.json").write_text(json.dumps(manifest))
    campaign.seal()
    result = itera("-k", "files-intact")
    result.assert_outcomes(passed=len(campaign.files), failed=1)
    expect(result, f"manifest.json $.files[*]: listed file {listed!r}: {reason}*")


def test_symlink_out_of_the_folder(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    secret = pytester.path / "outside.txt"
    secret.write_text("not part of the campaign\n")
    campaign.write()
    os.symlink(secret, campaign.root / "runs/control/link.txt")
    manifest = json.loads((campaign.root / "manifest.json").read_text())
    manifest["files"].append(
        {"path": "runs/control/link.txt", "bytes": 25, "sha256": sha256(secret.read_bytes())}
    )
    (campaign.root / "manifest.json").write_text(json.dumps(manifest))
    campaign.seal()
    result = itera("-k", "files-intact and link")
    result.assert_outcomes(failed=1)
    expect(result, "*runs/control/link.txt*leaves the campaign folder*")


def test_manifest_listing_itself(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    manifest = json.loads((campaign.root / "manifest.json").read_text())
    manifest["files"].append({"path": "manifest.json", "bytes": 1, "sha256": "0" * 64})
    (campaign.root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    campaign.seal()
    result = itera("-k", "files-intact and manifest")
    result.assert_outcomes(failed=1)
    expect(
        result,
        "manifest.json $.files[*]: "
        "manifest.json lists itself: its own sha256 cannot be recorded inside it",
    )


# ---------------------------------------- first written in test_plan_gate.py


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("manifest", "*the campaign has a manifest.json, it is closed: accept it with "
                     "--itera-campaign*"),
        ("empty", "*the folder has no plan.json*"),
        ("missing", "*--itera-plan: nowhere: no such file or folder*"),
    ],
)
def test_usage_errors(itera: Itera, pytester: pytest.Pytester, setup: str, message: str) -> None:
    folder = write(pytester.path / "out", seed_plan())
    if setup == "manifest":
        (folder / "manifest.json").write_text("{}")
    elif setup == "empty":
        (folder / "plan.json").unlink()
    result = itera.gate(plan="nowhere" if setup == "missing" else "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
