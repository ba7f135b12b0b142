"""The learning rates a checkpoint stores, as stored: each optimizer state's per-group ``lr``
and ``initial_lr``, each LR scheduler state's ``_last_lr`` and ``base_lrs``.

Reported as numbers (a Python float, or a one-element tensor's value and dtype), never
compared here: whether an optimizer and a scheduler agree is ``resume-complete``'s rule
(``pytest_itera.checks.artifacts.checkpoint_content``).
"""

from __future__ import annotations

from typing import Any

import torch

from .optimizer_fit import optimizers_of
from .parts import one_scheduler
from .verdict import Findings


def rate(value: Any) -> dict[str, Any] | None:
    """``{"value": 0.1, "dtype": None}`` for a Python number, ``{"value": <its float>,
    "dtype": "float32"}`` for a one-element floating tensor; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return {"value": float(value), "dtype": None}
        except OverflowError:  # an int too large for a float is no learning rate
            return None
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        try:
            return {"value": float(value.item()),
                    "dtype": str(value.dtype).removeprefix("torch.")}
        except (RuntimeError, TypeError, NotImplementedError):  # a meta tensor has no value
            return None
    return None


def rates(values: Any) -> list[dict[str, Any] | None] | None:
    """One rate per item of a list (None where an item is no number); None: no list."""
    if isinstance(values, torch.Tensor) and values.dim() == 1:
        values = list(values)
    if not isinstance(values, (list, tuple)):
        return None
    return [rate(v) for v in values]


def schedulers_of(key: str, value: Any) -> list[tuple[str, dict[str, Any]]]:
    """The LR scheduler states a part holds: one (``parts.one_scheduler``), a list of them,
    or a dict of them. A SequentialLR's or a ChainedScheduler's own state is one scheduler:
    its ``_schedulers`` are not others (their ``_last_lr`` may lag behind)."""
    if one_scheduler(value):
        return [(key, value)]
    if isinstance(value, (list, tuple)):
        return [s for i, v in enumerate(value) for s in schedulers_of(f"{key}.{i}", v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() if isinstance(v, dict)
                for s in schedulers_of(f"{key}.{k}", v)]
    return []


def groups(state: dict[str, Any]) -> list[Any]:
    """An optimizer state's parameter groups (DCP gives a list back as an index dict)."""
    raw = state.get("param_groups")
    if isinstance(raw, dict) and all(str(k).isdigit() for k in raw):
        raw = [raw[k] for k in sorted(raw, key=lambda k: int(str(k)))]
    return list(raw) if isinstance(raw, (list, tuple)) else []


def report_rates(found: Findings) -> None:
    """Fill ``found.optimizer_rates`` and ``found.scheduler_rates`` from every optimizer and
    scheduler part counted (all of them: the checks decide which pairs they can judge)."""
    for key, value in found.rated_optimizers:
        for where, state in optimizers_of(key, value):
            listed = [g if isinstance(g, dict) else {} for g in groups(state)]
            found.optimizer_rates.append({
                "key": where, "lr": [rate(g.get("lr")) for g in listed],
                "initial_lr": [rate(g.get("initial_lr")) for g in listed]})
    for key, value in found.schedulers:
        for where, state in schedulers_of(key, value):
            found.scheduler_rates.append({
                "key": where, "last_lr": rates(state.get("_last_lr")),
                "base_lrs": rates(state.get("base_lrs"))})
