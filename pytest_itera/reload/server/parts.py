"""The resume parts: whether a value is a restorable state of a part, and the keys of a
checkpoint dict (and of the containers real code nests them in) that hold them."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from .finite import check, walk_tensors
from .siblings import formats
from .verdict import Findings

T = TypeVar("T")

# Top-level keys of a "general checkpoint" dict -> resume part (reload/formats.py).
KEY_PARTS = formats.key_parts("torch")


def present(value: Any) -> bool:
    return value is not None and not (isinstance(value, (dict, list, tuple, str)) and not value)


# Keys under which real training code nests the parts (torchtitan's ``train_state``, a saved
# TrainerState, ``state["progress"]``, ...): their own keys are read like top-level ones.
CONTAINER_KEYS = frozenset({
    "train_state", "trainer_state", "training_state", "state", "states", "checkpoint", "ckpt",
    "resume", "resume_state", "meta", "metadata", "extra", "extra_state", "loop_state",
    "run_state", "app",
})
CONTAINER_DEPTH = 2
# Keys of a progress record: a number under one of them is the progress.
PROGRESS_KEYS = frozenset({"step", "steps", "epoch", "global_step", "iteration", "iter",
                           "steps_done", "batch", "batches_seen", "samples_seen",
                           "tokens_seen", "consumed_samples", "current_step"})
# DeepSpeed's own LR schedules (deepspeed.runtime.lr_schedules) keep last_batch_iteration.
SCHEDULER_KEYS = ("last_epoch", "_step_count", "last_step", "last_batch_iteration")
SCALER_KEYS = ("scale", "loss_scale", "cur_scale")
MT19937_WORDS = 624  # numpy's legacy state: 624 uint32 words
PYTHON_RNG_WORDS = 625  # random.getstate()[1]: 624 words + the position
MIN_TORCH_RNG_BYTES = 16  # CUDA's philox state (seed + offset); the CPU's mt19937 is 5056


def describe(value: Any, limit: int = 80) -> str:
    """A short, exact description of a value for a message: ``{'seed': 7}``, ``[]``,
    ``a float32 tensor of shape [2, 2]``, ``a dict with keys 'a', 'b', ...``."""
    if isinstance(value, torch.Tensor):
        return (f"a {str(value.dtype).removeprefix('torch.')} tensor of shape "
                f"{list(value.shape)}")
    if isinstance(value, (bool, int, float, str)) or value is None:
        text = repr(value)
        return text if len(text) <= limit else text[:limit - 1] + "…"
    try:
        text = repr(value)
    except Exception:  # a hostile or odd object: its type is enough
        text = ""
    if text and len(text) <= limit and "tensor(" not in text:
        return text
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:4])
        return f"a dict with keys {keys}{', ...' if len(value) > 4 else ''}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def number(value: Any) -> bool:
    """A progress counter: a finite, non-negative int or float (not a bool), or a
    one-element numeric tensor holding one."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.is_complex() or value.dtype == torch.bool:
            return False
        try:
            value = value.item()
        except (RuntimeError, TypeError, NotImplementedError):  # a meta tensor holds no value
            return False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0


def sequence_of(value: Any, size: int) -> bool:
    """A list/tuple/array/tensor of ``size`` integers (a generator's state words)."""
    try:
        if len(value) != size:
            return False
    except TypeError:
        return False
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() and not value.is_complex()
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is not None:  # a numpy array
        return kind in "iu"
    return isinstance(value, (list, tuple)) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in value)


def generator_state(value: Any, depth: int = 0) -> str | None:
    """The kind of the first real random generator state inside ``value`` (torch, numpy,
    python), or None: a seed is not a generator state."""
    if isinstance(value, torch.Tensor):
        return "torch" if (value.dtype == torch.uint8 and value.dim() == 1
                           and value.numel() >= MIN_TORCH_RNG_BYTES) else None
    if isinstance(value, (list, tuple)) and len(value) >= 3:
        # np.random.get_state(): ('MT19937', keys[624], pos, has_gauss, cached_gaussian)
        if isinstance(value[0], str) and sequence_of(value[1], MT19937_WORDS):
            return "numpy"
        # random.getstate(): (version, 625 ints, gauss)
        if isinstance(value[0], int) and sequence_of(value[1], PYTHON_RNG_WORDS):
            return "python"
    if isinstance(value, dict):
        name = value.get("bit_generator")
        if isinstance(name, str) and (
                (isinstance(value.get("state"), dict) and value["state"])
                or sequence_of(value.get("keys"), MT19937_WORDS)
                or sequence_of(value.get("key"), MT19937_WORDS)):
            return "numpy"  # get_state(legacy=False), a Generator's bit_generator.state
        if isinstance(value.get("version"), int) and sequence_of(value.get("state"),
                                                                 PYTHON_RNG_WORDS):
            return "python"  # what pytest_itera.record writes for random.getstate()
    return first_inside(value, depth, generator_state)


def first_inside(value: Any, depth: int, find: Callable[[Any, int], T | None]) -> T | None:
    """What ``find`` finds first in the dict values or list items of ``value`` (4 deep)."""
    if depth >= 4:
        return None
    children = value.values() if isinstance(value, dict) else (
        value if isinstance(value, (list, tuple)) else ())
    for child in children:
        found = find(child, depth + 1)
        if found is not None:
            return found
    return None


def optimizer_problem(value: Any) -> str | None:
    """None when ``value`` restores an optimizer (Optimizer.state_dict(): ``state`` and
    ``param_groups``; a stateless SGD's ``state`` is ``{}``), a list of those, or a dict
    of named ones; else what is wrong."""
    if isinstance(value, dict) and ("state" in value or "param_groups" in value):
        if not isinstance(value.get("state"), dict):
            return "has no 'state' dict (Optimizer.state_dict() holds 'state' and " \
                   "'param_groups')"
        groups = value.get("param_groups")
        if not isinstance(groups, (list, tuple)) or not groups or not all(
                isinstance(g, dict) and "params" in g for g in groups):
            return ("has no parameter groups ('param_groups' must list the groups, each with "
                    "its 'params')")
        return None
    items = value if isinstance(value, (list, tuple)) else (
        list(value.values()) if isinstance(value, dict) and value and all(
            isinstance(v, dict) for v in value.values()) else None)
    if items:
        problems = [optimizer_problem(item) for item in items]
        return next((p for p in problems if p is not None), None)
    return (f"holds {describe(value)}, not an optimizer's state_dict() ('state' and "
            "'param_groups')")


def one_scheduler(value: Any) -> bool:
    """An LR scheduler's own state_dict(): an integer ``last_epoch`` (``_step_count``, ...);
    a ChainedScheduler's holds none, only its ``_schedulers``' states and ``_last_lr``."""
    if not isinstance(value, dict):
        return False
    if any(isinstance(value.get(k), int) for k in SCHEDULER_KEYS):
        return True
    inner = value.get("_schedulers")
    return isinstance(inner, list) and bool(inner) and all(one_scheduler(s) for s in inner)


def scheduler_problem(value: Any) -> str | None:
    if one_scheduler(value):
        return None
    items = value if isinstance(value, (list, tuple)) else (
        list(value.values()) if isinstance(value, dict) and value and all(
            isinstance(v, dict) for v in value.values()) else None)
    if items:
        problems = [scheduler_problem(item) for item in items]
        return next((p for p in problems if p is not None), None)
    return (f"holds {describe(value)}, not an LR scheduler's state_dict() (no integer "
            "'last_epoch')")


def scaler_problem(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, dict):
        if any(number(value.get(k)) for k in SCALER_KEYS):
            return None
        # apex amp: {"loss_scaler0": {"loss_scale": ...}}; a plugin's nested scaler state
        if depth < 2 and any(isinstance(v, dict) and scaler_problem(v, depth + 1) is None
                             for v in value.values()):
            return None
    return f"holds {describe(value)}, not a grad scaler's state_dict() (no 'scale')"


def progress_problem(value: Any) -> str | None:
    if number(value):
        return None
    if isinstance(value, dict) and any(number(value.get(k)) for k in PROGRESS_KEYS):
        return None
    return (f"holds {describe(value)}, not a step or epoch count (a number, or a dict with "
            "'step' / 'epoch' / 'global_step')")


# Keys under which tools save torch's CPU generator (torch.get_rng_state(): the mt19937
# state, 5056 bytes): the HF Trainer's 'cpu', accelerate's 'torch_manual_seed', ours 'torch'.
CPU_RNG_KEYS = frozenset({"torch", "cpu", "torch_rng_state", "cpu_rng_state",
                          "torch_manual_seed"})
CPU_RNG_BYTES = torch.get_rng_state().numel()


def short_cpu_state(value: Any, depth: int = 0) -> tuple[str, int] | None:
    """(key, bytes) of a torch CPU generator state that torch.set_rng_state would refuse
    (another size than torch.get_rng_state()'s), or None."""
    if isinstance(value, dict):
        for key, child in value.items():
            if (key in CPU_RNG_KEYS and isinstance(child, torch.Tensor)
                    and child.dtype == torch.uint8 and child.dim() == 1
                    and child.numel() != CPU_RNG_BYTES):
                return str(key), child.numel()
    return first_inside(value, depth, short_cpu_state)


def rng_problem(value: Any) -> str | None:
    if generator_state(value) is not None:
        short = short_cpu_state(value)
        if short is None:
            return None
        key, size = short
        return (f"holds under {key!r} a torch CPU generator state of {size} bytes where "
                f"torch.get_rng_state() has {CPU_RNG_BYTES}: "
                "torch.set_rng_state would refuse it")
    return (f"holds {describe(value)}, which is no random generator state (a seed is not an "
            "RNG state: torch.get_rng_state(), numpy.random.get_state(), random.getstate())")


def model_problem(value: Any) -> str | None:
    if any(True for _ in walk_tensors(value, "")):
        return None
    return f"holds {describe(value)}: no tensors, no weights"


def data_problem(value: Any) -> str | None:
    return None  # any non-empty record of the data position restores it


PART_PROBLEMS = {"model": model_problem, "optimizer": optimizer_problem,
                 "progress": progress_problem, "scheduler": scheduler_problem,
                 "scaler": scaler_problem, "rng": rng_problem, "data": data_problem}


def judge_part(found: Findings, part: str, value: Any, key: str) -> bool:
    """Count ``part`` when ``value`` (found under ``key``) is a restorable state of it;
    else record why not (empty, or not such a state)."""
    if not present(value):
        found.fault(part, "empty", key, describe(value))
        return False
    problem = PART_PROBLEMS[part](value)
    if problem is not None:
        found.fault(part, "not_state", key, problem)
        return False
    found.parts.add(part)
    if part == "progress":
        step = progress_step(value, key)
        if step is not None:
            found.steps.append(step)
    elif part == "optimizer":
        found.optimizers.append((key, value))  # judged against the model at the end
        found.rated_optimizers.append((key, value))
    elif part == "scheduler":
        found.schedulers.append((key, value))
    return True


# Progress keys that count optimizer steps (an epoch, a sample or token count is no step).
STEP_KEYS = ("global_step", "step", "steps", "iteration", "iter", "steps_done", "current_step",
             "global_steps")  # DeepSpeed's engine


def progress_step(value: Any, key: str) -> tuple[str, int] | None:
    """(where, step) of the training step a progress part stores: a whole number under a
    step key (``global_step``, ``progress.step``, ``train_state.step``), else None."""
    last = re.split(r"[.:]", key)[-1]
    if last in STEP_KEYS:
        return whole(value, key)
    if isinstance(value, dict):
        for name in STEP_KEYS:
            if name in value:
                found = whole(value[name], f"{key}.{name}")
                if found is not None:
                    return found
    return None


def whole(value: Any, key: str) -> tuple[str, int] | None:
    if not number(value):
        return None
    if isinstance(value, torch.Tensor):
        value = value.item()
    return (key, int(value)) if float(value).is_integer() else None


def has_part_keys(obj: dict[Any, Any], depth: int = 0) -> bool:
    for key, value in obj.items():
        if not isinstance(key, str):
            continue
        if key in KEY_PARTS:
            return True
        if key in CONTAINER_KEYS and isinstance(value, dict) and depth < CONTAINER_DEPTH \
                and has_part_keys(value, depth + 1):
            return True
    return False


def inspect_dict(found: Findings, obj: dict[Any, Any], prefix: str, mapped: bool | None,
                 depth: int = 0, skip: frozenset[str] = frozenset()) -> None:
    """Judge each part key of a checkpoint dict (and of the containers real code nests
    them in), counting tensors and checking the model's weights for non-finite values
    (``mapped`` None: the tensors were counted already)."""
    for key, value in obj.items():
        name = f"{prefix}{key}"
        part = KEY_PARTS.get(key) if isinstance(key, str) else None
        if part is None and isinstance(key, str) and key in CONTAINER_KEYS and \
                isinstance(value, dict) and depth < CONTAINER_DEPTH and \
                has_part_keys(value, depth + 1):
            inspect_dict(found, value, f"{name}.", mapped, depth + 1, skip)
            continue
        if mapped is not None:
            check(found, value, name, part == "model", mapped)
        if part is not None and part not in skip:
            judge_part(found, part, value, name)
