"""``python -m pytest_itera watch``: --once, --json, --now, --lead, following, bad input."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_itera.cli import main
from pytest_itera.core.campaign import schema
from pytest_itera.watch.follow import CLEAR, Follow, follow
from pytest_itera.watch.status import open_folder
from tests.watch.journal import iso, moments, played, write
from tests.watch.test_lot_forecast import DROPS, example_plan


def campaign(root: Path, *, slow: float = 1.0, close: bool = True, torn: str = "",
             upto: int | None = None) -> list[dict[str, Any]]:
    """An example-plan campaign folder with its played journal (cut after ``upto`` events)."""
    plan = example_plan()
    root.mkdir(parents=True)
    (root / "plan.json").write_text(json.dumps(plan, indent=2), "utf-8")
    digest = hashlib.sha256((root / "plan.json").read_bytes()).hexdigest()
    events = played(plan, drops=DROPS, slow={"training": slow}, close=close,
                    plan_sha256=digest)[:upto]
    write(root, events, torn=torn)
    return events


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["watch", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_on_track_exits_0_and_prints_a_line_per_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = campaign(tmp_path / "out")
    now = iso(moments(events)[6])
    code, out, _ = run(capsys, str(tmp_path / "out"), "--once", "--now", now, "--lead", "2")
    assert code == 0
    assert out.splitlines()[0].startswith(f"rings-width-2026 at {now}")
    assert "  control                  must" in out
    assert out.rstrip().endswith("on track")


def test_a_slowed_campaign_exits_1_naming_the_run_to_drop_and_the_retrieval_moment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = campaign(tmp_path / "out", slow=1.6)
    pilot_end = next(e["at"] for e in events if e["event"] == "accepted" and e["run"] == "pilot")
    code, out, _ = run(capsys, str(tmp_path / "out"), "--once", "--now", pilot_end,
                       "--lead", "2")
    assert code == 1
    warning = out.splitlines()[-1]
    assert warning.startswith("WARNING lot rtx4090-3d ends ")
    assert "drop variant-wide" in warning
    assert "start the retrieval by 2026-" in warning


def test_the_docs_show_what_watch_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/watch.md's status is this command's output, line for line."""
    from tests.runner import REPO

    campaign(tmp_path / "out", slow=1.6)
    code, out, _ = run(capsys, str(tmp_path / "out"), "--now", "2026-01-05T19:12:00Z",
                       "--lead", "2")
    assert code == 1
    docs = (REPO / "docs" / "watch.md").read_text("utf-8")
    shown = docs[docs.index("```text\n") + len("```text\n"):]
    assert shown[:shown.index("```")] == out


def test_json_follows_its_schema_at_every_event(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = campaign(tmp_path / "out", slow=1.6)
    validator = jsonschema.Draft202012Validator(schema("watch-status"))
    for moment in moments(events):
        code, out, _ = run(capsys, str(tmp_path / "out"), "--once", "--json", "--now",
                           iso(moment))
        status = json.loads(out)
        validator.validate(status)
        assert status["exit"] == code


def test_a_torn_last_line_is_said_and_left_as_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = campaign(tmp_path / "out", close=False, torn='{"event":"run-st', upto=12)
    before = tree(tmp_path / "out")
    code, out, _ = run(capsys, str(tmp_path / "out"), "--once", "--now", events[-1]["at"])
    assert code == 0
    assert "is torn (16 bytes): an interrupted write, not read" in out
    assert tree(tmp_path / "out") == before


def test_a_journal_of_another_campaign_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign(tmp_path / "out")
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    plan["campaign"] = "another"
    (tmp_path / "out" / "plan.json").write_text(json.dumps(plan), "utf-8")
    code, _, err = run(capsys, str(tmp_path / "out"), "--once")
    assert code == 4
    assert "is the journal of another campaign" in err


@pytest.mark.parametrize(("setup", "message"), [
    ("missing", "not a folder"),
    ("empty", "not a campaign folder (no plan.json)"),
    ("broken", "not a plan the campaign can follow"),
    ("damaged", "line 2 is not a journal event"),
])
def test_a_folder_that_is_not_a_campaign_is_told_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, message: str) -> None:
    root = tmp_path / "out"
    if setup == "damaged":
        campaign(root, upto=4)
        text = (root / "itera-journal.jsonl").read_text().splitlines()
        (root / "itera-journal.jsonl").write_text("\n".join([text[0], "{oops", *text[2:]]) + "\n")
    elif setup != "missing":
        root.mkdir()
    if setup == "broken":
        (root / "plan.json").write_text("{}")
    code, out, err = run(capsys, str(root), "--once")
    assert code == 4
    assert message in err
    assert "Traceback" not in out + err


def test_a_clock_going_backwards_in_the_journal_is_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "out"
    events = campaign(root, upto=8)
    late = {"event": "run-start", "run": "control",
            "at": iso(datetime.fromisoformat(events[1]["at"]) - timedelta(hours=5))}
    write(root, [*events, late])
    code, out, _ = run(capsys, str(root), "--once", "--now", events[-1]["at"])
    assert code == 0
    assert "the clock went backwards; it is read as the later moment" in out


def test_follow_judges_each_new_event_and_ends_on_the_closure(tmp_path: Path) -> None:
    root = tmp_path / "out"
    events = campaign(root, close=False, upto=3)
    everything = played(example_plan(), drops=DROPS, plan_sha256=events[0]["sha256"])
    written = [3]

    def sleep(_: float) -> None:  # each poll, the journal has one more event
        written[0] = min(written[0] + 1, len(everything))
        write(root, everything[:written[0]])

    out = io.StringIO()
    assert follow(open_folder(root), Follow(lead=Decimal(0), as_json=True), out,
                  clock=lambda: datetime.fromisoformat(everything[written[0] - 1]["at"]),
                  sleep=sleep) == 0
    judged = [json.loads(line) for line in out.getvalue().splitlines()]
    assert judged[-1]["closed"] is True
    assert len(judged) == len(everything) - 2
    assert not any(j["warning"] for j in judged)
    assert [j["events"] for j in judged] == list(range(3, len(everything) + 1))


def test_follow_ends_cleanly_on_ctrl_c_and_says_a_clock_going_backwards(
        tmp_path: Path) -> None:
    root = tmp_path / "out"
    events = campaign(root, close=False, upto=6)
    moment = datetime.fromisoformat(events[-1]["at"])
    clock = iter([moment, moment - timedelta(hours=1)])
    polls = iter([None])

    def sleep(_: float) -> None:
        if next(polls, "stop") == "stop":
            raise KeyboardInterrupt

    out = io.StringIO()
    assert follow(open_folder(root), Follow(lead=Decimal(0)), out, clock=lambda: next(clock),
                  sleep=sleep) == 0
    text = out.getvalue()
    assert "the system clock went backwards" in text
    assert text.endswith("watch: stopped (Ctrl-C)\n")


def test_on_a_terminal_the_status_is_redrawn_in_place_at_each_tick(tmp_path: Path) -> None:
    root = tmp_path / "out"
    events = campaign(root, close=False, upto=6)
    moment = datetime.fromisoformat(events[-1]["at"])
    ticks = iter([None, None])

    def sleep(_: float) -> None:
        if next(ticks, "stop") == "stop":
            raise KeyboardInterrupt

    out = io.StringIO()
    follow(open_folder(root), Follow(lead=Decimal(0), live=True), out, clock=lambda: moment,
           sleep=sleep)
    screens = out.getvalue().split(CLEAR)
    assert screens[0] == ""
    assert len(screens) == 4  # each tick redraws, even without a new event
    assert all(s.startswith(f"rings-width-2026 at {iso(moment)}") for s in screens[1:])


def test_next_plan_from_a_journal_says_why_the_draft_does_not_pass_the_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No manifest: the observed hours are the journal's; 1.6 times slower, the draft's 89 h
    do not fit the 72 h window, and the gate's findings say so."""
    campaign(tmp_path / "out", slow=1.6)
    before = tree(tmp_path / "out")
    assert main(["next-plan", str(tmp_path / "out"), "--to", str(tmp_path / "draft")]) == 1
    out, err = capsys.readouterr()
    assert "wrote " in out
    assert "the draft does not pass the plan gate:" in err
    assert "plan-schedule-fits: the schedule takes 89 h, 17 h more than the 72 h window" in err
    assert tree(tmp_path / "out") == before
    plan = json.loads((tmp_path / "draft" / "plan.json").read_text())
    hours = {s["id"]: s["hours"] for s in plan["schedule"]["steps"]}
    assert hours["train-pilot"] == 3.75  # 3.2 h observed, +10 %, to the quarter hour
    assert hours["setup"] == 2  # not measured: planned hours kept
    notes = (tmp_path / "draft" / "uncertainties.md").read_text()
    assert "| train-pilot | 2 | 3.2 | 3.75 |" in notes
    assert "step setup: an estimate not measured" in notes
