"""Run checks: stop-records, config-identity, predictions-cover-corpus, conclusion-consistent.

R1 (a decision on a frozen corpus, a negative result is a result), R2 (roles
and categories) and R5 (stop rules before the runs; a stopped run keeps its ID
and reason; a changed configuration gets a new ID). Registered as the plugin
``itera.runs``.

Predictions and the corpus are streamed: a process holds the corpus IDs (once,
memoised per Context), one byte per corpus ID for "seen", counters and the
first few examples of each problem, never a whole predictions file.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple, TypeVar

from pytest_itera.campaign import MANIFEST_FILE, PLAN_FILE, Manifest, Plan, RunRecord
from pytest_itera.checks import Check, Context
from pytest_itera.findings import Finding

FIRST = 5  # examples shown per kind of problem
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is reported, skipped, never held
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TOO_LONG = "\x00itera:line-too-long\x00"  # stands in for a skipped line in the CSV reader
PREDICTING_ROLES = ("control", "variant")  # R1: the compared runs deliver predictions
T = TypeVar("T")


def _docs(ctx: Context) -> tuple[Plan, Manifest]:
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None  # guaranteed by Check.needs
    assert man is not None
    return plan, man


def _record(man: Manifest, run_id: str) -> tuple[int, RunRecord]:
    position = man.run_position(run_id)
    assert position is not None  # targets are recorded run ids
    return position, man.runs[position]


# ------------------------------------------------------------- stop-records


def stop_targets(ctx: Context) -> Iterable[str]:
    """Stopped runs, and any run carrying a stop record (an accepted one must fail)."""
    _, man = _docs(ctx)
    return {r.id for r in man.runs if r.outcome == "stopped" or r.stop is not None}


def stop_records(ctx: Context, target: str | None) -> Iterator[Finding]:
    """A stopped run cites a planned rule, says why and when, and is not counted as accepted."""
    assert target is not None
    plan, man = _docs(ctx)
    index, run = _record(man, target)
    where = f"{MANIFEST_FILE} $.runs[{index}]"
    if run.outcome != "stopped":
        yield _not_stopped(run, where)
        return
    if run.stop is None:
        yield Finding(f"stopped run {run.id} has no stop record", where=f"{where}.stop",
                      expected="{rule, reason, step or at}",
                      hint="record the stop rule that fired, why, and at which step or time")
        return
    yield from _stop_fields(plan, run, where)
    yield from _stop_timing(plan, man, run, where)
    yield from _counted_as_accepted(man, run, where)


def _not_stopped(run: RunRecord, where: str) -> Finding:
    assert run.stop is not None
    if run.outcome == "accepted":
        return Finding(
            f"run {run.id} was stopped by rule {run.stop.rule!r} but is counted as accepted",
            where=f"{where}.outcome", expected="'stopped'", found="'accepted'",
            hint="a stopped run keeps its ID and reason, is not an accepted deliverable, "
            "and still counts as an expense: record its outcome as 'stopped'")
    return Finding(
        f"run {run.id} carries a stop record but its outcome is {run.outcome!r}",
        where=f"{where}.outcome", expected="'stopped'", found=repr(run.outcome),
        hint="a run stopped by a rule has outcome 'stopped'; otherwise remove the stop record")


def _stop_fields(plan: Plan, run: RunRecord, where: str) -> Iterator[Finding]:
    assert run.stop is not None
    declared = [r.id for r in plan.stop_rules]
    if not run.stop.rule.strip():
        yield Finding(f"stopped run {run.id} does not name the stop rule that fired",
                      where=f"{where}.stop.rule", expected=f"one of {declared}",
                      hint="cite the id of a stop rule declared in plan.json")
    elif run.stop.rule not in declared:
        yield Finding(f"stopped run {run.id} cites stop rule {run.stop.rule!r}, "
                      "which the plan does not declare",
                      where=f"{where}.stop.rule", expected=f"one of {declared}",
                      found=repr(run.stop.rule),
                      hint="stop rules are written in the plan before any run starts; a rule "
                      "invented afterwards is not a stop rule: record the run as rejected instead")
    if not run.stop.reason.strip():
        yield Finding(f"stopped run {run.id} has no stop reason", where=f"{where}.stop.reason",
                      hint="say what was observed (e.g. 'training loss was nan at step 14')")
    if run.stop.step is None and run.stop.at is None:
        yield Finding(f"stopped run {run.id} does not say when it was stopped",
                      where=f"{where}.stop", expected="a step or an 'at' timestamp",
                      hint="record the step (or the time) at which the rule fired")


def _stop_timing(plan: Plan, man: Manifest, run: RunRecord, where: str) -> Iterator[Finding]:
    """The rule predates the first run (plan-frozen says so too), and the stop follows the start."""
    assert run.stop is not None
    started = [(r.started_at, r.id) for r in man.runs if r.started_at is not None]
    if started and min(started)[0] < plan.frozen_at:
        first_at, first_id = min(started)
        yield Finding(
            f"stop rule {run.stop.rule!r} of run {run.id} was declared after the runs began: "
            f"the plan was frozen at {plan.frozen_at.isoformat()}, run {first_id} started at "
            f"{first_at.isoformat()}",
            where=f"{PLAN_FILE} $.frozen_at",
            hint="stop rules are written before any run starts (see the plan-frozen item)")
    if run.stop.at is not None and run.started_at is not None and run.stop.at < run.started_at:
        yield Finding(f"run {run.id} was stopped before it started", where=f"{where}.stop.at",
                      expected=f"at or after {run.started_at.isoformat()}",
                      found=run.stop.at.isoformat())


def _counted_as_accepted(man: Manifest, run: RunRecord, where: str) -> Iterator[Finding]:
    if run.id in man.conclusion.meets_threshold:
        yield Finding(f"stopped run {run.id} is listed as meeting the threshold",
                      where=f"{MANIFEST_FILE} $.conclusion.meets_threshold",
                      hint="a stopped run is not an accepted deliverable: remove it from the "
                      "conclusion (it stays an expense)")
    if run.deliverable is not None:
        yield Finding(f"stopped run {run.id} records a deliverable ({run.deliverable!r})",
                      where=f"{where}.deliverable",
                      hint="a stopped run delivers nothing (it stays an expense): "
                      "remove its deliverable")


# ---------------------------------------------------------- config-identity


def config_targets(ctx: Context) -> Iterable[str]:
    """Every run that ran (it must have a config) and any dropped run that records one."""
    _, man = _docs(ctx)
    return {r.id for r in man.runs
            if r.outcome != "dropped" or r.config is not None or r.config_sha256 is not None}


def config_identity(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The config file's bytes are the ones the plan froze under this run ID."""
    assert target is not None
    plan, man = _docs(ctx)
    index, run = _record(man, target)
    where = f"{MANIFEST_FILE} $.runs[{index}]"
    if run.config is None:
        yield Finding(f"run {run.id} records no config file", where=where,
                      expected="config: the path of the configuration it ran with",
                      hint="a run that used the machine ships its parameters, so that its "
                      "identity can be checked against the plan: record config (RunRecorder."
                      "set_config)")
        return
    actual, problem = _file_sha256(ctx, run.config)
    if actual is None:
        yield Finding(f"config {run.config} of run {run.id} {problem}", where=f"{where}.config",
                      hint="ship the run's configuration inside the campaign folder")
        return
    if run.config_sha256 is not None and run.config_sha256 != actual:
        yield Finding(f"config {run.config} of run {run.id} changed after the run recorded it",
                      where=f"{where}.config_sha256", expected=run.config_sha256, found=actual,
                      hint="restore the configuration the run used")
    planned = plan.run(run.id)
    if planned is not None and planned.config_sha256 != actual:
        pindex = plan.runs.index(planned)
        yield Finding(
            f"run {run.id} ran a configuration other than the one planned under its ID: "
            "a new configuration after a fix needs a new ID",
            where=f"{where}.config ({PLAN_FILE} $.runs[{pindex}].config_sha256)",
            expected=planned.config_sha256, found=f"{actual} ({run.config})",
            hint="keep the planned config under the old ID (with its own outcome) and record "
            "the changed one as a new run added by a decision (schedule.decisions[].adds)")


def _file_sha256(ctx: Context, relpath: str) -> tuple[str | None, str]:
    """The sha256 of a file inside the folder (Context.facts: read once), or why there is none."""
    inside = ctx.regular_file(relpath)
    if isinstance(inside, str):
        return None, inside
    facts = ctx.facts(relpath)
    if facts.error is not None or facts.sha256 is None:
        return None, f"cannot be read: {facts.error}"
    return facts.sha256, ""


# ------------------------------------------------- reading IDs, streamed


class UnreadableIds(Exception):
    """The file as a whole cannot be read as ID-bearing records (no ID column, a JSON array)."""


class IdLine(NamedTuple):  # a tuple, not a dataclass: millions are made per file
    """One record of an ID-bearing file: its line, its ID, or why it has none."""

    line: int
    id: str | None
    problem: str | None = None


def read_ids(
    path: Path, id_field: str, *, max_line: int = MAX_LINE_BYTES
) -> Iterator[IdLine]:
    """The IDs of a JSON Lines or CSV/TSV file, streamed, one record at a time.

    The format is decided by content: a first record starting with '{' is JSON
    Lines; '[' (a JSON array cannot be streamed) and binary content (NUL bytes:
    gzip, Parquet, Arrow) are refused; anything else is CSV with a header
    naming ``id_field`` (tab-separated when the extension is .tsv or the header
    has tabs and no commas). Integer IDs compare as their
    decimal text, so a CSV and a JSON file of the same corpus agree. A line
    over ``max_line`` bytes is reported and skipped without being held.
    Raises OSError or :class:`UnreadableIds`.
    """
    with _open_regular(path) as handle:
        head = handle.read(1 << 16).lstrip(codecs.BOM_UTF8).lstrip()
        handle.seek(0)
        if not head or head.startswith(b"{"):
            yield from _jsonl_ids(_lines(handle, max_line), id_field)
        elif head.startswith(b"["):
            raise UnreadableIds("is a JSON array; write one JSON object per line (JSON Lines)")
        elif b"\0" in head:
            raise UnreadableIds("is binary (compressed, Parquet, Arrow?); write JSON Lines or CSV")
        else:
            first = head.split(b"\n", 1)[0]
            tabbed = path.suffix.lower() == ".tsv" or (b"\t" in first and b"," not in first)
            yield from _csv_ids(_lines(handle, max_line), id_field, "\t" if tabbed else ",")


def _open_regular(path: Path) -> BinaryIO:
    """Open without following a link and without blocking on a FIFO; refuse non-files."""
    fd = os.open(path, _READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableIds("is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _lines(handle: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; None for a line over ``limit``, which is skipped unread.

    Reads fixed-size blocks and splits them itself: iterating a file object
    would hold a whole line, however long, and readline() is slower.
    """
    number, tail, skipping = 0, b"", False
    while block := handle.read(1 << 20):
        lines = (tail + block).split(b"\n")
        tail = lines.pop()
        for line in lines:
            number += 1
            if skipping or len(line) > limit:
                skipping = False  # this was the end of an over-long line
                yield number, None
            else:
                yield number, line
        if len(tail) > limit:
            tail, skipping = b"", True
    if skipping or tail:
        yield number + 1, None if skipping else tail


def _jsonl_ids(lines: Iterable[tuple[int, bytes | None]], id_field: str) -> Iterator[IdLine]:
    for number, raw in lines:
        if raw is None:
            yield IdLine(number, None, "over the line length limit (skipped unread)")
            continue
        if number == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))  # str parses faster than bytes
        except UnicodeDecodeError as exc:
            yield IdLine(number, None, f"not UTF-8 (byte {exc.start + 1})")
            continue
        except ValueError as exc:
            yield IdLine(number, None, f"not JSON ({getattr(exc, 'msg', exc)})")
            continue
        if not isinstance(record, dict):
            yield IdLine(number, None, f"a JSON {type(record).__name__}, not an object")
        elif id_field not in record:
            yield IdLine(number, None, f"no {id_field!r} field")
        else:
            yield _id_line(number, record[id_field], id_field)


def _id_line(number: int, value: object, id_field: str) -> IdLine:
    if isinstance(value, str) and value:
        return IdLine(number, value)
    if isinstance(value, int) and not isinstance(value, bool):
        return IdLine(number, str(value))
    return IdLine(number, None, f"{id_field!r} is {json.dumps(value)[:40]}, not an ID")


class _Numbered:
    """Decoded lines for the csv reader, remembering the physical line it is on."""

    def __init__(self, lines: Iterable[tuple[int, bytes | None]]) -> None:
        self.lines = lines
        self.line = 0

    def __iter__(self) -> Iterator[str]:
        for number, raw in self.lines:
            self.line = number
            yield _TOO_LONG + "\n" if raw is None else raw.decode("utf-8", "replace") + "\n"


def _csv_ids(
    lines: Iterable[tuple[int, bytes | None]], id_field: str, delimiter: str
) -> Iterator[IdLine]:
    source = _Numbered(lines)
    reader = csv.reader(source, delimiter=delimiter)
    try:
        header = next(reader, None)
    except csv.Error as exc:  # e.g. lines ended by a bare CR: the header is all of the file
        raise UnreadableIds(f"has no readable CSV header ({exc})") from None
    if header is None:
        return
    names = [name.strip().lstrip("\ufeff") for name in header]
    if id_field not in names:
        raise UnreadableIds(f"has no {id_field!r} column in its header {names[:10]}")
    column = names.index(id_field)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. a field over the csv module's size limit
            yield IdLine(source.line, None, f"not CSV ({exc})")
            continue
        if row:
            yield _csv_row(source.line, row, column, id_field)


def _csv_row(line: int, row: list[str], column: int, id_field: str) -> IdLine:
    if row == [_TOO_LONG]:
        return IdLine(line, None, "over the line length limit (skipped unread)")
    if len(row) <= column or not row[column].strip():
        return IdLine(line, None, f"no value in the {id_field!r} column")
    return IdLine(line, row[column].strip())


# ------------------------------------------------------ comparing IDs


@dataclass
class Coverage:
    """How one predictions file covers the corpus: counts and the first few of each problem."""

    records: int = 0
    missing: int = 0
    missing_first: list[str] = field(default_factory=list)
    duplicated: int = 0  # extra lines that repeat an ID already seen
    duplicated_first: list[tuple[str, int]] = field(default_factory=list)
    unknown: int = 0
    unknown_first: list[tuple[str, int]] = field(default_factory=list)
    malformed: int = 0
    malformed_first: list[tuple[int, str]] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.missing or self.duplicated or self.unknown or self.malformed)


def cover(corpus: Mapping[str, int], records: Iterable[IdLine], first: int = FIRST) -> Coverage:
    """Compare streamed records with the corpus IDs (ID -> position, in corpus order).

    Memory: one byte per corpus ID plus the first few examples; unknown IDs
    are counted, never collected.
    """
    seen = bytearray(len(corpus))
    out = Coverage()
    for rec in records:
        out.records += 1
        if rec.id is None:
            out.malformed += 1
            _keep(out.malformed_first, (rec.line, rec.problem or "no ID"), first)
            continue
        position = corpus.get(rec.id)
        if position is None:
            out.unknown += 1
            _keep(out.unknown_first, (rec.id, rec.line), first)
        elif seen[position]:
            out.duplicated += 1
            _keep(out.duplicated_first, (rec.id, rec.line), first)
        else:
            seen[position] = 1
    for corpus_id, position in corpus.items():
        if not seen[position]:
            out.missing += 1
            _keep(out.missing_first, corpus_id, first)
    return out


def _keep(items: list[T], item: T, first: int) -> None:
    if len(items) < first:
        items.append(item)


# -------------------------------------------------- the frozen corpus


@dataclass(frozen=True)
class CorpusIds:
    """The frozen corpus's IDs, or why predictions cannot be compared with it."""

    ids: Mapping[str, int]
    blocking: tuple[Finding, ...] = ()  # the corpus is missing, edited or unreadable
    notes: tuple[Finding, ...] = ()  # the corpus is usable but not what the plan says


def corpus_ids(ctx: Context) -> CorpusIds:
    """The corpus, read once per Context (every run's item shares it)."""
    return ctx.memo("corpus-ids", lambda: _load_corpus(ctx))


def _load_corpus(ctx: Context) -> CorpusIds:
    plan, _ = _docs(ctx)
    corpus = plan.corpus
    where = f"{PLAN_FILE} $.corpus"
    actual, problem = _file_sha256(ctx, corpus.path)
    if actual is None:
        return CorpusIds({}, (Finding(f"the frozen corpus {corpus.path} {problem}",
                                      where=f"{where}.path",
                                      hint="ship the corpus the plan froze inside the folder"),))
    if actual != corpus.sha256:
        return CorpusIds({}, (Finding(
            f"the corpus is frozen: {corpus.path} is not the corpus the plan froze "
            "(its sha256 differs); predictions were not compared",
            where=f"{where}.sha256", expected=corpus.sha256, found=actual,
            hint="restore the frozen corpus; a changed corpus is a new campaign with a new plan"),))
    inside = ctx.regular_file(corpus.path)
    assert isinstance(inside, Path)
    try:
        return _index(read_ids(inside, corpus.id_field), corpus.path, corpus.examples)
    except (OSError, UnreadableIds) as exc:
        return CorpusIds({}, (Finding(f"the frozen corpus {corpus.path} {_reason(exc)}",
                                      where=f"{where}.path"),))


def _index(records: Iterable[IdLine], relpath: str, examples: int) -> CorpusIds:
    ids: dict[str, int] = {}
    repeated: list[tuple[str, int]] = []
    broken: list[tuple[int, str]] = []
    counts = [0, 0]  # repeated, broken
    for rec in records:
        if rec.id is None:
            counts[1] += 1
            _keep(broken, (rec.line, rec.problem or "no ID"), FIRST)
        elif rec.id in ids:
            counts[0] += 1
            _keep(repeated, (rec.id, rec.line), FIRST)
        else:
            ids[rec.id] = len(ids)
    notes = []
    if counts[1]:
        notes.append(Finding(f"the frozen corpus has {_n(counts[1], 'record')} without a usable ID",
                             where=f"{relpath}:{broken[0][0]}",
                             found=_more(_lines_text(broken), len(broken), counts[1])))
    if counts[0]:
        notes.append(Finding(f"the frozen corpus repeats IDs ({_n(counts[0], 'extra record')})",
                             where=f"{relpath}:{repeated[0][1]}",
                             found=_more(_ids_text(repeated), len(repeated), counts[0])))
    if len(ids) != examples:
        notes.append(Finding(f"the frozen corpus holds {len(ids)} distinct IDs, the plan says "
                             f"{examples} examples", where=f"{PLAN_FILE} $.corpus.examples",
                             expected=str(examples), found=str(len(ids))))
    return CorpusIds(ids, (), tuple(notes))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    return str(exc)


# ------------------------------------------------- predictions-cover-corpus


def predictions_targets(ctx: Context) -> Iterable[str]:
    """Accepted runs with predictions, and accepted controls/variants (which must have them)."""
    plan, man = _docs(ctx)
    out = set()
    for run in man.runs:
        planned = plan.run(run.id)
        role = planned.role if planned is not None else None
        if run.outcome == "accepted" and (run.predictions is not None or role in PREDICTING_ROLES):
            out.add(run.id)
    return out


def predictions_cover_corpus(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The run's predictions name each frozen-corpus example exactly once."""
    assert target is not None
    plan, man = _docs(ctx)
    index, run = _record(man, target)
    where = f"{MANIFEST_FILE} $.runs[{index}].predictions"
    if run.predictions is None:
        yield Finding(f"accepted run {run.id} has no predictions", where=where,
                      hint="a compared run (control or variant) delivers its predictions on the "
                      "frozen corpus (R1): write them and record the file")
        return
    corpus = corpus_ids(ctx)
    yield from corpus.blocking
    if corpus.blocking:
        return
    yield from corpus.notes
    inside = ctx.regular_file(run.predictions)
    if isinstance(inside, str):
        yield Finding(f"predictions {run.predictions} of run {run.id} {inside}", where=where)
        return
    try:
        coverage = cover(corpus.ids, read_ids(inside, plan.corpus.id_field))
    except (OSError, UnreadableIds) as exc:
        yield Finding(f"predictions {run.predictions} {_reason(exc)}", where=run.predictions,
                      hint=f"write JSON Lines objects or CSV rows with the {plan.corpus.id_field!r}"
                      " field of the corpus")
        return
    yield from _coverage_findings(coverage, run.predictions, len(corpus.ids), plan.corpus.path)


def _coverage_findings(cov: Coverage, relpath: str, total: int, corpus: str) -> Iterator[Finding]:
    fix = f"predict every example of the frozen corpus {corpus} exactly once"
    if cov.missing:
        yield Finding(f"predictions miss {_n(cov.missing, 'ID')} of the {total} corpus IDs",
                      where=relpath,
                      found=_more(", ".join(cov.missing_first), len(cov.missing_first),
                                  cov.missing), hint=fix)
    if cov.duplicated:
        yield Finding(f"predictions repeat corpus IDs ({_n(cov.duplicated, 'extra line')})",
                      where=f"{relpath}:{cov.duplicated_first[0][1]}",
                      found=_more(_ids_text(cov.duplicated_first), len(cov.duplicated_first),
                                 cov.duplicated), hint=fix)
    if cov.unknown:
        yield Finding(f"predictions hold {_n(cov.unknown, 'ID')} not in the frozen corpus",
                      where=f"{relpath}:{cov.unknown_first[0][1]}",
                      found=_more(_ids_text(cov.unknown_first), len(cov.unknown_first),
                                 cov.unknown), hint=fix)
    if cov.malformed:
        yield Finding(f"predictions have {_n(cov.malformed, 'malformed line')}",
                      where=f"{relpath}:{cov.malformed_first[0][0]}",
                      found=_more(_lines_text(cov.malformed_first), len(cov.malformed_first),
                                 cov.malformed),
                      hint="each line is one JSON object (or CSV row) with the corpus ID field")


def _ids_text(items: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{item_id} (line {line})" for item_id, line in items)


def _lines_text(items: Iterable[tuple[int, str]]) -> str:
    return "; ".join(f"line {line}: {problem}" for line, problem in items)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _more(text: str, shown: int, count: int) -> str:
    return text if count <= shown else f"{text}, ... ({count - shown} more)"


# ---------------------------------------------------- conclusion-consistent

_NEGATIVE_TEXT = re.compile(
    r"\bnegative result\b|\bno variants? (?:meets?|reach(?:es)?|pass(?:es)?|beats?)\b", re.I)


def conclusion_consistent(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """meets_threshold is exactly the accepted variants whose metric meets the planned threshold."""
    plan, man = _docs(ctx)
    listed = man.conclusion.meets_threshold
    yield from _listed_runs(plan, man, listed)
    yield from _unlisted_variants(plan, man, listed)
    if listed and _NEGATIVE_TEXT.search(man.conclusion.text):
        yield Finding("the conclusion's text states a negative result, but it lists "
                      f"{', '.join(listed)} as meeting the threshold",
                      where=f"{MANIFEST_FILE} $.conclusion.text",
                      hint="make the text and meets_threshold say the same thing")


def _meets(plan: Plan, value: float) -> bool:
    threshold = plan.decision.threshold
    return value >= threshold if plan.decision.direction == "higher" else value <= threshold


def _rule(plan: Plan) -> str:
    sign = ">=" if plan.decision.direction == "higher" else "<="
    return f"{plan.decision.metric} {sign} {plan.decision.threshold}"


def _listed_runs(plan: Plan, man: Manifest, listed: tuple[str, ...]) -> Iterator[Finding]:
    where = f"{MANIFEST_FILE} $.conclusion.meets_threshold"
    metric = plan.decision.metric
    for run_id in listed:
        run, planned = man.run(run_id), plan.run(run_id)
        if run is None:
            yield Finding(f"the conclusion lists {run_id}, which is not a run of the manifest",
                          where=where)
            continue
        if planned is not None and planned.role != "variant":
            yield Finding(f"the conclusion lists {run_id}, a {planned.role.replace('_', ' ')} "
                          "run: only variants are compared with the threshold", where=where)
        if run.outcome != "accepted":
            yield Finding(f"the conclusion lists {run_id}, whose outcome is {run.outcome!r}: "
                          "only an accepted run can meet the threshold", where=where)
        elif metric not in run.metrics:
            yield _no_metric(man, run, metric)
        elif not _meets(plan, run.metrics[metric]):
            yield Finding(f"the conclusion lists {run_id} as meeting the threshold, but its "
                          f"{metric} is {run.metrics[metric]}", where=where,
                          expected=_rule(plan), found=f"{metric} = {run.metrics[metric]}",
                          hint="state the conclusion the metrics support; a negative result "
                          "is a valid result")


def _unlisted_variants(plan: Plan, man: Manifest, listed: tuple[str, ...]) -> Iterator[Finding]:
    metric = plan.decision.metric
    for planned in plan.runs:
        run = man.run(planned.id)
        if planned.role != "variant" or run is None or run.outcome != "accepted":
            continue
        if metric not in run.metrics:
            if run.id not in listed:  # a listed one was reported already
                yield _no_metric(man, run, metric)
        elif _meets(plan, run.metrics[metric]) and run.id not in listed:
            yield Finding(f"variant {run.id} meets the threshold but the conclusion does not "
                          "list it", where=f"{MANIFEST_FILE} $.conclusion.meets_threshold",
                          expected=_rule(plan), found=f"{metric} = {run.metrics[metric]}",
                          hint=f"add {run.id} to meets_threshold: the conclusion states what "
                          "the recorded metrics show")


def _no_metric(man: Manifest, run: RunRecord, metric: str) -> Finding:
    index = man.runs.index(run)
    return Finding(f"accepted variant {run.id} has no {metric!r} metric (the plan's decision "
                   "metric)", where=f"{MANIFEST_FILE} $.runs[{index}].metrics",
                   found=f"metrics {sorted(run.metrics)}",
                   hint="record the decision metric for every accepted variant")


CHECKS = (
    Check("stop-records", "a stopped run cites a planned rule, a reason and when; never accepted",
          stop_records, scope="run", targets=stop_targets, order=20),
    Check("config-identity", "a run's config is the one planned under its ID", config_identity,
          scope="run", targets=config_targets, order=21),
    Check("predictions-cover-corpus", "an accepted run predicts each frozen-corpus example once",
          predictions_cover_corpus, scope="run", targets=predictions_targets, order=22),
    Check("conclusion-consistent", "the conclusion agrees with the metrics and the threshold",
          conclusion_consistent, order=30),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
