"""metrics-recomputed: a run's metrics are what its predictions give, not what was copied.

An ``itera-plan/3`` says how each metric is computed from a run's predictions and its
frozen corpus (checks/common/scoring.py does it); the value is compared with the measurements
file's metrics line and the manifest at the precision each writes. Predictions whose
label column disagrees with the corpus's label are refused here too (the score would be
taken against labels the run rewrote).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal

from pytest_itera.checks.common import corpus_ids, scoring
from pytest_itera.checks.common.measured import recomputed, run_corpus_ids
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind, recoded_kinds
from pytest_itera.checks.stop_rules import PREDICTING_ROLES
from pytest_itera.core.campaign import MANIFEST_FILE, RunRecord
from pytest_itera.core.findings import Finding, recoded
from pytest_itera.core.findings import where as json_where
from pytest_itera.files import measurements
from pytest_itera.files.predictions import UnreadableIds

CONTRACT = "docs/contract-v2.md, itera-plan/3"
# metrics-recomputed.unprovable, also the /2 plan's finding here, is scoring's kind.
KINDS: dict[str, Kind] = {
    "metrics-recomputed.label-disagrees": Kind(
        rule="a run's predictions give rows a label other than the frozen corpus's (the score "
        "would be taken against rewritten labels)",
        fix="carry the frozen corpus's labels unchanged in the predictions (or none)"),
    "metrics-recomputed.mismatch": Kind(
        rule="a metric in the measurements file or the manifest differs, at the precision "
        "written, from what the run's predictions score on the frozen corpus",
        fix="write the recomputed value (or ship the predictions the metric was measured on)"),
    **scoring.KINDS,
    # A frozen corpus that cannot be read or changed: the same kinds as the coverage check's,
    # under this check's id (no metric is recomputed on it).
    **recoded_kinds(corpus_ids.KINDS, "metrics-recomputed", without=corpus_ids.NOTES),
}


def metric_targets(ctx: Context) -> Iterable[str]:
    """Accepted runs that predict or report a metric the plan's decision or computations name."""
    plan, man = ctx.documents()
    named = set(plan.computations()) | {plan.decision.metric}
    out = set()
    for run in man.runs:
        planned = plan.run(run.id)
        predicting = planned is not None and planned.role in PREDICTING_ROLES
        if run.outcome == "accepted" and (set(run.metrics) & named or
                                          (plan.version >= 3 and predicting)):
            out.add(run.id)
    return out


def metrics_recomputed(ctx: Context, target: str | None) -> Iterator[Finding]:
    """Every declared metric the run reports equals the value its predictions give."""
    assert target is not None
    plan, _ = ctx.documents()
    index, run = ctx.recorded(target)
    if plan.version < 3:
        yield _unprovable(plan.format, run, plan.decision.metric, index)
        return
    yield from _labels_rewritten(ctx, run)
    planned = plan.run(run.id)
    for name in plan.computations():
        decisive = name == plan.decision.metric and planned is not None \
            and planned.role == "variant"
        if name in run.metrics or decisive or _file_metric(ctx, run, name) is not None:
            yield from _compared(ctx, run, index, name)


def _unprovable(fmt: str, run: RunRecord, metric: str, index: int) -> Finding:
    stated = run.metrics.get(metric)
    return Finding(
        f"{fmt} cannot prove the metric: run {run.id} reports {metric}"
        + (f" = {stated!r}" if stated is not None else "")
        + ", but the plan does not say how it is computed from the predictions and the "
        "frozen corpus, so the value is copied, not checked",
        where=json_where(MANIFEST_FILE, "runs", index, "metrics"),
        code="metrics-recomputed.unprovable",
        hint="declare the computation in itera-plan/3: decision.computation {kind, "
        "label_field, prediction_field, where, relative_to} (and plan 'metrics' for other "
        f"reported metrics) ({CONTRACT})")


def _file_metric(ctx: Context, run: RunRecord, name: str) -> measurements.Metric | None:
    if run.measurements is None:
        return None
    found = ctx.measurements(run.measurements)
    if isinstance(found, measurements.Unreadable) or found.metrics is None:
        return None
    return found.metrics.get(name)


def _labels_rewritten(ctx: Context, run: RunRecord) -> Iterator[Finding]:
    plan, _ = ctx.documents()
    frozen, corpus = run_corpus_ids(ctx, run)
    inside = ctx.regular_file(run.predictions) if run.predictions is not None else None
    if corpus.blocking or inside is None or isinstance(inside, str):
        return  # predictions-cover-corpus says why
    try:
        done = scoring.scan(ctx, plan, run.predictions or "", inside, frozen, corpus)
    except (OSError, UnreadableIds):
        return
    for label, wrong in sorted(done.disagree.items()):
        if not wrong.count:
            continue
        shown = "; ".join(f"{i} (line {line}): {found!r}, the corpus says {truth!r}"
                          for i, line, found, truth in wrong.first)
        more = f", ... ({wrong.count - len(wrong.first)} more)" if wrong.count > len(wrong.first) \
            else ""
        yield Finding(
            f"the predictions of run {run.id} rewrite the corpus labels: {wrong.count} row(s) "
            f"give a {label!r} other than the frozen corpus {frozen.path}'s",
            where=f"{run.predictions}:{wrong.first[0][1]}", expected=f"{label!r} as in "
            f"{frozen.path}", found=shown + more, code="metrics-recomputed.label-disagrees",
            hint="a run's predictions carry the frozen corpus's labels unchanged (or none); "
            "the metric is scored against the corpus")


def _compared(ctx: Context, run: RunRecord, index: int, name: str) -> Iterator[Finding]:
    redone = recomputed(ctx, run, name)
    if redone.value is None:
        yield from recoded(redone.problems, "metrics-recomputed")
        return
    value = redone.value
    metric = _file_metric(ctx, run, name)
    if metric is not None and not measurements.same_at_precision(value, metric):
        yield _mismatch(run, name, f"{run.measurements}:{metric.line}", value, metric,
                        redone.source)
    stated = run.metrics.get(name)
    if stated is not None:
        written = measurements.Metric(stated, _decimals(stated), 0)
        if not measurements.same_at_precision(value, written):
            yield _mismatch(run, name, json_where(MANIFEST_FILE, "runs", index, "metrics", name),
                            value, written, redone.source)


def _mismatch(run: RunRecord, name: str, where: str, value: float,
              written: measurements.Metric, source: str) -> Finding:
    return Finding(
        f"run {run.id}'s {name} is {written.value!r} at {where}, but its predictions give "
        f"{_at(value, written.decimals)}", where=where,
        expected=f"{_at(value, written.decimals)} ({source})", found=repr(written.value),
        code="metrics-recomputed.mismatch",
        hint="a metric is what the run's predictions score against the frozen corpus: "
        "write the recomputed value (or ship the predictions the metric was measured on)")


def _decimals(value: float) -> int | None:
    if isinstance(value, int):
        return None
    exponent = Decimal(repr(value)).as_tuple().exponent
    return -exponent if isinstance(exponent, int) else None


def _at(value: float, decimals: int | None) -> str:
    return f"{value:.{decimals}f}" if decimals is not None and decimals >= 0 else repr(value)


CHECK = Check("metrics-recomputed",
              "a run's metrics equal what its predictions score on the frozen corpus",
              metrics_recomputed, scope="run", targets=metric_targets, kinds=KINDS)
