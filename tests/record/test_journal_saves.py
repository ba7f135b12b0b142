"""Issue 24, points 2, 8, 9 and 12 on the recorder's side: every checkpoint save is journaled
with its content, step and moment (an overwritten file once per save), the predictions with
their sha256, the bases a run trains on with their revision and digest; old journals still
replay; and the journaled save times are judged against the plan's tolerable loss."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.record.campaign import CampaignRecorder
from pytest_itera.report.verify import builtin_checks, check_campaign
from tests.record.test_record import (
    COMMIT,
    CONFIG,
    CORPUS,
    close_kwargs,
    finish_with,
    make_plan,
)


def events(rec: CampaignRecorder, kind: str) -> list[dict[str, Any]]:
    lines = (rec.root / JOURNAL_FILE).read_text("utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == kind]


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recorder(root: Path) -> CampaignRecorder:
    rec = CampaignRecorder(root)
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan())
    rec.run("control").start(at="2026-11-20T09:00:00Z")  # its saves follow its start
    return rec


def test_every_save_of_an_overwritten_file_is_journaled(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "camp")
    for step, hour in ((1, "10"), (2, "11")):
        rec.write_bytes("runs/control/last.pt", f"state {step}".encode())
        rec.checkpoint_saved("runs/control/last.pt", run="control", step=step,
                             at=f"2026-11-20T{hour}:00:00Z")
    rec.add_checkpoint("runs/control/last.pt", run="control", format="torch", kind="resume")
    saves = events(rec, "checkpoint")
    assert [(s["sha256"], s.get("step"), s["at"]) for s in saves] == [
        (digest(b"state 1"), 1, "2026-11-20T10:00:00Z"),
        (digest(b"state 2"), 2, "2026-11-20T11:00:00Z"),
        # the listing: the file holds the last save, so it was saved then, at that step
        (digest(b"state 2"), 2, "2026-11-20T11:00:00Z"),
    ]
    assert saves[-1]["format"] == "torch"
    assert "format" not in saves[0]


def test_a_listing_of_a_file_changed_since_its_last_save_is_timed_now(tmp_path: Path) -> None:
    rec = CampaignRecorder(tmp_path / "camp", clock=lambda: _utc("2026-11-20T15:00:00Z"))
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.freeze_plan(make_plan())
    rec.run("control").start(at="2026-11-20T09:00:00Z")
    rec.write_bytes("runs/control/last.pt", b"state 1")
    rec.checkpoint_saved("runs/control/last.pt", run="control", step=1,
                         at="2026-11-20T10:00:00Z")
    rec.write_bytes("runs/control/last.pt", b"state 9")  # saved again, not journaled
    rec.add_checkpoint("runs/control/last.pt", run="control", format="torch", kind="resume")
    listing = events(rec, "checkpoint")[-1]
    assert (listing["sha256"], listing["at"], "step" in listing) == (
        digest(b"state 9"), "2026-11-20T15:00:00Z", False)


def test_the_predictions_sha256_is_journaled(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "camp")
    rec.write_bytes("runs/control/predictions.jsonl", b'{"id": "a", "prediction": 1}\n')
    rec.run("control").set_predictions("runs/control/predictions.jsonl")
    [event] = events(rec, "predictions")
    assert event["sha256"] == digest(b'{"id": "a", "prediction": 1}\n')


def test_saves_replay_and_the_next_save_continues_them(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "camp")
    rec.write_bytes("runs/control/last.pt", b"state 1")
    rec.checkpoint_saved("runs/control/last.pt", run="control", step=1,
                         at="2026-11-20T10:00:00Z")
    again = CampaignRecorder(rec.root)  # continued from the journal
    again.add_checkpoint("runs/control/last.pt", run="control", format="torch", kind="resume")
    assert events(again, "checkpoint")[-1]["at"] == "2026-11-20T10:00:00Z"
    assert [c["path"] for c in CampaignRecorder(rec.root).checkpoints] == [
        "runs/control/last.pt"]


def test_an_old_journal_without_contents_still_replays(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "camp")
    rec.write_bytes("runs/control/step-2.pt", b"checkpoint")
    with (rec.root / JOURNAL_FILE).open("a", encoding="utf-8") as journal:  # as /1 wrote it
        journal.write(json.dumps({"event": "checkpoint", "path": "runs/control/step-2.pt",
                                  "run": "control", "format": "torch", "kind": "resume"}) + "\n")
        journal.write(json.dumps({"event": "predictions", "run": "control",
                                  "path": "corpus.jsonl"}) + "\n")
    again = CampaignRecorder(rec.root)
    assert [c["path"] for c in again.checkpoints] == ["runs/control/step-2.pt"]
    assert again.run("control").record["predictions"] == "corpus.jsonl"


def test_the_bases_a_run_trains_on_are_journaled(tmp_path: Path) -> None:
    rec = recorder(tmp_path / "camp")
    rec.write_bytes("base/config.json", b"{}\n")
    tree = rec.record_base("base", model="tiny", revision=COMMIT)
    rec.training_bases("control")
    [recorded] = events(rec, "base")
    [trained] = events(rec, "training-base")
    assert (recorded["revision"], recorded["tree_sha256"]) == (COMMIT, tree)
    assert (trained["run"], trained["revision"], trained["tree_sha256"]) == (
        "control", COMMIT, tree)
    CampaignRecorder(rec.root).training_bases("control")  # the base is known after replay
    assert len(events(rec, "training-base")) == 2


# ------------------------------------------------------- point 9: the save interval


def saved_every(tmp_path: Path, hours: tuple[str, ...]) -> Path:
    """A recorder-written campaign whose control saved last.pt at each of ``hours``."""
    rec = recorder(tmp_path / "camp")
    for n, hour in enumerate(hours, 1):
        rec.write_bytes("runs/control/last.pt", f"state {n}".encode())
        rec.checkpoint_saved("runs/control/last.pt", run="control", step=n,
                             at=f"2026-11-20T{hour}:00:00Z")
    rec.add_checkpoint("runs/control/last.pt", run="control", format="torch", kind="resume")
    finish_with(rec, close_kwargs())
    return rec.root


def save_findings(root: Path) -> list[str]:
    registry = {k: v for k, v in builtin_checks().items()
                if k in ("plan-vs-actual", "journal-agrees")}
    return [p.finding.message for p in check_campaign(root, checks=registry).findings
            if p.finding.code in ("plan-vs-actual.save-interval",
                                  "plan-vs-actual.save-times-unproven")
            or (p.finding.code or "").startswith("journal-agrees")]


def test_saves_further_apart_than_the_tolerable_loss_are_rejected(tmp_path: Path) -> None:
    found = save_findings(saved_every(tmp_path, ("10", "11", "14")))
    assert found == [
        "run control saved runs/control/last.pt at 2026-11-20T11:00:00+00:00 and its next "
        "checkpoint runs/control/last.pt at 2026-11-20T14:00:00+00:00: 3 h apart, more than "
        "the 2 h the plan tolerates losing"]


def test_saves_within_the_tolerable_loss_pass(tmp_path: Path) -> None:
    assert save_findings(saved_every(tmp_path, ("10", "11", "13"))) == []


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text)
