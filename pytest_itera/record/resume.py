"""A complete resume checkpoint: save it, and restore it exactly, RNG states included.

What a training loop calls (no pytest import): :func:`save_resume_checkpoint` writes one
``torch.save`` dict with every part R6 names (model, optimizer, progress, RNG states and,
when given, scheduler, grad scaler, data position), atomically and loadable with
``torch.load(path, weights_only=True)``; :func:`load_resume_checkpoint` restores it in a
new process. torch (and numpy, when present) is imported inside the functions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_itera.core.atomic import atomic_handle
from pytest_itera.core.campaign import RESUME_PARTS
from pytest_itera.record.base import RecordError, refuse_temp_strings

if TYPE_CHECKING:
    import torch

__all__ = ["load_resume_checkpoint", "resume_parts", "save_resume_checkpoint"]


def _rng_state() -> dict[str, Any]:
    """Python, numpy and torch RNG states as plain data that weights_only=True loads."""
    import torch

    version, internal, gauss = random.getstate()
    state: dict[str, Any] = {
        "python": {"version": version, "state": list(internal), "gauss": gauss},
        "torch": torch.get_rng_state(),
    }
    numpy_state = _numpy_rng_state()
    if numpy_state is not None:
        state["numpy"] = numpy_state
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _numpy_rng_state() -> dict[str, Any] | None:
    try:
        import numpy
    except ImportError:
        return None
    name, keys, pos, has_gauss, cached = numpy.random.get_state(legacy=True)
    # Lists of ints, not an ndarray: no numpy global is needed to unpickle them.
    return {
        "bit_generator": str(name),
        "keys": [int(k) for k in keys],
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }


def _set_rng_state(state: Mapping[str, Any]) -> None:
    import torch

    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss"]))
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy

        np_state = state["numpy"]
        numpy.random.set_state(
            (
                np_state["bit_generator"],
                numpy.array(np_state["keys"], dtype=numpy.uint32),
                np_state["pos"],
                np_state["has_gauss"],
                np_state["cached_gaussian"],
            )
        )
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_resume_checkpoint(
    path: Path | str,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any = None,
    scaler: Any = None,
    step: int,
    epoch: int | None = None,
    data_state: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Atomically save everything needed to continue training exactly where it stopped.

    One ``torch.save`` dict with the keys ``model``, ``optimizer``, ``progress``,
    ``rng`` and, when given, ``scheduler``, ``scaler``, ``data`` and ``extra``.
    ``data_state`` and ``extra`` must be plain data (dicts, lists, numbers,
    strings, tensors): the file must load with ``weights_only=True``.
    """
    import torch

    checkpoint: dict[str, Any] = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "progress": {"step": int(step), "epoch": None if epoch is None else int(epoch)},
        "rng": _rng_state(),
    }
    optional = {"scheduler": scheduler, "scaler": scaler}
    for key, value in optional.items():
        if value is not None:
            checkpoint[key] = value.state_dict()
    if data_state is not None:
        checkpoint["data"] = dict(data_state)
    if extra is not None:
        checkpoint["extra"] = dict(extra)
    refuse_temp_strings(
        {k: v for k, v in checkpoint.items() if k in ("data", "extra")}, Path(path).name
    )
    # A file handle (not a path) keeps the archive's inner folder name neutral ("archive/").
    with atomic_handle(Path(path)) as handle:
        torch.save(checkpoint, handle)


def load_resume_checkpoint(
    path: Path | str,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any = None,
    scaler: Any = None,
) -> dict[str, Any]:
    """Restore a checkpoint from :func:`save_resume_checkpoint`, RNGs included.

    Loads with ``weights_only=True`` (no arbitrary unpickling). Returns
    ``{"step", "epoch", "data", "extra"}`` so the loop continues from there.
    """
    import torch

    checkpoint = torch.load(Path(path), map_location="cpu", weights_only=True)
    missing = [p for p in ("model", "optimizer", "progress", "rng") if p not in checkpoint]
    missing += [
        name
        for name, obj in (("scheduler", scheduler), ("scaler", scaler))
        if obj is not None and name not in checkpoint
    ]
    if missing:
        raise RecordError(f"{path}: not a complete resume checkpoint, missing {', '.join(missing)}")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(checkpoint["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(checkpoint["scaler"])
    _set_rng_state(checkpoint["rng"])
    progress = checkpoint["progress"]
    return {
        "step": progress["step"],
        "epoch": progress.get("epoch"),
        "data": checkpoint.get("data"),
        "extra": checkpoint.get("extra"),
    }


def resume_parts(checkpoint: Mapping[str, Any]) -> tuple[str, ...]:
    """The resume parts (SPEC's names) a loaded checkpoint dict holds."""
    return tuple(part for part in RESUME_PARTS if part in checkpoint)
