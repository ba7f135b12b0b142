"""Issue 26, point 1: continue from anywhere. A process killed (a real SIGKILL) inside a
step, in the middle of a checkpoint save, or between a journal write and its fsync; the
campaign continued in a new process is ACCEPTED and its journal shows the interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.record import CampaignRecorder, RecordError
from pytest_itera.report.verify import check_campaign
from tests import factory as F
from tests.factory import journal_events
from tests.record.killed_tool import KILL_AT as TOOL_KILL_AT
from tests.record.test_integrations import (
    finish,
    lightning_fit,
    lightning_tools,
    trainer_fit,
    trainer_tools,
)
from tests.recorded import KILL_AT, STEP_3, record, write_files
from tests.runner import REPO


def events(root: Path) -> list[dict[str, Any]]:
    return journal_events(root / JOURNAL_FILE)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The campaign's files, made once here: the children read them (no torch import)."""
    return write_files(tmp_path_factory.mktemp("files"))


def killed(root: Path, where: str, files: Path) -> list[dict[str, Any]]:
    """Run the recorded campaign in a child process that kills itself at ``where``."""
    child = subprocess.run([sys.executable, "-m", "tests.recorded", str(root), "--kill", where,
                            "--files", str(files)],
                           cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert not (root / "manifest.json").exists()
    return events(root)


@pytest.mark.parametrize("where", ["step", "save", "fsync"])
def test_a_campaign_killed_anywhere_continues_and_is_accepted(
    tmp_path: Path, where: str, files: Path
) -> None:
    root = tmp_path / "camp"
    before = killed(root, where, files)
    log_3 = {"event": "log", "run": "control", "step": KILL_AT, "values": {"loss": 0.6}}
    assert before[-1] == log_3  # fsync or not, the kernel had the whole line
    rec = CampaignRecorder(root)
    [step] = rec.open_steps()
    assert (step.id, step.inherited) == ("train-control", True)
    assert step.last_seen >= step.started_at
    [run] = rec.open_runs()
    assert (run.id, run.last_step) == ("control", KILL_AT)
    assert run.last_save is not None
    assert (run.last_save["path"], run.last_save["step"]) == (F.CONTROL_CKPT, F.RESUMED_AT)
    if where == "save":  # the save was cut in the middle: the file is partial, not journaled
        assert STEP_3 not in rec.saves
        assert (root / STEP_3).stat().st_size > 0

    closed = record(root, kill=where)

    assert closed.verdict == "accepted", "\n".join(p.render() for p in closed.findings)
    after = events(root)
    assert after[: len(before)] == before  # continued, nothing rewritten
    [resumed] = [e for e in after if "interrupted" in e]
    assert resumed["event"] == "step"
    assert resumed["step"] == "train-control"
    gap = resumed["interrupted"]
    assert gap["since"] == resumed["at"]
    assert gap["hours"] >= 0
    manifest = json.loads(closed.read_text())
    [shown] = [d for d in manifest["schedule"]["deviations"] if d["step"] == "train-control"]
    assert "interrupted: the process running it ended after" in shown["explanation"]
    assert "not counted as its work" in shown["explanation"]
    rows = [json.loads(line) for line in
            (root / "runs/control/measurements.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "step" in r] == [1, 2, 3, 4]  # nothing lost


def left_open(tmp_path: Path) -> CampaignRecorder:
    """train-control started at 08:00, a checkpoint saved at 10:00 (its last journaled
    moment), and the process about to die."""
    files = F.default_files_v2()
    rec = CampaignRecorder(tmp_path / "camp")
    for relpath, data in files.items():
        rec.write_bytes(relpath, data)
    rec.freeze_plan(F.default_plan_v2(files))
    rec.step("train-control").start(at="2026-11-20T08:00:00+00:00")
    rec.run("control").start(at="2026-11-20T08:00:00+00:00")
    rec.checkpoint_saved(F.CONTROL_CKPT, run="control", step=2, at="2026-11-20T10:00:00Z")
    return rec


def test_a_step_left_open_is_resumed_with_the_gap_journaled(tmp_path: Path) -> None:
    """The hours: worked from the start to the last journaled moment, the gap to the
    resumption is the interruption, then the step runs again."""
    rec = left_open(tmp_path)
    with pytest.raises(RecordError, match=r"already running .* in this process"):
        rec.step("train-control").start()
    again = CampaignRecorder(rec.root)  # the first process died
    with pytest.raises(RecordError, match=r"steps started and never ended: train-control "
                       r"\(left open by a process that died: ending it journals the gap\)"):
        again.close(analysis="analysis.md", reload_instructions="RELOAD.md", conclusion={})
    again.step("train-control").start(at="2026-11-20T11:30:00+00:00")
    assert again.step("train-control").end(at="2026-11-20T12:00:00+00:00") == 0.5
    assert again.observed_hours["train-control"] == 2.5  # 2 h worked, then 0.5 h
    [gap] = again.interruptions
    assert (gap.step, gap.hours) == ("train-control", Decimal("1.5"))
    third = CampaignRecorder(rec.root)  # the journal replays to the same hours and gap
    assert third.observed_hours == again.observed_hours
    assert third.interruptions == again.interruptions
    assert third.open_steps() == ()


def test_a_resumption_before_the_last_journaled_moment_is_refused(tmp_path: Path) -> None:
    rec = left_open(tmp_path)
    with pytest.raises(RecordError, match=r"step 'train-control' resumes at "
                       r"2026-11-20T09:00:00\+00:00, before the last moment its journal "
                       r"records \(2026-11-20T10:00:00\+00:00\); give a later time"):
        CampaignRecorder(rec.root).step("train-control").start(at="2026-11-20T09:00:00Z")


@pytest.mark.parametrize("tool", ["trainer", "lightning"])
def test_a_tool_killed_mid_training_resumes_from_its_last_save_and_is_accepted(
    tmp_path: Path, tool: str
) -> None:
    """The Trainer (resume_from_checkpoint) and Lightning (ckpt_path), killed after their
    first checkpoint, resumed from the save the journal names, in a new process."""
    root = tmp_path / "camp"
    child = subprocess.run([sys.executable, "-m", "tests.record.killed_tool", str(root), tool],
                           cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                           env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    rec = CampaignRecorder(root)
    [run] = rec.open_runs()
    assert (run.id, run.last_step) == ("control", TOOL_KILL_AT[tool])
    assert run.last_save is not None
    save = run.last_save
    assert [s.id for s in rec.open_steps()] == ["train-control"]

    rec.step("train-control").start()  # resumed: the gap is journaled
    if tool == "trainer":
        assert (save["path"], save["step"]) == ("runs/control/trainer/checkpoint-2", 2)
        trainer_fit(rec, "control", rec.path("runs/control/trainer"),
                    resume=str(root / save["path"]))
    else:
        assert (save["path"], save["step"]) == ("runs/control/ckpt/epoch=0-step=4.ckpt", 4)
        lightning_fit(rec, "control", rec.path("runs/control/ckpt"),
                      ckpt_path=str(root / save["path"]))
    rec.step("train-control").end()
    finish(rec, trainer_tools if tool == "trainer" else lightning_tools)

    verdict = check_campaign(root)
    assert verdict.verdict == "accepted", "\n".join(p.render() for p in verdict.findings)
    assert any("interrupted" in e for e in events(root))
    rows = [json.loads(line) for line in
            (root / "runs/control/measurements.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in rows if "step" in r]
    assert steps == sorted(set(steps))  # the steps after the save were trained again, once
