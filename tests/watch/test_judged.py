"""What ``watch`` judges of an open campaign besides the forecast: the stop rules on the
series so far, the checkpoints already saved (reloaded for real, once per content), the
predictions already written and the times that do not fit; nothing written into the folder."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_itera.cli import main
from pytest_itera.core.campaign import schema
from pytest_itera.watch.follow import Follow, follow
from pytest_itera.watch.judged import Judged
from pytest_itera.watch.status import judge, open_folder, render, verdict
from tests.watch.journal import write
from tests.watch.test_watch_cli import campaign

STATUS = jsonschema.Draft202012Validator(schema("watch-status"))
CONTROL_SAVED = 10  # the played journal's first 10 events: control runs, 3 saves of last.pt


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and every file's and folder's mtime: what watch leaves as it is."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else b"",
                                             p.stat().st_mtime_ns)
            for p in sorted([root, *root.rglob("*")])}


def logs(run: str, losses: list[float | str]) -> list[dict[str, Any]]:
    return [{"event": "log", "run": run, "step": i, "values": {"loss": v}}
            for i, v in enumerate(losses)]


@pytest.fixture(scope="module")
def judged() -> Iterator[Judged]:
    """One reload server for the module's tests, as for a whole watch."""
    with Judged() as found:
        yield found


def open_campaign(root: Path, extra: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The example plan's campaign while control runs, with ``extra`` events after."""
    events = [*campaign(root, close=False, upto=CONTROL_SAVED), *extra]
    write(root, events)
    return events


def test_a_stop_rule_the_journal_series_triggers_is_said_with_its_step_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "out"
    events = open_campaign(root, logs("control", [2.0, 1.5, "NaN", 1.0]))
    before = snapshot(root)
    code = main(["watch", str(root), "--once", "--now", events[CONTROL_SAVED - 1]["at"]])
    out = capsys.readouterr().out
    assert code == 1
    line = CONTROL_SAVED + 3  # the NaN point's journal line
    assert (f"  stop rule non-finite-loss (non_finite_loss) fires on control at step 2 "
            f"(itera-journal.jsonl:{line}): its 'loss' series is NaN at step 2; the journal "
            "records no stop yet") in out.splitlines()
    assert snapshot(root) == before


def test_a_finite_series_fires_nothing_and_a_recorded_stop_is_not_said_twice(
        tmp_path: Path) -> None:
    root = tmp_path / "out"
    open_campaign(root, logs("control", [2.0, 1.5]))
    fc = judge(open_folder(root), datetime.fromisoformat("2026-01-06T02:00:00Z"))
    assert fc.facts.rules == ()
    stopped = [*logs("control", [2.0, "NaN"]),
               {"event": "stopped", "run": "control", "rule": "non-finite-loss",
                "reason": "NaN", "step": 1, "at": "2026-01-06T01:30:00Z"}]
    open_campaign(tmp_path / "again", stopped)
    fc = judge(open_folder(tmp_path / "again"), datetime.fromisoformat("2026-01-06T02:00:00Z"))
    assert fc.facts.rules == ()
    assert [r.run for r in fc.rules] == ["control"]  # the journal's stop, said once


def test_a_rewind_forgets_the_points_trained_again(tmp_path: Path) -> None:
    root = tmp_path / "out"
    open_campaign(root, [*logs("control", [2.0, "NaN"]),
                         {"event": "rewind", "run": "control", "step": 0},
                         {"event": "log", "run": "control", "step": 1, "values": {"loss": 1.2}}])
    fc = judge(open_folder(root), datetime.fromisoformat("2026-01-06T02:00:00Z"))
    assert fc.facts.rules == ()


def test_a_measurements_file_the_script_writes_is_read_for_its_rules(
        tmp_path: Path, judged: Judged) -> None:
    root = tmp_path / "out"
    open_campaign(root, [{"event": "measurements", "run": "control",
                          "path": "runs/control/measurements.jsonl"}])
    folder = open_folder(root)
    now = datetime.fromisoformat("2026-01-06T02:00:00Z")
    fc = judge(folder, now, judged=judged)
    assert fc.facts.rules == ()
    assert "run control's measurements runs/control/measurements.jsonl is not in the " \
        "campaign folder yet" in " ".join(fc.notes)
    (root / "runs" / "control").mkdir(parents=True)
    (root / "runs/control/measurements.jsonl").write_text(
        '{"step": 0, "loss": 2.0}\n{"step": 1, "loss": "Infinity"}\n')
    fc = judge(folder, now, judged=judged)
    assert [(r.run, r.step, r.where) for r in fc.facts.rules] == [
        ("control", 1, "runs/control/measurements.jsonl:2")]
    assert verdict(fc) == 1


def test_each_saved_checkpoint_is_reloaded_once_and_one_that_does_not_reload_is_said(
        tmp_path: Path, judged: Judged) -> None:
    from tests.checkpoints import general_checkpoint

    root = tmp_path / "out"
    open_campaign(root)
    (root / "runs" / "control").mkdir(parents=True)
    general_checkpoint(root / "runs" / "control", name="last.pt")
    folder = open_folder(root)
    now = datetime.fromisoformat("2026-01-06T02:00:00Z")
    before, reloads = snapshot(root), judged.reloads
    fc = judge(folder, now, judged=judged)
    assert [(c.path, c.state, c.must) for c in fc.facts.checkpoints] == [
        ("runs/control/last.pt", "reloads", True)]
    assert verdict(fc) == 0
    assert "  checkpoints: 1 reload" in render(fc).splitlines()
    judge(folder, now, judged=judged)  # a re-judgement: the unchanged file is not reloaded
    assert judged.reloads == reloads + 1
    assert snapshot(root) == before
    (root / "runs/control/last.pt").write_bytes(b"not a checkpoint, cut by a full disk")
    fc = judge(folder, now, judged=judged)
    assert judged.reloads == reloads + 2  # a new content: reloaded once more
    [fault] = fc.facts.checkpoints
    assert fault.state == "fails"
    assert fault.cause is not None
    assert fault.cause.startswith("runs/control/last.pt: ")
    assert verdict(fc) == 1
    assert f"  checkpoint runs/control/last.pt (control, must) does not reload: {fault.cause}" \
        in render(fc).splitlines()
    STATUS.validate(json.loads(render(fc, as_json=True)))


def test_a_checkpoint_no_longer_in_the_folder_is_said_missing_not_off_track(
        tmp_path: Path, judged: Judged) -> None:
    root = tmp_path / "out"
    open_campaign(root)
    fc = judge(open_folder(root), datetime.fromisoformat("2026-01-06T02:00:00Z"),
               judged=judged)
    assert [c.state for c in fc.facts.checkpoints] == ["missing"]
    assert verdict(fc) == 0


def _corpus(root: Path, ids: range) -> None:
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    (root / "corpus/rings-600-v1.jsonl").write_text(
        "".join(json.dumps({"id": f"r{i}", "text": "x"}) + "\n" for i in ids))


def test_predictions_already_written_are_judged_against_the_frozen_corpus(
        tmp_path: Path, judged: Judged) -> None:
    root = tmp_path / "out"
    open_campaign(root, [{"event": "predictions", "run": "pilot",
                          "path": "runs/pilot/predictions.jsonl", "sha256": "0" * 64}])
    _corpus(root, range(600))
    (root / "runs" / "pilot").mkdir(parents=True)
    (root / "runs/pilot/predictions.jsonl").write_text(
        "".join(json.dumps({"id": f"r{i}", "label": 1}) + "\n" for i in range(598)))
    folder = open_folder(root)
    now = datetime.fromisoformat("2026-01-06T02:00:00Z")
    fc = judge(folder, now, judged=judged)
    [seen] = fc.facts.predictions
    assert seen.problems == ("predictions miss 2 IDs of the 600 corpus IDs",)
    assert ("  predictions runs/pilot/predictions.jsonl (pilot): predictions miss 2 IDs of "
            "the 600 corpus IDs") in render(fc).splitlines()
    assert verdict(fc) == 0  # advisory: the checks judge it at closure
    with (root / "runs/pilot/predictions.jsonl").open("a") as handle:
        handle.write('{"id": "r598"}\n{"id": "r599"}\n')
    fc = judge(folder, now, judged=judged)
    assert fc.facts.predictions[0].covers
    assert "  predictions cover the frozen corpus: pilot" in render(fc).splitlines()


def test_times_that_do_not_fit_the_plan_are_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign(tmp_path / "out", slow=1.6, close=False, upto=CONTROL_SAVED)
    assert main(["watch", str(tmp_path / "out"), "--once", "--json", "--now",
                 "2026-01-06T02:00:00Z"]) == 0  # advisory: still on track
    status = json.loads(capsys.readouterr().out)
    STATUS.validate(status)
    assert status["times"] == [{
        "step": "train-pilot", "planned_hours": 2.0, "observed_hours": 3.2, "short": False,
        "text": "step 'train-pilot' took 3.2 h against 2 h planned (+60 %), above the 10 % "
                "tolerance"}]
    assert status["checkpoints_judged"] is True
    assert status["rental_start"] == "2026-01-05T12:00:00Z"  # the journal's first moment
    assert status["rental_start_source"] == "the journal's first event (no lot start recorded)"


def test_follow_reloads_a_checkpoint_once_across_its_judgements(
        tmp_path: Path, judged: Judged) -> None:
    from tests.checkpoints import general_checkpoint

    root = tmp_path / "out"
    events = open_campaign(root)
    (root / "runs" / "control").mkdir(parents=True)
    general_checkpoint(root / "runs" / "control", name="last.pt")
    polls = iter(range(3))

    def sleep(_: float) -> None:  # each poll, a new log line; then Ctrl-C
        step = next(polls, None)
        if step is None:
            raise KeyboardInterrupt
        write(root, [*events, *logs("control", [1.0] * (step + 1))])

    reloads, out = judged.reloads, io.StringIO()
    follow(open_folder(root), Follow(lead=Decimal(0), as_json=True), out,
           clock=lambda: datetime.fromisoformat("2026-01-06T02:00:00Z"), sleep=sleep,
           judged=judged)
    judgements = [json.loads(line) for line in out.getvalue().splitlines()[:-1]]
    assert len(judgements) == 4
    assert all(j["checkpoints"][0]["state"] == "reloads" for j in judgements)
    assert judged.reloads == reloads + 1


def test_the_status_said_without_a_reload_server_reads_no_file(tmp_path: Path) -> None:
    root = tmp_path / "out"
    open_campaign(root)
    fc = judge(open_folder(root), datetime.fromisoformat("2026-01-06T02:00:00Z"))
    assert fc.facts.checkpoints == ()
    assert not fc.facts.reloaded


def test_a_reload_server_that_cannot_start_is_said_and_asked_again(tmp_path: Path) -> None:
    from tests.checkpoints import general_checkpoint

    root = tmp_path / "out"
    open_campaign(root)
    (root / "runs" / "control").mkdir(parents=True)
    general_checkpoint(root / "runs" / "control", name="last.pt")
    now = datetime.fromisoformat("2026-01-06T02:00:00Z")
    with Judged(str(tmp_path / "no-python")) as broken:
        fc = judge(open_folder(root), now, judged=broken)
        judge(open_folder(root), now, judged=broken)
        assert broken.reloads == 2  # no verdict on the file: not cached
    assert fc.facts.checkpoints == ()
    assert verdict(fc) == 0
    assert ("checkpoint not reloaded (asked again at the next judgement): "
            f"runs/control/last.pt: --itera-python {tmp_path / 'no-python'}: not an "
            "executable file") in fc.notes


def test_watch_once_on_a_folder_with_every_kind_of_file_writes_nothing_into_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real command: a checkpoint reloaded, a measurements file and predictions read;
    every byte and every mtime of the folder as before."""
    from tests.checkpoints import general_checkpoint

    root = tmp_path / "out"
    events = open_campaign(root, [
        {"event": "measurements", "run": "control", "path": "runs/control/measurements.jsonl"},
        {"event": "predictions", "run": "pilot", "path": "runs/pilot/predictions.jsonl",
         "sha256": "0" * 64}])
    (root / "runs" / "control").mkdir(parents=True)
    (root / "runs" / "pilot").mkdir(parents=True)
    general_checkpoint(root / "runs" / "control", name="last.pt")
    (root / "runs/control/measurements.jsonl").write_text('{"step": 0, "loss": 2.0}\n')
    _corpus(root, range(600))
    (root / "runs/pilot/predictions.jsonl").write_text(
        "".join(json.dumps({"id": f"r{i}"}) + "\n" for i in range(600)))
    before = snapshot(root)
    assert main(["watch", str(root), "--once", "--now", events[CONTROL_SAVED - 1]["at"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  checkpoints: 1 reload" in out
    assert "  predictions cover the frozen corpus: pilot" in out
    assert snapshot(root) == before
