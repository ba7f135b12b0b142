"""Schedule checks: schedule-fits, plan-vs-actual (R3, R4, R6, R9).

Registered as the plugin ``itera.schedule``. The arithmetic lives in
:mod:`pytest_itera.schedule`; this module reads the campaign and words the
findings. Stated hours may be rounded to the hundredth (36 s): a plan
computed with floats or rounded by hand is not refused for 1e-15 h.

The price catalogue used to advise on an overflowing lot comes, in order,
from ``Options.extra["catalogue"]`` (a notebook), the ``pytest_itera_catalogue``
hook (a conftest.py or plugin), else :func:`pytest_itera.money.example_catalogue`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from decimal import Decimal

from pytest_itera import schedule as sched
from pytest_itera.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    ActualSchedule,
    CheckpointPolicy,
    Lot,
    Manifest,
    Plan,
    PlannedSchedule,
    RunRecord,
)
from pytest_itera.checks import Check, Context
from pytest_itera.findings import Finding
from pytest_itera.money import Catalogue, Money, Offer, example_catalogue, overflow_advice
from pytest_itera.schedule import Timeline, as_hours, hours_text

ROUNDING = Decimal("0.01")  # hours: stated figures may be rounded to the hundredth
_STEPS = f"{PLAN_FILE} $.schedule.steps"
_ACTUAL = f"{MANIFEST_FILE} $.schedule"


def _h(value: Decimal) -> str:
    return f"{hours_text(value)} h"


def _number(value: float) -> Decimal:
    """A stated number of hours, exactly as written (may be negative, unlike as_hours)."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _close(stated: float, computed: Decimal) -> bool:
    return abs(_number(stated) - computed) <= ROUNDING


# ================================================================ schedule-fits


def schedule_fits(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """The planned schedule fits its window and its lots, end to end (R3, R4, R6)."""
    plan = ctx.campaign.plan
    assert plan is not None  # guaranteed by Check.needs
    steps = plan.schedule.steps
    yield from _missing_kinds(steps)
    yield from _unknown_lots(plan)
    yield from _checkpoint_interval(plan.checkpoint_policy)
    try:
        timeline = sched.makespan(steps)
    except sched.ScheduleError as exc:
        yield Finding(f"the schedule cannot be computed: {exc}", where=_STEPS,
                      hint="fix the steps' 'after' lists and their order on each resource")
        return
    yield from _stated_hours(plan.schedule, timeline)
    yield from _window(plan.schedule, timeline)
    yield from _lots(ctx, plan, timeline)


def _missing_kinds(steps: Sequence[sched.StepLike]) -> Iterator[Finding]:
    missing = sched.missing_kinds(steps)
    if missing:
        yield Finding(
            f"the schedule has no {', '.join(missing)} step",
            where=_STEPS,
            expected=f"at least one step of each kind: {', '.join(sched.REQUIRED_KINDS)}",
            found=", ".join(sorted({s.kind for s in steps})),
            hint="schedule the whole campaign, not only training: loading, validation, "
            "checkpoint save and restore, writing outputs and retrieving them take time too",
        )


def _unknown_lots(plan: Plan) -> Iterator[Finding]:
    known = [lot.id for lot in plan.budget.lots]
    for step_id, lot in sched.unknown_lots(plan.schedule.steps, plan.budget.lots):
        index = next(i for i, s in enumerate(plan.schedule.steps) if s.id == step_id)
        yield Finding(f"step {step_id!r} runs on lot {lot!r}, which the budget does not have",
                      where=f"{_STEPS}[{index}].lot", expected=f"one of {', '.join(known)}",
                      found=repr(lot), hint="name a lot of plan.json budget.lots")


def _checkpoint_interval(policy: CheckpointPolicy) -> Iterator[Finding]:
    if sched.interval_respects_tolerable_loss(policy):
        return
    save = f" + {_h(as_hours(policy.save_hours))} per save" if policy.save_hours else ""
    yield Finding(
        f"a crash can lose {_h(sched.worst_case_loss_hours(policy))} of work "
        f"(interval {_h(as_hours(policy.interval_hours))}{save}), more than the tolerable "
        f"{_h(as_hours(policy.tolerable_loss_hours))}",
        where=f"{PLAN_FILE} $.checkpoint_policy.interval_hours",
        expected=f"at most {_h(sched.max_save_interval(policy))}",
        found=_h(as_hours(policy.interval_hours)),
        hint="save more often (the interval follows from the tolerable loss and the save cost), "
        "or state a larger tolerable loss",
    )


def _stated_hours(planned: PlannedSchedule, timeline: Timeline) -> Iterator[Finding]:
    computed = sched.sequential_hours(timeline)
    if planned.sequential_hours is not None and not _close(planned.sequential_hours, computed):
        yield Finding(
            f"sequential_hours says {_h(_number(planned.sequential_hours))}, but the steps "
            f"take {_h(computed)} from the start of preparation to the last step's end",
            where=f"{PLAN_FILE} $.schedule.sequential_hours",
            expected=_h(computed), found=_h(_number(planned.sequential_hours)),
            hint="steps on one resource run one after the other, independent steps overlap: "
            "state the computed makespan",
        )
    free = sched.uncommitted_hours(planned.window_hours, timeline)
    stated = planned.uncommitted_hours
    if stated is not None and not _close(stated, free):
        yield Finding(
            f"uncommitted_hours says {_h(_number(stated))}, but the "
            f"{_h(as_hours(planned.window_hours))} window minus the {_h(computed)} makespan "
            f"leaves {_h(free)}",
            where=f"{PLAN_FILE} $.schedule.uncommitted_hours",
            expected=_h(free), found=_h(_number(stated)),
        )


def _window(planned: PlannedSchedule, timeline: Timeline) -> Iterator[Finding]:
    window = as_hours(planned.window_hours)
    excess = sched.window_overflow(window, timeline)
    if excess is not None:
        yield Finding(
            f"the schedule takes {_h(timeline.makespan)}, {_h(excess)} more than the "
            f"{_h(window)} window",
            where=f"{PLAN_FILE} $.schedule.window_hours",
            expected=f"a makespan of at most {_h(window)}", found=_h(timeline.makespan),
            hint="reduce the protocol (drop an optional variant) or plan a longer window",
        )
    end = sched.retrieval_end(timeline)
    if end is not None and end > window:
        yield Finding(
            f"results are retrieved at {_h(end)}, after the {_h(window)} window closes",
            where=_STEPS,
            hint="retrieve the outputs before the rental period ends: move retrieval earlier "
            "or shorten what precedes it",
        )


# ------------------------------------------------------------------- lots (R4)


def _lots(ctx: Context, plan: Plan, timeline: Timeline) -> Iterator[Finding]:
    lots = plan.budget.lots
    if any(s.lot is not None for s in plan.schedule.steps):
        for over in sched.lot_overflows(lots, timeline):
            lot = next(lot for lot in lots if lot.id == over.lot)
            yield _overflow_finding(ctx, lot, over.span, f"lot {lot.id!r}: ")
        return
    # No step names a lot: the machine steps run on the plan's longest lot.
    span = _machine_span(timeline)
    longest = max(lots, key=lambda lot: lot.days)
    if span > longest.days * 24:
        yield _overflow_finding(ctx, longest, span, "the machine steps (no step names a lot): ")


def _machine_span(timeline: Timeline) -> Decimal:
    machine = [s for s in timeline.slots if s.resource != sched.HUMAN]
    if not machine:
        return Decimal(0)
    return max(s.end for s in machine) - min(s.start for s in machine)


def _overflow_finding(ctx: Context, lot: Lot, span: Decimal, prefix: str) -> Finding:
    offers = _offers_for(ctx, lot)
    advice = overflow_advice(span, lot, None if isinstance(offers, str) else offers)
    if isinstance(offers, str):
        advice = f"{advice} ({offers})"
    return Finding(
        f"{prefix}{advice}",
        where=f"{_STEPS} (lot {lot.id!r})",
        expected=f"at most {lot.days * 24} h on the lot",
        found=_h(span),
        hint="rent a lot that covers the span, or reduce the protocol; two lots can host "
        "independent variants but never shorten one run",
    )


def _offers_for(ctx: Context, lot: Lot) -> Catalogue | str:
    """The plan's own lots and the catalogue's offers for the lot's GPU (or why none)."""
    plan = ctx.campaign.plan
    assert plan is not None
    catalogue = catalogue_of(ctx)
    if isinstance(catalogue, str):
        return catalogue
    own = tuple(
        Offer(p.offer, p.gpu, p.gpus_per_lot, p.days, Money(p.price, plan.budget.currency))
        for p in plan.budget.lots if p.gpu == lot.gpu
    )
    offers = (*own, *catalogue.for_gpu(lot.gpu).offers)
    return Catalogue(catalogue.provider, catalogue.currency, offers, catalogue.source)


def catalogue_of(ctx: Context) -> Catalogue | str:
    """The price catalogue (see the module docstring), or why it cannot be used."""
    given = ctx.options.extra.get("catalogue")
    if isinstance(given, Catalogue):
        return given
    config = ctx.options.extra.get("config")
    hook = getattr(getattr(config, "hook", None), "pytest_itera_catalogue", None)
    found = hook(config=config) if hook is not None else None
    if found is None:
        return example_catalogue()
    if not isinstance(found, Catalogue):
        return (f"the pytest_itera_catalogue hook returned {type(found).__name__}, not a "
                "pytest_itera.money.Catalogue, so no catalogue lot can be suggested")
    return found


# =============================================================== plan-vs-actual


def plan_vs_actual(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Reserved and observed time, explained deviations and decisions (R9).

    That the plan was not rewritten is plan-frozen's job (its sha256).
    """
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None  # guaranteed by Check.needs
    assert man is not None
    actual = man.schedule
    observed = sched.observed_hours(actual.steps)
    explained = {d.step for d in actual.deviations}
    yield from _reserved(plan, man)
    yield from _observed_total(plan, actual, observed)
    yield from _step_coverage(plan, observed, explained)
    yield from _deviations(ctx, plan, observed, explained)
    yield from _stray_explanations(plan, actual, observed)
    yield from _decisions(plan, man)


def _reserved(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """Reserved time is the plan's window or the engaged lots' duration; observed fits in it."""
    reserved = as_hours(man.schedule.reserved_hours)
    window = as_hours(plan.schedule.window_hours)
    engaged = [lot for lot in plan.budget.lots if lot.id in man.budget.lots]
    lots = Decimal(max((lot.days * 24 for lot in engaged), default=0))
    if reserved not in (window, lots):
        yield Finding(
            f"reserved_hours is {_h(reserved)}: neither the plan's {_h(window)} window nor "
            f"the engaged lots' {_h(lots)}",
            where=f"{_ACTUAL}.reserved_hours",
            expected=" or ".join(sorted({_h(window), _h(lots)})), found=_h(reserved),
            hint="record the time actually reserved: the window of the plan, or the duration "
            "of the lots engaged",
        )
    observed = as_hours(man.schedule.observed_hours)
    if reserved and observed > reserved:
        yield Finding(
            f"observed_hours {_h(observed)} exceed the {_h(reserved)} reserved",
            where=f"{_ACTUAL}.observed_hours",
            hint="work past the reservation was not covered by the rental: record the longer "
            "lot engaged, or correct the observed hours",
        )


def _observed_total(
    plan: Plan, actual: ActualSchedule, observed: dict[str, Decimal]
) -> Iterator[Finding]:
    """observed_hours is the makespan of the steps with their observed durations.

    Not their sum: independent steps overlap (a human drafting the analysis
    while the GPU trains), and the makespan is what compares with the
    reserved window and the plan's sequential hours. Unplanned steps have no
    place in the plan's graph, so each may add up to its own hours.
    """
    try:
        base = sched.makespan(sched.as_observed(plan.schedule.steps, observed)).makespan
    except sched.ScheduleError:
        return  # schedule-fits reports the plan's broken graph
    extra = sum((h for k, h in observed.items() if plan_step(plan, k) is None), Decimal(0))
    stated = as_hours(actual.observed_hours)
    if base - ROUNDING <= stated <= base + extra + ROUNDING:
        return
    between = f"between {_h(base)} and {_h(base + extra)}" if extra else _h(base)
    yield Finding(
        f"observed_hours says {_h(stated)}, but the observed steps, run as the plan orders "
        f"them, take {between}",
        where=f"{_ACTUAL}.observed_hours",
        expected=between, found=_h(stated),
        hint="observed_hours is the observed makespan (first start to last end, overlapping "
        "steps counted once), not the sum of the steps' hours",
    )


def plan_step(plan: Plan, step_id: str) -> int | None:
    return next((i for i, s in enumerate(plan.schedule.steps) if s.id == step_id), None)


def _step_coverage(
    plan: Plan, observed: dict[str, Decimal], explained: set[str]
) -> Iterator[Finding]:
    for step_id in sched.unobserved_steps(plan.schedule.steps, observed):
        if step_id not in explained:
            yield Finding(
                f"planned step {step_id!r} has no observed hours and no explanation",
                where=f"{_ACTUAL}.steps",
                hint="record its observed hours (0 if it did not run) or explain it in "
                "schedule.deviations",
            )
    for step_id in sched.unplanned_steps(plan.schedule.steps, observed):
        if step_id not in explained:
            yield Finding(
                f"observed step {step_id!r} is not in the plan and has no explanation",
                where=f"{_ACTUAL}.steps",
                hint="explain the unplanned step in schedule.deviations (the plan is never "
                "edited after freezing)",
            )


def _deviations(
    ctx: Context, plan: Plan, observed: dict[str, Decimal], explained: set[str]
) -> Iterator[Finding]:
    tolerance = _tolerance(ctx, plan)
    for dev in sched.deviations(plan.schedule.steps, observed, tolerance):
        if dev.step not in explained:
            index = plan_step(plan, dev.step)
            yield Finding(
                f"{dev.describe(tolerance)}, without an explanation",
                where=f"{_ACTUAL}.deviations",
                expected=f"{_h(dev.planned)} ± {hours_text(tolerance * 100)} %",
                found=_h(dev.observed),
                hint=f"add {{\"step\": \"{dev.step}\", \"explanation\": ...}} to "
                f"schedule.deviations (plan.json $.schedule.steps[{index}] stays as frozen)",
            )


def _tolerance(ctx: Context, plan: Plan) -> Decimal:
    """The plan's own tolerance wins over the ini option itera_deviation_tolerance."""
    if plan.schedule.deviation_tolerance is not None:
        return as_hours(plan.schedule.deviation_tolerance)
    return as_hours(ctx.options.deviation_tolerance)


def _stray_explanations(
    plan: Plan, actual: ActualSchedule, observed: dict[str, Decimal]
) -> Iterator[Finding]:
    for i, dev in enumerate(actual.deviations):
        if plan_step(plan, dev.step) is None and dev.step not in observed:
            yield Finding(f"deviation explains step {dev.step!r}, which is neither planned "
                          "nor observed", where=f"{_ACTUAL}.deviations[{i}].step",
                          hint="name a step of the plan or of schedule.steps")


# ----------------------------------------------------------------- decisions


def _decisions(plan: Plan, man: Manifest) -> Iterator[Finding]:
    decisions = man.schedule.decisions
    ids = [d.id for d in decisions]
    for decision_id, n in sorted(Counter(ids).items()):
        if n > 1:
            yield Finding(f"decision id {decision_id!r} is recorded {n} times",
                          where=f"{_ACTUAL}.decisions", hint="give each decision its own id")
    planned = {r.id for r in plan.runs}
    for i, run in enumerate(man.runs):
        yield from _run_decision(i, run, run.id not in planned, man)
    yield from _decision_targets(man)


def _run_decision(i: int, run: RunRecord, added: bool, man: Manifest) -> Iterator[Finding]:
    decisions = man.schedule.decisions
    where = f"{MANIFEST_FILE} $.runs[{i}]"
    if run.decision is not None and run.decision not in {d.id for d in decisions}:
        yield Finding(f"run {run.id} cites decision {run.decision!r}, which is not recorded",
                      where=f"{where}.decision",
                      expected=f"one of: {', '.join(d.id for d in decisions) or '(none recorded)'}",
                      hint="record the decision in schedule.decisions (id, text, drops/adds)")
        return
    for needed, verb, field_name in ((run.outcome == "dropped", "dropped", "drops"),
                                     (added, "added", "adds")):
        linked = run.decision is not None or any(
            run.id in getattr(d, field_name) for d in decisions
        )
        if needed and not linked:
            yield Finding(
                f"run {run.id} was {verb} {'after the plan ' if added else ''}without a "
                "recorded decision",
                where=where,
                hint=f"record the decision in schedule.decisions with {field_name!r} naming "
                f"{run.id}, and cite it in the run's 'decision'",
            )


def _decision_targets(man: Manifest) -> Iterator[Finding]:
    runs = {r.id: r for r in man.runs}
    for i, decision in enumerate(man.schedule.decisions):
        for field_name in ("drops", "adds"):
            for run_id in getattr(decision, field_name):
                run = runs.get(run_id)
                where = f"{_ACTUAL}.decisions[{i}].{field_name}"
                if run is None:
                    yield Finding(f"decision {decision.id!r} {field_name} run {run_id!r}, "
                                  "which the manifest does not record", where=where,
                                  hint="record every run the decisions name in manifest runs")
                elif field_name == "drops" and run.outcome != "dropped":
                    yield Finding(f"decision {decision.id!r} drops run {run_id}, but its "
                                  f"outcome is {run.outcome!r}", where=where,
                                  expected="'dropped'", found=repr(run.outcome))


CHECKS = (
    Check("schedule-fits", "the planned schedule fits its window and lots, end to end",
          schedule_fits, needs=frozenset({"plan"}), order=55),
    Check("plan-vs-actual", "reserved and observed time, deviations and decisions reconciled",
          plan_vs_actual, order=56),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
