"""The rules of ``plan-frozen`` (pytest_itera/checks/contract/plan_frozen.py): each break refused,
with its honest twin.
"""
from __future__ import annotations

import json

import pytest

from pytest_itera.report import PLAN_INTEGRITY_NOTE
from tests.checks.campaigns import FROZEN, journal_opening, plan_digest, selecting, summary
from tests.factory import CampaignBuilder, expect
from tests.runner import Itera

# ---------------------------------------- first written in test_contract_checks.py


# -------------------------------------------------------------- plan-frozen


def test_plan_frozen_passes(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    itera(*selecting("plan-frozen")).assert_outcomes(passed=1)


def test_plan_edited_after_freezing(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    plan = json.loads((campaign.root / "plan.json").read_text())
    plan["decision"]["threshold"] = 0.7  # moving the goalposts after the runs
    (campaign.root / "plan.json").write_text(json.dumps(plan, indent=2) + "\n")
    campaign.seal()
    result = itera(*selecting("plan-frozen"))
    result.assert_outcomes(failed=1)
    expect(
        result,
        "manifest.json $.plan.sha256: plan.json changed after it was frozen*",
        "    expected: *",
        "    found:    *",
        "    fix:      restore the plan as frozen*",
    )


def test_the_journal_records_the_plan_as_frozen(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["itera-journal.jsonl"] = journal_opening(campaign.plan)
    campaign.write()
    itera(*selecting("plan-frozen")).assert_outcomes(passed=1)


def test_a_plan_rewritten_with_its_manifest_record_is_caught_by_the_journal(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """R9: the manifest's own record was rewritten with the plan (a consistent lie); the
    journal's first line, written before any run, still holds the plan as frozen."""
    campaign.files["itera-journal.jsonl"] = journal_opening(campaign.plan)
    campaign.plan["decision"]["threshold"] = 0.7  # moving the goalposts after the runs
    campaign.write()
    result = itera(*selecting("plan-frozen"))
    result.assert_outcomes(failed=1)
    expect(
        result,
        "itera-journal.jsonl:1: plan.json is not the plan the recorder froze: "
        "itera-journal.jsonl line 1 recorded its sha256 at 2026-11-20T08:00:00Z, before any run",
        "    fix:      restore the plan as frozen*",
    )


def test_plan_sha256_option(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    result = itera(*selecting("plan-frozen"), "--itera-plan-sha256", "ab" * 32)
    result.assert_outcomes(failed=1)
    expect(result, "plan.json: plan.json is not the plan given by --itera-plan-sha256")
    bad = itera("--itera-plan-sha256", "main")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_run_started_before_the_plan_was_frozen(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["runs"][1]["started_at"] = "2026-11-20T07:59:00Z"
    campaign.write()
    result = itera(*selecting("plan-frozen"))
    expect(
        result,
        "manifest.json $.runs[1].started_at: "
        "run data-check started before the plan (and its stop rules) was frozen",
        "    expected: at or after 2026-11-20T08:00:00+00:00",
    )


# ---------------------------------------- first written in test_schedule_evidence.py


# ========================================================================== time


def test_a_plan_frozen_after_a_run_ended_is_refused_without_started_at(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    for record in campaign.manifest["runs"]:
        del record["started_at"]
    campaign.run_record("control")["ended_at"] = "2026-11-21T10:00:00Z"
    campaign.plan["frozen_at"] = "2026-11-21T12:00:00Z"
    itera.fails(
        campaign, FROZEN,
        "manifest.json $.runs[0].ended_at: run control ended before the plan (and its stop "
        "rules) was frozen",
        "    expected: at or after 2026-11-21T12:00:00+00:00",
        "    found:    2026-11-21T10:00:00+00:00",
    )


def test_a_plan_frozen_after_a_run_was_stopped_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    record = campaign.run_record("variant-a")
    record.pop("started_at")
    record.pop("ended_at")
    record.update(outcome="stopped", stop={"rule": "non-finite-loss", "reason": "NaN at step 3",
                                           "at": "2026-11-20T07:00:00Z"})
    itera.fails(campaign, FROZEN, "manifest.json $.runs[3].stop.at: run variant-a was "
                "stopped before the plan (and its stop rules) was frozen")


def test_a_decision_dated_before_the_plan_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "go", "text": "continue with every run", "at": "2026-11-19T18:00:00Z"}]
    itera.fails(campaign, FROZEN, "manifest.json $.schedule.decisions[0].at: decision 'go' "
                "was taken before the plan (and its stop rules) was frozen")


def test_moments_at_the_freeze_itself_pass(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.run_record("control")["started_at"] = "2026-11-20T08:00:00Z"
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "go", "text": "continue with every run", "at": "2026-11-20T08:00:00Z"}]
    itera.passes(campaign, FROZEN)


@pytest.mark.parametrize("key", ["", "out = ", "tiny-2026-11=", "  out  =  "])
def test_an_ini_pin_of_the_frozen_plan_passes_and_removes_the_note(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, key: str
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {key}{plan_digest(campaign)}\n")
    result = itera(check=FROZEN)
    result.assert_outcomes(passed=1)
    assert "plan integrity rests" not in summary(result)


@pytest.mark.parametrize(("key", "origin"), [("", "every campaign"), ("out=", "out"),
                                             ("tiny-2026-11 = ", "tiny-2026-11")])
def test_an_ini_pin_of_another_plan_fails(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, key: str, origin: str
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {key}{'ab' * 32}\n")
    result = itera(check=FROZEN)
    result.assert_outcomes(failed=1)
    expect(
        result,
        f"plan.json: plan.json is not the plan pinned by itera_plan_sha256 ({origin})",
        f"    expected: {'ab' * 32}",
        f"    found:    {plan_digest(campaign)}",
    )


def test_ini_pins_for_other_campaigns_only_fail(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """A renamed campaign is not the pinned one: pins exist, none names it."""
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    elsewhere = {plan_digest(campaign)}\n")
    result = itera(check=FROZEN)
    result.assert_outcomes(failed=1)
    expect(result, "plan.json: itera_plan_sha256 pins no plan for this campaign (folder 'out', "
           "id 'tiny-2026-11')", "    found:    pins for 'elsewhere'")


def test_the_command_line_pin_wins_over_the_ini(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 = {'ab' * 32}\n")
    result = itera("--itera-plan-sha256", plan_digest(campaign), check=FROZEN)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("line", ["main", "out = main", "= " + "ab" * 32])
def test_a_malformed_ini_pin_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, line: str
) -> None:
    campaign.write()
    pytester.makeini(f"[pytest]\nitera_plan_sha256 = {line}\n")
    result = itera(check=FROZEN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*itera_plan_sha256: *"])


def test_without_a_pin_every_report_notes_where_integrity_rests(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--itera-report", "r.json", "--itera-report", "r.md",
                   "--itera-report", "r.html", check=FROZEN)
    result.assert_outcomes(passed=1)  # a note, not a failure
    assert f"  note: {PLAN_INTEGRITY_NOTE}" in summary(result).splitlines()
    written = json.loads((pytester.path / "r.json").read_text())
    assert PLAN_INTEGRITY_NOTE in written["notes"]
    assert f"Note: {PLAN_INTEGRITY_NOTE}" in (pytester.path / "r.md").read_text()
    assert "plan integrity rests on the manifest&#x27;s own record" in (
        pytester.path / "r.html").read_text()


def test_with_a_pin_no_report_carries_the_note(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--itera-plan-sha256", plan_digest(campaign),
                   "--itera-report", "r.json", "--itera-report", "r.md", check=FROZEN)
    result.assert_outcomes(passed=1)
    assert "plan integrity rests" not in summary(result)
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    assert not [note for note in notes if "plan integrity" in note], notes
    assert "plan integrity rests" not in (pytester.path / "r.md").read_text()
