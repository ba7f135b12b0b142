"""What the evidence says, for a reviewer: the decision metric of every compared run, each
run's measurement series, the resume check over its reference run, and which runs delivered
which corpus.

No rule lives here: the values are the ones the checks judge, through their own functions
(:func:`pytest_itera.checks.common.measured.judged_metrics` and
:func:`~pytest_itera.checks.common.measured.meets` for ``conclusion-consistent``,
:func:`pytest_itera.checks.evidence.resume.resume_verdict` and
:func:`~pytest_itera.checks.evidence.resume.aligned` for ``role-evidence``,
:func:`pytest_itera.checks.budget.deliverables.delivered_corpus` for ``budget-consistent``).
This module only gathers them as plain data the renderings draw and the JSON report carries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_itera.checks.budget.deliverables import corpus_contents, delivered_corpus
from pytest_itera.checks.common.measured import (
    judged_metrics,
    level_text,
    meets,
    report_intervals,
)
from pytest_itera.checks.context import Context
from pytest_itera.checks.evidence.resume import (
    aligned,
    resume_reference,
    resume_verdict,
    shared_series,
)
from pytest_itera.checks.stop_rules import PREDICTING_ROLES
from pytest_itera.files.measurements import Measurements, Series, Unreadable

# A chart needs a few hundred points, not a run's millions: longer series are thinned to the
# lowest and highest point of each of MAX_POINTS // 2 buckets (a spike stays visible).
MAX_POINTS = 400
MAX_MARKERS = 50  # non-finite points drawn one by one; the count says how many in all
MAX_CURVES = 24  # series read for the curves (the runs after them are not read)


@dataclass(frozen=True)
class ResultRow:
    """One compared run's decision metric, as ``conclusion-consistent`` judged it."""

    run: str
    role: str
    outcome: str  # the manifest's outcome
    value: float | None  # None: the run has no readable value
    source: str  # where the value comes from: the recomputation, a file:line or a JSON path
    delta: float | None  # value minus the value of the control on the same corpus
    meets: bool | None  # None: no value


@dataclass(frozen=True)
class GainInterval:
    """A variant's gain over its control with its paired bootstrap interval, as
    conclusion-consistent computed it (checks/common/measured.py), or why there is none."""

    run: str
    gain: float | None = None
    low: float | None = None
    high: float | None = None
    level: float | None = None  # 0.95
    method: str | None = None  # "paired bootstrap, 2000 resamples, seed 0"
    decisive: bool | None = None  # the interval's bound meets the threshold
    note: str | None = None  # why there is no interval ("too few examples for an interval ...")

    @property
    def text(self) -> str:
        """"gain +0.055, 95 % interval [+0.0125, +0.0975] (paired bootstrap, ...)", or the note."""
        if self.gain is None or self.low is None or self.high is None:
            return self.note or "no interval"
        return (f"gain {self.gain:+.4g}, {level_text(self.level)} interval [{self.low:+.4g}, "
                f"{self.high:+.4g}] ({self.method})")

    def inside_noise(self, meets: bool | None) -> bool:
        """The value meets the threshold, the interval's bound does not: "not decisive"."""
        return bool(meets) and self.decisive is False


@dataclass(frozen=True)
class SeriesFacts:
    """One measured series of one run, thinned for a chart."""

    run: str
    name: str
    source: str  # the measurements file
    count: int  # points in the file
    points: tuple[tuple[int, float], ...]  # finite (step, value), thinned, in step order
    non_finite: tuple[tuple[int, str], ...]  # (step, "NaN" | "Infinity" | "-Infinity")
    non_finite_count: int
    stop_step: int | None = None  # the step the manifest says the run stopped at
    resume_step: int | None = None  # the step a resume check resumed from


@dataclass(frozen=True)
class ResumeFacts:
    """The resume check against its reference run, after the resume step."""

    run: str
    reference: str | None
    step: int | None
    status: str  # resume_verdict's: "clear", "triggered", "unproven"
    detail: str
    compared: int  # points of shared series after the resume step
    max_difference: float | None  # the largest |resumed - reference| among them
    max_at: tuple[str, int] | None  # (series, step) of that difference
    tolerance: float


@dataclass(frozen=True)
class Delivery:
    """A corpus counted as a deliverable, and the accepted runs that delivered it."""

    corpus: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    """The plan's decision: the metric, its threshold and which way is better."""

    metric: str
    direction: str  # "higher" | "lower"
    threshold: float


@dataclass(frozen=True)
class Evidence:
    decision: Decision | None = None
    results: tuple[ResultRow, ...] = ()
    series: tuple[SeriesFacts, ...] = ()
    resume: tuple[ResumeFacts, ...] = ()
    deliveries: tuple[Delivery, ...] = ()
    not_delivering: tuple[tuple[str, str], ...] = ()  # (run, why it delivers nothing)
    intervals: tuple[GainInterval, ...] = ()  # the accepted variants', in results order
    confidence: float | None = None  # the plan's decision.confidence: the intervals decide

    def interval(self, run: str) -> GainInterval | None:
        return next((i for i in self.intervals if i.run == run), None)


def gather(ctx: Context, failing: dict[str, tuple[str, ...]],
           judged: Sequence[Any] | None = None) -> Evidence:
    """The evidence of ``ctx``'s campaign; ``failing``: run id -> its failed checks (the
    report's runs table), which keep a run from delivering; ``judged``: the decision metrics
    conclusion-consistent judged ({run, value, source}, travelled on its item's report), else
    they are asked of ``ctx``."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    if plan is None or man is None:
        return Evidence()
    deliveries, not_delivering = _deliveries(ctx, failing)
    d = plan.decision
    return Evidence(Decision(d.metric, d.direction, float(d.threshold)),
                    _results(ctx, judged), _series(ctx), _resumes(ctx), deliveries,
                    not_delivering, _intervals(ctx, judged), d.confidence)


def _intervals(ctx: Context, judged: Sequence[Any] | None) -> tuple[GainInterval, ...]:
    """The variants' intervals the judged facts carry, else computed (a library call)."""
    if judged is None:
        found = list(report_intervals(ctx, judged_metrics(ctx)).items())
    else:
        found = [(str(j["run"]), j["interval"]) for j in judged
                 if isinstance(j, dict) and "interval" in j]
    return tuple(_interval(run, data) for run, data in found)


def _interval(run: str, data: object) -> GainInterval:
    if not isinstance(data, dict):
        return GainInterval(run, note=str(data))
    return GainInterval(run, float(data["gain"]), float(data["low"]), float(data["high"]),
                        float(data["level"]), str(data["method"]), bool(data["decisive"]))


def _results(ctx: Context, judged: Sequence[Any] | None) -> tuple[ResultRow, ...]:
    plan, man = ctx.documents()
    if judged is None:
        found = [(run.id, m.value, m.source) for run, m in judged_metrics(ctx)]
    else:
        found = [(str(j["run"]), j["value"], str(j["source"])) for j in judged
                 if isinstance(j, dict)]
    rows: list[tuple[ResultRow, str | None]] = []
    for run_id, raw, source in found:
        planned, run = plan.run(run_id), man.run(run_id)
        if planned is None or run is None:
            continue
        value = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) \
            else None
        corpus = delivered_corpus(plan, run)
        rows.append((ResultRow(run.id, planned.role, run.outcome, value, source, None,
                               None if value is None else meets(plan, value)),
                     None if isinstance(corpus, str) else corpus.id))
    # A variant is compared with the control on its corpus (the only control, else none).
    controls = {c: r.value for r, c in rows if r.role == "control" and r.value is not None}
    only = next(iter(controls.values())) if len(controls) == 1 else None
    return tuple(
        replace(r, delta=_delta(r.value, controls.get(c, only) if c is not None else only))
        if r.role != "control" else r
        for r, c in rows
    )


def _delta(value: float | None, control: float | None) -> float | None:
    if value is None or control is None or not math.isfinite(value - control):
        return None
    return value - control


def _measurements(ctx: Context, relpath: str | None) -> Measurements | None:
    if relpath is None:
        return None
    found = ctx.measurements(relpath)
    return None if isinstance(found, Unreadable) else found


def _series(ctx: Context) -> tuple[SeriesFacts, ...]:
    """The series of the first runs, up to :data:`MAX_CURVES` series (a sweep's thousand runs
    are not read for a chart), and always those of each resume check and its reference."""
    _, man = ctx.documents()
    resume = {r.id for r in man.runs if r.resumed_from is not None}
    resume |= {ref.id for r in man.runs if r.id in resume
               if (ref := resume_reference(man, r)) is not None}
    out: list[SeriesFacts] = []
    for run in man.runs:
        if len(out) >= MAX_CURVES and run.id not in resume:
            continue
        found = _measurements(ctx, run.measurements)
        if found is None:
            continue
        stop = run.stop.step if run.stop is not None else None
        resumed = run.resumed_from.step if run.resumed_from is not None else None
        out += [_thinned(run.id, found.path, found.series[name], stop, resumed)
                for name in sorted(found.series)]
    return tuple(out)


def _thinned(run: str, source: str, series: Series, stop: int | None,
             resumed: int | None) -> SeriesFacts:
    finite = [(s, v) for s, v, _ in series.points() if math.isfinite(v)]
    bad = [(s, _non_finite(v)) for s, v, _ in series.points() if not math.isfinite(v)]
    return SeriesFacts(run, series.name, source, len(series), tuple(thin(finite)),
                       tuple(bad[:MAX_MARKERS]), len(bad), stop, resumed)


def thin(points: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """At most :data:`MAX_POINTS` points: each bucket's lowest and highest, in step order."""
    if len(points) <= MAX_POINTS:
        return list(points)
    buckets = MAX_POINTS // 2
    out: list[tuple[int, float]] = []
    for i in range(buckets):
        chunk = points[i * len(points) // buckets:(i + 1) * len(points) // buckets]
        if chunk:
            low, high = min(chunk, key=lambda p: p[1]), max(chunk, key=lambda p: p[1])
            out += sorted({low, high})
    return out


def _non_finite(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _resumes(ctx: Context) -> tuple[ResumeFacts, ...]:
    plan, man = ctx.documents()
    tolerance = plan.checkpoint_policy.resume_tolerance
    out = []
    for planned in plan.runs:
        run = man.run(planned.id)
        if planned.role != "resume_check" or run is None:
            continue
        verdict = resume_verdict(ctx, run.id)
        reference = resume_reference(man, run)
        step = run.resumed_from.step if run.resumed_from is not None else None
        mine = _measurements(ctx, run.measurements)
        theirs = _measurements(ctx, reference.measurements) if reference else None
        compared, worst = 0, None
        if mine is not None and theirs is not None and step is not None:
            compared, worst = _largest_difference(mine, theirs, step)
        out.append(ResumeFacts(
            run.id, reference.id if reference else None, step, verdict.status, verdict.detail,
            compared, worst[0] if worst else None, (worst[1], worst[2]) if worst else None,
            tolerance))
    return tuple(out)


def _largest_difference(mine: Measurements, theirs: Measurements,
                        after: int) -> tuple[int, tuple[float, str, int] | None]:
    """(points compared, (the largest finite |difference|, its series, its step))."""
    compared, worst = 0, None
    for name, series, reference in shared_series(mine, theirs):
        for step, value, ref_value, _ in aligned(series, reference, after):
            compared += 1
            diff = abs(value - ref_value)
            if math.isfinite(diff) and (worst is None or diff > worst[0]):
                worst = (diff, name, step)
    return compared, worst


def _deliveries(
    ctx: Context, failing: dict[str, tuple[str, ...]]
) -> tuple[tuple[Delivery, ...], tuple[tuple[str, str], ...]]:
    """Corpora delivered by accepted control/variant runs whose own checks passed (copies of
    one corpus by content count once), and why each other compared run delivers none."""
    plan, man = ctx.documents()
    contents = corpus_contents(plan)
    by_corpus: dict[str, list[str]] = {}
    excluded: list[tuple[str, str]] = []
    for planned in plan.runs:
        run = man.run(planned.id)
        if planned.role not in PREDICTING_ROLES or run is None:
            continue
        if run.outcome != "accepted":
            excluded.append((run.id, f"its outcome is {run.outcome}"))
            continue
        if failing.get(run.id):
            excluded.append((run.id, f"it failed {', '.join(failing[run.id])}"))
            continue
        corpus = delivered_corpus(plan, run)
        if isinstance(corpus, str):
            excluded.append((run.id, corpus))
            continue
        by_corpus.setdefault(contents[corpus.id].id, []).append(run.id)
    return (tuple(Delivery(c, tuple(runs)) for c, runs in sorted(by_corpus.items())),
            tuple(excluded))


def delivery_text(deliveries: Iterable[Delivery],
                  not_delivering: Iterable[tuple[str, str]]) -> str:
    """"3 accepted runs on 1 corpus → 1 deliverable (tiny-corpus: control, variant-a, ...)"."""
    found = list(deliveries)
    runs = sum(len(d.runs) for d in found)
    corpora = "corpus" if len(found) == 1 else "corpora"
    each = "; ".join(f"{d.corpus}: {', '.join(d.runs)}" for d in found)
    text = (f"{runs} accepted run{'' if runs == 1 else 's'} that passed their checks on "
            f"{len(found)} {corpora} → {len(found)} deliverable{'' if len(found) == 1 else 's'}"
            " (one per distinct corpus)")
    text += f": {each}" if each else ""
    others = "; ".join(f"{run} does not count: {why}" for run, why in not_delivering)
    return f"{text}; {others}" if others else text
