"""The rules of ``plan-frozen`` (pytest_itera/checks/contract/plan_frozen.py): each break refused,
with its honest twin, judged in process (tests/checks/judging.py); the ini pins and the reports'
note go through a pytest session (their wiring).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_itera.checks.model import Options
from pytest_itera.report import PLAN_INTEGRITY_NOTE
from tests.checks.campaigns import FROZEN, journal_opening, plan_digest, summary
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder, expect
from tests.runner import Itera

# -------------------------------------------------------------- plan-frozen


def test_plan_frozen_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, FROZEN))


def test_plan_edited_after_freezing(campaign: CampaignBuilder) -> None:
    campaign.write()
    plan = json.loads((campaign.root / "plan.json").read_text())
    plan["decision"]["threshold"] = 0.7  # moving the goalposts after the runs
    (campaign.root / "plan.json").write_text(json.dumps(plan, indent=2) + "\n")
    campaign.seal()
    expect_finding(judge(campaign, FROZEN, write=False), "plan-frozen.sha256",
                   where="manifest.json $.plan.sha256",
                   says="plan.json changed after it was frozen", fix="restore the plan as frozen")


def test_the_manifest_records_the_plan_under_another_name(campaign: CampaignBuilder) -> None:
    campaign.manifest["plan"]["path"] = "plans/plan.json"
    finding = expect_finding(judge(campaign, FROZEN), "plan-frozen.plan-path",
                             where="manifest.json $.plan.path",
                             says="the manifest records the plan as 'plans/plan.json'")
    assert finding.expected == "'plan.json'"


def test_the_journal_records_the_plan_as_frozen(campaign: CampaignBuilder) -> None:
    campaign.files["itera-journal.jsonl"] = journal_opening(campaign.plan)
    expect_no_finding(judge(campaign, FROZEN))


def test_a_plan_rewritten_with_its_manifest_record_is_caught_by_the_journal(
    campaign: CampaignBuilder,
) -> None:
    """R9: the manifest's own record was rewritten with the plan (a consistent lie); the
    journal's first line, written before any run, still holds the plan as frozen."""
    campaign.files["itera-journal.jsonl"] = journal_opening(campaign.plan)
    campaign.plan["decision"]["threshold"] = 0.7  # moving the goalposts after the runs
    found = judge(campaign, FROZEN)
    expect_no_finding(found, "plan-frozen.sha256")
    expect_finding(found, "plan-frozen.journal-sha256", where="itera-journal.jsonl:1",
                   says=["plan.json is not the plan the recorder froze",
                         "line 1 recorded its sha256 at 2026-11-20T08:00:00Z, before any run"],
                   fix="restore the plan as frozen")


def test_plan_sha256_option(campaign: CampaignBuilder) -> None:
    """--itera-plan-sha256 (or a notebook's Options) pins the plan from outside the campaign."""
    found = judge(campaign, FROZEN, options=Options(plan_sha256="ab" * 32))
    finding = expect_finding(found, "plan-frozen.pin-sha256", where="plan.json",
                             says="plan.json is not the plan given by --itera-plan-sha256")
    assert (finding.expected, finding.found) == ("ab" * 32, plan_digest(campaign))
    expect_no_finding(judge(campaign, FROZEN, options=Options(plan_sha256=plan_digest(campaign)),
                            write=False))


def test_a_malformed_plan_sha256_option_is_a_usage_error(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    assert itera("--itera-plan-sha256", "main").ret == pytest.ExitCode.USAGE_ERROR


def test_pins_for_other_campaigns_only(campaign: CampaignBuilder) -> None:
    found = judge(campaign, FROZEN, options=Options(other_pins=("elsewhere",)))
    finding = expect_finding(found, "plan-frozen.no-pin", where="plan.json",
                             says="itera_plan_sha256 pins no plan for this campaign")
    assert finding.found == "pins for 'elsewhere'"


# ---------------------------------------- first written in test_schedule_evidence.py


# ========================================================================== time


def _data_check_started_before(campaign: CampaignBuilder) -> None:
    campaign.manifest["runs"][1]["started_at"] = "2026-11-20T07:59:00Z"


def _control_ended_before(campaign: CampaignBuilder) -> None:
    """Without started_at, the end of a run still dates it."""
    for record in campaign.manifest["runs"]:
        del record["started_at"]
    campaign.run_record("control")["ended_at"] = "2026-11-21T10:00:00Z"
    campaign.plan["frozen_at"] = "2026-11-21T12:00:00Z"


def _stopped_before(campaign: CampaignBuilder) -> None:
    record = campaign.run_record("variant-a")
    record.pop("started_at")
    record.pop("ended_at")
    record.update(outcome="stopped", stop={"rule": "non-finite-loss", "reason": "NaN at step 3",
                                           "at": "2026-11-20T07:00:00Z"})


def _decided_before(campaign: CampaignBuilder) -> None:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "go", "text": "continue with every run", "at": "2026-11-19T18:00:00Z"}]


@pytest.mark.parametrize(
    ("breaks", "where", "says", "expected"),
    [
        (_data_check_started_before, "manifest.json $.runs[1].started_at",
         "run data-check started before the plan (and its stop rules) was frozen",
         ("at or after 2026-11-20T08:00:00+00:00", "2026-11-20T07:59:00+00:00")),
        (_control_ended_before, "manifest.json $.runs[0].ended_at",
         "run control ended before the plan (and its stop rules) was frozen",
         ("at or after 2026-11-21T12:00:00+00:00", "2026-11-21T10:00:00+00:00")),
        (_stopped_before, "manifest.json $.runs[3].stop.at",
         "run variant-a was stopped before the plan (and its stop rules) was frozen", None),
        (_decided_before, "manifest.json $.schedule.decisions[0].at",
         "decision 'go' was taken before the plan (and its stop rules) was frozen", None),
    ],
    ids=["run-started-before", "run-ended-before-without-started-at", "run-stopped-before",
         "decision-before"],
)
def test_a_moment_before_the_freeze_is_refused(
    campaign: CampaignBuilder, breaks: Callable[[CampaignBuilder], None], where: str, says: str,
    expected: tuple[str, str] | None,
) -> None:
    """Each moment before the freeze is its own finding (the case's, at its place)."""
    breaks(campaign)
    placed = [f for f in judge(campaign, FROZEN) if f.where == where]
    assert [f.code for f in placed] == ["plan-frozen.before-freeze"]
    assert says in placed[0].message
    if expected is not None:
        assert (placed[0].expected, placed[0].found) == expected


def test_moments_at_the_freeze_itself_pass(campaign: CampaignBuilder) -> None:
    campaign.run_record("control")["started_at"] = "2026-11-20T08:00:00Z"
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "go", "text": "continue with every run", "at": "2026-11-20T08:00:00Z"}]
    expect_no_finding(judge(campaign, FROZEN))


OTHER = "ab" * 32  # a sha256 that is not the plan's


# (the ini's pins, the command line, passes, the lines said): {digest} is the plan's sha256.
PINS = [
    *(pytest.param(f"{key}{{digest}}", (), True, (), id=f"ini-pins-the-plan[{key!r}]")
      for key in ("", "out = ", "tiny-2026-11=", "  out  =  ")),
    *(pytest.param(f"{key}{OTHER}", (), False, (
        f"plan.json: plan.json is not the plan pinned by itera_plan_sha256 ({origin})",
        f"    expected: {OTHER}", "    found:    {digest}"), id=f"ini-pins-another[{key!r}]")
      for key, origin in (("", "every campaign"), ("out=", "out"),
                          ("tiny-2026-11 = ", "tiny-2026-11"))),
    # A renamed campaign is not the pinned one: pins exist, none names it.
    pytest.param("elsewhere = {digest}", (), False, (
        "plan.json: itera_plan_sha256 pins no plan for this campaign (folder 'out', id "
        "'tiny-2026-11')", "    found:    pins for 'elsewhere'"), id="pins-for-others-only"),
    pytest.param(OTHER, ("--itera-plan-sha256", "{digest}"), True, (),
                 id="the-command-line-wins"),
]


@pytest.mark.parametrize(("pins", "args", "passes", "lines"), PINS)
def test_a_pinned_plan(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, pins: str,
    args: tuple[str, ...], passes: bool, lines: tuple[str, ...],
) -> None:
    """The pins of the judge's own ini (itera_plan_sha256), and --itera-plan-sha256 above
    them: the plan they pin passes (and the report's integrity note goes), another fails."""
    campaign.write()
    digest = plan_digest(campaign)
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {pins.format(digest=digest)}\n")
    result = itera(*(a.format(digest=digest) for a in args), check=FROZEN)
    result.assert_outcomes(**{"passed" if passes else "failed": 1})
    if passes and not args:
        assert "plan integrity rests" not in summary(result)
    expect(result, *(line.format(digest=digest) for line in lines))


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


def test_a_plan_that_cannot_be_hashed_is_not_passed_as_frozen(tmp_path: Path) -> None:
    """plan.json read as a document, then gone when its bytes are hashed (a folder changed
    while it is judged): no digest to compare, so the freeze is not proven. (Not the
    ``campaign`` fixture: it guards the folder against any change.)"""
    found = judge(CampaignBuilder(tmp_path / "out"), FROZEN,
                  meanwhile=lambda root: (root / "plan.json").unlink())
    expect_finding(found, "plan-frozen.unreadable", where="plan.json",
                   says="cannot hash plan.json")
