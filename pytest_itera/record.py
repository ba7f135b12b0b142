"""The producer API: what a training script calls to write a campaign folder.

A script freezes ``plan.json`` before its first run, records each run (start,
files, metrics, stop, acceptance), the decisions that drop runs, checkpoints and
adapters, then closes the campaign, which writes ``manifest.json`` with every
file's size and sha256::

    rec = CampaignRecorder(Path("out"))
    rec.freeze_plan(plan)                      # itera-plan/2: validated, atomic, never rewritten
    run = rec.run("control")
    run.start()
    for step, loss in enumerate(losses, 1):
        run.log(step, loss=loss)               # the evidence: runs/control/measurements.jsonl
    rec.write_jsonl("runs/control/predictions.jsonl", rows)
    run.set_predictions("runs/control/predictions.jsonl", corpus="my-corpus")
    run.set_metrics(accuracy=0.91)             # copied into the measurements file's metrics line
    run.accept()
    rec.close(analysis="analysis.md", reload_instructions="RELOAD.md", ...)

The documents follow ``itera-plan/2`` / ``itera-manifest/2`` (docs/contract-v2.md).
Each run's measurements file (JSON Lines: its series, the inputs it checked, its
final metrics) is written at closure from what the run logged, so the manifest's
metrics and the file's are the same numbers. The recorder refuses what the
plugin would reject on the run's own evidence: an accepted run whose series is
non-finite or whose metric is under a declared quality threshold, a stop step
that is not where the series became non-finite, a resume check that names no
listed resume checkpoint of another run, an included expense without its source.

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
import re
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
    PLAN_FORMAT,
    RESUME_PARTS,
    _validation_errors,
    json_path,
)
from pytest_itera.tree import DigestRefused, tree_digest

if TYPE_CHECKING:
    import torch

    from pytest_itera.scan import TempMatcher

__all__ = [
    "BASE_RECORD",
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
# A shipped base's own record of what it is: {"model": <name>, "revision": <40-hex commit>}.
BASE_RECORD = "itera-base.json"
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
    """What happened to one planned run; obtained from :meth:`CampaignRecorder.run`.

    The run's evidence is its measurements file (docs/contract-v2.md): the points
    given to :meth:`log`, the inputs given to :meth:`check_input` and the metrics of
    :meth:`set_metrics`, written at closure to ``runs/<id>/measurements.jsonl``. A
    script that writes its own file names it with :meth:`set_measurements` instead;
    its metrics line must then equal the recorded metrics.
    """

    def __init__(self, campaign: CampaignRecorder, run_id: str) -> None:
        self._campaign = campaign
        self.id = run_id
        self.record: dict[str, Any] = {"id": run_id}
        self._points: list[dict[str, Any]] = []
        self._inputs: list[dict[str, Any]] = []
        self._external_measurements = False  # set_measurements: the script wrote the file

    @property
    def outcome(self) -> Outcome | None:
        outcome: Outcome | None = self.record.get("outcome")
        return outcome

    @property
    def measurements_path(self) -> str:
        """Where the recorder writes this run's measurements file."""
        return f"runs/{self.id}/measurements.jsonl"

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

    # ---- evidence

    def log(self, step: int, **values: float) -> None:
        """A point of each named series at ``step`` (steps never go back).

        A non-finite value is evidence, not an error: it is written as the string
        ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (JSON has no NaN), and a
        non-finite-loss stop rule reads it."""
        self._own_measurements()
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: step {step!r} is not a non-negative integer")
        for name, value in values.items():
            if name == "step" or isinstance(value, bool) or not isinstance(value, int | float):
                raise RecordError(f"run {self.id!r}: {name}={value!r} is not a series value")
        last = self._points[-1]["step"] if self._points else None
        if last is not None and step < last:
            raise RecordError(f"run {self.id!r}: step {step} logged after step {last}")
        if last == step:
            self._points[-1].update(values)
        else:
            self._points.append({"step": step, **values})

    def series(self, name: str) -> list[tuple[int, float]]:
        """The logged points of one series, in step order."""
        return [(p["step"], float(p[name])) for p in self._points if name in p]

    def check_input(
        self,
        input: str,
        *,
        sha256: str | None = None,
        examples: int | None = None,
        bytes: int | None = None,
    ) -> None:
        """What this run (a data check) measured on an input: a corpus id or a path."""
        self._own_measurements()
        checked: dict[str, Any] = {"input": input}
        for key, value in (("sha256", sha256), ("examples", examples), ("bytes", bytes)):
            if value is not None:
                checked[key] = value
        if len(checked) == 1:
            raise RecordError(
                f"run {self.id!r}: check_input({input!r}) records nothing: give "
                "its sha256, example count and/or bytes"
            )
        self._inputs.append(checked)

    def set_metrics(self, **values: float) -> None:
        for name, value in values.items():
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise RecordError(f"run {self.id!r}: metric {name}={value!r} is not finite")
        self.record.setdefault("metrics", {}).update(values)

    def set_measurements(self, relpath: str) -> None:
        """A measurements file the script wrote itself (instead of :meth:`log`)."""
        if self._points or self._inputs:
            raise RecordError(
                f"run {self.id!r}: its measurements are logged through the "
                f"recorder (written to {self.measurements_path} at closure)"
            )
        self._campaign.file_sha256(relpath, field=f"runs[{self.id}].measurements")
        self.record["measurements"] = relpath
        self._external_measurements = True

    def _own_measurements(self) -> None:
        if self._external_measurements:
            raise RecordError(
                f"run {self.id!r}: its measurements file "
                f"{self.record['measurements']} was written by the script; log "
                "into it there, or let the recorder write it"
            )

    def set_predictions(self, relpath: str, *, corpus: str | None = None) -> None:
        """The run's predictions file and the plan corpus it covers (default: the corpus the
        plan gives the run, or the plan's only corpus)."""
        self._campaign.file_sha256(relpath, field=f"runs[{self.id}].predictions")
        self.record["predictions"] = relpath
        corpus = corpus if corpus is not None else self._campaign.planned_corpus(self.id)
        if corpus is not None:
            self.set_corpus(corpus)

    def set_corpus(self, corpus: str) -> None:
        """The plan corpus this run's predictions cover: what it delivers when accepted."""
        known = self._campaign.corpus_ids()
        if corpus not in known:
            raise RecordError(
                f"run {self.id!r}: corpus {corpus!r} is not a corpus of the plan "
                f"(corpora: {', '.join(known)})"
            )
        planned = self._campaign.planned_run(self.id).get("corpus")
        if planned is not None and planned != corpus:
            raise RecordError(
                f"run {self.id!r}: the plan gives it corpus {planned!r}, not "
                f"{corpus!r}; a run on another corpus needs a new run ID"
            )
        self.record["corpus"] = corpus

    def resumed_from(self, checkpoint: str, step: int) -> None:
        """The resume check's evidence: it resumed from ``checkpoint`` (a resume checkpoint
        of another run, listed with :meth:`CampaignRecorder.add_checkpoint` before
        closure) saved at ``step``."""
        check_relpath(checkpoint, field=f"runs[{self.id}].resumed_from.checkpoint")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: resume step {step!r} is not a step")
        self.record["resumed_from"] = {"checkpoint": checkpoint, "step": step}

    # ---- outcome

    def accept(
        self,
        *,
        corpus: str | None = None,
        deliverable: str | None = None,
        at: datetime | str | None = None,
    ) -> None:
        """The run passed its checks. ``corpus`` (``deliverable``, its /1 name, is kept as an
        alias) names the corpus its predictions cover, when set_predictions did not."""
        named = corpus if corpus is not None else deliverable
        if named is not None:
            self.set_corpus(named)
        self._end("accepted", at)

    def stop(
        self, rule: str, reason: str, *, step: int | None = None, at: datetime | str | None = None
    ) -> None:
        """The run was stopped by ``rule``, a stop rule the plan declared before the runs.

        For a non-finite-loss rule whose series this run logged, ``step`` defaults to
        (and must equal) the first step where the series is not finite."""
        declared = [r["id"] for r in self._campaign.plan.get("stop_rules", [])]
        if rule not in declared:
            raise RecordError(
                f"run {self.id!r}: stop rule {rule!r} is not declared in the plan "
                f"(declared: {', '.join(declared) or 'none'}); stop rules precede the runs"
            )
        if not reason.strip():
            raise RecordError(f"run {self.id!r}: a stop needs a reason")
        step = self._stop_step(self._campaign.stop_rule(rule), step)
        when = self._end("stopped", at)
        stop: dict[str, Any] = {"rule": rule, "reason": reason, "at": when}
        if step is not None:
            stop["step"] = step
        self.record["stop"] = stop

    def _stop_step(self, rule: Mapping[str, Any], step: int | None) -> int | None:
        if rule.get("kind") != "non_finite_loss":
            return step
        name = rule.get("parameters", {}).get("series")
        points = self.series(name) if isinstance(name, str) else []
        if not points:
            return step
        first = next((s for s, v in points if not math.isfinite(v)), None)
        if first is None:
            raise RecordError(
                f"run {self.id!r}: stop rule {rule['id']!r} did not fire on its "
                f"evidence: the logged {name!r} series is finite at every step"
            )
        if step is not None and step != first:
            raise RecordError(
                f"run {self.id!r}: stop step {step} is not where the {name!r} "
                f"series first becomes non-finite (step {first})"
            )
        return first

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

    # ---- at closure

    def _measurement_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [{"checked_input": dict(c)} for c in self._inputs]
        rows += [{k: _json_number(v) for k, v in p.items()} for p in self._points]
        if self.record.get("metrics"):
            rows.append({"metrics": dict(self.record["metrics"])})
        return rows

    def _triggered(self) -> str | None:
        """Why this accepted run's own evidence triggers a declared stop rule, or None."""
        for rule in self._campaign.plan.get("stop_rules", []):
            params = rule.get("parameters", {})
            if rule.get("kind") == "non_finite_loss" and isinstance(params.get("series"), str):
                bad = [(s, v) for s, v in self.series(params["series"]) if not math.isfinite(v)]
                if bad:
                    return (
                        f"its {params['series']!r} series is {bad[0][1]} at step {bad[0][0]} "
                        f"(stop rule {rule['id']!r})"
                    )
            if rule.get("kind") == "quality_below":
                value = self.record.get("metrics", {}).get(params.get("metric"))
                threshold, higher = params.get("threshold"), params.get("direction") == "higher"
                if (
                    isinstance(value, int | float)
                    and isinstance(threshold, int | float)
                    and (value < threshold if higher else value > threshold)
                ):
                    return (
                        f"its {params['metric']} {value} is on the wrong side of {threshold} "
                        f"(stop rule {rule['id']!r})"
                    )
        return None


def _json_number(value: Any) -> Any:
    """A series value as JSON: non-finite floats as the strings the contract names."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return value


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
        self._written: set[str] = set()  # measurements files the recorder wrote
        self._closed = False

    def now(self, at: datetime | str | None = None) -> str:
        return timestamp(at if at is not None else self._clock())

    @property
    def checkpoints(self) -> tuple[Mapping[str, Any], ...]:
        """The checkpoint records so far (what the manifest will list)."""
        return tuple(self._checkpoints)

    @property
    def adapters(self) -> tuple[Mapping[str, Any], ...]:
        """The adapter records so far (what the manifest will list)."""
        return tuple(self._adapters)

    # ---- plan

    def freeze_plan(self, plan: Mapping[str, Any]) -> str:
        """Validate and write ``plan.json`` (``itera-plan/2``) once; returns its sha256.

        ``format`` defaults to ``itera-plan/2`` and ``frozen_at`` to now. A plan
        already frozen in the folder is adopted when it is the same plan, refused
        when it differs. A corpus already in the folder must have the plan's sha256.
        """
        data = {"format": PLAN_FORMAT, **plan}
        if data["format"] != PLAN_FORMAT:
            raise RecordError(
                f"the recorder writes {PLAN_FORMAT}, not {data['format']!r}: list "
                "the frozen corpora under 'corpora' (docs/contract-v2.md)"
            )
        data.setdefault("frozen_at", self.now())
        _validate("plan", data, PLAN_FILE)
        _refuse_temp_strings(data, PLAN_FILE)
        self._check_plan(data)
        target = self.root / PLAN_FILE
        if target.exists():
            data = self._adopt_existing(target, plan, data)
        else:
            atomic_write_json(target, data)
        self.plan = data
        self.plan_sha256 = sha256_file(target)[0]
        return self.plan_sha256

    def _check_plan(self, data: Mapping[str, Any]) -> None:
        ids = [c["id"] for c in data["corpora"]]
        if len(set(ids)) != len(ids):
            raise RecordError(f"plan corpora: ids repeat ({', '.join(ids)})")
        for i, corpus in enumerate(data["corpora"]):
            check_relpath(corpus["path"], field=f"plan corpora[{i}].path")
            on_disk = self.root / corpus["path"]
            if on_disk.is_file() and sha256_file(on_disk)[0] != corpus["sha256"]:
                raise RecordError(
                    f"plan corpora[{i}]: {corpus['path']} in the folder does not "
                    f"have the sha256 {corpus['sha256']} the plan freezes"
                )
        runs = {r["id"] for r in data["runs"]}
        for run in data["runs"]:
            if run.get("corpus") is not None and run["corpus"] not in ids:
                raise RecordError(
                    f"plan run {run['id']!r}: corpus {run['corpus']!r} is not one "
                    f"of the plan's corpora ({', '.join(ids)})"
                )
        for rule in data["stop_rules"]:
            check = rule.get("parameters", {}).get("resume_check")
            if rule["kind"] == "no_resume" and check not in runs:
                raise RecordError(
                    f"stop rule {rule['id']!r}: resume_check {check!r} is not a planned run"
                )

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

    def corpus_ids(self) -> list[str]:
        self._require_plan()
        return [c["id"] for c in self.plan["corpora"]]

    def planned_corpus(self, run_id: str) -> str | None:
        """The corpus the plan gives ``run_id``: its own, else the plan's only corpus."""
        named: str | None = self.planned_run(run_id).get("corpus")
        if named is not None:
            return named
        ids = self.corpus_ids()
        return ids[0] if len(ids) == 1 else None

    def stop_rule(self, rule_id: str) -> Mapping[str, Any]:
        found: Mapping[str, Any] = next(r for r in self.plan["stop_rules"] if r["id"] == rule_id)
        return found

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
        if not text.strip():
            raise RecordError(f"decision {decision_id!r} needs a text")
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

    def record_base(self, folder: str, *, model: str, revision: str) -> str:
        """Ship a base model in the campaign: write ``<folder>/itera-base.json`` with its name
        and the 40-hex commit it was fetched at (or built as); returns the folder's tree
        digest, which :meth:`add_adapter` records as ``base_digest``."""
        _require_commit(revision, f"base {folder}")
        if not model.strip():
            raise RecordError(f"base {folder}: a base needs its model name")
        if not (self.root / check_relpath(folder, field="base folder")).is_dir():
            raise RecordError(f"base {folder} is not a folder in the campaign")
        self.write_json(f"{folder}/{BASE_RECORD}", {"model": model, "revision": revision})
        return _tree_digest(self.root / folder)

    def add_adapter(
        self,
        relpath: str,
        *,
        run: str,
        base_model: str,
        base_revision: str,
        base_path: str | None = None,
    ) -> None:
        """An adapter pinned to its base by a 40-hex commit; a base shipped in the campaign
        (``base_path``, a folder) is also pinned by its tree digest, and the revision its
        ``itera-base.json`` records (see :meth:`record_base`) must be ``base_revision``."""
        check_relpath(relpath, field="adapters.path")
        self.planned_run(run)
        _require_commit(base_revision, f"adapter {relpath}: base_revision")
        record: dict[str, Any] = {
            "path": relpath,
            "run": run,
            "base_model": base_model,
            "base_revision": base_revision,
        }
        if base_path is not None:
            record.update(
                base_path=base_path, base_digest=self._base_digest(relpath, base_path, record)
            )
        self._adapters.append(record)

    def _base_digest(self, adapter: str, base: str, record: Mapping[str, Any]) -> str:
        folder = self.root / check_relpath(base, field="adapters.base_path")
        if not folder.is_dir():
            raise RecordError(
                f"adapter {adapter}: base_path {base} is not a folder in the "
                "campaign (ship the whole base folder, pinned by its tree digest)"
            )
        recorded = folder / BASE_RECORD
        if recorded.is_file():
            facts = json.loads(recorded.read_text("utf-8"))
            for key, field in (("revision", "base_revision"), ("model", "base_model")):
                if facts.get(key) != record[field]:
                    raise RecordError(
                        f"adapter {adapter}: {base}/{BASE_RECORD} records {key} "
                        f"{facts.get(key)!r}, the adapter's {field} is {record[field]!r}: the "
                        "adapter was trained on another base"
                    )
        return _tree_digest(folder)

    def expense(
        self, label: str, amount: str, *, file: str | None = None, reference: str | None = None
    ) -> dict[str, Any]:
        """An included expense for ``close(budget=...)``: the amount as billed, with its
        provenance (a receipt/invoice file in the campaign and/or an order reference).
        A text receipt must show the amount."""
        if not label.strip():
            raise RecordError("an expense needs a label")
        if not (file or (reference and reference.strip())):
            raise RecordError(
                f"expense {label!r}: give its receipt file or its order reference; "
                "an amount without provenance is an estimate"
            )
        expense: dict[str, Any] = {"label": label, "amount": amount, "source": {}}
        if file is not None:
            self.file_sha256(file, field=f"expense {label!r} source.file")
            try:
                text = (self.root / file).read_text("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None and amount not in text:
                raise RecordError(
                    f"expense {label!r}: the receipt {file} does not show the "
                    f"amount {amount}; record the amount billed"
                )
            expense["source"]["file"] = file
        if reference is not None:
            expense["source"]["reference"] = reference
        return expense

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
        """Write the measurements files, then ``manifest.json``: every file hashed, every
        planned run accounted for with its evidence."""
        self._require_plan()
        if self._closed:
            raise RecordError("the campaign is already closed")
        self.file_sha256(analysis, field="analysis")
        self.file_sha256(reload_instructions, field="reload_instructions")
        runs = self._run_records()
        self._check_sources(budget)
        self._check_bases()
        self._write_measurements()
        manifest = {
            "format": MANIFEST_FORMAT,
            "campaign": self.plan["campaign"],
            "closed_at": self.now(closed_at),
            "plan": {"path": PLAN_FILE, "sha256": self._plan_unchanged()},
            "files": self._list_files(),
            "runs": runs,
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
        for run in self._runs.values():
            self._check_run(run)
        return [self._runs[r["id"]].record for r in self.plan["runs"]]

    def _check_run(self, run: RunRecorder) -> None:
        record = run.record
        role = self.planned_run(run.id)["role"]
        if run.outcome == "accepted":
            triggered = run._triggered()
            if triggered is not None:
                raise RecordError(
                    f"run {run.id!r} is accepted but {triggered}: stop it with "
                    "that rule (run.stop), it is not a deliverable"
                )
            if (
                role in ("control", "variant")
                and record.get("predictions")
                and ("corpus" not in record)
            ):
                raise RecordError(
                    f"run {run.id!r}: name the corpus its predictions cover "
                    f"(set_predictions(..., corpus=...)); the plan has "
                    f"{', '.join(self.corpus_ids())}"
                )
        resumed = record.get("resumed_from")
        if resumed is not None:
            listed = [c for c in self._checkpoints if c["path"] == resumed["checkpoint"]]
            if not any(c["kind"] == "resume" and c["run"] != run.id for c in listed):
                raise RecordError(
                    f"run {run.id!r} resumed from {resumed['checkpoint']}, which is "
                    "not a listed resume checkpoint of another run (add_checkpoint "
                    "with kind='resume')"
                )

    def _check_sources(self, budget: Mapping[str, Any]) -> None:
        for kind in ("included_expenses", "external_expenses"):
            for expense in budget.get(kind, ()):
                file = expense.get("source", {}).get("file")
                if file is not None:
                    self.file_sha256(file, field=f"budget.{kind} {expense.get('label')!r}")

    def _check_bases(self) -> None:
        for record in self._adapters:
            if "base_path" in record and (
                self._base_digest(record["path"], record["base_path"], record)
                != record["base_digest"]
            ):
                raise RecordError(
                    f"adapter {record['path']}: the shipped base "
                    f"{record['base_path']} changed after add_adapter"
                )

    def _write_measurements(self) -> None:
        for run in self._runs.values():
            if run._external_measurements:
                if run.record.get("metrics"):
                    self._check_metrics_line(run)
                continue
            rows = run._measurement_rows()
            if not rows:
                continue
            relpath = run.measurements_path
            if relpath not in self._written and (self.root / relpath).exists():
                raise RecordError(
                    f"run {run.id!r}: {relpath} exists and was not written by the "
                    "recorder; name the script's file with set_measurements"
                )
            self.write_jsonl(relpath, rows)
            self._written.add(relpath)
            run.record["measurements"] = relpath

    def _check_metrics_line(self, run: RunRecorder) -> None:
        relpath = run.record["measurements"]
        found = None
        for line in (self.root / relpath).read_text("utf-8").splitlines():
            row = json.loads(line) if line.strip() else None
            if isinstance(row, dict) and "metrics" in row:
                found = row["metrics"]
        if found != run.record["metrics"]:
            raise RecordError(
                f"run {run.id!r}: the metrics line of {relpath} is {found!r}, the "
                f"manifest would say {run.record['metrics']!r}: the manifest is a "
                "copy of the measurements"
            )

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


_COMMIT = re.compile(r"[0-9a-f]{40}")


def _require_commit(revision: str, what: str) -> None:
    if not isinstance(revision, str) or not _COMMIT.fullmatch(revision):
        raise RecordError(
            f"{what} {revision!r} is not a full 40-hex commit id: a branch, a tag "
            "or a short hash moves or is ambiguous; record the exact commit"
        )


def _tree_digest(folder: Path) -> str:
    """The tree digest of a shipped base folder (docs/contract-v2.md), links refused."""
    try:
        return tree_digest(folder)
    except DigestRefused as exc:
        raise RecordError(f"shipped base {folder.name}: {exc}") from exc


def _walk(
    root: Path, *, skip: tuple[str, ...] = (PLAN_FILE, MANIFEST_FILE)
) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` except ``skip`` (the two contract documents), sorted."""
    found = []
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            full = Path(folder) / name
            relpath = full.relative_to(root).as_posix()
            mode = full.lstat().st_mode
            if stat.S_ISDIR(mode) or relpath in skip:
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
