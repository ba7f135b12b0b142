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
points into a temporary folder is ever recorded. A *complete* resume checkpoint is
written and restored by :mod:`pytest_itera.record.resume`.

torch is imported inside the functions that need it: the pytest process imports
this package and must not pay for torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pytest_itera.core.atomic import atomic_write_bytes
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    PLAN_FILE,
    PLAN_FORMAT,
    PLAN_FORMATS,
    json_path,
    validation_errors,
)
from pytest_itera.core.journal import JOURNAL_FILE, JOURNAL_FORMAT, Journal, TornLine
from pytest_itera.core.portable import RENAME_HINT, path_problem
from pytest_itera.core.text import is_blank, says_nothing
from pytest_itera.files.tree import DigestRefused, tree_digest
from pytest_itera.record import tally

if TYPE_CHECKING:

    from pytest_itera.core.campaign import Plan
    from pytest_itera.files.scan import TempMatcher
    from pytest_itera.report.verify import Problem, Verdict

__all__ = [
    "BASE_RECORD",
    "CampaignRecorder",
    "Closure",
    "JournalWarning",
    "RecordError",
    "RunRecorder",
    "StepTimer",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_relpath",
    "find_temp_path",
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
    from pytest_itera.files.scan import find_in_text, tempdir_patterns

    return find_in_text(text, _temp_matcher(tempdir_patterns()))


@cache
def _temp_matcher(current: tuple[str, ...]) -> TempMatcher:
    from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, TempMatcher

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
    # The one portability rule (pytest_itera.core.portable), shared with the files-intact check.
    unportable = path_problem(value.rstrip("/"))
    if unportable is not None:
        raise RecordError(f"{field}: {value!r} {unportable}; {RENAME_HINT}")
    return value


def refuse_temp_strings(data: Any, document: str, path: tuple[str | int, ...] = ()) -> None:
    """Raise RecordError for the first string of ``data`` that points into a temporary folder."""
    if isinstance(data, str):
        root = find_temp_path(data)
        if root is not None:
            raise RecordError(
                f"{document} {json_path(path)}: {data[:120]!r} points into the temporary "
                f"folder {root!r}, which is gone after the rental; record a path in the campaign"
            )
    elif isinstance(data, Mapping):
        for key, value in data.items():
            refuse_temp_strings(key, document, path)
            refuse_temp_strings(value, document, (*path, key))
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            refuse_temp_strings(value, document, (*path, i))


def _validate(
    schema_name: str, data: Any, document: str, hints: Mapping[str, str] | None = None
) -> None:
    errors = validation_errors(schema_name, data)
    if errors:
        lines = []
        for e in errors:
            where = json_path(e.path)
            hint = (hints or {}).get(where)
            lines.append(f"  {where}: {hint or e.message[:300]}")
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

    @property
    def started_at(self) -> str | None:
        """When the run started (None before :meth:`start`): a script that continues a
        campaign from its journal asks before starting a run again."""
        started: str | None = self.record.get("started_at")
        return started

    def start(self, at: datetime | str | None = None) -> None:
        if self.started_at is not None:
            raise RecordError(
                f"run {self.id!r} already started at {self.started_at}; a run starts once "
                "(ask run.started_at when continuing a campaign from its journal)")
        when = self._campaign.now(at)
        self._campaign._event("run-start", run=self.id, at=when)
        self.record["started_at"] = when

    def set_config(self, relpath: str) -> str:
        """Record the run's config file; returns its sha256 (must equal the plan's)."""
        digest = self._campaign.file_sha256(relpath, field=f"runs[{self.id}].config")
        planned = self._campaign.planned_run(self.id).get("config_sha256")
        if planned != digest:
            raise RecordError(
                f"run {self.id!r}: config {relpath} has sha256 {digest}, the plan froze "
                f"{planned}; a changed configuration needs a new run ID"
            )
        self._campaign._event("config", run=self.id, path=relpath)
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
            if self._logged(step, values):
                return  # the same point again: a script continued from its journal
            raise RecordError(
                f"run {self.id!r}: step {step} logged after step {last}; a run resumed "
                f"from an earlier checkpoint calls run.rewind({step - 1}) first")
        self._campaign._event(
            "log", run=self.id, step=step, values={k: _json_number(v) for k, v in values.items()})
        if last == step:
            self._points[-1].update(values)
        else:
            self._points.append({"step": step, **values})

    def _logged(self, step: int, values: Mapping[str, float]) -> bool:
        point = next((p for p in self._points if p["step"] == step), None)
        return point is not None and all(
            name in point and _same_value(point[name], value) for name, value in values.items())

    def rewind(self, step: int) -> None:
        """Forget the points logged after ``step``: the run resumed from a checkpoint saved
        at ``step`` (after a crash, say), and those steps are trained again."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: rewind step {step!r} is not a step")
        self._campaign._event("rewind", run=self.id, step=step)
        self._points = [p for p in self._points if p["step"] <= step]

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
        self._campaign._event("input", run=self.id, checked=checked)
        self._inputs.append(checked)

    def set_metrics(self, **values: float) -> None:
        for name, value in values.items():
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise RecordError(f"run {self.id!r}: metric {name}={value!r} is not finite")
        self._campaign._event("metrics", run=self.id, values=dict(values))
        self.record.setdefault("metrics", {}).update(values)

    def set_measurements(self, relpath: str) -> None:
        """A measurements file the script wrote itself (instead of :meth:`log`)."""
        if self._points or self._inputs:
            raise RecordError(
                f"run {self.id!r}: its measurements are logged through the "
                f"recorder (written to {self.measurements_path} at closure)"
            )
        self._campaign.file_sha256(relpath, field=f"runs[{self.id}].measurements")
        self._campaign._event("measurements", run=self.id, path=relpath)
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
        self._campaign._event("predictions", run=self.id, path=relpath)
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
        self._campaign._event("corpus", run=self.id, corpus=corpus)
        self.record["corpus"] = corpus

    def resumed_from(self, checkpoint: str, step: int) -> None:
        """The resume check's evidence: it resumed from ``checkpoint`` (a resume checkpoint
        of another run, listed with :meth:`CampaignRecorder.add_checkpoint` before
        closure) saved at ``step``."""
        check_relpath(checkpoint, field=f"runs[{self.id}].resumed_from.checkpoint")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: resume step {step!r} is not a step")
        self._campaign._event("resumed-from", run=self.id, checkpoint=checkpoint, step=step)
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
        self._ending("accepted")
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
        if says_nothing(reason):
            raise RecordError(f"run {self.id!r}: a stop needs a reason")
        step = self._stop_step(self._campaign.stop_rule(rule), step)
        when = self._end("stopped", at, rule=rule, reason=reason, step=step)
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
        if says_nothing(reason):
            raise RecordError(f"run {self.id!r}: a rejection needs a reason")
        self._end("rejected", at, reason=reason)
        self.record["rejection"] = reason

    def _drop(self, decision_id: str) -> None:
        self._set_outcome("dropped")
        self.record["decision"] = decision_id

    def _ending(self, outcome: Outcome) -> None:
        if "started_at" not in self.record:
            raise RecordError(f"run {self.id!r}: call start() before recording its outcome")
        if self.outcome is not None:
            raise RecordError(f"run {self.id!r} is already {self.outcome}, not {outcome}")

    def _end(self, outcome: Outcome, at: datetime | str | None, **facts: Any) -> str:
        self._ending(outcome)
        when = self._campaign.now(at)
        self._campaign._event(outcome, run=self.id, at=when, **facts)
        self._set_outcome(outcome)
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


def _same_value(logged: Any, value: float) -> bool:
    if isinstance(logged, float) and math.isnan(logged):
        return isinstance(value, float) and math.isnan(value)
    return bool(logged == value)


def _from_json_number(value: Any) -> Any:
    """The inverse of :func:`_json_number` (a journal's log values)."""
    names = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
    return names.get(value, value) if isinstance(value, str) else value


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
        self._steps = StepClock(self)
        self._closed = False
        self._replaying = False
        self.journal = Journal.open(self.root)
        #: A torn last journal line found when continuing (cut off, never replayed), or None.
        self.torn: TornLine | None = self.journal.torn
        if self.journal.events:
            self._replay(self.journal.events)
        self._closed = (self.root / MANIFEST_FILE).exists()

    # ---- the journal

    def _event(self, name: str, **facts: Any) -> None:
        """Append one event to the journal (nothing while replaying it)."""
        if self._replaying:
            return
        if self._closed:
            raise RecordError("the campaign is closed: its manifest lists every file as it is")
        event = {"event": name, **facts}
        refuse_temp_strings(event, JOURNAL_FILE)
        self.journal.append(event)

    def _replay(self, events: list[dict[str, Any]]) -> None:
        if events[0].get("event") != "plan":
            raise RecordError(f"{JOURNAL_FILE} does not start with the frozen plan; it is not "
                              "this recorder's journal")
        self._replaying = True
        try:
            for number, event in enumerate(events, 1):
                try:
                    self._apply(event)
                except (RecordError, KeyError, TypeError) as exc:
                    raise RecordError(
                        f"{JOURNAL_FILE} line {number} ({event.get('event')!r}) cannot be "
                        f"replayed: {exc}") from exc
        finally:
            self._replaying = False
        if self.torn is not None:  # the record says what was lost, and when it was found
            self._event("torn", line=self.torn.line, bytes=self.torn.bytes, text=self.torn.text)
            warnings.warn(self.torn.describe(), JournalWarning, stacklevel=3)

    def _apply(self, event: Mapping[str, Any]) -> None:
        """Replay one journal event through the public methods (their checks included)."""
        kind, facts = event["event"], {k: v for k, v in event.items() if k != "event"}
        if kind == "plan":
            self._adopt_plan(facts["sha256"])
        elif kind in _STEP_EVENTS:
            self._steps.apply(kind, facts)
        elif kind in _CAMPAIGN_EVENTS:
            _CAMPAIGN_EVENTS[kind](self, facts)
        elif kind in _RUN_EVENTS:
            _RUN_EVENTS[kind](self.run(facts.pop("run")), facts)
        elif kind != "torn":
            raise RecordError(f"unknown event {kind!r}")

    def _adopt_plan(self, digest: str) -> None:
        target = self.root / PLAN_FILE
        if not target.is_file() or sha256_file(target)[0] != digest:
            raise RecordError(f"{PLAN_FILE} is missing or is not the plan the journal froze "
                              f"(sha256 {digest}); a plan is never edited")
        self.plan = json.loads(target.read_text("utf-8"))
        self.plan_sha256 = digest

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
        if data["format"] not in PLAN_FORMATS:
            raise RecordError(
                f"the recorder writes {PLAN_FORMAT}, not {data['format']!r} (or itera-plan/3, "
                "which declares how metrics are recomputed): list "
                "the frozen corpora under 'corpora' (docs/contract-v2.md)"
            )
        data.setdefault("frozen_at", self.now())
        _validate("plan", data, PLAN_FILE, hints=_float_money(data))
        refuse_temp_strings(data, PLAN_FILE)
        self._check_plan(data)
        target = self.root / PLAN_FILE
        if target.exists():
            data = self._adopt_existing(target, plan, data)
        else:
            atomic_write_json(target, data)
        continued = self.plan_sha256 is not None  # already adopted from the journal
        self.plan = data
        self.plan_sha256 = sha256_file(target)[0]
        if not continued:
            self._event("plan", format=JOURNAL_FORMAT, sha256=self.plan_sha256,
                        at=self.now())
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
        if says_nothing(text):
            raise RecordError(f"decision {decision_id!r} needs a text")
        drops, adds = list(drops), list(adds)
        for run_id in drops:
            self._droppable(run_id)
        decision: dict[str, Any] = {"id": decision_id, "at": self.now(at), "text": text}
        self._event("decide", id=decision_id, text=text, drops=drops, adds=adds,
                    at=decision["at"])
        for run_id in drops:
            self.run(run_id)._drop(decision_id)
        if drops:
            decision["drops"] = drops
        if adds:
            decision["adds"] = adds
        self._decisions.append(decision)

    def _droppable(self, run_id: str) -> None:
        planned = self.planned_run(run_id)
        if planned.get("category") == "must":
            raise RecordError(
                f"run {run_id!r} is a must run ({planned['role']}): a decision never drops "
                "a must run; stop it with a declared rule (run.stop) or reject it with a "
                "reason (run.reject), so the campaign says why it has no result")
        run = self.run(run_id)
        if run.outcome is not None:
            raise RecordError(f"run {run_id!r} is already {run.outcome}, not dropped")

    # ---- step timings

    def step(self, step_id: str, *, hours: float | None = None) -> StepTimer:
        """Time a planned step: ``with rec.step("train-control"): ...``, or ``.start()`` and
        ``.end()``; ``hours=`` records work done off this machine (a human drafting the
        analysis). close() turns the timings into the manifest's observed hours."""
        return self._steps.timer(step_id, hours)

    @property
    def observed_hours(self) -> Mapping[str, Decimal]:
        """Observed hours per step so far (the steps timed and ended)."""
        return dict(self._steps.hours)

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
        refuse_temp_strings(data, relpath)
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
        if any(c["path"] == relpath for c in self._checkpoints):
            raise RecordError(f"checkpoint {relpath} is already recorded")
        self._event("checkpoint", **record)
        self._checkpoints.append(record)

    def record_base(self, folder: str, *, model: str, revision: str) -> str:
        """Ship a base model in the campaign: write ``<folder>/itera-base.json`` with its name
        and the 40-hex commit it was fetched at (or built as); returns the folder's tree
        digest, which :meth:`add_adapter` records as ``base_digest``."""
        _require_commit(revision, f"base {folder}")
        if is_blank(model):
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
        self._event("adapter", **{k: v for k, v in record.items() if k != "base_digest"})
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
        if not isinstance(amount, str):
            raise RecordError(
                f"expense {label!r}: the amount {amount!r} is a {type(amount).__name__}; money "
                f"is a decimal string as billed: write \"{amount}\"")
        if is_blank(label):
            raise RecordError("an expense needs a label")
        if not (file or not is_blank(reference)):
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
        expenses: Iterable[Mapping[str, Any]] | None = None,
        explanations: Mapping[str, str] | None = None,
        closed_at: datetime | str | None = None,
        budget: Mapping[str, Any] | None = None,
        schedule: Mapping[str, Any] | None = None,
        check: bool = True,
        out: TextIO | None = None,
    ) -> Closure:
        """Write the measurements files, then ``manifest.json``: every file hashed, every
        planned run accounted for with its evidence, the budget and the schedule computed
        from the record (:mod:`pytest_itera.record.tally`); then run the checks on the folder
        (:meth:`check`), print their findings to ``out`` (stdout) and return them.

        ``expenses``: the included expenses (:meth:`expense`), added to the engaged total.
        ``explanations``: ``{step id: why}`` for steps that deviated from the plan (steps
        of stopped and dropped runs are explained from their records). ``budget`` /
        ``schedule`` replace the computed blocks (the checks then judge them as given).
        ``check=False`` writes the manifest without running the checks.
        """
        self._require_plan()
        if self._closed:
            raise RecordError("the campaign is already closed")
        self._steps.require_ended()
        self.file_sha256(analysis, field="analysis")
        self.file_sha256(reload_instructions, field="reload_instructions")
        runs = self._run_records()
        plan = self._plan_model()
        if budget is None:
            budget = tally.budget_block(plan, self._outcomes(), self._expenses(expenses))
        elif expenses is not None:
            raise RecordError("give the included expenses in budget= or in expenses=, not both")
        self._check_sources(budget)
        self._check_bases()
        schedule = self._schedule(
            schedule if schedule is not None else self._derived_schedule(plan, explanations))
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
            "schedule": schedule,
        }
        _validate("manifest", manifest, MANIFEST_FILE)
        refuse_temp_strings(manifest, MANIFEST_FILE)
        target = self.root / MANIFEST_FILE
        atomic_write_json(target, manifest)
        self._closed = True
        result = None
        if check:
            result = self.check()
            print("\n".join(result.lines()), file=out or sys.stdout)
        return Closure(target, result)

    def check(self, *, python: str | None = None, timeout: float = 120.0) -> Verdict:
        """Run the plugin's checks on the folder as it stands, in this process (reloads in
        a fresh one, like the plugin's): what ``pytest --itera-campaign`` will say."""
        from pytest_itera.report.verify import check_campaign

        return check_campaign(self.root, python=python, timeout=timeout)

    def _plan_model(self) -> Plan:
        from pytest_itera.core.campaign import load_campaign

        plan = load_campaign(self.root).plan
        if plan is None:
            raise RecordError(f"{PLAN_FILE} does not load; it was changed after freezing")
        return plan

    def _outcomes(self) -> list[tally.RunOutcome]:
        out = []
        for run in self._runs.values():
            record = run.record
            reason = record.get("stop", {}).get("reason") or record.get("rejection")
            if run.outcome == "dropped":
                reason = f"dropped by decision {record.get('decision')}"
            out.append(tally.RunOutcome(run.id, run.outcome, record.get("corpus"), reason))
        return out

    def _expenses(self, expenses: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
        listed = [dict(e) for e in expenses or ()]
        for expense in listed:
            if "source" not in expense:
                raise RecordError(f"expense {expense.get('label')!r} has no source: make it "
                                  "with rec.expense(label, amount, file=..., reference=...)")
        return listed

    def _derived_schedule(
        self, plan: Plan, explanations: Mapping[str, str] | None
    ) -> dict[str, Any]:
        explained = dict(explanations or {})
        planned = {s.id for s in plan.schedule.steps}
        for step_id in explained:
            if step_id not in planned:
                raise RecordError(f"explanations: step {step_id!r} is not in the plan "
                                  f"(steps: {', '.join(sorted(planned))})")
        observed = dict(self._steps.hours)
        for step in plan.schedule.steps:
            why = self._run_explains(step.run)
            if why is None:
                continue
            if step.run is not None and self._runs[step.run].outcome == "dropped":
                observed.setdefault(step.id, Decimal(0))  # it did not run
            if step.id in tally.unexplained(plan, observed, explained):
                explained[step.id] = why
        return tally.schedule_block(plan, observed, explained)

    def _run_explains(self, run_id: str | None) -> str | None:
        """Why a stopped or dropped run's step took less than planned, from its record."""
        run = self._runs.get(run_id) if run_id is not None else None
        if run is None:
            return None
        record = run.record
        if run.outcome == "dropped":
            return f"{run.id} was dropped by decision {record['decision']}: the step did not run"
        if run.outcome == "stopped":
            stop = record["stop"]
            at = f" at step {stop['step']}" if "step" in stop else ""
            return f"{run.id} was stopped by {stop['rule']}{at}: {stop['reason']}"
        return None

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


class Closure:
    """What :meth:`CampaignRecorder.close` returns: the manifest written, and the verdict
    the checks gave (None with ``check=False``). Path methods (``read_text``, ``parent``,
    ``name``) reach the manifest's path, as when close() returned it."""

    def __init__(self, manifest: Path, result: Verdict | None) -> None:
        self.manifest = manifest
        self.result = result

    @property
    def verdict(self) -> str | None:
        return None if self.result is None else self.result.verdict

    @property
    def findings(self) -> tuple[Problem, ...]:
        return () if self.result is None else self.result.findings

    @property
    def accepted(self) -> bool:
        return self.result is not None and self.result.accepted

    def __fspath__(self) -> str:
        return str(self.manifest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manifest, name)

    def __repr__(self) -> str:
        return f"Closure({str(self.manifest)!r}, verdict={self.verdict!r})"


class StepTimer:
    """One planned step's timing: a context manager, or :meth:`start` then :meth:`end`."""

    def __init__(self, clock: StepClock, step_id: str) -> None:
        self._clock = clock
        self.id = step_id

    def start(self, at: datetime | str | None = None) -> StepTimer:
        self._clock.start(self.id, at)
        return self

    def end(self, at: datetime | str | None = None) -> Decimal:
        """End the step; returns the hours it took."""
        return self._clock.end(self.id, at)

    def __enter__(self) -> StepTimer:
        return self.start()

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self.end()  # a step that failed still took its time


class StepClock:
    """Observed hours per planned step, from the recorder's clock or given hours."""

    def __init__(self, campaign: CampaignRecorder) -> None:
        self._campaign = campaign
        self.hours: dict[str, Decimal] = {}
        self.running: dict[str, datetime] = {}

    def timer(self, step_id: str, hours: float | None) -> StepTimer:
        self._planned(step_id)
        if hours is not None:
            self.add(step_id, _hours_value(step_id, hours))
        return StepTimer(self, step_id)

    def _planned(self, step_id: str) -> None:
        self._campaign._require_plan()
        steps = [s["id"] for s in self._campaign.plan["schedule"]["steps"]]
        if step_id not in steps:
            raise RecordError(f"step {step_id!r} is not in the plan (steps: {', '.join(steps)}); "
                              "the plan is never edited: time the planned step it belongs to")

    def start(self, step_id: str, at: datetime | str | None) -> None:
        self._planned(step_id)
        if step_id in self.running:
            raise RecordError(f"step {step_id!r} is already running (started "
                              f"{self.running[step_id].isoformat()}); end it first")
        moment = self._moment(at)
        self._campaign._event("step-start", step=step_id, at=moment.isoformat())
        self.running[step_id] = moment

    def end(self, step_id: str, at: datetime | str | None) -> Decimal:
        self._planned(step_id)
        began = self.running.get(step_id)
        if began is None:
            raise RecordError(f"step {step_id!r} was never started: call "
                              f"rec.step({step_id!r}).start() first, or give hours= for work "
                              "timed elsewhere")
        moment = self._moment(at)
        if moment < began:
            raise RecordError(f"step {step_id!r} ends at {moment.isoformat()}, before it "
                              f"started ({began.isoformat()})")
        hours = _hours_value(step_id, round((moment - began).total_seconds() / 3600, 6))
        self._campaign._event("step", step=step_id, hours=float(hours),
                              started_at=began.isoformat(), at=moment.isoformat())
        del self.running[step_id]
        self.hours[step_id] = self.hours.get(step_id, Decimal(0)) + hours
        return hours

    def add(self, step_id: str, hours: Decimal) -> None:
        self._campaign._event("step", step=step_id, hours=float(hours))
        self.hours[step_id] = self.hours.get(step_id, Decimal(0)) + hours

    def _moment(self, at: datetime | str | None) -> datetime:
        moment = datetime.fromisoformat(at) if isinstance(at, str) else (
            at if at is not None else self._campaign._clock())
        if moment.tzinfo is None:
            raise RecordError(f"{moment.isoformat()} has no time zone; give a UTC time")
        return moment.astimezone(UTC)

    def apply(self, kind: str, facts: Mapping[str, Any]) -> None:
        if kind == "step-start":
            self.start(facts["step"], facts["at"])
        elif "started_at" in facts:  # a timed step: the same hours, recomputed
            self.end(facts["step"], facts["at"])
        else:
            self.add(facts["step"], Decimal(str(facts["hours"])))

    def require_ended(self) -> None:
        if self.running:
            raise RecordError(f"steps started and never ended: {', '.join(self.running)}; "
                              "end each (rec.step(id).end()) before closing")


def _hours_value(step_id: str, hours: float) -> Decimal:
    if isinstance(hours, bool) or not isinstance(hours, int | float | Decimal) or not (
            math.isfinite(hours) and hours >= 0):
        raise RecordError(f"step {step_id!r}: hours={hours!r} is not a number of hours >= 0")
    return Decimal(str(hours))


def _float_money(plan: Mapping[str, Any]) -> dict[str, str]:
    """A price given as a number, by JSON path: what to write instead (SPEC: money)."""
    hints: dict[str, str] = {}
    budget = plan.get("budget")
    if not isinstance(budget, Mapping):
        return hints
    for kind, key in (("lots", "price"), ("external_expenses", "amount")):
        items = budget.get(kind)
        for i, item in enumerate(items if isinstance(items, list) else []):
            value = item.get(key) if isinstance(item, Mapping) else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                hints[json_path(["budget", kind, i, key])] = (
                    f"the number {value!r} is not money: money is a decimal string, never "
                    f"a float (it would round); write \"{value}\"")
    return hints


class JournalWarning(UserWarning):
    """The journal had a torn last line: it was cut off, not replayed, and recorded."""


def _run_start(run: RunRecorder, f: dict[str, Any]) -> None:
    run.start(f["at"])


def _run_config(run: RunRecorder, f: dict[str, Any]) -> None:
    run.set_config(f["path"])


def _run_stop(run: RunRecorder, f: dict[str, Any]) -> None:
    run.stop(f["rule"], f["reason"], step=f.get("step"), at=f["at"])


_RUN_EVENTS: dict[str, Callable[[RunRecorder, dict[str, Any]], None]] = {
    "run-start": _run_start,
    "config": _run_config,
    "log": lambda run, f: run.log(
        f["step"], **{k: _from_json_number(v) for k, v in f["values"].items()}),
    "rewind": lambda run, f: run.rewind(f["step"]),
    "input": lambda run, f: run.check_input(**f["checked"]),
    "metrics": lambda run, f: run.set_metrics(**f["values"]),
    "measurements": lambda run, f: run.set_measurements(f["path"]),
    "predictions": lambda run, f: run.set_predictions(f["path"], corpus=run.record.get("corpus")),
    "corpus": lambda run, f: run.set_corpus(f["corpus"]),
    "resumed-from": lambda run, f: run.resumed_from(f["checkpoint"], f["step"]),
    "accepted": lambda run, f: run.accept(at=f["at"]),
    "stopped": _run_stop,
    "rejected": lambda run, f: run.reject(f["reason"], at=f["at"]),
}
_CAMPAIGN_EVENTS: dict[str, Callable[[CampaignRecorder, dict[str, Any]], None]] = {
    "decide": lambda rec, f: rec.decide(f["id"], f["text"], drops=f.get("drops", ()),
                                        adds=f.get("adds", ()), at=f["at"]),
    "checkpoint": lambda rec, f: rec.add_checkpoint(f.pop("path"), **f),
    "adapter": lambda rec, f: rec.add_adapter(f.pop("path"), **f),
}
# A finished step is {"event": "step", "step": <id>, "hours": <number>} (what the plan
# gate's forecast reads); a running one, {"event": "step-start", ...}.
_STEP_EVENTS = frozenset({"step-start", "step"})


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
