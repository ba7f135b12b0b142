"""Issue 36: prose advises, and a waiver waives one finding by its code.

What the pytest wiring adds to a check's findings: an advisory (a reading of human text)
travels on the item's report to the verdict's note and every report without failing the
item, --itera-strict-text (or its ini twin) makes it decide, and a waiver with ``code``
accepts only the findings of that code. The check is a conftest.py's, outside the campaign
(a user's own check, as the hook allows): it has one advisory and two deciding findings.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.factory import CampaignBuilder, expect
from tests.plugin.test_waivers import GATE, LATER, toml_waiver, validated
from tests.runner import Itera

TWO_RULES = '''
from pathlib import Path

from pytest_itera.checks import Check
from pytest_itera.core.findings import Finding

RULES = {"both": ("receipt-date", "rental"), "date": ("receipt-date",), "none": ()}

def _expenses(ctx, target):
    yield Finding("the receipt's words read as a quote for another campaign",
                  where="receipts/INV-1.txt", code="expenses-agree.receipt-words",
                  advisory=True, hint="record issued_by; this reading only advises")
    for kind in RULES[Path("rules.txt").read_text().strip()]:
        yield Finding(f"the {kind} rule fails", where="manifest.json $.budget",
                      code=f"expenses-agree.{kind}")

def pytest_itera_checks(config):
    return [Check(id="expenses-agree", summary="expenses agree", run=_expenses)]
'''


def two_rules(pytester: pytest.Pytester, campaign: CampaignBuilder, failing: str) -> None:
    campaign.write()
    pytester.makeconftest(TWO_RULES)
    (pytester.path / "rules.txt").write_text(failing)


def waived_by_code(itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder,
                   failing: str, code: str, *args: str) -> pytest.RunResult:
    """The two rules with ``failing`` failing, one waiver of every expenses-agree item with
    ``code``, and a run given them and the JSON report r.json."""
    two_rules(pytester, campaign, failing)
    (pytester.path / "waivers.toml").write_text(toml_waiver(
        "expenses-agree", "*", extra=f'code = "{code}"'))
    return itera("--itera-waivers", "waivers.toml", "--itera-report", "r.json", *args)


def expenses_agree(pytester: pytest.Pytester) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON report r.json, validated, and its expenses-agree check."""
    data = validated(pytester)
    return data, next(c for c in data["checks"] if c["check"] == "expenses-agree")


def test_an_advisory_is_shown_under_the_verdict_and_in_every_report_without_failing(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    two_rules(pytester, campaign, "none")
    result = itera(GATE, "--itera-report", "r.json", "--itera-report", "r.md",
                   "--itera-report", "r.html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    expect(result, "campaign tiny-2026-11: ACCEPTED — */* checks",
           "  1 advisory (readings of text, not deciding; --itera-strict-text makes them "
           "decide): expenses-agree.receipt-words in expenses-agree: the receipt's words read "
           "as a quote for another campaign")
    data, check = expenses_agree(pytester)
    advisory, = data["advisories"]
    assert (advisory["nodeid"], advisory["code"], advisory["advisory"], advisory["waived"]) == (
        "out/manifest.json::expenses-agree", "expenses-agree.receipt-words", True, False)
    assert advisory["hint"] == "record issued_by; this reading only advises"
    assert (check["outcome"], check["findings"]) == ("passed", [])
    assert [a["code"] for a in check["advisories"]] == ["expenses-agree.receipt-words"]
    assert "Advisories: 1 advisory" in (pytester.path / "r.md").read_text()
    assert 'class="note advisories">1 advisory' in (pytester.path / "r.html").read_text()


@pytest.mark.parametrize("how", [("--itera-strict-text",), ("-o", "itera_strict_text=true")])
def test_strict_text_makes_the_advisory_decide(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, how: tuple[str, ...]
) -> None:
    two_rules(pytester, campaign, "none")
    result = itera(*how, "-k", "expenses")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    expect(result, "expenses-agree: 1 problem",
           "receipts/INV-1.txt: the receipt's words read as a quote for another campaign")
    assert "advisory (readings" not in result.stdout.str()  # it decided: no note


def test_a_waiver_by_code_waives_that_finding_alone(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = waived_by_code(itera, pytester, campaign, "both", "expenses-agree.receipt-*",
                            "-k", "expenses or waiver")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the rental rule still fails
    expect(result, "expenses-agree: 1 problem",
           "manifest.json $.budget: the rental rule fails",
           "waived: 1 finding (expenses-agree.receipt-date) — waived (findings "
           f"expenses-agree.receipt-*) by M. Reviewer until {LATER} (*waivers.toml #1): *")
    data, check = expenses_agree(pytester)
    assert check["outcome"] == "failed"
    assert [(f["code"], f["waived"]) for f in check["findings"]] == [
        ("expenses-agree.receipt-date", True), ("expenses-agree.rental", False)]
    assert data["verdict"] == "rejected"


@pytest.mark.one_mode("the waived outcome of a code waiver: the partial one above runs in every "
                      "xdist mode")
def test_an_item_whose_every_finding_is_waived_by_code_is_waived(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = waived_by_code(itera, pytester, campaign, "date", "expenses-agree.receipt-*", GATE)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    expect(result, "campaign tiny-2026-11: ACCEPTED WITH WAIVERS — */* checks passed, 1 waived")
    _, check = expenses_agree(pytester)
    assert (check["outcome"], check["waiver"]["code"]) == ("waived", "expenses-agree.receipt-*")
    assert [(f["code"], f["waived"]) for f in check["findings"]] == [
        ("expenses-agree.receipt-date", True)]


@pytest.mark.one_mode("reading the waivers file happens before any worker starts")
def test_a_waiver_s_code_is_read_and_a_blank_one_refused(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = waived_by_code(itera, pytester, campaign, "date", "  ", "-k", "expenses or waiver")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    expect(result, "*waivers[0]: waiver #1 has a blank code (leave it out to waive every "
           "finding of its items): it waives nothing")
