"""Metrics recomputed from a run's predictions and its frozen corpus (``itera-plan/3``).

No pytest import. One streamed pass over a run's predictions (memoised per Context) feeds
both predictions-cover-corpus's coverage and every metric the plan says how to compute:
a scored row keeps two small codes (class labels) or two floats (regression), never the
row itself; the corpus labels come with the corpus IDs (one value per example).

The values are computed by scikit-learn (imported on first use, only when a /3 plan
declares computations), the reference definitions (a macro average over the classes
present or predicted), in float64. It does not stream, so the pass does: a class metric
keeps one count per distinct (label, prediction) pair and hands scikit-learn those pairs
with their counts as sample weights (memory: classes squared, whatever the rows); a
regression metric keeps two float64 per scored row. torchmetrics (which streams) was
measured and not kept: importing it imports torch and transformers, ~260 MiB and ~5x
scikit-learn's import time, over the 300 MiB a 1,000,000-row check may take. Custom
kinds come from ``pytest_itera_metric``.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind, MetricHook
from pytest_itera.core.findings import Finding
from pytest_itera.files.predictions import FIRST, Coverage, IdLine, cover, keep_first, read_ids

if TYPE_CHECKING:
    from pytest_itera.core.campaign import Corpus, MetricComputation, Plan, RunRecord

__all__ = [
    "CLASS_KINDS", "KINDS", "METRIC_KINDS", "VALUE_KINDS", "CorpusView", "Recomputed", "Scan",
    "accuracy", "compared_run", "corpus_fields",
    "recompute", "scan",
]

# kind -> (sklearn.metrics function, average); exact_match: whole values equal (any JSON).
CLASS_KINDS: dict[str, tuple[str, str | None]] = {
    "accuracy": ("accuracy_score", None),
    "exact_match": ("accuracy_score", None),
    "f1_macro": ("f1_score", "macro"),
    "f1_micro": ("f1_score", "micro"),
    "precision_macro": ("precision_score", "macro"),
    "recall_macro": ("recall_score", "macro"),
}
VALUE_KINDS = {"mae": "mean_absolute_error", "mse": "mean_squared_error",
               "rmse": "root_mean_squared_error"}
METRIC_KINDS = (*CLASS_KINDS, *VALUE_KINDS)

# The findings of a recomputation that cannot be made: metrics-recomputed reports them.
KINDS: dict[str, Kind] = {
    "metrics-recomputed.unprovable": Kind(
        rule="a metric cannot be recomputed: the run has no readable predictions, or an "
        "itera-plan/2 plan does not say how it is computed",
        fix="ship the run's predictions on its frozen corpus and declare the computation in "
        "itera-plan/3 (decision.computation, plan 'metrics')"),
    "metrics-recomputed.reference": Kind(
        rule="a metric relative_to another run names a run that is not accepted (or no "
        "control is planned on the run's corpus)",
        fix="name an accepted run (or 'control': the control planned on the run's corpus) in "
        "relative_to"),
    "metrics-recomputed.filter-differs": Kind(
        rule="a metric relative_to another run: the two runs' predictions select other "
        "examples through the where filter",
        fix="write each example's filtered fields as the frozen corpus gives them, in every "
        "run's predictions; better, freeze them in the corpus"),
    "metrics-recomputed.no-label": Kind(
        rule="the frozen corpus has no label (the plan's label_field) for predicted examples",
        fix="give every example of the corpus its label_field, so that its predictions can be "
        "scored"),
    "metrics-recomputed.no-prediction": Kind(
        rule="scored rows of the predictions have no usable prediction_field",
        fix="write the prediction of every example in its prediction_field"),
    "metrics-recomputed.empty": Kind(
        rule="no row of the predictions is scored by the plan's computation (its where filter "
        "selects none)",
        fix="check the plan's where filter against the corpus's fields (or the predictions' "
        "own)"),
    "metrics-recomputed.unknown-kind": Kind(
        rule="a computation's kind is not a built-in metric kind and no pytest_itera_metric "
        "hook computes it",
        fix="use a built-in kind, or implement pytest_itera_metric(name, config) in a "
        "conftest.py"),
    "metrics-recomputed.hook-raised": Kind(
        rule="the pytest_itera_metric hook's function raised while computing a metric",
        fix="fix the conftest.py function that computes the custom metric kind"),
}


class CorpusView(Protocol):
    """What the corpus loader (checks/runs.py) gives: IDs, label values, why it is unusable."""

    @property
    def ids(self) -> Mapping[str, int]: ...
    @property
    def labels(self) -> Mapping[str, Sequence[object]]: ...
    @property
    def blocking(self) -> tuple[Finding, ...]: ...


def corpus_fields(plan: Plan) -> tuple[str, ...]:
    """The corpus fields the computations read, read with the corpus IDs: the labels, and
    the fields of their ``where`` filters (a prediction row without the field is filtered
    by its example's corpus row)."""
    if plan.version < 3:
        return ()
    return tuple(sorted({f for c in plan.computations().values()
                         for f in (c.label_field, *(c.where or {}))}))


# ------------------------------------------------------------------ the pass


@dataclass
class Scored:
    """One computation's aligned pairs on one run, and what kept rows out of it."""

    classes: bool
    pairs: dict[tuple[int, int], int] = field(default_factory=dict)  # classes: counts
    labels: array[float] = field(default_factory=lambda: array("d"))  # values: per row
    predictions: array[float] = field(default_factory=lambda: array("d"))
    no_label: int = 0  # the corpus has no label for the example
    no_label_first: list[tuple[str, int]] = field(default_factory=list)
    no_prediction: int = 0  # the row lacks the prediction (or it is not a number)
    no_prediction_first: list[tuple[int, str]] = field(default_factory=list)
    # The corpus positions the computation's ``where`` filter selected (one byte each).
    selected: bytearray = field(default_factory=bytearray)
    # Per scored row, for the paired bootstrap (core/confidence.py): its corpus position
    # and, for classes, its (truth, guess) codes (the regression values are per row already).
    positions: array[int] = field(default_factory=lambda: array("q"))
    truths: array[int] = field(default_factory=lambda: array("q"))
    guesses: array[int] = field(default_factory=lambda: array("q"))


@dataclass
class Disagreement:
    """Rows whose label column differs from the corpus's label for that ID."""

    count: int = 0
    first: list[tuple[str, int, str, str]] = field(default_factory=list)  # id, line, row, corpus


@dataclass
class Scan:
    coverage: Coverage
    scored: dict[str, Scored]  # metric name -> pairs (relative_to aside)
    disagree: dict[str, Disagreement]  # label field -> rows that disagree
    values: list[object]  # class code -> the first value seen with that key


@dataclass(frozen=True)
class _Job:
    name: str
    scored: Scored
    truth: Sequence[object]
    prediction: int  # index in the row's values
    # (index in the row's values, wanted value, the corpus's values of that field by position)
    where: tuple[tuple[int, object, Sequence[object]], ...]


def scan(ctx: Context, plan: Plan, relpath: str, path: Path, corpus: Corpus,
         view: CorpusView) -> Scan:
    """Coverage and scored pairs of one predictions file, read once per Context.

    Raises OSError or UnreadableIds (not memoised: each caller reports them)."""
    return ctx.memo(f"scoring.scan:{relpath}:{corpus.id}",
                    lambda: _scan(plan, path, corpus.id_field, view))


def _scan(plan: Plan, path: Path, id_field: str, view: CorpusView) -> Scan:
    computations = plan.computations() if plan.version >= 3 else {}
    fields = sorted({f for c in computations.values()
                     for f in (c.label_field, c.prediction_field, *(c.where or {}))})
    out = Scan(Coverage(), {}, {}, [])
    records = read_ids(path, id_field, fields=tuple(fields))
    if not computations:
        out.coverage = cover(view.ids, records)
        return out
    # Computations that score the same pairs (same fields and filter) share one pass's work.
    shared: dict[tuple[object, ...], _Job] = {}
    for name, comp in computations.items():
        key = (comp.kind in VALUE_KINDS, comp.label_field, comp.prediction_field,
               tuple(sorted((comp.where or {}).items())))
        if key not in shared:
            shared[key] = _job(name, comp, fields, view)
        out.scored[name] = shared[key].scored
    jobs = list(shared.values())
    checks = [(fields.index(f), view.labels.get(f, ()), out.disagree.setdefault(f, Disagreement()))
              for f in sorted({c.label_field for c in computations.values()})]
    out.coverage = cover(view.ids, _tee(records, view.ids, jobs, checks, out.values))
    return out


def _job(name: str, comp: MetricComputation, fields: list[str], view: CorpusView) -> _Job:
    classes = comp.kind not in VALUE_KINDS
    scored = Scored(classes, selected=bytearray(len(view.ids)))
    where = tuple((fields.index(k), v, view.labels.get(k, ()))
                  for k, v in sorted((comp.where or {}).items()))
    return _Job(name, scored, view.labels.get(comp.label_field, ()),
                fields.index(comp.prediction_field), where)


def _tee(records: Iterable[IdLine], ids: Mapping[str, int], jobs: list[_Job],
         checks: list[tuple[int, Sequence[object], Disagreement]],
         values: list[object]) -> Iterator[IdLine]:
    """Pass the records on to cover() and score each example's first row on the way."""
    seen = bytearray(len(ids))
    codes: dict[str, int] = {}
    for rec in records:
        yield rec
        position = ids.get(rec.id) if rec.id is not None else None
        if position is None or seen[position]:
            continue
        seen[position] = 1
        row = rec.values
        for index, truth, disagree in checks:
            stated = row[index]
            if stated is not None and truth and stated != truth[position]:
                _agree(rec, stated, truth[position], disagree)
        for job in jobs:
            for i, want, corpus in job.where:
                found = row[i]
                if found is None and corpus:  # the row lacks the field: its corpus row's
                    found = corpus[position]
                if (found != want or type(found) is not type(want)) and not _equal(found, want):
                    break
            else:
                job.scored.selected[position] = 1
                _score(job, rec, position, codes, values)


def _agree(rec: IdLine, stated: object, truth: object, out: Disagreement) -> None:
    if stated is None or truth is None or class_key(stated) == class_key(truth):
        return
    out.count += 1
    keep_first(out.first, (str(rec.id), rec.line, _text(stated), _text(truth)), FIRST)


def _score(job: _Job, rec: IdLine, position: int, codes: dict[str, int],
           values: list[object]) -> None:
    scored = job.scored
    truth = job.truth[position] if job.truth else None
    if truth is None:
        scored.no_label += 1
        keep_first(scored.no_label_first, (str(rec.id), rec.line), FIRST)
        return
    guess = rec.values[job.prediction]
    if scored.classes:
        if guess is None:
            return _no_prediction(scored, rec.line, "no value")
        pair = (_code(truth, codes, values), _code(guess, codes, values))
        scored.pairs[pair] = scored.pairs.get(pair, 0) + 1
        scored.positions.append(position)
        scored.truths.append(pair[0])
        scored.guesses.append(pair[1])
        return None
    expected, found = number(truth), number(guess)
    if found is None or expected is None:
        return _no_prediction(scored, rec.line, f"not a number: {_text(guess)}"
                              if expected is not None else f"label {_text(truth)} not a number")
    scored.labels.append(expected)
    scored.predictions.append(found)
    scored.positions.append(position)
    return None


def _no_prediction(scored: Scored, line: int, why: str) -> None:
    scored.no_prediction += 1
    keep_first(scored.no_prediction_first, (line, why), FIRST)


def _code(value: object, codes: dict[str, int], values: list[object]) -> int:
    key = value if type(value) is str else class_key(value)
    code = codes.get(key)
    if code is None:
        code = codes[key] = len(values)
        values.append(value)
    return code


def class_key(value: object) -> str:
    """A label as compared: text as is, an integer as its decimal text (a CSV corpus and a
    JSON predictions file agree), anything else as its JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, sort_keys=True)


def number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _equal(found: object, wanted: object) -> bool:
    """A ``where`` filter: the row's value equals the declared one (CSV text compares as text)."""
    if found is None:
        return False
    if isinstance(found, str) and not isinstance(wanted, str):
        return found == _text(wanted)
    return (type(found) is type(wanted) and found == wanted) or (
        isinstance(found, int | float) and not isinstance(found, bool)
        and isinstance(wanted, int | float) and not isinstance(wanted, bool) and found == wanted)


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# ------------------------------------------------------------- the values


@dataclass(frozen=True)
class Recomputed:
    """A metric recomputed from a run's predictions, or why it cannot be."""

    value: float | None
    source: str  # "recomputed (accuracy where split=test) from runs/v/predictions.jsonl"
    problems: tuple[Finding, ...] = ()


CorpusOf = Callable[["RunRecord"], "tuple[Corpus, CorpusView]"]


def recompute(ctx: Context, run: RunRecord, name: str, corpus_of: CorpusOf,
              hook: MetricHook | None = None) -> Recomputed:
    """The metric ``name`` of ``run`` as its predictions give it (memoised per Context)."""
    return ctx.memo(f"scoring.value:{run.id}:{name}",
                    lambda: _recompute(ctx, run, name, corpus_of, hook))


def _recompute(ctx: Context, run: RunRecord, name: str, corpus_of: CorpusOf,
               hook: MetricHook | None) -> Recomputed:
    plan, man = ctx.documents()
    comp = plan.computations()[name]
    mine = _base(ctx, plan, run, name, comp, corpus_of, hook)
    if comp.relative_to is None or mine.value is None:
        return mine
    reference = compared_run(plan, run, comp.relative_to)
    other = man.run(reference) if reference is not None else None
    if other is None or other.outcome != "accepted":
        return Recomputed(None, mine.source, (Finding(
            f"run {run.id}'s {name} is relative to {comp.relative_to!r}, but "
            f"{reference or 'no control planned on its corpus'} is not an accepted run",
            where="plan.json (relative_to)", code="metrics-recomputed.reference",
            hint="name an accepted run (or 'control': the control planned on the run's "
            "corpus) in relative_to"),))
    theirs = _base(ctx, plan, other, name, comp, corpus_of, hook)
    if theirs.value is None:
        return Recomputed(None, mine.source, theirs.problems)
    differ = _filters_differ(ctx, plan, run, other, name, comp, corpus_of)
    if differ is not None:
        return Recomputed(None, mine.source, (differ,))
    return Recomputed(mine.value - theirs.value,
                      f"{mine.source} minus {other.id}'s {theirs.source}")


def _filters_differ(ctx: Context, plan: Plan, run: RunRecord, other: RunRecord, name: str,
                    comp: MetricComputation, corpus_of: CorpusOf) -> Finding | None:
    """A metric relative to another run compares the same examples: where the ``where``
    filter reads a field the predictions carry (the corpus has none, or the rows override
    it), both runs' rows select the same IDs, else the difference is of two other subsets
    (a test example moved to "train" in one run's rows raises its test score)."""
    if not comp.where or run.predictions is None or other.predictions is None:
        return None
    corpus, view = corpus_of(run)
    theirs_corpus, _ = corpus_of(other)
    if theirs_corpus.id != corpus.id:
        return None  # other examples: the positions do not compare
    mine_path, theirs_path = ctx.regular_file(run.predictions), ctx.regular_file(
        other.predictions)
    if isinstance(mine_path, str) or isinstance(theirs_path, str):
        return None
    mine = scan(ctx, plan, run.predictions, mine_path, corpus, view).scored[name].selected
    theirs = scan(ctx, plan, other.predictions, theirs_path, corpus, view).scored[name].selected
    if mine == theirs:
        return None
    names = list(view.ids)
    only_mine = [names[i] for i in range(len(names)) if mine[i] and not theirs[i]]
    only_theirs = [names[i] for i in range(len(names)) if theirs[i] and not mine[i]]
    where = " and ".join(f"{k}={_text(v)}" for k, v in sorted(comp.where.items()))

    def shown(ids: list[str]) -> str:
        return ", ".join(ids[:FIRST]) + (f", ... ({len(ids) - FIRST} more)"
                                        if len(ids) > FIRST else "")
    parts = [f"{len(only_mine)} only in {run.id}'s ({shown(only_mine)})" if only_mine else "",
             f"{len(only_theirs)} only in {other.id}'s ({shown(only_theirs)})"
             if only_theirs else ""]
    return Finding(
        f"run {run.id}'s {name} is relative to {other.id}'s, but their predictions select "
        f"other examples where {where}: " + "; ".join(p for p in parts if p),
        where=run.predictions, code="metrics-recomputed.filter-differs",
        expected=f"the same examples where {where} in {run.predictions} and "
        f"{other.predictions}", found="; ".join(p for p in parts if p),
        hint=f"a comparison scores both runs on the same examples: write each example's "
        f"{', '.join(sorted(comp.where))} as the frozen corpus (or the data split it was "
        "frozen with) gives it, in every run's predictions; better, freeze it in the corpus")


def compared_run(plan: Plan, run: RunRecord, relative_to: str) -> str | None:
    """The run a metric relative_to ``relative_to`` compares with ("control": the control
    planned on the run's corpus)."""
    if relative_to != "control":
        return relative_to
    corpus = run.corpus or (c.id if (c := plan.corpus_of(run.id)) is not None else None)
    for planned in plan.runs:
        on = planned.corpus or (plan.corpora[0].id if len(plan.corpora) == 1 else None)
        if planned.role == "control" and on == corpus:
            return planned.id
    return None


def _base(ctx: Context, plan: Plan, run: RunRecord, name: str, comp: MetricComputation,
          corpus_of: CorpusOf, hook: MetricHook | None) -> Recomputed:
    from pytest_itera.files.predictions import UnreadableIds

    label = f"{comp.kind}" + "".join(f" where {k}={_text(v)}" for k, v in
                                     sorted((comp.where or {}).items()))
    source = f"recomputed ({label}) from {run.predictions}"
    if run.predictions is None:
        return _cannot(source, f"run {run.id} records no predictions to recompute {name} from",
                       f"manifest.json $.runs[{run.id}]")
    corpus, view = corpus_of(run)
    if view.blocking:
        return Recomputed(None, source, view.blocking)
    inside = ctx.regular_file(run.predictions)
    if isinstance(inside, str):
        return _cannot(source, f"predictions {run.predictions} {inside}", run.predictions)
    try:
        done = scan(ctx, plan, run.predictions, inside, corpus, view)
    except (OSError, UnreadableIds) as exc:
        return _cannot(source, f"predictions {run.predictions} cannot be read ({exc})",
                       run.predictions)
    found = done.scored[name]
    why = _unscored(found, comp, corpus, run.predictions)
    if why is not None:
        return Recomputed(None, source, (why,))
    return _computed(found, comp, done.values, hook, source)


def _cannot(source: str, message: str, where: str) -> Recomputed:
    return Recomputed(None, source, (Finding(
        f"cannot prove the metric: {message}", where=where, code="metrics-recomputed.unprovable",
        hint="ship the run's predictions on its frozen corpus (with the computation's fields)"),))


def _unscored(found: Scored, comp: MetricComputation, corpus: Corpus,
              relpath: str) -> Finding | None:
    if found.no_label:
        ids = ", ".join(f"{i} (line {line})" for i, line in found.no_label_first)
        return Finding(
            f"cannot prove the metric: the frozen corpus {corpus.path} has no "
            f"{comp.label_field!r} label for {found.no_label} predicted example(s)",
            where=f"{relpath}:{found.no_label_first[0][1]}", found=ids,
            code="metrics-recomputed.no-label",
            hint=f"the corpus gives every example its {comp.label_field!r} (the plan's "
            "label_field), so that its predictions can be scored")
    if found.no_prediction:
        lines = "; ".join(f"line {line}: {why}" for line, why in found.no_prediction_first)
        return Finding(
            f"cannot prove the metric: {found.no_prediction} scored row(s) of {relpath} have "
            f"no usable {comp.prediction_field!r}", where=f"{relpath}:"
            f"{found.no_prediction_first[0][0]}", found=lines,
            code="metrics-recomputed.no-prediction",
            hint=f"write the prediction of every example in its {comp.prediction_field!r} field")
    if not found.labels and not found.pairs:
        return Finding(
            f"cannot prove the metric: no row of {relpath} is scored by the computation "
            f"({comp.kind}{' where ' + json.dumps(dict(comp.where)) if comp.where else ''})",
            where=relpath, code="metrics-recomputed.empty",
            hint="check the plan's where filter against the corpus's fields (or the "
            "predictions' own, which a row carrying the field is filtered by)")
    return None


def _computed(found: Scored, comp: MetricComputation, values: list[object],
              hook: MetricHook | None, source: str) -> Recomputed:
    if comp.kind in METRIC_KINDS:
        return Recomputed(_sklearn(found, comp.kind), source)
    function = hook(comp.kind) if hook is not None else None
    if function is None:
        return Recomputed(None, source, (Finding(
            f"cannot prove the metric: {comp.kind!r} is not a built-in metric kind and no "
            "pytest_itera_metric hook computes it", where="plan.json",
            expected=", ".join(METRIC_KINDS),
            code="metrics-recomputed.unknown-kind",
            hint="use a built-in kind, or implement pytest_itera_metric(name, config) in a "
            "conftest.py"),))
    pairs = [(values[a], values[b]) for (a, b), count in found.pairs.items()
             for _ in range(count)]
    try:
        return Recomputed(float(function(pairs)), source)
    except Exception as exc:  # a user's function: report, never crash
        return Recomputed(None, source, (Finding(
            f"cannot prove the metric: the pytest_itera_metric hook's {comp.kind!r} raised "
            f"{type(exc).__name__}: {exc}", where="conftest.py",
            code="metrics-recomputed.hook-raised"),))


def accuracy(pairs: Mapping[tuple[int, int], int]) -> float:
    """scikit-learn's accuracy_score of (truth, guess) pairs weighted by their counts, to the
    bit: both weighted sums are integers (exact in float64), so the one division is the same.
    Without importing scikit-learn and SciPy (~1 s of CPU per process)."""
    return sum(n for (a, b), n in pairs.items() if a == b) / sum(pairs.values())


def _sklearn(found: Scored, kind: str) -> float:
    if CLASS_KINDS.get(kind) == ("accuracy_score", None) and found.pairs:
        return accuracy(found.pairs)
    import numpy as np
    from sklearn import metrics

    if kind in VALUE_KINDS:
        truth = np.frombuffer(found.labels, dtype=np.float64)
        guess = np.frombuffer(found.predictions, dtype=np.float64)
        score = VALUE_KINDS[kind]
        return float(getattr(metrics, score)(truth, guess))
    pairs = list(found.pairs)
    weights = np.fromiter((found.pairs[p] for p in pairs), dtype=np.float64, count=len(pairs))
    truth = np.fromiter((a for a, _ in pairs), dtype=np.int64, count=len(pairs))
    guess = np.fromiter((b for _, b in pairs), dtype=np.int64, count=len(pairs))
    score, average = CLASS_KINDS[kind]
    if average is None:
        return float(getattr(metrics, score)(truth, guess, sample_weight=weights))
    return float(getattr(metrics, score)(truth, guess, average=average, sample_weight=weights,
                                         zero_division=0.0))
