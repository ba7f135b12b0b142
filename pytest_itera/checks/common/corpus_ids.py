"""A frozen corpus's example ids, read once per campaign (the coverage of predictions, the
recomputed metrics): the corpus a run predicts, its ids and lines, and how a problem with them
is worded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_itera.checks.common import scoring
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import PLAN_FILE, Corpus, Plan, RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.files.predictions import (
    FIRST,
    IdLine,
    UnreadableIds,
    keep_first,
    read_ids,
)

# The findings on the frozen corpus itself: predictions-cover-corpus reports them.
KINDS: dict[str, Kind] = {
    "predictions-cover-corpus.corpus-unreadable": Kind(
        rule="the frozen corpus the plan names is missing from the folder or cannot be read",
        fix="ship the corpus the plan froze inside the folder"),
    "predictions-cover-corpus.corpus-sha256": Kind(
        rule="the corpus file is not the one the plan froze (its sha256 differs); predictions "
        "were not compared",
        fix="restore the frozen corpus; a changed corpus is a new campaign with a new plan"),
    "predictions-cover-corpus.corpus-ids-unusable": Kind(
        rule="records of the frozen corpus have no usable ID",
        fix="give every record of the corpus its id_field (a changed corpus is a new plan)"),
    "predictions-cover-corpus.corpus-ids-repeated": Kind(
        rule="the frozen corpus repeats IDs",
        fix="give every example of the corpus its own ID (a changed corpus is a new plan)"),
    "predictions-cover-corpus.corpus-size": Kind(
        rule="the frozen corpus holds another number of distinct IDs than the plan's examples",
        fix="freeze the corpus with its true number of examples (a changed corpus is a new "
        "plan)"),
}
# The findings that leave the corpus usable (CorpusIds.notes, not blocking): the coverage check
# reports them; a metric is recomputed on the corpus all the same.
NOTES = ("predictions-cover-corpus.corpus-ids-unusable",
         "predictions-cover-corpus.corpus-ids-repeated", "predictions-cover-corpus.corpus-size")


def file_sha256(ctx: Context, relpath: str) -> tuple[str | None, str]:
    """The sha256 of a file inside the folder (Context.facts: read once), or why there is none."""
    inside = ctx.regular_file(relpath)
    if isinstance(inside, str):
        return None, inside
    facts = ctx.facts(relpath)
    if facts.error is not None or facts.sha256 is None:
        return None, f"cannot be read: {facts.error}"
    return facts.sha256, ""


@dataclass(frozen=True)
class CorpusIds:
    """The frozen corpus's IDs, or why predictions cannot be compared with it."""

    ids: Mapping[str, int]
    blocking: tuple[Finding, ...] = ()  # the corpus is missing, edited or unreadable
    notes: tuple[Finding, ...] = ()  # the corpus is usable but not what the plan says
    # /3: the label fields the metric computations read -> value per ID position
    labels: Mapping[str, Sequence[object]] = field(default_factory=dict)


def corpus_ids(ctx: Context, corpus: Corpus | None = None) -> CorpusIds:
    """A frozen corpus (default: the plan's first), read once per Context (every run's item
    on that corpus shares it)."""
    plan, _ = ctx.documents()
    chosen = corpus if corpus is not None else plan.corpus
    return ctx.memo(f"corpus-ids:{chosen.id}", lambda: _load_corpus(ctx, chosen))


def _corpus_path(plan: Plan, corpus: Corpus) -> str:
    """The corpus's JSON path in plan.json: ``$.corpus`` (/1) or ``$.corpora[i]`` (/2)."""
    if plan.version < 2:
        return "$.corpus"
    return f"$.corpora[{plan.corpora.index(corpus)}]"


def run_corpus(plan: Plan, run: RunRecord) -> Corpus:
    """The corpus a run's predictions are compared with: the one the manifest records, else
    the plan's for that run, else the plan's first."""
    recorded = plan.corpus_by_id(run.corpus) if run.corpus is not None else None
    return recorded or plan.corpus_of(run.id) or plan.corpus


def _load_corpus(ctx: Context, corpus: Corpus) -> CorpusIds:
    plan, _ = ctx.documents()
    where = f"{PLAN_FILE} {_corpus_path(plan, corpus)}"
    actual, problem = file_sha256(ctx, corpus.path)
    if actual is None:
        return CorpusIds({}, (Finding(f"the frozen corpus {corpus.path} {problem}",
                                      where=f"{where}.path",
                                      hint="ship the corpus the plan froze inside the folder",
                                      code="predictions-cover-corpus.corpus-unreadable"),))
    if actual != corpus.sha256:
        return CorpusIds({}, (Finding(
            f"the corpus is frozen: {corpus.path} is not the corpus the plan froze "
            "(its sha256 differs); predictions were not compared",
            where=f"{where}.sha256", expected=corpus.sha256, found=actual,
            hint="restore the frozen corpus; a changed corpus is a new campaign with a new plan",
            code="predictions-cover-corpus.corpus-sha256"),))
    inside = ctx.regular_file(corpus.path)
    assert isinstance(inside, Path)
    try:
        fields = scoring.corpus_fields(plan)
        return index_lines(read_ids(inside, corpus.id_field, fields=fields), corpus.path,
                      corpus.examples, f"{where}.examples", fields)
    except (OSError, UnreadableIds) as exc:
        return CorpusIds({}, (Finding(f"the frozen corpus {corpus.path} {reason(exc)}",
                                      where=f"{where}.path",
                                      code="predictions-cover-corpus.corpus-unreadable"),))


def index_lines(records: Iterable[IdLine], relpath: str, examples: int, where: str,
           fields: tuple[str, ...] = ()) -> CorpusIds:
    ids: dict[str, int] = {}
    labels: dict[str, list[object]] = {name: [] for name in fields}
    canon: dict[object, object] = {}
    repeated: list[tuple[str, int]] = []
    broken: list[tuple[int, str]] = []
    counts = [0, 0]  # repeated, broken
    for rec in records:
        if rec.id is None:
            counts[1] += 1
            keep_first(broken, (rec.line, rec.problem or "no ID"), FIRST)
        elif rec.id in ids:
            counts[0] += 1
            keep_first(repeated, (rec.id, rec.line), FIRST)
        else:
            ids[rec.id] = len(ids)
            for name, value in zip(fields, rec.values, strict=True):  # one object per label
                labels[name].append(canon.setdefault((type(value), value), value)
                                    if isinstance(value, str | int | float) else value)
    notes = []
    if counts[1]:
        notes.append(Finding(f"the frozen corpus has {counted(counts[1], 'record')} "
                             "without a usable ID",
                             where=f"{relpath}:{broken[0][0]}",
                             found=more(lines_text(broken), len(broken), counts[1]),
                             code="predictions-cover-corpus.corpus-ids-unusable"))
    if counts[0]:
        extra = counted(counts[0], "extra record")
        notes.append(Finding(f"the frozen corpus repeats IDs ({extra})",
                             where=f"{relpath}:{repeated[0][1]}",
                             found=more(ids_text(repeated), len(repeated), counts[0]),
                             code="predictions-cover-corpus.corpus-ids-repeated"))
    if len(ids) != examples:
        notes.append(Finding(f"the frozen corpus holds {len(ids)} distinct IDs, the plan says "
                             f"{examples} examples", where=where,
                             expected=str(examples), found=str(len(ids)),
                             code="predictions-cover-corpus.corpus-size"))
    return CorpusIds(ids, (), tuple(notes), labels)


def reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    return str(exc)


def ids_text(items: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{item_id} (line {line})" for item_id, line in items)


def lines_text(items: Iterable[tuple[int, str]]) -> str:
    return "; ".join(f"line {line}: {problem}" for line, problem in items)


def counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def more(text: str, shown: int, count: int) -> str:
    return text if count <= shown else f"{text}, ... ({count - shown} more)"
