"""A transformers ``TrainerCallback`` that records what the Trainer does into a campaign.

::

    from pytest_itera.record.integrations.transformers import IteraCallback

    args = TrainingArguments(output_dir=str(rec.path("runs/control/trainer")), save_steps=50, ...)
    trainer = Trainer(model=model, args=args, train_dataset=data,
                      callbacks=[IteraCallback(rec, "control")])
    trainer.train()

- each ``checkpoint-N/`` folder the Trainer saves is recorded as a resume checkpoint
  (format ``hf-trainer``) whose claims are the parts its files actually hold: model weights
  (``model.safetensors``, ``pytorch_model.bin``, their shards, ``adapter_model.*``),
  ``optimizer.pt``, ``scheduler.pt``, ``scaler.pt``, ``rng_state*.pth``, and
  ``trainer_state.json`` with an integer ``global_step`` (progress; also the data position,
  since the Trainer replays its sampler to that step, unless ``ignore_data_skip``);
- every log (loss, learning rate, grad norm, evaluation metrics) is a point of the run's
  series at ``state.global_step`` (the end-of-training summary — runtime, throughput,
  average train loss — is not a series, nor is an evaluation's wall-clock: its
  ``eval_runtime`` and ``eval_*_per_second``);
- the run is started when training begins, unless the script started it; a Trainer that
  resumes the same run from one of its checkpoints forgets the points logged after it;
- ``train(resume_from_checkpoint=...)`` from another run's listed ``checkpoint-N/`` (the
  resume check's) is recorded as the run's ``resumed_from`` (that folder, step N): the
  Trainer does not tell callbacks the folder, so it is the listed one whose
  ``trainer_state.json`` holds the state the Trainer resumed (step and log history); a
  resume check resumed from a folder the callback cannot name gets a warning saying to
  call ``resumed_from`` itself.

The output folder must be inside the campaign: the Trainer is refused at construction
otherwise; left empty when training ends (``save_strategy="no"``), it is removed. With
``save_total_limit`` the Trainer deletes older checkpoints, so they are recorded when
training ends, those still on disk; without it each is recorded (and journaled) as soon as
it is saved. Only the main process records.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from pytest_itera.record.base import RecordError
from pytest_itera.record.integrations._common import (
    ForecastWarner,
    campaign_relpath,
    not_known,
    record_checkpoint,
    resumed_elsewhere,
    rewind_if_resumed,
    series_values,
)

if TYPE_CHECKING:
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from pytest_itera.record.campaign import CampaignRecorder

__all__ = ["SUMMARY_KEYS", "IteraCallback", "checkpoint_claims"]

FORMAT = "hf-trainer"
# What Trainer.train() logs once at the end: a summary of the call, not a series.
SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second",
                          "total_flos", "train_loss"})
# What the Trainer's speed_metrics add to every evaluation's log (eval_runtime,
# eval_samples_per_second, ...): the machine's wall-clock, not the run's; a resumed run can
# never repeat it, so as a series it would fail every resume check that evaluates.
TIMING_SUFFIXES = ("_runtime", "_samples_per_second", "_steps_per_second",
                   "_tokens_per_second", "_model_preparation_time")
_MODEL = re.compile(r"(model|pytorch_model|adapter_model)(-\d+-of-\d+)?\.(safetensors|bin)")
_RNG = re.compile(r"rng_state(_\d+)?\.pth")
_FILES = {"optimizer.pt": "optimizer", "scheduler.pt": "scheduler", "scaler.pt": "scaler"}


def checkpoint_claims(folder: Path, *, data_skip: bool = True) -> list[str]:
    """The resume parts a Trainer ``checkpoint-N/`` folder's files hold (non-empty files
    only); ``data_skip=False`` when the Trainer was told not to replay its data
    (``ignore_data_skip``)."""
    names = {p.name for p in folder.iterdir() if p.is_file() and p.stat().st_size > 0}
    parts = set()
    if any(_MODEL.fullmatch(n) for n in names):
        parts.add("model")
    parts.update(part for name, part in _FILES.items() if name in names)
    if any(_RNG.fullmatch(n) for n in names):
        parts.add("rng")
    if "trainer_state.json" in names:
        try:
            step = json.loads((folder / "trainer_state.json").read_text("utf-8")).get(
                "global_step")
        except (ValueError, AttributeError):
            step = None
        if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
            parts.add("progress")
            if data_skip:
                parts.add("data")
    order = ("model", "optimizer", "progress", "scheduler", "scaler", "rng", "data")
    return [p for p in order if p in parts]


def _holds(folder: Path, state: TrainerState) -> bool:
    """Does ``folder``'s ``trainer_state.json`` hold ``state``'s step and log history?"""
    try:
        saved = json.loads((folder / "trainer_state.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(saved, dict) and saved.get("global_step") == state.global_step
            and saved.get("log_history") == state.log_history)


class IteraCallback(TrainerCallback):
    """Records a Trainer's checkpoints and logs into the run ``run_id`` of ``rec``."""

    def __init__(self, rec: CampaignRecorder, run_id: str, *, lead: float = 0) -> None:
        rec.planned_run(run_id)  # refused now when the run is not planned
        self.rec = rec
        self.run_id = run_id
        self.run = rec.run(run_id)
        self._pending: list[str] = []  # saved under save_total_limit: recorded at the end
        # the lot's end forecast, logged when it turns (lead: hours kept before the lot ends)
        self.forecast = ForecastWarner(rec, lead)

    # ---- where the Trainer writes

    def _output_dir(self, args: TrainingArguments) -> str:
        if args.output_dir is None:
            raise RecordError("TrainingArguments.output_dir is not set: point it inside the "
                              "campaign, e.g. rec.path('runs/<run id>/trainer')")
        return campaign_relpath(self.rec, args.output_dir, what="TrainingArguments.output_dir")

    def on_init_end(self, args: TrainingArguments, state: TrainerState,
                    control: TrainerControl, **kwargs: Any) -> None:
        self._output_dir(args)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState,
                       control: TrainerControl, **kwargs: Any) -> None:
        self._output_dir(args)
        if not state.is_world_process_zero:
            return
        if self.run.started_at is None:
            self.run.start()
        self.rec.training_bases(self.run_id)  # the base it trains on, as it is now
        rewind_if_resumed(self.run, state.global_step)
        self._resumed(state)

    def _resumed(self, state: TrainerState) -> None:
        """``train(resume_from_checkpoint=...)`` does not tell its callbacks which folder it
        loaded, but the state they get is that folder's ``trainer_state.json`` (its global
        step and log history): the listed checkpoint of another run holding that state is
        the one resumed from, recorded as the run's ``resumed_from``."""
        step = int(state.global_step)
        if step <= 0 or self.run.record.get("resumed_from") is not None:
            return
        found = [c["path"] for c in self.rec.checkpoints
                 if c["format"] == FORMAT and c["run"] != self.run_id
                 and _holds(self.rec.root / c["path"], state)]
        if len(found) == 1:
            resumed_elsewhere(self.rec, self.run, found[0], step)
        elif self.rec.planned_run(self.run_id).get("role") == "resume_check":
            not_known(self.run, step, f"one of {', '.join(found)} (the same trainer state)"
                      if found else "no listed checkpoint of another run")

    # ---- what it saves

    def on_save(self, args: TrainingArguments, state: TrainerState,
                control: TrainerControl, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        folder = f"{self._output_dir(args)}/checkpoint-{state.global_step}".removeprefix("./")
        self.forecast.check()  # at each save: the warning is logged when it turns
        if args.save_total_limit is not None:
            self._pending.append(folder)  # a later save may rotate it away
            return
        self._record(folder, args)

    def on_train_end(self, args: TrainingArguments, state: TrainerState,
                     control: TrainerControl, **kwargs: Any) -> None:
        pending, self._pending = self._pending, []
        for folder in pending:
            if (self.rec.root / folder).is_dir():
                self._record(folder, args)
        if state.is_world_process_zero:
            self._remove_if_empty(args)

    def _remove_if_empty(self, args: TrainingArguments) -> None:
        """A Trainer that saved nothing (``save_strategy="no"``) still creates its
        output_dir: an empty folder in a run's outputs, which ``no-empty-files`` rejects.
        Remove it (a later ``save_model`` creates it again)."""
        relpath = self._output_dir(args)
        folder = self.rec.root / relpath
        if relpath != "." and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()

    def _record(self, folder: str, args: TrainingArguments) -> None:
        target = self.rec.root / folder
        if not target.is_dir():
            return
        claims = checkpoint_claims(target, data_skip=not args.ignore_data_skip)
        number = folder.rpartition("checkpoint-")[2]
        advice = ("TrainingArguments(save_only_model=True) writes the weights and the "
                  "trainer state alone: drop save_only_model, so that each checkpoint-N holds "
                  "the optimizer, scheduler and rng states too; or, before any run starts, "
                  "freeze a plan whose runs[].resume_state for this run asks only for what "
                  "these folders hold") if args.save_only_model else None
        record_checkpoint(self.rec, folder, run=self.run_id, format=FORMAT, claims=claims,
                          step=int(number) if number.isdigit() else None, advice=advice)

    # ---- what it logs

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        timings = {key for key in logs if key.endswith(TIMING_SUFFIXES)}
        values = series_values(logs, skip=SUMMARY_KEYS | timings)
        if values:
            self.run.log(int(state.global_step), **values)
