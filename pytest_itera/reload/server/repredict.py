"""Re-predicting a sample of the corpus with a run's delivered weights, in a loader child.

The reviewer's ``pytest_itera_model`` hook names a module file of their own and, in it, a
``build(config) -> torch.nn.Module`` and a ``predict(model, row) -> value``. The child runs
that code (the judge's, never the campaign's) *before* its sandbox is applied: it imports the
module and builds the model. Only then is the sandbox applied and the checkpoint read, the
same way a reload reads it (``torch.load(weights_only=True)`` or safetensors); its model
state is loaded with ``strict=True`` and each row is predicted under ``torch.no_grad()``.
The reply is the predictions as JSON values, in the rows' order, or why there are none.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import torch

from .file_formats import is_flat_state_dict, nested
from .loading import sniff, torch_load
from .siblings import formats
from .verdict import Findings, Refused, failed

_FOLDER_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors",
                   "adapter_model.bin")
_MODEL_KEYS = tuple(key for part, key in formats.keys("torch") if part == "model")


class Prepared:
    """The judge's model, built before the sandbox: the module's predict and the model."""

    def __init__(self, spec: dict[str, Any]) -> None:
        module = _module(str(spec["module"]))
        build = _callable(module, str(spec["build"]))
        self.predict = _callable(module, str(spec["predict"]))
        self.model = build(spec.get("config"))
        if not isinstance(self.model, torch.nn.Module):
            raise Refused(f"{spec['build']}() returned {type(self.model).__name__}, "
                          "not a torch.nn.Module", kind="unreadable")
        self.key = spec.get("key")
        self.rows = list(spec.get("rows") or ())


def prepare(spec: dict[str, Any]) -> Prepared | dict[str, Any]:
    """The judge's module imported and the model built, or a failed reply saying why."""
    try:
        return Prepared(spec)
    except Refused as exc:
        return failed(str(exc), exc.kind)
    except Exception as exc:  # the judge's own code failed: say where
        return failed(f"the pytest_itera_model recipe failed before loading the weights "
                      f"({type(exc).__name__}: {str(exc)[:200]})", "unreadable")


def repredicted(prepared: Prepared, path: str) -> dict[str, Any]:
    """Load ``path``'s model state into the built model and predict every row."""
    try:
        state = _state(path, prepared.key)
        prepared.model.load_state_dict(state, strict=True)
    except Refused as exc:  # its verdict: the globals of a file that holds code, typed
        return Findings(None).verdict(exc)
    except (RuntimeError, KeyError, TypeError, ValueError) as exc:
        first = " ".join(line.strip() for line in str(exc).splitlines())[:300]
        return failed(f"the delivered weights do not fit the model the recipe builds "
                      f"({type(exc).__name__}: {first})", "unreadable")
    prepared.model.eval()
    out: list[Any] = []
    try:
        with torch.no_grad():
            for row in prepared.rows:
                out.append(_plain(prepared.predict(prepared.model, row)))
    except Exception as exc:
        return failed(f"the recipe's predict raised on row {len(out) + 1} "
                      f"({type(exc).__name__}: {str(exc)[:200]})", "unreadable")
    return {"ok": True, "format": None, "predictions": out, "parts": [],
            "missing_reasons": {}, "nonfinite": [], "tensors": 0}


def _module(path: str) -> Any:
    """The judge's module file, imported under a private name, its folder on sys.path (so
    that it may import its siblings)."""
    if not os.path.isfile(path):
        raise Refused(f"the recipe's module {path} is not a file", kind="unreadable")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("_itera_judge_model", path)
    if spec is None or spec.loader is None:
        raise Refused(f"the recipe's module {path} cannot be imported", kind="unreadable")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _callable(module: Any, name: str) -> Callable[..., Any]:
    found = module
    for part in name.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise Refused(f"the recipe's module has no callable {name!r}", kind="unreadable")
    return found  # type: ignore[no-any-return]


def _state(path: str, key: str | None) -> dict[str, Any]:
    """The model state a checkpoint holds: a safetensors file, a torch.save file (under
    ``key``, one of the model keys, or a bare state dict), or the weights file of a folder."""
    if os.path.isdir(path):
        found = next((os.path.join(path, name) for name in _FOLDER_WEIGHTS
                      if os.path.isfile(os.path.join(path, name))), None)
        if found is None:
            raise Refused("the folder holds none of " + ", ".join(_FOLDER_WEIGHTS)
                          + ": name the weights file in the recipe (checkpoint=)",
                          kind="unreadable")
        path = found
    kind = sniff(path)
    if kind == "safetensors":
        from safetensors.torch import load_file

        return dict(load_file(path, device="cpu"))
    if kind not in ("zip", "legacy"):
        raise Refused(f"not a torch.save or safetensors file (content: {kind})",
                      kind="unreadable")
    obj = torch_load(path, kind)
    if key:
        state = nested(obj, key) if isinstance(obj, dict) else None
        if not isinstance(state, dict):
            raise Refused(f"the checkpoint holds no model state under {key!r}",
                          kind="unreadable")
        return state
    if isinstance(obj, dict):
        for name in _MODEL_KEYS:
            if isinstance(obj.get(name), dict):
                return dict(obj[name])
        if is_flat_state_dict(obj):
            return obj
    raise Refused("the checkpoint holds no model state the re-prediction can find: name its "
                  "key in the recipe (key=)", kind="unreadable")


def _plain(value: Any) -> Any:
    """A prediction as JSON: a one-element tensor or numpy value as its number, a tensor as
    a list; non-finite floats as their names (JSON has none)."""
    if isinstance(value, torch.Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    elif hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)
