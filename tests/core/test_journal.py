"""The recorder's journal: a campaign survives a killed process and a torn write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_itera.core.journal import JOURNAL_FILE, Gap, Journal, JournalError, gaps
from pytest_itera.record import CampaignRecorder, JournalWarning, RecordError
from tests import factory as F
from tests.factory import journal_events
from tests.recorded import record, write_files
from tests.runner import REPO, Itera


def events(root: Path) -> list[dict[str, object]]:
    return journal_events(root / JOURNAL_FILE)


def started(tmp_path: Path) -> CampaignRecorder:
    """A campaign with its plan frozen and the control logging."""
    files = F.default_files_v2()
    rec = CampaignRecorder(tmp_path / "camp")
    for relpath, data in files.items():
        rec.write_bytes(relpath, data)
    plan = F.default_plan_v2(files)
    del plan["frozen_at"]
    rec.freeze_plan(plan)
    control = rec.run("control")
    control.start()
    control.log(1, loss=1.0)
    control.log(2, loss=float("nan"))
    rec.step("setup").start()
    return rec


def test_a_campaign_killed_mid_run_continues_from_its_journal_and_is_accepted(
    tmp_path: Path, itera: Itera
) -> None:
    root = tmp_path / "camp"
    files = write_files(tmp_path / "files")  # made here once: the children import no torch
    command = [sys.executable, "-m", "tests.recorded", str(root), "--files", str(files)]
    child = subprocess.Popen([*command, "--pause-at", "3"], cwd=REPO,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "paused"
    finally:
        os.kill(child.pid, signal.SIGKILL)  # no cleanup, no atexit: the machine is gone
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    before = events(root)
    assert before[-1] == {"event": "log", "run": "control", "step": 3, "values": {"loss": 0.6}}
    assert not (root / "manifest.json").exists()

    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    after = events(root)
    assert after[: len(before)] == before  # continued, nothing rewritten
    steps = [json.loads(line) for line in (root / "runs/control/measurements.jsonl")
             .read_text().splitlines()]
    assert [p["step"] for p in steps if "step" in p] == [1, 2, 3, 4]  # nothing lost
    result = itera(campaign=str(root))
    result.stdout.fnmatch_lines(["*campaign tiny-2026-11: ACCEPTED*"])
    assert result.ret == 0


def test_reopening_rebuilds_the_same_state(tmp_path: Path) -> None:
    rec = started(tmp_path)
    rec.decide("after-pilot", "variant-a is dropped", drops=["variant-a"])
    again = CampaignRecorder(rec.root)
    assert again.plan == rec.plan
    assert again.plan_sha256 == rec.plan_sha256
    assert again.run("control").record == rec.run("control").record
    assert again.run("control").series("loss")[0] == (1, 1.0)
    assert again.run("variant-a").outcome == "dropped"
    assert again.torn is None
    # the running step is still running: it can be ended by the new process
    assert again.step("setup").end() >= 0


def test_a_torn_last_line_is_reported_cut_off_and_recorded(tmp_path: Path) -> None:
    rec = started(tmp_path)
    journal = rec.root / JOURNAL_FILE
    whole = journal.read_bytes()
    with journal.open("ab") as handle:
        handle.write(b'{"event":"log","run":"control","st')  # the power went here
    with pytest.warns(JournalWarning, match=r"itera-journal.jsonl line \d+ is torn"):
        again = CampaignRecorder(rec.root)
    assert again.torn is not None
    assert again.torn.text == '{"event":"log","run":"control","st'
    assert journal.read_bytes().startswith(whole)
    last = events(rec.root)[-1]
    assert last["event"] == "torn"
    assert last["text"] == again.torn.text
    again.run("control").log(3, loss=0.5)  # appends after a whole line
    assert events(rec.root)[-1]["step"] == 3


def test_a_damaged_line_before_the_end_is_refused(tmp_path: Path) -> None:
    rec = started(tmp_path)
    journal = rec.root / JOURNAL_FILE
    lines = journal.read_bytes().split(b"\n")
    lines[2] = b"garbage"
    journal.write_bytes(b"\n".join(lines))
    with pytest.raises(JournalError, match="line 3 is not a journal event"):
        CampaignRecorder(rec.root)


def test_a_journal_of_another_plan_is_refused(tmp_path: Path) -> None:
    rec = started(tmp_path)
    plan = rec.root / "plan.json"
    plan.write_text(plan.read_text().replace("tiny-2026-11", "other"))
    with pytest.raises(RecordError, match="is not the plan the journal froze"):
        CampaignRecorder(rec.root)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda rec: rec.step("no-such-step"), "step 'no-such-step' is not in the plan"),
        (lambda rec: rec.step("load-data").end(), "step 'load-data' was never started"),
        (lambda rec: rec.step("setup").start(), "step 'setup' is already running"),
        (lambda rec: rec.run("control").start(), "run 'control' already started"),
        (lambda rec: rec.run("control").log(1, loss=2.0), "step 1 logged after step 2"),
        (lambda rec: rec.decide("d", "drop it", drops=["control"]),
         "run 'control' is a must run"),
        (lambda rec: rec.run("control").stop("non-finite-loss", "see /tmp/x.log"),
         "points into the temporary folder"),
    ],
)
def test_a_refused_event_leaves_no_journal_line(tmp_path: Path, call: object,
                                                message: str) -> None:
    rec = started(tmp_path)
    before = (rec.root / JOURNAL_FILE).read_bytes()
    with pytest.raises(RecordError, match=message):
        call(rec)  # type: ignore[operator]
    assert (rec.root / JOURNAL_FILE).read_bytes() == before


def test_a_resumed_run_rewinds_then_relogs(tmp_path: Path) -> None:
    rec = started(tmp_path)
    control = rec.run("control")
    control.log(1, loss=1.0)  # the same point again: nothing new
    control.rewind(1)
    control.log(2, loss=0.8)
    again = CampaignRecorder(rec.root)
    assert again.run("control").series("loss") == [(1, 1.0), (2, 0.8)]


def test_appends_are_whole_lines(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path)
    journal.append({"event": "x", "text": "é\n"})
    assert (tmp_path / JOURNAL_FILE).read_bytes().count(b"\n") == 1
    assert Journal.open(tmp_path).events == [{"event": "x", "text": "é\n"}]


def test_a_campaign_recorded_without_hand_computed_numbers_is_accepted(
    tmp_path: Path, itera: Itera, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = record(tmp_path / "camp")
    assert closed.verdict == "accepted", "\n".join(p.render() for p in closed.findings)
    assert "ACCEPTED" in capsys.readouterr().out
    manifest = json.loads(closed.read_text())
    assert manifest["budget"]["cost_per_deliverable"] == "47.14"
    assert manifest["schedule"]["observed_hours"] == 48
    assert JOURNAL_FILE in {f["path"] for f in manifest["files"]}
    result = itera(campaign=str(tmp_path / "camp"))
    result.stdout.fnmatch_lines(["*campaign tiny-2026-11: ACCEPTED*"])
    with pytest.raises(RecordError, match="closed"):
        CampaignRecorder(tmp_path / "camp").run("control").log(9, loss=0.1)


def test_the_gaps_are_the_journals_interruptions_and_reopenings_in_order(tmp_path: Path) -> None:
    """Read from the events' fields (core.journal.gaps), never from a sentence; a torn line or
    an event of another kind is no gap, and no journal has none."""
    assert gaps(tmp_path) == ()
    events = [
        {"event": "step", "step": "train", "hours": 1.0,
         "interrupted": {"since": "2026-11-20T10:00:00Z", "until": "2026-11-20T12:00:00Z"}},
        {"event": "step", "step": "eval", "hours": 0.5},
        {"event": "resumed", "runs": ["control", "variant-a"],
         "interrupted": {"since": "2026-11-21T01:00:00Z", "until": "2026-11-21T02:00:00Z"}},
        {"event": "reopen", "reason": "a missing shard", "at": "2026-11-22T09:00:00Z"},
    ]
    (tmp_path / JOURNAL_FILE).write_bytes(
        b"".join(json.dumps(e).encode() + b"\n" for e in events) + b'{"event": "reopen", "re')
    assert gaps(tmp_path) == (
        Gap("interrupted", "step train", "2026-11-20T10:00:00Z", "2026-11-20T12:00:00Z"),
        Gap("interrupted", "runs control, variant-a", "2026-11-21T01:00:00Z",
            "2026-11-21T02:00:00Z"),
        Gap("reopened", "a missing shard", "2026-11-22T09:00:00Z"),
    )
