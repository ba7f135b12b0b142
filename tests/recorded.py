"""A whole /2 campaign written through the recorder only: no number computed by hand.

``python -m tests.recorded ROOT [--pause-at STEP]`` records it into ROOT; with
``--pause-at`` the control's training prints ``paused`` after logging that step
and waits to be killed (the SIGKILL test); run again on ROOT, it continues from
the journal and finishes the campaign. ``--files FOLDER`` takes the campaign's files from
a folder the test wrote (:func:`write_files`), so that a child that kills itself before any
torch.save needs no torch at all (making the checkpoints' bytes imports it: seconds a child).

With ``--kill step|save|fsync`` the control's training is timed by the real clock
(``rec.step("train-control")``), journals a save of its step-2 checkpoint, and the
process kills itself with SIGKILL at step 3: inside the step, in the middle of
``torch.save`` of ``runs/control/step-3.pt``, or between the journal's write of the
step-3 log line and its fsync. Continued (:func:`record` with the same ``kill``), it
resumes the open step and the open run from its last journaled save (issue 26).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.record import CampaignRecorder, Closure
from tests import factory as F

if TYPE_CHECKING:
    from collections.abc import Callable

    from _typeshed import HasFileno

# Step timings on the rental's timeline: only their durations reach the manifest.
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def timed(rec: CampaignRecorder, step_id: str) -> None:
    """Time a planned step as taking its planned hours (the simulated rental)."""
    step = next(s for s in rec.plan["schedule"]["steps"] if s["id"] == step_id)
    if step["resource"] == "human":
        rec.step(step_id, hours=step["hours"])
        return
    timer = rec.step(step_id).start(at=T0)
    timer.end(at=T0 + timedelta(hours=step["hours"]))


KILL_AT = 3  # the control's step where --kill kills the process
STEP_3 = "runs/control/step-3.pt"


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no atexit: the machine is gone


class Dying:
    """A file a save writes into that kills the process once half of ``size`` is written."""

    def __init__(self, path: Path, size: int) -> None:
        self.handle, self.left = path.open("wb"), size // 2

    def write(self, data: bytes) -> int:
        if len(data) >= self.left:
            self.handle.write(bytes(data)[: self.left])
            self.handle.flush()
            die()
        self.left -= len(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()


def save_step_3(rec: CampaignRecorder, *, kill: bool) -> None:
    import io

    import torch

    state = {"step": KILL_AT, "weight": torch.arange(4096, dtype=torch.float32)}
    if kill:
        whole = io.BytesIO()
        torch.save(state, whole)
        torch.save(state, Dying(rec.path(STEP_3), len(whole.getvalue())))  # type: ignore[arg-type]
    torch.save(state, rec.path(STEP_3))
    rec.checkpoint_saved(STEP_3, run="control", step=KILL_AT)


def die_before_fsync_of(text: str) -> None:
    """Kill the process when the journal is fsynced after a line holding ``text``: the
    line was written (os.write), its fsync never ran."""
    real = os.fsync

    def fsync(fd: int | HasFileno) -> None:
        target = os.readlink(f"/proc/self/fd/{fd if isinstance(fd, int) else fd.fileno()}")
        if target.endswith(JOURNAL_FILE) and Path(target).read_text("utf-8").splitlines()[
                -1].startswith(text):
            die()
        real(fd)

    os.fsync = fsync


def train_the_control(rec: CampaignRecorder, kill: str | None, pause_at: int | None) -> None:
    control = rec.run("control")
    first = 1
    if kill is not None:
        rec.step("train-control").start()  # a step a dead process left open: resumed
        for open_run in rec.open_runs():
            if open_run.id == "control" and open_run.last_save is not None:
                first = open_run.last_save["step"] + 1  # resumed from its last journaled save
                control.rewind(first - 1)
    for step, loss in enumerate(F.LOSSES["control"][first - 1:], first):
        control.log(step, loss=loss)
        if step == pause_at:
            print("paused", flush=True)
            time.sleep(600)  # killed here
        if kill is None:
            continue
        if step == F.RESUMED_AT:
            rec.checkpoint_saved(F.CONTROL_CKPT, run="control", step=step)
        if step == KILL_AT:
            dying = first == 1  # the first process dies here; its continuation does not
            if dying and kill == "step":
                die()
            save_step_3(rec, kill=dying and kill == "save")
    if kill is not None:
        rec.step("train-control").end()


def write_files(folder: Path) -> Path:
    """The campaign's files (``F.default_files_v2()``) under ``folder``, for ``--files``."""
    for relpath, data in F.default_files_v2().items():
        (folder / relpath).parent.mkdir(parents=True, exist_ok=True)
        (folder / relpath).write_bytes(data)
    return folder


def read_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def record(root: Path, *, pause_at: int | None = None, check: bool = True,
           rehearsal: bool = False, kill: str | None = None,
           files: dict[str, bytes] | None = None,
           clock: Callable[[], datetime] | None = None) -> Closure:
    """``clock``: a played clock (the campaign's verdict is then PLAYED CLOCK)."""
    files = dict(files) if files is not None else F.default_files_v2()
    rec = CampaignRecorder(root, rehearsal=rehearsal, clock=clock)
    if rec.plan_sha256 is None:
        for relpath, data in files.items():
            rec.write_bytes(relpath, data)
        plan = F.default_plan_v2(files)
        del plan["frozen_at"]  # now: every run starts after it
        rec.freeze_plan(plan)
        for step_id in ("prepare", "setup", "load-data"):
            timed(rec, step_id)
    if rec.run("data-check").outcome is None:
        check_the_corpus(rec, files)
    control = rec.run("control")
    if control.started_at is None:
        control.start()
        control.set_config("configs/control.json")
    if control.outcome is None:
        train_the_control(rec, kill, pause_at)
        control.set_metrics(**F.METRICS["control"])
        control.set_predictions("runs/control/predictions.jsonl")
        if kill is None:
            timed(rec, "train-control")
        rec.add_checkpoint(F.CONTROL_CKPT, run="control", format="torch", kind="resume",
                           claims=["model", "optimizer", "progress", "scheduler", "rng", "data"])
        timed(rec, "save-ckpt")
        control.accept()
    resume = rec.run("resume-check")
    if resume.outcome is None:
        resume.start()
        resume.set_config("configs/resume-check.json")
        resume.resumed_from(F.CONTROL_CKPT, F.RESUMED_AT)
        for step, loss in enumerate(F.LOSSES["control"][F.RESUMED_AT:], F.RESUMED_AT + 1):
            resume.log(step, loss=loss)
        rec.add_checkpoint(F.RESUME_CKPT, run="resume-check", format="torch", kind="resume",
                           claims=["model", "optimizer", "progress", "scheduler", "rng", "data"])
        timed(rec, "restore-ckpt")
        resume.accept()
    if rec.run("variant-a").outcome is None:
        train_the_variant(rec)
    return close(rec, check=check)


def check_the_corpus(rec: CampaignRecorder, files: dict[str, bytes]) -> None:
    """The data check records the corpus it read."""
    data = rec.run("data-check")
    data.start()
    data.set_config("configs/data-check.json")
    corpus = files["corpus/corpus.jsonl"]
    data.check_input("tiny-corpus", sha256=F.sha256(corpus), examples=len(F.CORPUS_IDS),
                     bytes=len(corpus))
    timed(rec, "check-data")
    data.accept()


def train_the_variant(rec: CampaignRecorder) -> None:
    """variant-a's series, metrics, predictions and weights, as the factory has them."""
    variant = rec.run("variant-a")
    variant.start()
    variant.set_config("configs/variant-a.json")
    for step, loss in enumerate(F.LOSSES["variant-a"], 1):
        variant.log(step, loss=loss)
    variant.set_metrics(**F.METRICS["variant-a"])
    variant.set_predictions("runs/variant-a/predictions.jsonl")
    rec.add_checkpoint(F.VARIANT_WEIGHTS, run="variant-a", format="torch", kind="weights")
    timed(rec, "train-variant-a")
    variant.accept()


def close(rec: CampaignRecorder, *, check: bool) -> Closure:
    """The last steps, then the manifest: variant-a meets the threshold, the control not."""
    for step_id in ("validate", "write-outputs", "retrieve"):
        timed(rec, step_id)
    return conclude(rec, check=check)


def conclude(rec: CampaignRecorder, *, check: bool) -> Closure:
    """The manifest (what a campaign reopened after its steps were timed closes with)."""
    return rec.close(
        analysis="analysis.md", reload_instructions="RELOAD.md",
        conclusion={"meets_threshold": ["variant-a"],
                    "text": "variant-a meets the 0.8 accuracy threshold; the control does not."},
        check=check,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--pause-at", type=int, default=None)
    parser.add_argument("--kill", choices=("step", "save", "fsync"), default=None)
    parser.add_argument("--files", type=Path, default=None)
    args = parser.parse_args()
    if args.kill == "fsync":
        die_before_fsync_of(f'{{"event":"log","run":"control","step":{KILL_AT},')
    closed = record(args.root, pause_at=args.pause_at, check=False, kill=args.kill,
                    files=None if args.files is None else read_files(args.files))
    print(f"closed {closed.manifest}")
    sys.exit(0)
