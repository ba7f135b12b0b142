"""A Lightning ``Callback`` that records what ``ModelCheckpoint`` writes into a campaign.

::

    from pytest_itera.record.integrations.lightning import IteraCallback

    checkpoints = ModelCheckpoint(dirpath=rec.path("runs/control/ckpt"), every_n_train_steps=50,
                                  save_top_k=-1)
    trainer = L.Trainer(callbacks=[checkpoints, IteraCallback(rec, "control")], ...)
    trainer.fit(model, data)

- each ``.ckpt`` a ``ModelCheckpoint`` writes is recorded as a resume checkpoint (format
  ``lightning``) whose claims are the parts its real keys hold, read with
  ``torch.load(weights_only=True, mmap=True)``: ``state_dict`` (model), ``optimizer_states``
  (optimizer), ``lr_schedulers`` (scheduler), ``epoch`` / ``global_step`` (progress), the
  precision plugin's scaler state (scaler), the fit loop's ``combined_loader`` state (data);
  beside a ``ModelCheckpoint`` that writes full checkpoints, the files of a
  ``save_weights_only=True`` one (the best weights to deliver, say) are weights checkpoints;
  Lightning stores no RNG state, by design: a plan that needs ``rng`` of a Lightning run
  cannot be met (give the run its own ``runs[].resume_state``), and the callback is refused
  when it is created, before any training, with ``resume-complete``'s own words;
- the training loss of each step (what ``training_step`` returns) is the point
  ``loss`` of the run's series at ``trainer.global_step``;
- the run is started when training begins, unless the script started it; a fit that
  resumes the same run from one of its checkpoints forgets the points logged after it;
- ``fit(ckpt_path=...)`` from a file of the campaign that is not one of the run's own
  checkpoints (the resume check's) is recorded as the run's ``resumed_from``: that file
  (``trainer.ckpt_path``) at the step the fit restored.

Every ``ModelCheckpoint.dirpath`` must be inside the campaign: fitting is refused otherwise.
A ``ModelCheckpoint`` that keeps every file (``save_top_k=-1``) has each checkpoint recorded
(and journaled) as soon as it is written; one that deletes older files (``save_top_k`` of 1,
the default, or k) has the checkpoints still on disk recorded when training ends. Only the
global-zero process records.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lightning.pytorch import Callback
from lightning.pytorch.callbacks import ModelCheckpoint

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
    import lightning.pytorch as pl

    from pytest_itera.record.campaign import CampaignRecorder

__all__ = ["IteraCallback", "checkpoint_claims"]

FORMAT = "lightning"
Kind = Literal["resume", "weights"]
_SCALER_KEYS = ("MixedPrecision", "native_amp_scaling_state")


def checkpoint_claims(path: Path) -> list[str]:
    """The resume parts a Lightning ``.ckpt`` holds, from its real keys (loaded with
    ``weights_only=True``; memory-mapped, so a large file is not read whole)."""
    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # the reload check will name the reason; record no claims
        warnings.warn(f"{path.name} does not load with weights_only=True ({exc}); recorded "
                      "without claims", stacklevel=2)
        return []
    if not isinstance(ckpt, Mapping):
        return []
    parts = []
    if ckpt.get("state_dict"):
        parts.append("model")
    if ckpt.get("optimizer_states"):
        parts.append("optimizer")
    if any(_count(ckpt.get(key)) for key in ("global_step", "epoch")):
        parts.append("progress")
    if ckpt.get("lr_schedulers"):
        parts.append("scheduler")
    if any(ckpt.get(key) for key in _SCALER_KEYS):
        parts.append("scaler")
    if _combined_loader(ckpt):
        parts.append("data")
    return parts


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _combined_loader(ckpt: Mapping[str, Any]) -> bool:
    node: Any = ckpt
    for key in ("loops", "fit_loop", "state_dict", "combined_loader"):
        if not isinstance(node, Mapping):
            return False
        node = node.get(key)
    return bool(node)


def _loss(outputs: Any) -> Any:
    if isinstance(outputs, Mapping):
        return outputs.get("loss")
    return outputs


def _refuse_what_no_ckpt_holds(rec: CampaignRecorder, run_id: str) -> None:
    """RecordError, before any training, when the plan requires of the run a resume part
    that no Lightning checkpoint can hold (rng): ``resume-complete`` would fail every
    ``.ckpt`` of the run at closure, with the same words."""
    from pytest_itera.checks.artifacts.resume_complete import parts_problems
    from pytest_itera.core.campaign import CheckpointRecord
    from pytest_itera.core.findings import render_all
    from pytest_itera.record.base import RecordError
    from pytest_itera.reload import PARTS

    record = CheckpointRecord(f"runs/{run_id}/*.ckpt", run_id, FORMAT, "resume")
    problems = parts_problems(rec.plan_model, record, PARTS,
                              label=f"the Lightning checkpoints of run {run_id}")
    if problems:
        raise RecordError(
            f"IteraCallback(rec, {run_id!r}): refused before training, as the plugin would "
            "refuse every .ckpt of the run at closure (resume-complete):\n"
            f"{render_all(problems)}\n"
            "What to do: before any run starts, freeze a new campaign whose plan gives run "
            f"{run_id!r} a runs[].resume_state that a Lightning checkpoint holds (without "
            "rng); or keep this plan and train the run without Lightning's checkpoints, "
            "saving each resume checkpoint with pytest_itera.record.save_resume_checkpoint "
            "(it holds every part) and listing it with rec.add_checkpoint(..., "
            "kind=\"resume\")")


class IteraCallback(Callback):
    """Records the ``.ckpt`` files of a Lightning fit, and its per-step training loss, into
    the run ``run_id`` of ``rec``."""

    def __init__(self, rec: CampaignRecorder, run_id: str, *, series: str = "loss",
                 lead: float = 0) -> None:
        rec.planned_run(run_id)  # refused now when the run is not planned
        _refuse_what_no_ckpt_holds(rec, run_id)
        self.rec = rec
        self.run_id = run_id
        self.run = rec.run(run_id)
        self.series = series
        # absolute path -> (mtime_ns, size) when handled: a file written again (last.ckpt,
        # overwritten at each save) is handled again, so each save is journaled
        self._seen: dict[str, tuple[int, int]] = {}
        # written by a ModelCheckpoint that deletes (path, weights only, kind): recorded at
        # the end
        self._pending: list[tuple[str, bool, Kind]] = []
        # the lot's end forecast, logged when it turns (lead: hours kept before the lot ends)
        self.forecast = ForecastWarner(rec, lead)

    # ---- where ModelCheckpoint writes

    def _checkpointers(self, trainer: pl.Trainer) -> list[ModelCheckpoint]:
        found = [cb for cb in trainer.checkpoint_callbacks if isinstance(cb, ModelCheckpoint)]
        for cb in found:
            if cb.dirpath is not None:
                campaign_relpath(self.rec, cb.dirpath, what="ModelCheckpoint.dirpath")
        return found

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._checkpointers(trainer)  # every ModelCheckpoint has resolved its dirpath now

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # The fit loop has restored its progress (ckpt_path): global_step is the resume step.
        if not trainer.is_global_zero:
            return
        if self.run.started_at is None:
            self.run.start()
        self.rec.training_bases(self.run_id)  # the base it trains on, as it is now
        rewind_if_resumed(self.run, trainer.global_step)
        self._resumed(trainer)

    def _resumed(self, trainer: pl.Trainer) -> None:
        """``fit(ckpt_path=...)``: the file restored is ``trainer.ckpt_path`` (resolved from
        "last" or "best"), recorded as the run's ``resumed_from`` when it is not one of the
        run's own checkpoints (the resume check's evidence)."""
        path, step = trainer.ckpt_path, int(trainer.global_step)
        if not path or step <= 0:
            return
        try:
            relpath = campaign_relpath(self.rec, path, what="ckpt_path")
        except RecordError as exc:
            if self.rec.planned_run(self.run_id).get("role") == "resume_check":
                not_known(self.run, step, f"a file outside the campaign ({exc})")
            return
        own = [campaign_relpath(self.rec, cb.dirpath, what="ModelCheckpoint.dirpath")
               for cb in self._checkpointers(trainer) if cb.dirpath is not None]
        if any(relpath.startswith(f"{folder}/") for folder in own if folder != "."):
            return  # the run continues from its own checkpoint (after a crash, say)
        resumed_elsewhere(self.rec, self.run, relpath, step)

    # ---- what it writes: ModelCheckpoint runs after the other callbacks, so each hook
    # collects what it wrote since the previous one

    def _collect(self, trainer: pl.Trainer) -> None:
        if not trainer.is_global_zero:
            return
        checkpointers = self._checkpointers(trainer)
        # Beside a ModelCheckpoint that writes full checkpoints, a save_weights_only one
        # writes the weights to deliver (the best model, say), not a resume checkpoint.
        resumable = any(not cb.save_weights_only for cb in checkpointers)
        for cb in checkpointers:
            kind: Kind = "weights" if cb.save_weights_only and resumable else "resume"
            written = [cb._last_checkpoint_saved, cb.last_model_path, cb.best_model_path,
                       *cb.best_k_models]
            for path in written:
                if not path or not Path(path).is_file():
                    continue
                stat = Path(path).stat()
                if self._seen.get(path) == (stat.st_mtime_ns, stat.st_size):
                    continue
                self._seen[path] = (stat.st_mtime_ns, stat.st_size)
                if cb.save_top_k == -1:
                    self._record(path, step=trainer.global_step,
                                 weights_only=cb.save_weights_only, kind=kind)
                else:
                    self._pending.append((path, cb.save_weights_only, kind))

    def _record(self, path: str, step: int | None = None, *, weights_only: bool,
                kind: Kind = "resume") -> None:
        relpath = campaign_relpath(self.rec, path, what="checkpoint")
        advice = ("ModelCheckpoint(save_weights_only=True) writes the weights alone: drop "
                  "save_weights_only, so that each .ckpt holds the optimizer, scheduler and "
                  "loop states too; or, before any run starts, freeze a plan whose "
                  "runs[].resume_state for this run asks only for what the file holds"
                  ) if weights_only else None
        record_checkpoint(self.rec, relpath, run=self.run_id, format=FORMAT,
                          claims=checkpoint_claims(Path(path)), step=step, advice=advice,
                          kind=kind)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                             batch: Any, batch_idx: int) -> None:
        self._collect(trainer)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._collect(trainer)
        if trainer.is_global_zero:
            self.forecast.check()  # once an epoch: the warning is logged when it turns

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._collect(trainer)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._collect(trainer)
        pending, self._pending = self._pending, []
        for path, weights_only, kind in dict.fromkeys(pending):
            if Path(path).is_file():  # not deleted by its ModelCheckpoint since
                self._record(path, weights_only=weights_only, kind=kind)

    # ---- what it logs

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        if not trainer.is_global_zero:
            return
        values = series_values({self.series: _loss(outputs)})
        if values:
            self.run.log(int(trainer.global_step), **values)
