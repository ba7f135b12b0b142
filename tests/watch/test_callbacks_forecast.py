"""The Trainer and Lightning callbacks log the lot's end warning in a real (tiny) training run:
once, when the margin turns negative, never per step (issue 37, point 2).

The recorder's clock is played: a callback of the test moves it 100 hours ahead after the
first optimizer step, so the margin turns negative in the middle of the training; the
callbacks judge it at each save (Trainer) and each epoch (Lightning), twice each here, and
the second judgement, the same, logs nothing."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.record import CampaignRecorder
from tests import factory as F

LOGGER = "pytest_itera.core.lot_forecast"
LIGHTNING_PARTS = ["model", "optimizer", "progress", "scheduler"]  # no RNG state, by design


class Played:
    """The recorder's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def jump(self) -> None:
        self.now += timedelta(hours=100)  # past the 3-day lot's end: the margin turns


@contextlib.contextmanager
def chatter_muted() -> Iterator[None]:
    """The libraries' prints and warnings muted, the logging kept (what is tested)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def frozen(root: Path, resume_state: Sequence[str] | None = None
           ) -> tuple[CampaignRecorder, Played]:
    """The factory's campaign on a played clock, its plan frozen."""
    clock = Played()
    rec = F.frozen_recorder(root, resume_state, clock=clock)
    return rec, clock


def forecast_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING]


def test_the_trainer_callback_logs_the_warning_once_when_the_margin_turns(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("transformers")
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from pytest_itera.record.integrations.transformers import IteraCallback
    from tests.real_tools import Rows, bert

    rec, clock = frozen(tmp_path / "campaign")
    assert rec.forecast(lead=2).warning() is None  # on track when training starts

    class Jump(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 1:
                clock.jump()

    caplog.set_level(logging.INFO, logger=LOGGER)
    args = TrainingArguments(output_dir=str(rec.path("runs/control/trainer")), max_steps=4,
                             save_steps=2, per_device_train_batch_size=4, report_to="none",
                             use_cpu=True, disable_tqdm=True, seed=0, logging_steps=1)
    with chatter_muted():
        Trainer(model=bert(), args=args, train_dataset=Rows(),
                callbacks=[Jump(), IteraCallback(rec, "control", lead=2)]).train()
    [warning] = forecast_warnings(caplog)  # two saves judged, one warning logged
    assert warning == rec.forecast(lead=2).warning()
    assert warning.startswith("WARNING lot ")


def test_the_lightning_callback_logs_the_warning_once_when_the_margin_turns(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("lightning")
    import lightning as L
    from lightning.pytorch.callbacks import Callback, ModelCheckpoint

    from pytest_itera.record.integrations.lightning import IteraCallback
    from tests.real_tools import tiny_lightning

    rec, clock = frozen(tmp_path / "campaign", LIGHTNING_PARTS)
    assert rec.forecast(lead=2).warning() is None

    class Jump(Callback):
        def on_train_batch_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
            if trainer.global_step == 1:
                clock.jump()

    caplog.set_level(logging.INFO, logger=LOGGER)
    torch.manual_seed(0)
    rows: list[torch.Tensor] = list(torch.randn(8, 4))
    dirpath = rec.path("runs/control/ckpt")
    with chatter_muted():
        trainer = L.Trainer(
            max_steps=8, accelerator="cpu", devices=1, enable_progress_bar=False,
            enable_model_summary=False, log_every_n_steps=1, default_root_dir=str(dirpath.parent),
            callbacks=[ModelCheckpoint(dirpath=str(dirpath), every_n_train_steps=4, save_top_k=-1),
                       Jump(), IteraCallback(rec, "control", lead=2)])
        data = torch.utils.data.DataLoader(rows, batch_size=2)  # type: ignore[var-annotated, arg-type]
        trainer.fit(tiny_lightning(), data)
    [warning] = forecast_warnings(caplog)  # two epochs judged, one warning logged
    assert warning == rec.forecast(lead=2).warning()
    assert warning.startswith("WARNING lot ")
