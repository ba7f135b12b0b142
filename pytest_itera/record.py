"""The producer API: what a training script calls to write a campaign folder.

A script freezes ``plan.json`` before its first run, records each run (start,
files, metrics, stop, acceptance), the decisions that drop runs, checkpoints and
adapters, then closes the campaign, which writes ``manifest.json`` with every
file's size and sha256::

    rec = CampaignRecorder(Path("out"))
    rec.freeze_plan(plan)                      # validated, atomic, never rewritten
    run = rec.run("control")
    run.start()
    rec.write_json("runs/control/metrics.json", {"accuracy": 0.91})
    run.set_metrics(accuracy=0.91)
    run.accept(deliverable="my-corpus")
    rec.close(analysis="analysis.md", reload_instructions="RELOAD.md", ...)

Every write is atomic (a temporary file in the same folder, fsync, ``os.replace``);
every recorded path is a relative POSIX path inside the folder; no string that
points into a temporary folder is ever recorded. ``save_resume_checkpoint`` and
``load_resume_checkpoint`` write and restore a *complete* resume checkpoint that
loads with ``torch.load(path, weights_only=True)``.

torch is imported inside the functions that need it: the pytest process imports
this package and must not pay for torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pytest_itera.campaign import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    PLAN_FILE,
    RESUME_PARTS,
    _validation_errors,
    json_path,
)

if TYPE_CHECKING:
    import torch

    from pytest_itera.scan import TempMatcher

__all__ = [
    "CampaignRecorder",
    "RecordError",
    "RunRecorder",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_relpath",
    "find_temp_path",
    "load_resume_checkpoint",
    "resume_parts",
    "save_resume_checkpoint",
    "sha256_file",
    "timestamp",
]

CHUNK = 1024 * 1024
Outcome = Literal["accepted", "stopped", "rejected", "dropped"]
Clock = Callable[[], datetime]


class RecordError(ValueError):
    """A recording request that would produce an invalid or dishonest campaign."""


# ------------------------------------------------------------ small helpers


def sha256_file(path: Path) -> tuple[str, int]:
    """The sha256 and byte count of ``path``, streamed in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def timestamp(moment: datetime | str | None = None) -> str:
    """An ISO-8601 UTC timestamp ending in ``Z`` (now when ``moment`` is None)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        raise RecordError(f"timestamp {moment.isoformat()} has no time zone; give a UTC time")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def _atomic_handle(path: Path) -> Iterator[Any]:
    """A binary handle on a temp file beside ``path``, moved over it only on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would surprise whoever retrieves the folder
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    # The rename itself is durable only once the directory entry is flushed.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    with _atomic_handle(path) as handle:
        handle.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(data: Any) -> str:
    """Canonical JSON as the recorder writes it (NaN refused: it is not JSON)."""
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=False, ensure_ascii=False) + "\n"


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, dumps_json(data))


def find_temp_path(text: str) -> str | None:
    """The temporary-folder pattern that ``text`` points into, or None: exactly what the
    plugin's no-temp-paths check would find in the file, and the current
    ``tempfile.gettempdir()`` (read at each call)."""
    from pytest_itera.scan import find_in_text, tempdir_patterns

    return find_in_text(text, _temp_matcher(tempdir_patterns()))


@cache
def _temp_matcher(current: tuple[str, ...]) -> TempMatcher:
    from pytest_itera.scan import DEFAULT_TEMP_PATTERNS, TempMatcher

    return TempMatcher((*DEFAULT_TEMP_PATTERNS, *current))


def check_relpath(value: str, *, field: str) -> str:
    """``value`` as a clean relative POSIX path inside the campaign, else RecordError."""
    if not value or "\\" in value or "\x00" in value:
        raise RecordError(f"{field}: {value!r} is not a relative POSIX path (no '\\', not empty)")
    posix = PurePosixPath(value)
    if posix.is_absolute() or (len(value) > 1 and value[1] == ":"):
        raise RecordError(f"{field}: {value!r} is absolute; record paths relative to the campaign")
    if ".." in posix.parts:
        raise RecordError(f"{field}: {value!r} contains '..'; it must stay inside the campaign")
    if posix.as_posix() != value.rstrip("/") or value.startswith("./"):
        raise RecordError(f"{field}: {value!r} is not normalised (write {posix.as_posix()!r})")
    return value


def _refuse_temp_strings(data: Any, document: str, path: tuple[str | int, ...] = ()) -> None:
    if isinstance(data, str):
        root = find_temp_path(data)
        if root is not None:
            raise RecordError(
                f"{document} {json_path(path)}: {data[:120]!r} points into the temporary "
                f"folder {root!r}, which is gone after the rental; record a path in the campaign"
            )
    elif isinstance(data, Mapping):
        for key, value in data.items():
            _refuse_temp_strings(key, document, path)
            _refuse_temp_strings(value, document, (*path, key))
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            _refuse_temp_strings(value, document, (*path, i))


def _validate(schema_name: str, data: Any, document: str) -> None:
    errors = _validation_errors(schema_name, data)
    if errors:
        lines = [f"  {json_path(e.path)}: {e.message[:300]}" for e in errors]
        raise RecordError(f"{document} does not follow the schema:\n" + "\n".join(lines))


# ------------------------------------------------------------- the recorder


class RunRecorder:
    """What happened to one planned run; obtained from :meth:`CampaignRecorder.run`."""

    def __init__(self, campaign: CampaignRecorder, run_id: str) -> None:
        self._campaign = campaign
        self.id = run_id
        self.record: dict[str, Any] = {"id": run_id}

    @property
    def outcome(self) -> Outcome | None:
        outcome: Outcome | None = self.record.get("outcome")
        return outcome

    def start(self, at: datetime | str | None = None) -> None:
        self.record["started_at"] = self._campaign.now(at)

    def set_config(self, relpath: str) -> str:
        """Record the run's config file; returns its sha256 (must equal the plan's)."""
        digest = self._campaign.file_sha256(relpath, field=f"runs[{self.id}].config")
        planned = self._campaign.planned_run(self.id).get("config_sha256")
        if planned != digest:
            raise RecordError(
                f"run {self.id!r}: config {relpath} has sha256 {digest}, the plan froze "
                f"{planned}; a changed configuration needs a new run ID"
            )
        self.record.update(config=relpath, config_sha256=digest)
        return digest

    def set_metrics(self, **values: float) -> None:
        for name, value in values.items():
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise RecordError(f"run {self.id!r}: metric {name}={value!r} is not finite")
        self.record.setdefault("metrics", {}).update(values)

    def set_measurements(self, relpath: str) -> None:
        self._campaign.file_sha256(relpath, field=f"runs[{self.id}].measurements")
        self.record["measurements"] = relpath

    def set_predictions(self, relpath: str) -> None:
        self._campaign.file_sha256(relpath, field=f"runs[{self.id}].predictions")
        self.record["predictions"] = relpath

    def accept(self, *, deliverable: str | None = None, at: datetime | str | None = None) -> None:
        self._end("accepted", at)
        if deliverable is not None:
            self.record["deliverable"] = deliverable

    def stop(
        self, rule: str, reason: str, *, step: int | None = None, at: datetime | str | None = None
    ) -> None:
        """The run was stopped by ``rule``, a stop rule the plan declared before the runs."""
        declared = [r["id"] for r in self._campaign.plan.get("stop_rules", [])]
        if rule not in declared:
            raise RecordError(
                f"run {self.id!r}: stop rule {rule!r} is not declared in the plan "
                f"(declared: {', '.join(declared) or 'none'}); stop rules precede the runs"
            )
        if not reason.strip():
            raise RecordError(f"run {self.id!r}: a stop needs a reason")
        when = self._end("stopped", at)
        stop: dict[str, Any] = {"rule": rule, "reason": reason, "at": when}
        if step is not None:
            stop["step"] = step
        self.record["stop"] = stop

    def reject(self, reason: str, *, at: datetime | str | None = None) -> None:
        if not reason.strip():
            raise RecordError(f"run {self.id!r}: a rejection needs a reason")
        self._end("rejected", at)
        self.record["rejection"] = reason

    def _drop(self, decision_id: str) -> None:
        self._set_outcome("dropped")
        self.record["decision"] = decision_id

    def _end(self, outcome: Outcome, at: datetime | str | None) -> str:
        if "started_at" not in self.record:
            raise RecordError(f"run {self.id!r}: call start() before recording its outcome")
        self._set_outcome(outcome)
        when = self._campaign.now(at)
        self.record["ended_at"] = when
        return when

    def _set_outcome(self, outcome: Outcome) -> None:
        if self.outcome is not None:
            raise RecordError(f"run {self.id!r} is already {self.outcome}, not {outcome}")
        self.record["outcome"] = outcome


class CampaignRecorder:
    """Writes one campaign folder: ``plan.json`` first, ``manifest.json`` at closure.

    ``clock`` returns the current time (an aware datetime); pass a fixed or
    simulated clock to make the folder reproducible.
    """

    def __init__(self, root: Path, *, clock: Clock | None = None) -> None:
        self.root = Path(root)
        self._clock = clock or (lambda: datetime.now(UTC))
        self.plan: dict[str, Any] = {}
        self.plan_sha256: str | None = None
        self._runs: dict[str, RunRecorder] = {}
        self._checkpoints: list[dict[str, Any]] = []
        self._adapters: list[dict[str, Any]] = []
        self._decisions: list[dict[str, Any]] = []
        self._closed = False

    def now(self, at: datetime | str | None = None) -> str:
        return timestamp(at if at is not None else self._clock())

    @property
    def checkpoints(self) -> tuple[Mapping[str, Any], ...]:
        """The checkpoint records so far (what the manifest will list)."""
        return tuple(self._checkpoints)

    # ---- plan

    def freeze_plan(self, plan: Mapping[str, Any]) -> str:
        """Validate and write ``plan.json`` once; returns its sha256.

        ``frozen_at`` is set to now when absent. A plan already frozen in the
        folder is adopted when it is the same plan, refused when it differs.
        """
        data = dict(plan)
        data.setdefault("frozen_at", self.now())
        _validate("plan", data, PLAN_FILE)
        _refuse_temp_strings(data, PLAN_FILE)
        check_relpath(data["corpus"]["path"], field="plan corpus.path")
        target = self.root / PLAN_FILE
        if target.exists():
            data = self._adopt_existing(target, plan, data)
        else:
            atomic_write_json(target, data)
        self.plan = data
        self.plan_sha256 = sha256_file(target)[0]
        return self.plan_sha256

    def _adopt_existing(
        self, target: Path, given: Mapping[str, Any], data: dict[str, Any]
    ) -> dict[str, Any]:
        existing = json.loads(target.read_text("utf-8"))
        comparable = dict(existing)
        if "frozen_at" not in given:
            comparable["frozen_at"] = data["frozen_at"]
        if comparable != data:
            raise RecordError(
                f"{target.name} is already frozen with different content; a plan is never edited "
                "after freezing: record a decision, or start a new campaign with a new ID"
            )
        existing_data: dict[str, Any] = existing
        return existing_data

    def planned_run(self, run_id: str) -> Mapping[str, Any]:
        self._require_plan()
        for run in self.plan["runs"]:
            if run["id"] == run_id:
                found: Mapping[str, Any] = run
                return found
        planned = ", ".join(r["id"] for r in self.plan["runs"])
        raise RecordError(f"run {run_id!r} is not in the plan (planned: {planned})")

    def _require_plan(self) -> None:
        if self.plan_sha256 is None:
            raise RecordError("freeze the plan (freeze_plan) before recording any run")

    # ---- runs and decisions

    def run(self, run_id: str) -> RunRecorder:
        """The recorder of a planned run (the same object on every call)."""
        self.planned_run(run_id)
        return self._runs.setdefault(run_id, RunRecorder(self, run_id))

    def decide(
        self,
        decision_id: str,
        text: str,
        *,
        drops: Iterable[str] = (),
        adds: Iterable[str] = (),
        at: datetime | str | None = None,
    ) -> None:
        """Record a decision; the runs in ``drops`` become ``dropped`` by it."""
        if any(d["id"] == decision_id for d in self._decisions):
            raise RecordError(f"decision {decision_id!r} is already recorded")
        drops, adds = list(drops), list(adds)
        for run_id in drops:
            self.run(run_id)._drop(decision_id)
        decision: dict[str, Any] = {"id": decision_id, "at": self.now(at), "text": text}
        if drops:
            decision["drops"] = drops
        if adds:
            decision["adds"] = adds
        self._decisions.append(decision)

    # ---- files

    def path(self, relpath: str) -> Path:
        """Where to write ``relpath`` inside the campaign (for libraries that write files,
        ``torch.save(obj, rec.path("runs/a/last.pt"))``): its parent folder is created."""
        target = self.root / check_relpath(relpath, field="path")
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_bytes(self, relpath: str, data: bytes) -> Path:
        target = self.path(relpath)
        atomic_write_bytes(target, data)
        return target

    def write_text(self, relpath: str, text: str) -> Path:
        return self.write_bytes(relpath, text.encode("utf-8"))

    def write_json(self, relpath: str, data: Any) -> Path:
        _refuse_temp_strings(data, relpath)
        return self.write_text(relpath, dumps_json(data))

    def write_jsonl(self, relpath: str, rows: Iterable[Any]) -> Path:
        lines = [json.dumps(row, allow_nan=False, ensure_ascii=False) + "\n" for row in rows]
        return self.write_text(relpath, "".join(lines))

    def file_sha256(self, relpath: str, *, field: str) -> str:
        """The sha256 of a file the manifest will point at; it must exist and not be empty."""
        target = self.root / check_relpath(relpath, field=field)
        if not target.is_file():
            raise RecordError(f"{field}: {relpath} does not exist in the campaign folder")
        digest, size = sha256_file(target)
        if size == 0:
            raise RecordError(f"{field}: {relpath} is empty")
        return digest

    def add_checkpoint(
        self,
        relpath: str,
        *,
        run: str,
        format: str,
        kind: Literal["resume", "weights"],
        claims: Iterable[str] = (),
    ) -> None:
        target = self.root / check_relpath(relpath, field="checkpoints.path")
        if not target.exists():
            raise RecordError(f"checkpoint {relpath} does not exist in the campaign folder")
        self.planned_run(run)
        record: dict[str, Any] = {"path": relpath, "run": run, "format": format, "kind": kind}
        claims = list(claims)
        if claims:
            record["claims"] = claims
        self._checkpoints.append(record)

    def add_adapter(
        self,
        relpath: str,
        *,
        run: str,
        base_model: str,
        base_revision: str,
        base_path: str | None = None,
    ) -> None:
        """An adapter folder pinned to its base; a shipped base's hash must be the revision."""
        check_relpath(relpath, field="adapters.path")
        self.planned_run(run)
        record: dict[str, Any] = {
            "path": relpath,
            "run": run,
            "base_model": base_model,
            "base_revision": base_revision,
        }
        if base_path is not None:
            actual = self.file_sha256(base_path, field="adapters.base_path")
            if actual != base_revision:
                raise RecordError(
                    f"adapter {relpath}: base {base_path} has sha256 {actual}, not the "
                    f"recorded base_revision {base_revision}"
                )
            record["base_path"] = base_path
        self._adapters.append(record)

    # ---- closure

    def close(
        self,
        *,
        analysis: str,
        reload_instructions: str,
        conclusion: Mapping[str, Any],
        budget: Mapping[str, Any],
        schedule: Mapping[str, Any],
        closed_at: datetime | str | None = None,
    ) -> Path:
        """Write ``manifest.json``: every file hashed, every planned run accounted for."""
        self._require_plan()
        if self._closed:
            raise RecordError("the campaign is already closed")
        self.file_sha256(analysis, field="analysis")
        self.file_sha256(reload_instructions, field="reload_instructions")
        manifest = {
            "format": MANIFEST_FORMAT,
            "campaign": self.plan["campaign"],
            "closed_at": self.now(closed_at),
            "plan": {"path": PLAN_FILE, "sha256": self._plan_unchanged()},
            "files": self._list_files(),
            "runs": self._run_records(),
            "checkpoints": self._checkpoints,
            "adapters": self._adapters,
            "analysis": analysis,
            "reload_instructions": reload_instructions,
            "conclusion": dict(conclusion),
            "budget": dict(budget),
            "schedule": self._schedule(schedule),
        }
        _validate("manifest", manifest, MANIFEST_FILE)
        _refuse_temp_strings(manifest, MANIFEST_FILE)
        target = self.root / MANIFEST_FILE
        atomic_write_json(target, manifest)
        self._closed = True
        return target

    def _schedule(self, schedule: Mapping[str, Any]) -> dict[str, Any]:
        decisions = [*schedule.get("decisions", ()), *self._decisions]
        return {**schedule, "decisions": decisions} if decisions else dict(schedule)

    def _plan_unchanged(self) -> str:
        digest = sha256_file(self.root / PLAN_FILE)[0]
        if digest != self.plan_sha256:
            raise RecordError(f"{PLAN_FILE} changed on disk after freezing; it is never edited")
        return digest

    def _run_records(self) -> list[dict[str, Any]]:
        missing = [r["id"] for r in self.plan["runs"] if self._runs.get(r["id"]) is None]
        missing += [i for i, r in self._runs.items() if r.outcome is None and i not in missing]
        if missing:
            raise RecordError(
                f"planned runs without an outcome: {', '.join(missing)}; accept, stop, reject "
                "or drop each (a drop needs a decision)"
            )
        return [self._runs[r["id"]].record for r in self.plan["runs"]]

    def _list_files(self) -> list[dict[str, Any]]:
        files, empty = [], []
        for relpath, full in _walk(self.root):
            digest, size = sha256_file(full)
            if size == 0:
                empty.append(relpath)
            files.append({"path": relpath, "bytes": size, "sha256": digest})
        if empty:
            raise RecordError(f"empty files in the campaign: {', '.join(empty)}; fill or remove")
        return files


def _walk(root: Path) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` except the two contract documents, sorted."""
    found = []
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            full = Path(folder) / name
            relpath = full.relative_to(root).as_posix()
            mode = full.lstat().st_mode
            if stat.S_ISDIR(mode) or relpath in (PLAN_FILE, MANIFEST_FILE):
                continue
            if not stat.S_ISREG(mode):
                raise RecordError(f"{relpath} is not a regular file (links are refused)")
            found.append((relpath, full))
    return sorted(found)


# ------------------------------------------------------ resume checkpoints


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
    _refuse_temp_strings(
        {k: v for k, v in checkpoint.items() if k in ("data", "extra")}, Path(path).name
    )
    # A file handle (not a path) keeps the archive's inner folder name neutral ("archive/").
    with _atomic_handle(Path(path)) as handle:
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
