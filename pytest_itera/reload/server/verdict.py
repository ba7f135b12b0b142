"""What the loading child reports about one checkpoint, and why it refuses one.

No torch here: the server's protocol errors and the client-facing sentences are built with
the same two classes as the verdicts of a real load.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .siblings import formats

PARTS = formats.PARTS
WEIGHTS_ONLY_WHY = "(loading it would import and call arbitrary code)"
OUT_OF_MEMORY = "ran out of memory under the reload memory limit"
FAILURES = formats.FAILURES  # the kinds of Refused.kind (ReloadResult.failure)
MAX_RATED = 64  # optimizer / scheduler states whose learning rates are reported


class Refused(Exception):
    """A checkpoint (or one file of a folder) failed: ``reason`` is one sentence; ``code``
    the pickled globals outside the allowlist when the file holds code."""

    def __init__(self, reason: str, file: str | None = None,
                 code: tuple[str, ...] = (), kind: str = "unreadable") -> None:
        super().__init__(reason)
        assert kind in FAILURES, kind
        self.reason = reason
        self.file = file
        self.code = code
        self.kind = "weights-only" if code and kind != "whole-module" else kind


class Findings:
    """What the child learns about one checkpoint; serialised as the verdict."""

    def __init__(self, fmt: str | None) -> None:
        self.format = fmt
        self.parts: set[str] = set()
        self.missing_reasons: dict[str, str] = {}
        # part -> why the key that should hold it holds no restorable state (typed: the
        # client never parses English): {"kind": "empty" | "not_state", "key", "detail"}.
        self.faults: dict[str, dict[str, str]] = {}
        self.nonfinite: list[str] = []
        self.nan_values = 0
        self.inf_values = 0
        self.tensors = 0
        self.notes: list[str] = []
        self.unchecked: list[str] = []  # weights whose finiteness no kernel could check
        # What tells whose checkpoint it is (typed facts for the client): each model
        # tensor's state-dict name -> (shape, dtype, checksum); the progress steps found
        # ((key, step)); the optimizer states found ((key, value), judged at the end); the
        # tensor names of each folder member (shard indexes are checked against them).
        self.model: dict[str, tuple[list[int], str, int]] = {}
        # Tied weights: a model tensor saved as the very view of another of the same file
        # (one storage, two names: torch.save of a model whose LM head is its embedding)
        # -> the first name. The optimizer holds one state for that parameter.
        self.tied: dict[str, str] = {}
        self.steps: list[tuple[str, int]] = []
        self.optimizers: list[tuple[str, Any]] = []
        self.optimizer: dict[str, Any] | None = None
        # Every optimizer and LR scheduler part counted ((key, value)), and the learning
        # rates they store, as stored (rates.py; the checks compare them).
        self.rated_optimizers: list[tuple[str, Any]] = []
        self.schedulers: list[tuple[str, Any]] = []
        self.optimizer_rates: list[dict[str, Any]] = []
        self.scheduler_rates: list[dict[str, Any]] = []
        self.member_keys: dict[str, list[str]] = {}

    def fault(self, part: str, kind: str, key: str, detail: str) -> None:
        """The first key of ``part`` found wanting (a valid key elsewhere still wins)."""
        self.faults.setdefault(part, {"part": part, "kind": kind, "key": key, "detail": detail})

    def verdict(self, error: Refused | None) -> dict[str, Any]:
        if self.unchecked:
            self.notes.append(f"{len(self.unchecked)} model tensor(s) not checked for "
                              f"non-finite values (no kernel for their dtype or layout): "
                              + ", ".join(self.unchecked[:3]))
        ok = error is None and not self.nonfinite
        if error is None and self.nonfinite:
            error = Refused(f"non-finite model weights in {len(self.nonfinite)} tensor(s) "
                            f"({nonfinite_values(self.nan_values, self.inf_values)}): "
                            + ", ".join(self.nonfinite[:5]), kind="nonfinite")
        return {"format": self.format, "ok": ok,
                "reason": None if error is None else error.reason,
                "failure": None if error is None else error.kind,
                "file": None if error is None else error.file,
                "holds_code": [] if error is None else list(error.code),
                "parts": [p for p in PARTS if p in self.parts],
                "missing_reasons": self.missing_reasons,
                "part_faults": [f for p, f in sorted(self.faults.items()) if p not in self.parts],
                "nonfinite": self.nonfinite[:20], "nonfinite_tensors": len(self.nonfinite),
                "nan_values": self.nan_values, "inf_values": self.inf_values,
                "tensors": self.tensors, "notes": self.notes, **self.content()}

    def content(self) -> dict[str, Any]:
        """The typed facts of what the checkpoint holds: its progress step (None when it
        stores none, or two that disagree), its model tensors' shapes and content digest,
        the optimizer's fit to the model, and the learning rates the optimizers and the LR
        schedulers store."""
        steps = {step for _, step in self.steps}
        return {"step": steps.pop() if len(steps) == 1 else None,
                "steps": [[key, step] for key, step in self.steps[:10]],
                "model_shapes": {name: shape for name, (shape, _, _) in self.model.items()},
                "model_digest": model_digest(self.model), "optimizer": self.optimizer,
                "optimizer_rates": self.optimizer_rates[:MAX_RATED],
                "scheduler_rates": self.scheduler_rates[:MAX_RATED]}


def model_digest(model: dict[str, tuple[list[int], str, int]]) -> str | None:
    """One digest of the model tensors: their names, shapes, dtypes and checksums, in name
    order (the same tensors give the same digest whatever file format holds them)."""
    if not model:
        return None
    h = hashlib.sha256()
    for name in sorted(model):
        shape, dtype, checksum = model[name]
        h.update(f"{name}\0{dtype}\0{shape}\0{checksum}\n".encode())
    return h.hexdigest()


def nonfinite_values(nan: int, inf: int) -> str:
    """``3 NaN and 1 inf values``."""
    counted = [f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "inf")) if n]
    total = nan + inf
    return f"{' and '.join(counted) or 'non-finite'} value{'s' if total != 1 else ''}"


def human_bytes(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} bytes"


def failed(reason: str, kind: str = "unreadable") -> dict[str, Any]:
    return Findings(None).verdict(Refused(reason, kind=kind))
