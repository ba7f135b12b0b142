"""A whole /2 campaign written through the recorder only: no number computed by hand.

``python -m tests.recorded ROOT [--pause-at STEP]`` records it into ROOT; with
``--pause-at`` the control's training prints ``paused`` after logging that step
and waits to be killed (the SIGKILL test); run again on ROOT, it continues from
the journal and finishes the campaign.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pytest_itera.record.campaign import CampaignRecorder, Closure
from tests import factory as F

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


def record(root: Path, *, pause_at: int | None = None, check: bool = True,
           rehearsal: bool = False) -> Closure:
    files = F.default_files_v2()
    rec = CampaignRecorder(root, rehearsal=rehearsal)
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
        for step, loss in enumerate(F.LOSSES["control"], 1):
            control.log(step, loss=loss)
            if step == pause_at:
                print("paused", flush=True)
                time.sleep(600)  # killed here
        control.set_metrics(**F.METRICS["control"])
        control.set_predictions("runs/control/predictions.jsonl")
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
    args = parser.parse_args()
    closed = record(args.root, pause_at=args.pause_at, check=False)
    print(f"closed {closed.manifest}")
    sys.exit(0)
