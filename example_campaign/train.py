"""The training loop: a seeded shuffling loader, a real stop rule, resumable state.

Everything that decides the next loss (weights, optimizer and scheduler state,
the global RNG that drives dropout, the loader's position) is saved by
``pytest_itera.record.resume.save_resume_checkpoint``, so a run resumed in a new
process continues bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from example_campaign.model import MLP, build_model

# Called after each optimizer step with (step, data_state) so the caller may save.
SaveHook = Callable[[int, dict[str, int]], None]


class Batches:
    """Mini-batches of ``n`` training rows, reshuffled each epoch by a seeded generator."""

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.per_epoch = math.ceil(n / batch_size)
        self._cached: tuple[int, torch.Tensor] | None = None

    def indices(self, epoch: int, batch: int) -> torch.Tensor:
        if self._cached is None or self._cached[0] != epoch:
            generator = torch.Generator().manual_seed(self.seed * 10_000 + epoch)
            self._cached = (epoch, torch.randperm(self.n, generator=generator))
        return self._cached[1][batch * self.batch_size : (batch + 1) * self.batch_size]

    def advance(self, epoch: int, batch: int) -> tuple[int, int]:
        batch += 1
        return (epoch + 1, 0) if batch == self.per_epoch else (epoch, batch)


@dataclass
class Trainer:
    """A model with its optimizer, scheduler and loader, built from a run config."""

    config: dict[str, Any]
    model: MLP
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    batches: Batches
    step: int = 0
    epoch: int = 0
    batch: int = 0
    losses: list[tuple[int, float]] = field(default_factory=list)

    @property
    def total_steps(self) -> int:
        return int(self.config["epochs"]) * self.batches.per_epoch

    def data_state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batch": self.batch, "seed": self.batches.seed}


def make_trainer(config: dict[str, Any], n_train: int) -> Trainer:
    torch.manual_seed(config["seed"])  # fixes the initial weights and dropout masks
    model = build_model(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    scheduler = torch.optim.lr_scheduler.StepLR(
        optimizer, step_size=config["lr_step_every"], gamma=config["lr_gamma"]
    )
    batches = Batches(n_train, config["batch_size"], config["seed"])
    return Trainer(config, model, optimizer, scheduler, batches)


@dataclass(frozen=True)
class NonFinite:
    """The stop rule ``non-finite-loss`` fired: the loss at ``step`` was ``value``."""

    step: int
    value: float


def train(
    trainer: Trainer,
    features: torch.Tensor,
    labels: torch.Tensor,
    *,
    until_step: int | None = None,
    on_step: SaveHook | None = None,
) -> NonFinite | None:
    """Train up to ``until_step`` (default: the configured epochs); stop on a non-finite loss."""
    until = trainer.total_steps if until_step is None else until_step
    loss_fn = nn.CrossEntropyLoss()
    while trainer.step < until:
        rows = trainer.batches.indices(trainer.epoch, trainer.batch)
        trainer.model.train()
        trainer.optimizer.zero_grad()
        loss = loss_fn(trainer.model(features[rows]), labels[rows])
        value = loss.item()
        if not math.isfinite(value):  # the plan's stop rule, evaluated before the update
            return NonFinite(trainer.step + 1, value)
        loss.backward()
        trainer.optimizer.step()
        trainer.scheduler.step()
        trainer.step += 1
        trainer.losses.append((trainer.step, value))
        trainer.epoch, trainer.batch = trainer.batches.advance(trainer.epoch, trainer.batch)
        if on_step is not None:
            on_step(trainer.step, trainer.data_state())
    return None


def probabilities(model: nn.Module, features: torch.Tensor) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return torch.softmax(model(features), dim=1)
