"""The decision metric as the checks judge it: each run's measured metrics, recomputed from
its predictions where the plan says how, and whether a value meets the threshold (the rule
the conclusion, the metrics, the analysis's quotes and the reports share)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_itera.checks.common import scoring
from pytest_itera.checks.common.corpus_ids import CorpusIds, corpus_ids, run_corpus
from pytest_itera.checks.context import Context
from pytest_itera.checks.stop_rules import PREDICTING_ROLES
from pytest_itera.core.campaign import MANIFEST_FILE, Corpus, Manifest, Plan, RunRecord
from pytest_itera.files import measurements

if TYPE_CHECKING:  # numpy is imported only when an interval is computed
    from pytest_itera.core import confidence


def quoted_values(ctx: Context, man: Manifest) -> dict[str, dict[str, float]]:
    """{run: {metric: value}} a text may quote: each run's measured metrics, the decision
    metric as the check judges it (recomputed where the plan says how)."""
    values = {run.id: run_metric_values(ctx, run) for run in man.runs}
    metric = ctx.documents()[0].decision.metric
    for run, measured in judged_metrics(ctx):
        if measured.value is not None and math.isfinite(measured.value):
            values.setdefault(run.id, {})[metric] = measured.value
    return values


def run_metric_values(ctx: Context, run: RunRecord) -> dict[str, float]:
    """The run's numeric metrics: its measurements file's, then the manifest's copy."""
    values: dict[str, float] = {}
    if run.measurements is not None:
        found = ctx.measurements(run.measurements)
        if isinstance(found, measurements.Measurements):
            for name, entry in (found.metrics or {}).items():
                if isinstance(entry.value, (int, float)) and not isinstance(entry.value, bool):
                    values[name] = float(entry.value)
    for name, value in run.metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values.setdefault(name, float(value))
    return values


def meets(plan: Plan, value: float) -> bool:
    """Does ``value`` of the decision metric meet the plan's threshold (in its direction)?"""
    return plan.decision.meets(value)


@dataclass(frozen=True)
class Measured:
    """A run's decision metric as the evidence has it (its measurements file, else the
    manifest when the run records no readable file: measurements-agree reports that)."""

    value: float | None
    source: str  # "runs/v/measurements.jsonl:5", or the manifest's JSON path
    names: tuple[str, ...]  # the metrics the source holds (for "has no metric")


def decision_metric(ctx: Context, man: Manifest, run: RunRecord, metric: str) -> Measured:
    """/3: the value the run's predictions give when the plan says how to compute it (the
    metrics-recomputed item says why when they cannot); else the measurements file's."""
    plan = ctx.documents()[0]
    if plan.version >= 3 and metric in plan.computations():
        redone = recomputed(ctx, run, metric)
        if redone.value is not None:
            return Measured(redone.value, redone.source, (metric,))
    return recorded_metric(ctx, man, run, metric)


def recorded_metric(ctx: Context, man: Manifest, run: RunRecord, metric: str) -> Measured:
    """The run's decision metric as its measurements file records it, else the manifest."""
    if run.measurements is not None:
        found = ctx.measurements(run.measurements)
        if isinstance(found, measurements.Measurements):
            held = found.metrics or {}
            entry = held.get(metric)
            if entry is None or isinstance(entry.value, str):
                return Measured(None, f"{found.path}", tuple(sorted(held)))
            return Measured(float(entry.value), f"{found.path}:{entry.line}", tuple(held))
    index = man.run_position(run.id)
    value = run.metrics.get(metric)
    return Measured(value, f"{MANIFEST_FILE} $.runs[{index}].metrics", tuple(sorted(run.metrics)))


def judged_metrics(ctx: Context) -> list[tuple[RunRecord, Measured]]:
    """Every planned control and variant run's decision metric: an accepted run's as this
    check judges it (recomputed when the plan says how), the others' as recorded (they are
    not compared with the threshold; a sweep's rejected runs are not scored again)."""
    plan, man = ctx.documents()
    out = []
    for planned in plan.runs:
        run = man.run(planned.id)
        if planned.role in PREDICTING_ROLES and run is not None:
            measure = decision_metric if run.outcome == "accepted" else recorded_metric
            out.append((run, measure(ctx, man, run, plan.decision.metric)))
    return out


def run_corpus_ids(ctx: Context, run: RunRecord) -> tuple[Corpus, CorpusIds]:
    """The corpus a run's predictions cover, and its IDs (and labels) as read."""
    frozen = run_corpus(ctx.documents()[0], run)
    return frozen, corpus_ids(ctx, frozen)


def recomputed(ctx: Context, run: RunRecord, metric: str) -> scoring.Recomputed:
    """A metric the /3 plan says how to compute, as ``run``'s predictions give it."""
    return scoring.recompute(ctx, run, metric, lambda r: run_corpus_ids(ctx, r),
                             ctx.options.metric_hook)


DEFAULT_LEVEL = 0.95  # the level the reports judge a gain at when the plan requires none


def decision_interval(ctx: Context, run: RunRecord) -> confidence.Bootstrap | str:
    """The paired bootstrap of ``run``'s decision metric against its control's on the same
    examples (core/confidence.py), at the plan's ``decision.confidence`` (else 95 %), or why
    there is none (a sentence). Memoised per Context."""
    return ctx.memo(f"measured.interval:{run.id}", lambda: _interval(ctx, run))


def _interval(ctx: Context, run: RunRecord) -> confidence.Bootstrap | str:
    plan, man = ctx.documents()
    metric = plan.decision.metric
    comp = plan.computations().get(metric) if plan.version >= 3 else None
    if comp is None:
        return "no interval: the plan does not say how the decision metric is computed"
    if comp.kind not in scoring.METRIC_KINDS:
        return f"no interval: {comp.kind!r} is a custom metric kind"
    control_id = scoring.compared_run(plan, run, comp.relative_to or "control")
    control = man.run(control_id) if control_id is not None else None
    if control is None or control.outcome != "accepted":
        return "no interval: no accepted control on the run's corpus"
    scored = [_scored(ctx, r, metric) for r in (run, control)]
    if scored[0] is None or scored[1] is None:
        return "no interval: the decision metric cannot be recomputed from the predictions"
    if run_corpus(plan, run).id != run_corpus(plan, control).id:
        return "no interval: the run and its control predict other corpora"
    return _bootstrap(comp.kind, scored[0], scored[1],
                      plan.decision.confidence or DEFAULT_LEVEL)


def _scored(ctx: Context, run: RunRecord, metric: str) -> scoring.Scored | None:
    """The run's scored rows, once its metric was recomputed (the scan is memoised)."""
    if run.predictions is None or scoring.recompute(
            ctx, run, metric, lambda r: run_corpus_ids(ctx, r)).value is None:
        return None
    path = ctx.regular_file(run.predictions)
    if isinstance(path, str):
        return None
    corpus, view = run_corpus_ids(ctx, run)
    return scoring.scan(ctx, ctx.documents()[0], run.predictions, path, corpus,
                        view).scored[metric]


def _bootstrap(kind: str, mine: scoring.Scored, theirs: scoring.Scored,
               level: float) -> confidence.Bootstrap | str:
    """Both runs' rows on the examples both scored, in corpus order."""
    import numpy as np

    from pytest_itera.core import confidence

    where = [np.asarray(s.positions, dtype=np.int64) for s in (mine, theirs)]
    common = np.intersect1d(where[0], where[1])
    rows = []
    for w in where:  # each position is scored once: its row, by position
        order = np.argsort(w)
        rows.append(order[np.searchsorted(w[order], common)])
    statistic: confidence.Statistic
    if mine.classes:
        statistic = confidence.class_statistic(
            kind, (np.asarray(mine.truths)[rows[0]], np.asarray(theirs.truths)[rows[1]]),
            (np.asarray(mine.guesses)[rows[0]], np.asarray(theirs.guesses)[rows[1]]))
    else:
        statistic = confidence.value_statistic(
            kind, (np.asarray(mine.labels)[rows[0]], np.asarray(theirs.labels)[rows[1]]),
            (np.asarray(mine.predictions)[rows[0]], np.asarray(theirs.predictions)[rows[1]]))
    return confidence.paired_bootstrap(len(common), statistic, level)


def interval_bound(plan: Plan, boot: confidence.Bootstrap) -> float:
    """The bound of the interval that must meet the threshold: of the gain when the decision
    metric is relative to the control (the threshold is on the gain), else of the variant's
    own metric; the lower one when higher is better, the upper one when lower is."""
    comp = plan.decision.computation
    bounds = boot.gain if comp is not None and comp.relative_to is not None else boot.variant
    return bounds.low if plan.decision.direction == "higher" else bounds.high


def decisive(plan: Plan, boot: confidence.Bootstrap | str) -> bool:
    """Does the interval's bound meet the threshold (no interval: it does not)?"""
    return not isinstance(boot, str) and meets(plan, interval_bound(plan, boot))


def level_text(level: float | None) -> str:
    """0.95 -> "95 %" (the level the reports name)."""
    return f"{(level or DEFAULT_LEVEL) * 100:g} %"


def interval_text(boot: confidence.Bootstrap) -> str:
    """"gain 0.054, 95 % interval [-0.012, 0.12] (paired bootstrap, 2000 resamples, seed 0)"."""
    return (f"gain {boot.gain.point:.4g}, {level_text(boot.level)} interval "
            f"[{boot.gain.low:.4g}, {boot.gain.high:.4g}] ({boot.method})")


# The report's intervals: the first variants' (a sweep's thousand are not resampled).
MAX_INTERVALS = 24


def report_intervals(ctx: Context, judged: list[tuple[RunRecord, Measured]]
                     ) -> dict[str, dict[str, object] | str]:
    """{variant: its interval as plain data, or why it has none} for the accepted variants
    with a value, as the reports show them (conclusion-consistent's facts carry them)."""
    plan = ctx.documents()[0]
    out: dict[str, dict[str, object] | str] = {}
    for run, measured in judged:
        planned = plan.run(run.id)
        if (planned is None or planned.role != "variant" or run.outcome != "accepted"
                or measured.value is None):
            continue
        out[run.id] = (interval_facts(plan, decision_interval(ctx, run))
                       if len(out) < MAX_INTERVALS else
                       f"no interval: the report resamples the first {MAX_INTERVALS} variants")
    return out


def interval_facts(plan: Plan, boot: confidence.Bootstrap | str) -> dict[str, object] | str:
    """An interval as plain data ({gain, low, high, level, method, decisive}), or why none."""
    if isinstance(boot, str):
        return boot
    return {"gain": boot.gain.point, "low": boot.gain.low, "high": boot.gain.high,
            "level": boot.level, "method": boot.method, "decisive": decisive(plan, boot)}
