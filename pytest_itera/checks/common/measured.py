"""The decision metric as the checks judge it: each run's measured metrics, recomputed from
its predictions where the plan says how, and whether a value meets the threshold (the rule
the conclusion, the metrics, the analysis's quotes and the reports share)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_itera.checks.common import scoring
from pytest_itera.checks.common.corpus_ids import CorpusIds, corpus_ids, run_corpus
from pytest_itera.checks.context import Context
from pytest_itera.checks.stop_rules import PREDICTING_ROLES
from pytest_itera.core.campaign import MANIFEST_FILE, Corpus, Manifest, Plan, RunRecord
from pytest_itera.files import measurements


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
