"""The campaign contract: plan.json and manifest.json as frozen dataclasses.

No pytest import here: the same loader serves the plugin, notebooks and the
recorder. Loading never raises on bad input; every problem becomes a
:class:`ContractError` naming the file, the JSON path and, when known, the
line and column.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import math
import re
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, cached_property, partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

    # Imported on first use: ~70 ms at start-up, and a valid document never needs it.
    import jsonschema

PLAN_FILE = "plan.json"
MANIFEST_FILE = "manifest.json"
# A shipped base's own record of what it is: {"model": <name>, "revision": <40-hex commit>}.
BASE_RECORD = "itera-base.json"
# The contract's digests, matched whole (fullmatch): a file's sha256, a hub commit id.
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
COMMIT_HEX = re.compile(r"[0-9a-f]{40}")
PLAN_FORMAT = "itera-plan/2"  # what the recorder writes by default; /1 documents are still read
PLAN_FORMATS = ("itera-plan/2", "itera-plan/3")  # what the recorder accepts
MANIFEST_FORMAT = "itera-manifest/2"
RESUME_PARTS = ("model", "optimizer", "progress", "scheduler", "scaler", "rng", "data")
# plan.json and manifest.json are small documents; a bigger one is refused
# before it is read so a hostile file cannot exhaust memory.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
_MAX_ERRORS = 50

# ---------------------------------------------------------------- plan.json


@dataclass(frozen=True)
class MetricComputation:
    """/3: how a metric is recomputed from a run's predictions and its frozen corpus."""

    kind: str  # accuracy, f1_macro, mae, ... or a pytest_itera_metric hook's name
    label_field: str  # in the corpus: the reference label
    prediction_field: str  # in the predictions: the run's answer
    where: Mapping[str, Any] | None = None  # only prediction rows with these field values
    relative_to: str | None = None  # "control" or a run id: this run's value minus that run's


@dataclass(frozen=True)
class Decision:
    metric: str
    direction: Literal["higher", "lower"]
    threshold: float
    point: str | None = None
    computation: MetricComputation | None = None  # /3 (required there)
    # /3: the level of the paired bootstrap interval (checks/common/measured.py) whose bound
    # must meet the threshold; None: the point value decides.
    confidence: float | None = None

    def meets(self, value: float) -> bool:
        """Does ``value`` of the decision metric meet the threshold, in its direction (equal
        meets it)? The one rule the checks and the recorder's conclusion both apply."""
        return value >= self.threshold if self.direction == "higher" else value <= self.threshold


@dataclass(frozen=True)
class Corpus:
    id: str
    path: str
    sha256: str
    id_field: str
    examples: int


@dataclass(frozen=True)
class PlannedRun:
    id: str
    role: Literal["control", "variant", "data_check", "resume_check", "pilot"]
    category: Literal["must", "useful", "exploratory"]
    config_sha256: str
    description: str | None = None
    corpus: str | None = None  # /2: the corpus it trains and predicts on
    resume_state: tuple[str, ...] | None = None  # /2: overrides the policy's for this run


@dataclass(frozen=True)
class StopRule:
    id: str
    kind: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    description: str | None = None


@dataclass(frozen=True)
class CheckpointPolicy:
    interval_hours: float
    tolerable_loss_hours: float
    resume_state: tuple[str, ...]
    save_hours: float | None = None
    storage: str | None = None
    resume_tolerance: float = 0.0  # /2: resumed vs reference series, absolute


@dataclass(frozen=True)
class Step:
    id: str
    kind: str
    resource: str
    hours: float
    after: tuple[str, ...] = ()
    lot: str | None = None
    run: str | None = None


@dataclass(frozen=True)
class PlannedSchedule:
    window_hours: float
    steps: tuple[Step, ...]
    sequential_hours: float | None = None
    uncommitted_hours: float | None = None
    deviation_tolerance: float | None = None


@dataclass(frozen=True)
class Source:
    """Where an amount comes from: a file in the campaign and/or an order/quote reference."""

    file: str | None = None
    reference: str | None = None
    # A receipt's facts as recorded (an included expense's source; each occurs in its text).
    issued_on: str | None = None  # ISO date, judged against the campaign's window
    issued_by: str | None = None
    amount_as_written: str | None = None


@dataclass(frozen=True)
class Expense:
    label: str
    amount: str  # decimal string, see pytest_itera.core.money
    source: Source | None = None  # /2: required for an included expense
    kind: str | None = None  # paid | tax | transfer | rate | estimate | derived | refund | credit


@dataclass(frozen=True)
class Lot:
    id: str
    offer: str
    gpu: str
    gpus_per_lot: int
    days: int
    price: str  # decimal string, see pytest_itera.core.money
    quantity: int
    source: Source | None = None  # /2: the quote of an offer not in the catalogue


@dataclass(frozen=True)
class PlanBudget:
    currency: str
    lots: tuple[Lot, ...]
    external_expenses: tuple[Expense, ...] = ()


@dataclass(frozen=True)
class Plan:
    format: str
    campaign: str
    question: str
    decision: Decision
    runs: tuple[PlannedRun, ...]
    stop_rules: tuple[StopRule, ...]
    checkpoint_policy: CheckpointPolicy
    schedule: PlannedSchedule
    budget: PlanBudget
    # None in a draft (``python -m pytest_itera new-plan``): CampaignRecorder.freeze_plan sets
    # it; a campaign is never accepted without it (the ``manifest`` check).
    frozen_at: datetime | None = None
    # The recorder freezes plans with "recorded": true: the campaign commits to its journal
    # (journal-agrees refuses it missing, unchained or cut short of its closure).
    recorded: bool = False
    # /1 has one ``corpus``; /2 lists ``corpora``. Loading fills both: ``corpora`` is every
    # frozen corpus, ``corpus`` the first of them.
    corpus: Corpus = None  # type: ignore[assignment]  # set by load_campaign
    corpora: tuple[Corpus, ...] = ()
    metrics: Mapping[str, MetricComputation] = field(default_factory=dict)  # /3

    def computations(self) -> dict[str, MetricComputation]:
        """/3: every metric the plan says how to recompute (the decision metric first)."""
        found = {} if self.decision.computation is None else {
            self.decision.metric: self.decision.computation}
        return {**found, **{k: v for k, v in self.metrics.items() if k not in found}}

    @property
    def version(self) -> int:
        """1, 2 or 3: the contract's version (``itera-plan/N``)."""
        return format_version(self.format)

    def run(self, run_id: str) -> PlannedRun | None:
        return self._runs_by_id.get(run_id)

    def corpus_by_id(self, corpus_id: str) -> Corpus | None:
        return next((c for c in self.corpora if c.id == corpus_id), None)

    def corpus_of(self, run_id: str) -> Corpus | None:
        """The corpus a planned run works on: its ``corpus``, else the plan's only corpus."""
        run = self.run(run_id)
        if run is not None and run.corpus is not None:
            return self.corpus_by_id(run.corpus)
        return self.corpora[0] if len(self.corpora) == 1 else None

    def resume_state_of(self, run_id: str) -> tuple[str, ...]:
        """The resume parts a run's resume checkpoints must hold."""
        run = self.run(run_id)
        if run is not None and run.resume_state is not None:
            return run.resume_state
        return self.checkpoint_policy.resume_state

    @cached_property
    def _runs_by_id(self) -> dict[str, PlannedRun]:
        # Looked up once per run per item: a scan of a 1,000-run plan each time is quadratic.
        return _first_by_id(self.runs)


# ------------------------------------------------------------ manifest.json


@dataclass(frozen=True)
class PlanRef:
    path: str
    sha256: str


@dataclass(frozen=True)
class FileRecord:
    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Stop:
    rule: str
    reason: str
    step: int | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class RunRecord:
    id: str
    outcome: Literal["accepted", "stopped", "rejected", "dropped"]
    started_at: datetime | None = None
    ended_at: datetime | None = None
    config: str | None = None
    config_sha256: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    measurements: str | None = None
    predictions: str | None = None
    deliverable: str | None = None  # /1 only
    stop: Stop | None = None
    decision: str | None = None
    rejection: str | None = None
    corpus: str | None = None  # /2: the plan corpus its predictions cover
    resumed_from: ResumedFrom | None = None  # /2: the resume check's evidence


@dataclass(frozen=True)
class ResumedFrom:
    checkpoint: str  # a listed resume checkpoint of another run
    step: int


@dataclass(frozen=True)
class CheckpointRecord:
    path: str
    run: str
    format: str
    kind: Literal["resume", "weights"]
    claims: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdapterRecord:
    path: str
    run: str
    base_model: str
    base_revision: str | None
    base_path: str | None = None
    base_digest: str | None = None  # /2: tree digest of the shipped base folder


@dataclass(frozen=True)
class Conclusion:
    meets_threshold: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class BudgetReport:
    currency: str
    lots: tuple[str, ...]
    rental_total: str
    unit: Literal["corpus", "decision"]
    accepted_deliverables: int
    cost_per_deliverable: str | None
    included_expenses: tuple[Expense, ...] = ()
    external_expenses: tuple[Expense, ...] = ()
    rejection_cause: str | None = None


@dataclass(frozen=True)
class ActualStep:
    id: str
    observed_hours: float


@dataclass(frozen=True)
class Deviation:
    step: str
    explanation: str


@dataclass(frozen=True)
class DecisionRecord:
    id: str
    text: str
    at: datetime | None = None
    drops: tuple[str, ...] = ()
    adds: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActualSchedule:
    reserved_hours: float
    observed_hours: float
    steps: tuple[ActualStep, ...]
    deviations: tuple[Deviation, ...] = ()
    decisions: tuple[DecisionRecord, ...] = ()


@dataclass(frozen=True)
class Manifest:
    format: str
    campaign: str
    closed_at: datetime
    plan: PlanRef
    files: tuple[FileRecord, ...]
    runs: tuple[RunRecord, ...]
    checkpoints: tuple[CheckpointRecord, ...]
    adapters: tuple[AdapterRecord, ...]
    analysis: str
    reload_instructions: str
    conclusion: Conclusion
    budget: BudgetReport
    schedule: ActualSchedule
    # A rehearsal (CampaignRecorder(..., rehearsal=True)): run on any machine at any speed;
    # its observed hours are not judged against the plan, and it is REHEARSED, never ACCEPTED.
    rehearsal: bool = False
    # The clock the recorder read: "real" (measured) or "played" (an injected clock=: the
    # observed hours were not measured, and the verdict is PLAYED CLOCK, never ACCEPTED).
    # None: the manifest does not say (hand-written, or an older recorder).
    clock: str | None = None

    @property
    def played_clock(self) -> bool:
        """The manifest says its campaign was recorded on a played clock."""
        return self.clock == "played"

    @property
    def version(self) -> int:
        """1 or 2: the contract's version (``itera-manifest/N``)."""
        return format_version(self.format)

    def moments(self) -> list[tuple[str, str, datetime]]:
        """(what, JSON path, moment) of each moment the manifest records but its closure: the
        runs' starts, ends and stops, and the decisions, in document order. The one list the
        checks of time read (plan-frozen: none before the freeze; plan-vs-actual: none after
        the closure)."""
        found: list[tuple[str, str, datetime | None]] = []
        for i, run in enumerate(self.runs):
            found += [
                (f"run {run.id} started", f"$.runs[{i}].started_at", run.started_at),
                (f"run {run.id} ended", f"$.runs[{i}].ended_at", run.ended_at),
                (f"run {run.id} was stopped", f"$.runs[{i}].stop.at",
                 run.stop.at if run.stop is not None else None),
            ]
        for i, decision in enumerate(self.schedule.decisions):
            found.append((f"decision {decision.id!r} was taken",
                          f"$.schedule.decisions[{i}].at", decision.at))
        return [(what, path, moment) for what, path, moment in found if moment is not None]

    def run(self, run_id: str) -> RunRecord | None:
        return self._runs_by_id.get(run_id)

    def owners(self, scope: str | None, target: str) -> set[str]:
        """The runs a target belongs to: its own id, or the runs whose files it is.

        Shared by the checks (is a run an accepted deliverable?) and the report
        (checks passed per run), which must agree item for item. A checkpoint or
        adapter path owns itself and everything under it (it may be a folder).
        """
        if scope == "run":
            return {target}
        if scope == "campaign":
            return set()
        by_ref, by_file = self._owner_index
        found = set(by_file.get(target, ()))
        if not by_ref:
            return found
        # The target itself and each folder above it ("a/b/c" -> "a/b/c", "a/b", "a"; a
        # leading "/" gives ""): a record path P owns the target when P == target or
        # target starts with P + "/" (P without its trailing "/"). The folders' part is
        # computed once per folder (asked for every file of a 100,000-file campaign).
        runs = by_ref.get(target)
        if runs:
            found |= runs
        slash = target.rfind("/")
        if slash >= 0:
            found |= self._folder_owners(target[:slash])
        return found

    @cached_property
    def named(self) -> frozenset[str]:
        """The paths a record names itself (a run's predictions, config or measurements, a
        checkpoint or adapter path): only such a path's :meth:`owners` may differ from those
        of any other path directly in its folder."""
        by_ref, by_file = self._owner_index
        return frozenset((*by_ref, *by_file))

    def _folder_owners(self, folder: str) -> frozenset[str]:
        """The runs whose checkpoint or adapter path is ``folder`` or a folder above it."""
        cache = self._folder_owner_cache
        known = cache.get(folder)
        if known is None:
            by_ref = self._owner_index[0]
            slash = folder.rfind("/")
            above = self._folder_owners(folder[:slash]) if slash >= 0 else frozenset()
            known = cache[folder] = above | by_ref.get(folder, set())
        return known

    @cached_property
    def _folder_owner_cache(self) -> dict[str, frozenset[str]]:
        return {}

    @cached_property
    def _runs_by_id(self) -> dict[str, RunRecord]:
        return _first_by_id(self.runs)

    def run_position(self, run_id: str) -> int | None:
        """Index of the first run with this id in ``runs`` (for JSON paths), indexed once."""
        return self._run_positions.get(run_id)

    @cached_property
    def _run_positions(self) -> dict[str, int]:
        positions: dict[str, int] = {}
        for i, run in enumerate(self.runs):
            positions.setdefault(run.id, i)
        return positions

    @cached_property
    def _owner_index(self) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """(record path without trailing "/" -> runs, run file path -> runs), built once.

        ``owners`` is asked for every item and again by the report: scanning every
        run and checkpoint each time was quadratic in a 1,000-run sweep.
        """
        by_ref: dict[str, set[str]] = {}
        refs: tuple[CheckpointRecord | AdapterRecord, ...] = (*self.checkpoints, *self.adapters)
        for ref in refs:
            by_ref.setdefault(ref.path.rstrip("/"), set()).add(ref.run)
        by_file: dict[str, set[str]] = {}
        for run in self.runs:
            for path in (run.predictions, run.config, run.measurements):
                if path is not None:
                    by_file.setdefault(path, set()).add(run.id)
        return by_ref, by_file


def format_version(fmt: str) -> int:
    """The N of ``itera-plan/N`` / ``itera-manifest/N`` (the schemas allow 1 to 3 / 1 and 2)."""
    return int(fmt.rsplit("/", 1)[1])


def _first_by_id(records: tuple[Any, ...]) -> dict[str, Any]:
    """id -> the first record with that id (what a linear search would return)."""
    index: dict[str, Any] = {}
    for record in records:
        index.setdefault(record.id, record)
    return index


# ------------------------------------------------------------------ loading


@dataclass(frozen=True)
class ContractError:
    """One problem with plan.json or manifest.json."""

    file: str
    json_path: str  # "$" for the document itself, else "$.runs[2].outcome"
    message: str
    line: int | None = None
    column: int | None = None

    def where(self) -> str:
        pos = f":{self.line}:{self.column}" if self.line is not None else ""
        return f"{self.file}{pos} {self.json_path}"


@dataclass(frozen=True)
class Campaign:
    """A campaign folder with its two documents, loaded as far as they are valid.

    ``plan``/``manifest`` are None when the file is missing, unreadable or
    schema-invalid; ``errors`` then says why. ``plan_data``/``manifest_data``
    keep the parsed JSON (when it parsed) so string scans see every value.
    """

    root: Path
    plan: Plan | None
    manifest: Manifest | None
    errors: tuple[ContractError, ...]
    plan_data: Any = None
    manifest_data: Any = None

    @property
    def id(self) -> str:
        for doc in (self.manifest, self.plan):
            if doc is not None:
                return doc.campaign
        return self.root.name

    def errors_for(self, file: str) -> tuple[ContractError, ...]:
        return tuple(e for e in self.errors if e.file == file)


def load_campaign(root: Path) -> Campaign:
    """Load ``root/plan.json`` and ``root/manifest.json``; never raises on bad input."""
    plan_data, plan_errors = _load_document(root, PLAN_FILE, "plan")
    manifest_data, manifest_errors = _load_document(root, MANIFEST_FILE, "manifest")
    plan = _plan(plan_data) if plan_data is not None and not plan_errors else None
    with gc_paused():  # a record per listed file, all alive (see gc_paused)
        manifest = (
            _build(Manifest, manifest_data)
            if manifest_data is not None and not manifest_errors
            else None
        )
    return Campaign(
        root=root,
        plan=plan,
        manifest=manifest,
        errors=(*plan_errors, *manifest_errors),
        plan_data=plan_data,
        manifest_data=manifest_data,
    )


def load_plan(path: Path) -> Campaign:
    """A plan judged alone, before renting (``--itera-plan``): ``path`` is the plan file.

    No manifest is read; ``errors`` name the file as it is called. Never raises on bad input.
    """
    plan_data, errors = _load_document(path.parent, path.name, "plan")
    plan = _plan(plan_data) if plan_data is not None and not errors else None
    return Campaign(root=path.parent, plan=plan, manifest=None, errors=tuple(errors),
                    plan_data=plan_data)


def plan_from(data: Mapping[str, Any]) -> Plan:
    """The typed plan of a schema-valid plan document (what the recorder froze)."""
    return _plan(data)


def _plan(data: Mapping[str, Any]) -> Plan:
    """A schema-valid plan of either version, with ``corpus`` and ``corpora`` both filled."""
    plan: Plan = _build(Plan, data)
    corpora = plan.corpora or (plan.corpus,)
    return dataclasses.replace(plan, corpora=corpora, corpus=corpora[0])


def _load_document(root: Path, name: str, schema: str) -> tuple[Any, list[ContractError]]:
    path = root / name
    try:
        raw = _read_document(path)
    except _Refused as exc:
        return None, [ContractError(name, "$", str(exc))]
    try:
        data = parse_json(raw)
    except json.JSONDecodeError as exc:
        return None, [ContractError(name, "$", f"not JSON: {exc.msg}", exc.lineno, exc.colno)]
    except (ValueError, RecursionError) as exc:
        return None, [ContractError(name, "$", f"not acceptable JSON: {_short(exc)}")]
    errors = [_schema_error(name, raw, e) for e in validation_errors(schema, data)]
    errors += _timestamp_errors(name, raw, schema, data) if not errors else []
    return data, errors


class _Refused(Exception):
    pass


def _read_document(path: Path) -> str:
    """Read a small regular file as UTF-8, refusing links out, FIFOs and giants."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise _Refused(
            "missing: a campaign folder has plan.json and manifest.json at its root"
        ) from None
    except OSError as exc:
        raise _Refused(f"cannot be read: {exc.strerror}") from None
    import stat

    if stat.S_ISLNK(st.st_mode):
        raise _Refused("is a symbolic link: the contract documents must be regular files")
    if not stat.S_ISREG(st.st_mode):
        raise _Refused("is not a regular file")
    if st.st_size > MAX_DOCUMENT_BYTES:
        raise _Refused(f"is {st.st_size} bytes, over the {MAX_DOCUMENT_BYTES}-byte limit")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _Refused(f"cannot be read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Refused(
            f"is not UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None


class DuplicateKeyError(ValueError):
    pass


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Automatic garbage collection paused while pytest-itera's own code loads, walks or
    checks a campaign, then restored.

    That work allocates a few long-lived objects per listed file (a record, a walk entry,
    the file's facts), and the collector's generational passes over them are a fifth of a
    run of 100,000 files (~1 s of ~5 s, issue 19). Nothing is lost: the objects are
    refcounted as usual and any cycle is collected once the collector runs again. The
    user's own tests run with the collector as they set it: paused only around our code,
    and left alone when something else had turned it off (nesting is free)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def parse_json(text: str) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys.

    A later key must not silently hide an earlier one.
    """

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise DuplicateKeyError(f"duplicate key {key!r} in one object")
            out[key] = value
        return out

    def finite_float(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            raise ValueError(f"number {text[:40]} overflows a float")
        return value

    # The collector paused while the document is built: its objects are all alive (nothing
    # to collect), and a pass during a hostile nesting would run other objects' finalizers at
    # the recursion limit (each then an unraisable RecursionError).
    with gc_paused():
        return json.loads(
            text,
            object_pairs_hook=pairs,
            parse_constant=partial(json_constant, refuse=True),
            parse_float=finite_float,
        )


#: Non-finite numbers by their spellings, lower-cased: the bare constants ``json.loads`` hands
#: to ``parse_constant`` (``NaN``, ``Infinity``, ``-Infinity``, as Python's ``json.dumps``
#: writes them) and the strings a measurements file may write instead (``"NaN"``, ``"inf"``,
#: ``"+Infinity"``..., any case). One table for every reader (issue 18).
NON_FINITE: Mapping[str, float] = types.MappingProxyType({
    "nan": math.nan, "+nan": math.nan, "-nan": math.nan,
    "inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
    "-inf": -math.inf, "-infinity": -math.inf,
})


def non_finite(spelling: str) -> float | None:
    """The non-finite number ``spelling`` names (any case), or None."""
    return NON_FINITE.get(spelling.lower())


def json_constant(name: str, *, refuse: bool = False) -> float:
    """``parse_constant`` for ``json.loads``: the number a bare non-finite constant names
    (the measurements file), or with ``refuse`` a ValueError (strict JSON, :func:`parse_json`)."""
    value = non_finite(name)
    if refuse or value is None:
        raise ValueError(f"{name} is not JSON (non-finite numbers are refused)")
    return value


def _short(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)[:200]


# ------------------------------------------------------------------ schemas


@cache
def schema(name: str) -> dict[str, Any]:
    """The shipped JSON Schema ``plan``, ``manifest`` or ``common``."""
    text = (
        resources.files("pytest_itera.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema
    import referencing

    common = referencing.Resource.from_contents(schema("common"))
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(
        common.id() or "", common
    )
    cls = jsonschema.validators.validator_for(schema(name))
    validator: jsonschema.protocols.Validator = cls(schema(name), registry=registry)
    return validator


@cache
def _fast_validator(name: str) -> Any:
    """The same schema compiled by jsonschema-rs: it decides validity in ~1 ms where the
    Python validator takes ~0.5 s on a 1,000-run manifest (its $ref resolution)."""
    import jsonschema_rs

    common = schema("common")
    registry = jsonschema_rs.Registry([(common["$id"], common)])
    return jsonschema_rs.validator_for(schema(name), registry=registry)


@dataclass(frozen=True)
class SchemaProblem:
    """One way a document breaks its schema."""

    path: tuple[str | int, ...]
    message: str  # the validator's own words
    explained: str  # a short, specific sentence for the common failures


def validate(name: str, data: Any) -> list[str]:
    """Schema problems of a ``plan`` or ``manifest`` document, as "$.path: message" lines."""
    return [f"{json_path(p.path)}: {p.explained}" for p in validation_errors(name, data)]


def validation_errors(name: str, data: Any) -> list[SchemaProblem]:
    """jsonschema-rs decides; the Python validator explains what is wrong.

    Where they disagree, the refusal stands: Python's ``re`` lets ``$`` match before a
    final newline, so it takes "USD\n" for a currency code; the ECMA-262 regexes of
    jsonschema-rs (the JSON Schema dialect) do not, and their own errors are reported.
    """
    if _fast_validator(name).is_valid(data):
        return []
    errors = sorted(
        # A "not required" rule (the other version's fields) holds vacuously of a non-object,
        # so its negation fails there: the value's own type error is the one to tell.
        (e for e in _validator(name).iter_errors(data)
         if e.validator != "not" or isinstance(e.instance, dict)),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    problems = [
        SchemaProblem(tuple(e.absolute_path), str(e.message), _explain(e)) for e in errors
    ]
    if not problems:
        problems = [
            SchemaProblem(tuple(e.instance_path), e.message, e.message)
            for e in _fast_validator(name).iter_errors(data)
        ]
    return problems[:_MAX_ERRORS]


def _schema_error(file: str, raw: str, problem: SchemaProblem) -> ContractError:
    line, column = locate(raw, list(problem.path))
    return ContractError(file, json_path(problem.path), problem.explained, line, column)


def json_path(parts: typing.Sequence[str | int]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _explain(error: jsonschema.ValidationError) -> str:
    """A short, specific sentence for the common schema failures."""
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"unknown field {', '.join(map(repr, extra))} (typo? unknown fields are rejected)"
    if (
        error.validator == "type"
        and isinstance(error.instance, float)
        and "string" in str(error.validator_value)
    ):
        return (
            f"{error.instance!r} is a float; "
            f'money and identifiers are strings (write "{error.instance}")'
        )
    if error.validator == "pattern" and "(0|[1-9]" in str(error.validator_value):
        return f'{error.instance!r} is not a decimal money string like "47.14"'
    if error.validator == "oneOf":
        return f"{_clip(error.instance)} is not valid here (expected {_expected(error)})"
    if error.validator == "not" and isinstance(error.validator_value, dict):
        fields = error.validator_value.get("required", ())
        return "; ".join(_VERSIONED_FIELDS.get(f, f"field {f!r} is not allowed here")
                         for f in fields) or str(error.message)
    if error.validator == "minItems" and list(error.absolute_path) == ["stop_rules"]:
        return ("no stop rule: write the stop rules down before the trials (non-finite loss, "
                "quality under a threshold, a truncated input, no usable resume)")
    message = str(error.message)
    return message if len(message) < 300 else message[:300] + "…"


# Fields that belong to one version of the contract only, and what the other one writes.
_VERSIONED_FIELDS = {
    "deliverable": "'deliverable' is itera-manifest/1 only: in /2 a run names the plan corpus "
    "its predictions cover in 'corpus'",
    "corpus": "'corpus' is itera-plan/1 only: an itera-plan/2 lists its frozen corpora in "
    "'corpora'",
    "corpora": "'corpora' is itera-plan/2: an itera-plan/1 has one 'corpus' (or set format "
    "to itera-plan/2)",
    "metrics": "'metrics' (how metrics are recomputed) is itera-plan/3: set format to itera-plan/3",
    "computation": "'computation' is itera-plan/3: set format to itera-plan/3 (which requires it)",
    "confidence": "'confidence' is itera-plan/3 (its interval is computed from the predictions):"
    " set format to itera-plan/3",
}


def _expected(error: jsonschema.ValidationError) -> str:
    kinds = []
    for sub in error.validator_value:
        kinds.append(sub.get("type") or sub.get("$ref", "?").rsplit("/", 1)[-1])
    return " or ".join(map(str, kinds))


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "…"


def aware_moment(value: object) -> datetime | None:
    """An ISO-8601 timestamp with its zone as a datetime; None for anything else (a
    journal's ``at``, read by the checks)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _timestamp_errors(file: str, raw: str, name: str, data: Any) -> list[ContractError]:
    """The schema checks a timestamp's shape; the calendar is checked here."""
    errors = []
    for path, value in _timestamps(data, name):
        try:
            datetime.fromisoformat(value)
        except ValueError as exc:
            line, column = locate(raw, path)
            errors.append(ContractError(file, json_path(path), f"{value!r}: {exc}", line, column))
    return errors


def _timestamps(data: Any, name: str) -> list[tuple[list[str | int], str]]:
    found: list[tuple[list[str | int], str]] = []
    keys = {"frozen_at", "closed_at", "started_at", "ended_at", "at"}

    def walk(node: Any, path: list[str | int]) -> None:
        # Only into containers: a call per leaf value was ~0.1 s of 100,000 listed files.
        if isinstance(node, dict):
            for key, value in node.items():
                if key in keys and isinstance(value, str):
                    found.append(([*path, key], value))
                elif isinstance(value, dict | list):
                    walk(value, [*path, key])
        else:
            for i, value in enumerate(node):
                if isinstance(value, dict | list):
                    walk(value, [*path, i])

    if name == "manifest" and isinstance(data, dict):
        # $.files[*] hold path, bytes and sha256 only (the schema allows nothing else, and
        # timestamps are looked for in schema-valid documents): 100,000 listed files, ~0.05 s.
        data = {key: value for key, value in data.items() if key != "files"}
    if isinstance(data, dict | list):
        walk(data, [])
    return found


# -------------------------------------------------------- positions in JSON


def locate(raw: str, path: typing.Sequence[str | int]) -> tuple[int | None, int | None]:
    """Line and column (1-based) where the value at ``path`` starts in ``raw``."""
    try:
        offset = _Locator(raw).find(list(path))
    except (ValueError, IndexError, RecursionError):
        return None, None
    if offset is None:
        return None, None
    line = raw.count("\n", 0, offset) + 1
    column = offset - (raw.rfind("\n", 0, offset) + 1) + 1
    return line, column


class _Locator:
    """Walks the raw JSON text just far enough to find a value's offset."""

    _decoder = json.JSONDecoder()

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def find(self, path: list[str | int], pos: int = 0) -> int | None:
        pos = self._skip_ws(pos)
        if not path:
            return pos
        head, rest = path[0], path[1:]
        if isinstance(head, int) and self.raw[pos] == "[":
            return self._find_in_array(head, rest, pos + 1)
        if isinstance(head, str) and self.raw[pos] == "{":
            return self._find_in_object(head, rest, pos + 1)
        return None

    def _find_in_array(self, index: int, rest: list[str | int], pos: int) -> int | None:
        for i in range(index + 1):
            pos = self._skip_ws(pos)
            if i == index:
                return self.find(rest, pos)
            pos = self._skip_value(pos)
            pos = self._skip_ws(pos) + 1  # the comma
        return None

    def _find_in_object(self, key: str, rest: list[str | int], pos: int) -> int | None:
        while True:
            pos = self._skip_ws(pos)
            if self.raw[pos] == "}":
                return None
            name, pos = self._decoder.raw_decode(self.raw, pos)
            pos = self._skip_ws(pos) + 1  # the colon
            if name == key:
                return self.find(rest, pos)
            pos = self._skip_value(self._skip_ws(pos))
            pos = self._skip_ws(pos) + 1  # the comma

    def _skip_value(self, pos: int) -> int:
        _, end = self._decoder.raw_decode(self.raw, pos)
        return int(end)

    def _skip_ws(self, pos: int) -> int:
        while self.raw[pos] in " \t\r\n":
            pos += 1
        return pos


# ------------------------------------------------- JSON -> frozen dataclasses


def _build(cls: Any, data: Mapping[str, Any]) -> Any:
    """Turn schema-valid JSON into the dataclass ``cls`` (field names are the JSON keys)."""
    fields, plain = _fields(cls)
    if plain is not None and data.keys() == plain:
        # Every field present, each as JSON gives it (a listed file's record, 100,000 of
        # them, issue 29): no converter call per value.
        return cls(**data)
    return cls(**{name: convert(data[name]) for name, convert in fields if name in data})


@cache
def _fields(
    cls: Any,
) -> tuple[tuple[tuple[str, Callable[[Any], Any]], ...], frozenset[str] | None]:
    """Each field's name and converter, and the names when every converter keeps the JSON
    value as it is (None: some field converts).

    Converters are worked out once per class, not once per value: a 1,000-run manifest has
    ~70,000 values."""
    hints = typing.get_type_hints(cls, vars(sys.modules[__name__]))
    fields = tuple((f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls))
    plain = all(convert is _same for _, convert in fields)
    return fields, frozenset(name for name, _ in fields) if plain else None


def _same(value: Any) -> Any:
    return value


@cache
def _converter(hint: Any) -> Callable[[Any], Any]:
    """A function turning one JSON value into ``hint``'s type; None stays None."""
    origin = typing.get_origin(hint)
    convert: Callable[[Any], Any]
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _converter(inner[0])
    if origin is tuple:
        item = _converter(typing.get_args(hint)[0])
        convert = lambda value: tuple(item(v) for v in value)  # noqa: E731
    elif dataclasses.is_dataclass(hint):
        convert = lambda value: _build(hint, value)  # noqa: E731
    elif hint is datetime:
        convert = datetime.fromisoformat
    elif hint is float:
        convert = lambda value: float(value) if isinstance(value, int) else value  # noqa: E731
    elif origin is Mapping:
        of = _converter(typing.get_args(hint)[1])  # e.g. Mapping[str, MetricComputation]
        convert = lambda value: types.MappingProxyType(  # noqa: E731
            {key: of(item) for key, item in value.items()})
    else:
        return _same
    return lambda value: None if value is None else convert(value)
