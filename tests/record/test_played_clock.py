"""Issue 35, parts 4 and 5: the clock is evidence, and continuing is a documented API.

A campaign recorded on an injected ``clock=`` (a played clock: the guides' CPU run that plays
each step's planned hours, a test's fixed clock) has its own verdict, PLAYED CLOCK, shown on
the verdict line and in every report, and it never passes ``--itera-require-accepted``. A
script continuing a campaign asks ``rec.last_moment()`` and ``rec.finished_steps``; timing a
step the journal already closed is refused at once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pytest_itera.cli import main
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.record import CampaignRecorder, RecordError
from pytest_itera.report import render_html, render_markdown, to_json
from pytest_itera.report.verify import check_campaign
from tests import factory as F
from tests import recorded
from tests.factory import copied_without, expect
from tests.plugin.test_report import validate_report
from tests.runner import Itera

PLAYED_LINE = ("campaign tiny-2026-11: PLAYED CLOCK — {n}/{n} checks passed on a played clock: "
               "the observed hours were not measured; a campaign on a played clock is never "
               "ACCEPTED")
CLOCK_NOTE = ("played clock: the observed hours were played, not measured (the recorder read "
              "an injected clock=, itera-journal.jsonl line 1); on the real clock, leave "
              "clock= out")


def played_now() -> datetime:
    """A test clock: an injected callable, whatever time it gives (here, the real one)."""
    return datetime.now(UTC)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/recorded.py's campaign, recorded on an injected clock."""
    root = tmp_path_factory.mktemp("played") / "camp"
    return recorded.record(root, check=False, clock=played_now).manifest.parent


def events(root: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (root / JOURNAL_FILE).read_text().splitlines()]


def test_a_campaign_on_a_played_clock_is_never_accepted(
        played: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = events(played)[0]
    assert (first["event"], first["clock"]) == ("plan", "played")
    assert json.loads((played / "manifest.json").read_text())["clock"] == "played"
    verdict = check_campaign(played)
    assert verdict.verdict == "played clock", "\n".join(p.render() for p in verdict.findings)
    assert not verdict.accepted
    n = len(verdict.report.checks)
    lines = verdict.lines()
    assert lines[0] == PLAYED_LINE.format(n=n)
    assert lines[1] == "  " + CLOCK_NOTE
    # every report says it
    data = to_json([verdict.report])
    assert (data["verdict"], data["played_clock"]) == ("played clock",
                                                       "itera-journal.jsonl line 1")
    validate_report(data)
    assert f"Clock: {CLOCK_NOTE}" in render_markdown([verdict.report])
    assert "played clock: the observed hours were played, not measured" in render_html(
        [verdict.report])
    # python -m pytest_itera check: exit 0 only when ACCEPTED
    assert main(["check", str(played)]) == 1
    assert PLAYED_LINE.format(n=n) in capsys.readouterr().out


def test_a_real_clock_says_nothing_of_a_clock(tmp_path: Path) -> None:
    closed = recorded.record(tmp_path / "camp", check=False)
    assert events(closed.manifest.parent)[0]["clock"] == "real"
    assert "clock" not in json.loads(closed.manifest.read_text())
    assert check_campaign(closed.manifest.parent).report.played_clock is None


def test_the_gate_refuses_a_played_clock_unless_told(played: Path, itera: Itera) -> None:
    result, data = itera.reported(played)
    assert result.ret == 0  # every check passed
    assert data["verdict"] == "played clock"
    expect(result, PLAYED_LINE.format(n="*"), "  " + CLOCK_NOTE)
    gate = itera("--itera-require-accepted", campaign=str(played))
    assert gate.ret == pytest.ExitCode.TESTS_FAILED
    expect(gate, "*--itera-require-accepted: exit status 1: campaign tiny-2026-11: PLAYED "
           "CLOCK — * checks passed on a played clock: the observed hours were not measured*")
    told = itera("--itera-require-accepted", "--itera-accept-played-clock",
                 campaign=str(played))
    assert told.ret == 0, told.stdout.str()
    expect(told, PLAYED_LINE.format(n="*"))  # still said


def test_dropping_the_manifests_mark_is_refused_and_the_journal_still_decides(
        played: Path, tmp_path: Path) -> None:
    verdict = check_campaign(copied_without(played, tmp_path / "camp", "clock"))
    assert verdict.verdict == "rejected"
    assert verdict.report.played_clock == "itera-journal.jsonl line 1"
    [found] = [p.finding for p in verdict.findings if p.finding.code == "journal-agrees.clock"]
    assert found.message == ("itera-journal.jsonl records this campaign on a played clock (an "
                             "injected clock=), but the manifest does not say so")
    assert found.where == "itera-journal.jsonl:1"


def test_the_manifests_mark_alone_decides() -> None:
    from pytest_itera.report.model import CheckResult, verdict

    passed = [CheckResult("manifest", None, "passed", "", "camp/manifest.json::manifest")]
    assert verdict(passed, collected=1, fast=False) == "accepted"
    assert verdict(passed, collected=1, fast=False, played_clock=True) == "played clock"
    assert verdict(passed, collected=1, fast=False, played_clock=True,
                   rehearsal=True) == "rehearsed"


# ------------------------------------------------------------------ continuing

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


class Played:
    """A played clock that moves only when told, like the guides'."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def begun(root: Path, clock: Played | None) -> CampaignRecorder:
    files = F.default_files_v2()
    rec = CampaignRecorder(root, clock=clock)
    for relpath, data in files.items():
        rec.write_bytes(relpath, data)
    plan = F.default_plan_v2(files)
    del plan["frozen_at"]
    rec.freeze_plan(plan)
    return rec


def test_a_campaign_killed_on_a_played_clock_continues_where_its_journal_ends(
        tmp_path: Path) -> None:
    clock = Played(T0)
    rec = begun(tmp_path / "camp", clock)
    with rec.step("setup"):
        clock.now += timedelta(hours=2)
    rec.step("load-data").start()
    clock.now += timedelta(hours=1)  # the work, played; then the process is killed
    del rec

    fresh = Played(T0)  # a new process: its played clock starts again
    again = CampaignRecorder(tmp_path / "camp", clock=fresh)
    assert again.last_moment() == T0 + timedelta(hours=2)  # load-data's start
    assert dict(again.finished_steps) == {"setup": Decimal("2")}
    with pytest.raises(RecordError, match=r"step 'load-data' resumes at "
                       r"2026-11-20T08:00:00\+00:00, before the last moment its journal "
                       r"records \(2026-11-20T10:00:00\+00:00\); give a later time: "
                       r"rec\.last_moment\(\) is the last moment the journal records"):
        again.step("load-data").start()
    last = again.last_moment()
    assert last is not None
    fresh.now = last  # continue where the journal ends
    again.step("load-data").start()  # resumes it: the interruption is journaled
    fresh.now += timedelta(hours=2)
    again.step("load-data").end()
    assert dict(again.finished_steps) == {"setup": Decimal("2"), "load-data": Decimal("2")}
    [gap] = again.interruptions
    assert (gap.step, gap.hours) == ("load-data", Decimal("0"))  # played: no time passed
    assert again.played_clock
    assert [e["event"] for e in events(again.root)].count("clock") == 0  # line 1 says it


def test_a_played_clock_continuing_a_real_clock_journal_is_journaled(tmp_path: Path) -> None:
    rec = begun(tmp_path / "camp", None)
    rec.step("setup", hours=2)
    assert not rec.played_clock
    again = CampaignRecorder(rec.root, clock=Played(datetime.now(UTC)))
    assert again.played_clock
    again.step("load-data", hours=2)
    journal = events(rec.root)
    assert journal[0]["clock"] == "real"
    assert [e["event"] for e in journal[-2:]] == ["clock", "step"]
    assert journal[-2]["clock"] == "played"
    assert CampaignRecorder(rec.root).played_clock  # the campaign stays played


def test_timing_a_step_the_journal_closed_is_refused_at_once(tmp_path: Path) -> None:
    rec = begun(tmp_path / "camp", None)
    rec.step("setup").start(at=T0).end(at=T0 + timedelta(hours=2))
    message = ("step 'setup' is already timed: itera-journal.jsonl closed it with 2 h of "
               "observed hours; timing it again would add to them. A script that continues a "
               "campaign skips the steps the journal finished: `if 'setup' not in "
               "rec.finished_steps: ...` (rec.finished_steps: each closed step and its hours)")
    with pytest.raises(RecordError) as refused:
        rec.step("setup")
    assert str(refused.value) == message
    again = CampaignRecorder(rec.root)  # a continuing process: the journal closed it
    with pytest.raises(RecordError, match="step 'setup' is already timed"):
        again.step("setup", hours=1)
    held = again.step("load-data")
    held.start(at=T0).end(at=T0 + timedelta(hours=1))
    with pytest.raises(RecordError, match="step 'load-data' is already timed"):
        held.start(at=T0 + timedelta(hours=2))  # a timer kept and started again
    assert dict(again.observed_hours) == {"setup": Decimal("2"), "load-data": Decimal("1")}
