"""The recorder refuses at once what the run's own evidence already proves wrong, with the
plugin's own words (issue 26, item 3): predictions that do not cover the frozen corpus
exactly once, a Lightning callback under a plan that requires RNG state, a checkpoint whose
parts do not cover the run's resume state. Each refusal, then the way through to ACCEPTED."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_itera.record import CampaignRecorder, RecordError
from tests import factory as F
from tests.record.test_record import CONFIG, CORPUS, corpus_entry, make_plan
from tests.recorded import close, record, timed

PREDICTIONS = "runs/variant-a/predictions.jsonl"


def fifty(tmp_path: Path) -> CampaignRecorder:
    """A plan whose frozen corpus has 50 examples."""
    corpus = b"".join(b'{"id": "ex-%d"}\n' % i for i in range(1, 51))
    rec = CampaignRecorder(tmp_path / "camp")
    rec.write_bytes("corpus.jsonl", corpus)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan(corpora=[corpus_entry("c1", "corpus.jsonl", corpus)]))
    run = rec.run("control")
    run.start()
    return rec


def test_predictions_for_49_of_50_examples_are_refused_naming_the_missing_id(
    tmp_path: Path,
) -> None:
    rec = fifty(tmp_path)
    rows = [{"id": f"ex-{i}", "prediction": 1} for i in range(1, 51) if i != 37]
    rec.write_jsonl("runs/control/predictions.jsonl", rows)
    with pytest.raises(RecordError) as refused:
        rec.run("control").set_predictions("runs/control/predictions.jsonl")
    assert str(refused.value) == (
        "run 'control': runs/control/predictions.jsonl is not a complete prediction of the "
        "frozen corpus 'c1', as the plugin would report (predictions-cover-corpus):\n"
        "runs/control/predictions.jsonl: predictions miss 1 ID of the 50 corpus IDs\n"
        "    found:    ex-37\n"
        "    fix:      predict every example of the frozen corpus corpus.jsonl exactly once")
    assert "predictions" not in rec.run("control").record  # nothing recorded, nothing journaled
    assert '"predictions"' not in (rec.root / "itera-journal.jsonl").read_text()
    rec.write_jsonl("runs/control/predictions.jsonl",
                    [{"id": f"ex-{i}", "prediction": 1} for i in range(1, 51)])
    rec.run("control").set_predictions("runs/control/predictions.jsonl")
    assert rec.run("control").record["corpus"] == "c1"


def test_predictions_replaced_after_set_predictions_are_refused_at_accept(
    tmp_path: Path,
) -> None:
    rec = fifty(tmp_path)
    rows = [{"id": f"ex-{i}", "prediction": 1} for i in range(1, 51)]
    rec.write_jsonl("runs/control/predictions.jsonl", rows)
    run = rec.run("control")
    run.set_predictions("runs/control/predictions.jsonl")
    rec.write_jsonl("runs/control/predictions.jsonl", [*rows, rows[4]])  # ex-5 twice
    with pytest.raises(RecordError, match=r"(?s)predictions repeat corpus IDs \(1 extra line\)"
                                          r".*found:    ex-5 \(line 51\)"):
        run.accept()
    assert run.outcome is None
    rec.write_jsonl("runs/control/predictions.jsonl", rows)
    run.accept()
    assert run.outcome == "accepted"


def test_incomplete_predictions_refused_at_once_then_the_campaign_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """As the user met it: the variant's script writes predictions for all but one example.
    The recorder refuses them when they are recorded, not after closure; the script writes
    them all and records them again, and the campaign is ACCEPTED."""
    files = F.default_files_v2()
    complete = files[PREDICTIONS]
    short = b"".join(complete.splitlines(keepends=True)[:-1])
    monkeypatch.setattr(F, "default_files_v2", lambda: {**files, PREDICTIONS: short})
    root = tmp_path / "camp"
    with pytest.raises(RecordError, match=r"predictions miss 1 ID of the 4 corpus IDs"
                                          r"\n    found:    ex-4\n"):
        record(root, check=False)
    rec = CampaignRecorder(root)  # the script again, continuing from the journal
    rec.write_bytes(PREDICTIONS, complete)
    variant = rec.run("variant-a")
    variant.set_predictions(PREDICTIONS)
    rec.add_checkpoint(F.VARIANT_WEIGHTS, run="variant-a", format="torch", kind="weights")
    timed(rec, "train-variant-a")
    variant.accept()
    closure = close(rec, check=True)
    assert closure.result is not None
    assert closure.result.accepted, capsys.readouterr().out
    journal = [json.loads(line)
               for line in (root / "itera-journal.jsonl").read_text().splitlines()]
    assert [e["path"] for e in journal if e["event"] == "predictions"
            and e["run"] == "variant-a"] == [PREDICTIONS]  # the refused file left no record


def test_a_save_before_its_run_started_is_refused_at_once(tmp_path: Path) -> None:
    """plan-vs-actual.save-before-start, at the save: a run that has not started saved
    nothing, and a save timed before its run's start is another run's (the check's words)."""
    rec = fifty(tmp_path)  # control started now
    rec.write_bytes("runs/variant/last.pt", b"not judged here")
    with pytest.raises(RecordError) as refused:
        rec.add_checkpoint("runs/variant/last.pt", run="variant", format="torch",
                           kind="weights")
    assert str(refused.value) == (
        "checkpoint runs/variant/last.pt: run 'variant' has not started; a checkpoint is "
        "saved by its own run while it runs: call rec.run('variant').start() before the "
        "run's first save (the plugin refuses a save timed before its run's start: "
        "plan-vs-actual.save-before-start)")
    rec.run("variant").start(at="2026-11-20T10:05:00+00:00")
    _save_refused(rec, "2026-11-20T10:02:00+00:00",
                  "checkpoint runs/variant/last.pt of run variant was saved at "
                  "2026-11-20T10:02:00+00:00, 0.05 h before the run started "
                  "(2026-11-20T10:05:00+00:00), as the plugin would report "
                  "(plan-vs-actual.save-before-start); a checkpoint is saved by its own run "
                  "while it runs")
    rec.add_checkpoint("runs/variant/last.pt", run="variant", format="torch",
                       kind="weights")  # the way through: saved now, after its start
    assert [c["path"] for c in rec.checkpoints] == ["runs/variant/last.pt"]


def _save_refused(rec: CampaignRecorder, at: str, says: str) -> None:
    """The variant's save of runs/variant/last.pt at ``at`` is refused with ``says`` (its
    start), and nothing of it reaches the journal."""
    with pytest.raises(RecordError) as refused:
        rec.checkpoint_saved("runs/variant/last.pt", run="variant", at=at)
    assert str(refused.value).startswith(says)
    assert '"checkpoint"' not in (rec.root / "itera-journal.jsonl").read_text()


def test_a_save_inside_another_runs_span_on_its_gpu_is_refused_at_once(
    tmp_path: Path,
) -> None:
    """plan-vs-actual.save-during-run, at the save: both runs train on gpu0, one at a time;
    a save timed while the control ran there is not the variant's (the check's words). A
    save after the control's end is."""
    steps = [{"id": "train-control", "kind": "training", "resource": "gpu0", "hours": 1,
              "run": "control"},
             {"id": "train-variant", "kind": "training", "resource": "gpu0", "hours": 1,
              "run": "variant", "after": ["train-control"]}]
    rec = CampaignRecorder(tmp_path / "camp")
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan(schedule={"window_hours": 72, "steps": steps}))
    rec.run("control").start(at="2026-11-20T10:00:00+00:00")
    rec.run("control").reject("it diverged", at="2026-11-20T11:00:00+00:00")
    rec.run("variant").start(at="2026-11-20T09:00:00+00:00")  # misrecorded: before control
    rec.write_bytes("runs/variant/last.pt", b"not judged here")
    _save_refused(rec, "2026-11-20T10:30:00+00:00",
                  "checkpoint runs/variant/last.pt of run variant was saved at "
                  "2026-11-20T10:30:00+00:00, while run control ran on the same GPU ('gpu0') "
                  "from 2026-11-20T10:00:00+00:00 to 2026-11-20T11:00:00+00:00, as the plugin "
                  "would report (plan-vs-actual.save-during-run); record when each run really "
                  "started and ended")
    rec.checkpoint_saved("runs/variant/last.pt", run="variant", at="2026-11-20T11:30:00+00:00")


def test_a_listing_of_the_last_journaled_save_is_timed_by_that_save(tmp_path: Path) -> None:
    """add_checkpoint of a file that still holds its journaled save is that save (its time),
    not a save now: a campaign recorded on another clock (the example's) is not refused."""
    rec = fifty(tmp_path)
    rec.run("variant").start(at="2030-01-01T10:00:00+00:00")  # after this machine's now
    rec.write_bytes("runs/variant/last.pt", b"state 1")
    rec.checkpoint_saved("runs/variant/last.pt", run="variant", at="2030-01-01T11:00:00+00:00")
    rec.add_checkpoint("runs/variant/last.pt", run="variant", format="torch", kind="weights")
    assert rec.saves["runs/variant/last.pt"]["at"] == "2030-01-01T11:00:00Z"
