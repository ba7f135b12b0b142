"""Schedule checks: schedule-fits, plan-vs-actual (R3, R4, R6, R9).

Registered as the plugin ``itera.schedule``. The arithmetic lives in
:mod:`pytest_itera.core.schedule`; this module reads the campaign and words the
findings. Stated hours may be rounded to the hundredth (36 s): a plan
computed with floats or rounded by hand is not refused for 1e-15 h.

The price catalogue used to advise on an overflowing lot is ``Context.catalogue()``,
the same catalogue in force that budget-consistent judges the lots against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.timeline import times_fit
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    ActualSchedule,
    CheckpointPolicy,
    Lot,
    Manifest,
    Plan,
    PlannedSchedule,
    RunRecord,
    Step,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.money import Catalogue, Money, Offer, lot_options, overflow_advice
from pytest_itera.core.schedule import Timeline, as_hours, hours_text
from pytest_itera.core.text import says_nothing

ROUNDING = Decimal("0.01")  # hours: stated figures may be rounded to the hundredth
_STEPS = json_where(PLAN_FILE, "schedule", "steps")
_ACTUAL = json_where(MANIFEST_FILE, "schedule")


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
    yield from _unplanned_kinds(steps)
    yield from _order(steps)
    yield from _unknown_lots(plan)
    yield from _lotless_steps(plan)
    yield from _step_runs(plan)
    yield from _checkpoint_interval(plan.checkpoint_policy)
    yield from _capacity(plan, None)
    yield from _engaged(plan, ctx.campaign.manifest)
    try:
        timeline = sched.makespan(steps)
    except sched.ScheduleError as exc:
        yield Finding(f"the schedule cannot be computed: {exc}", where=_STEPS,
                      hint="fix the steps' 'after' lists and their order on each resource",
                      code="schedule-fits.not-computable")
        return
    yield from _run_overlaps(plan, timeline)
    yield from _stated_hours(plan.schedule, timeline)
    reduction = reduction_for(plan, steps, timeline)
    yield from _window(plan.schedule, timeline, reduction)
    yield from lot_findings(ctx, plan, timeline, reduction)


def _index(plan: Plan, step_id: str) -> int:
    return next(i for i, s in enumerate(plan.schedule.steps) if s.id == step_id)


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(repr(i) for i in ids)


def _steps_name(ids: Sequence[str]) -> str:
    """"step 'a' names" / "steps 'a', 'b' name"."""
    return f"step {_ids(ids)} names" if len(ids) == 1 else f"steps {_ids(ids)} name"


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
            code="schedule-fits.missing-kind",
        )


def _unplanned_kinds(steps: Sequence[sched.StepLike]) -> Iterator[Finding]:
    for kind in sched.unplanned_kinds(steps):
        of_kind = [(i, s) for i, s in enumerate(steps) if s.kind == kind]
        yield Finding(
            f"the schedule plans 0 h for {kind} "
            f"({'step' if len(of_kind) == 1 else 'steps'} {_ids([s.id for _, s in of_kind])})",
            where=f"{_STEPS}[{of_kind[0][0]}].hours",
            expected="more than 0 h", found="0 h",
            hint=f"plan the real cost of {kind}: checkpoint save and restore, writing the "
            "outputs and retrieving them take time on the rented machine, a 0 h step is no plan",
            code="schedule-fits.zero-hours-kind",
        )


# ------------------------------------------------------------- order (R3, R6)


def _order(steps: Sequence[sched.StepLike]) -> Iterator[Finding]:
    """Retrieval after the outputs and checkpoints, restore after save: through ``after``."""
    gap = sched.retrieval_gap(steps)
    if gap is not None:
        index = next(i for i, s in enumerate(steps) if s.id == gap.retrieval)
        yield Finding(
            f"retrieval step {gap.retrieval!r} does not come after {_ids(gap.missing)} "
            "(through its 'after' dependencies)",
            where=f"{_STEPS}[{index}].after",
            expected="a retrieval that comes after every output, checkpoint_save and "
            "checkpoint_restore step",
            found=f"after {list(steps[index].after)}",
            hint=f"add {_ids(gap.missing)} to the 'after' of {gap.retrieval!r} (directly or "
            "through a step it waits for): results are retrieved once the outputs and "
            "checkpoints exist, and ending later in time is not a dependency",
            code="schedule-fits.retrieval-order",
        )
    for step_id in sched.restores_without_save(steps):
        index = next(i for i, s in enumerate(steps) if s.id == step_id)
        saves = [s.id for s in steps if s.kind == "checkpoint_save"]
        yield Finding(
            f"checkpoint restore step {step_id!r} does not come after a checkpoint save",
            where=f"{_STEPS}[{index}].after",
            expected=f"after one of {_ids(saves)}", found=f"after {list(steps[index].after)}",
            hint="a restore reloads a saved checkpoint in a new process: add the save step "
            "to its 'after'",
            code="schedule-fits.restore-order",
        )


# ----------------------------------------------------- machines, lots, runs (R4)


def _unknown_lots(plan: Plan) -> Iterator[Finding]:
    known = [lot.id for lot in plan.budget.lots]
    for step_id, lot in sched.unknown_lots(plan.schedule.steps, plan.budget.lots):
        index = next(i for i, s in enumerate(plan.schedule.steps) if s.id == step_id)
        yield Finding(f"step {step_id!r} runs on lot {lot!r}, which the budget does not have",
                      where=f"{_STEPS}[{index}].lot", expected=f"one of {', '.join(known)}",
                      found=repr(lot), hint="name a lot of plan.json budget.lots",
                      code="schedule-fits.unknown-lot")


def _lotless_steps(plan: Plan) -> Iterator[Finding]:
    lots = plan.budget.lots
    for step_id in sched.steps_without_lot(plan.schedule.steps, lots):
        index = _index(plan, step_id)
        step = plan.schedule.steps[index]
        yield Finding(
            f"step {step_id!r} runs on GPU resource {step.resource!r} but names no lot, and the "
            f"plan rents {len(lots)} lots",
            where=f"{_STEPS}[{index}].lot",
            expected=f"one of {_ids([lot.id for lot in lots])}", found="no lot",
            hint="name the lot whose machine runs the step; only 'human' and 'network' time "
            "is off the rented machines",
            code="schedule-fits.lotless-step",
        )


def _step_runs(plan: Plan) -> Iterator[Finding]:
    """Each step serves a planned run; every training step names its run (/2)."""
    planned = [r.id for r in plan.runs]
    steps = plan.schedule.steps
    for i, step in enumerate(steps):
        if step.run is not None and step.run not in planned:
            yield Finding(
                f"step {step.id!r} serves run {step.run!r}, which the plan does not have",
                where=f"{_STEPS}[{i}].run",
                expected=f"one of {_ids(planned)}", found=repr(step.run),
                hint="name a run of plan.json runs (a run added later has no planned steps)",
                code="schedule-fits.unknown-run",
            )
    anonymous = [(i, s) for i, s in enumerate(steps) if s.kind == "training" and s.run is None]
    if not anonymous:
        return
    if plan.version < 2:
        yield Finding(
            f"{plan.format} cannot prove that one run is never on two resources at once: "
            f"training {_steps_name([s.id for _, s in anonymous])} no run",
            where=f"{_STEPS}[{anonymous[0][0]}].run",
            expected="each training step's run (schedule.steps[].run)", found="no run",
            hint="re-close the campaign with itera-plan/2 and itera-manifest/2 "
            "(pytest_itera.record.campaign writes them), naming the run each training step serves",
            code="schedule-fits.v1-runs-unproven",
        )
        return
    for i, step in anonymous:
        yield Finding(
            f"training step {step.id!r} names no run",
            where=f"{_STEPS}[{i}].run",
            expected=f"the planned run it trains: one of {_ids(planned)}", found="no run",
            hint="name the run each training step serves (steps[].run): the steps of one run "
            "are then never scheduled on two resources at once",
            code="schedule-fits.training-without-run",
        )


def _capacity(plan: Plan, timeline: Timeline | None) -> Iterator[Finding]:
    """A lot provides gpus_per_lot x quantity GPUs; its steps use no more GPU resources."""
    lots = plan.budget.lots
    if timeline is None:
        try:
            timeline = sched.makespan(plan.schedule.steps)
        except sched.ScheduleError:
            timeline = None
    for excess in sched.capacity_excesses(plan.schedule.steps, lots, timeline):
        lot = next(lot for lot in lots if lot.id == excess.lot)
        seen: list[str] = []
        index = 0
        for i, step in enumerate(plan.schedule.steps):
            mine = sched.lot_of(step, lots) == lot.id and sched.is_gpu(step.resource)
            if mine and step.resource not in seen:
                seen.append(step.resource)
                if len(seen) > excess.capacity:
                    index = i
                    break
        at_once = f"; {excess.peak} of them at once in the computed schedule" if (
            excess.peak > 1) else ""
        gpus = "GPU" if excess.capacity == 1 else "GPUs"
        yield Finding(
            f"lot {lot.id!r} provides {excess.capacity} {gpus} ({lot.gpus_per_lot} per lot x "
            f"{lot.quantity}), but its steps use {len(excess.resources)} GPU resources: "
            f"{_ids(excess.resources)}{at_once}",
            where=f"{_STEPS}[{index}].resource",
            expected=f"at most {excess.capacity} distinct GPU resources on lot {lot.id!r}",
            found=f"{len(excess.resources)}: {', '.join(excess.resources)}",
            hint="run the lot's steps on the GPUs it has (steps on one resource run one after "
            "another), or engage a lot with more GPUs (gpus_per_lot x quantity); two lots can "
            "host independent variants but never merge GPU memory",
            code="schedule-fits.lot-capacity",
        )


def _engaged(plan: Plan, man: Manifest | None) -> Iterator[Finding]:
    """A machine step that ran did so on a lot the manifest engaged (budget.lots)."""
    if man is None:
        return  # a plan judged alone
    engaged = set(man.budget.lots)
    try:
        observed = sched.observed_hours(man.schedule.steps)
    except (TypeError, ValueError):
        return  # plan-vs-actual reports unreadable hours
    known = {lot.id for lot in plan.budget.lots}
    for i, step in enumerate(plan.schedule.steps):
        if sched.is_off_machine(step.resource):
            continue
        lot = sched.lot_of(step, plan.budget.lots)
        if lot is None or lot not in known or lot in engaged:
            continue  # no lot / an unknown lot: reported above
        ran = observed.get(step.id, Decimal(0))
        if ran > 0:
            yield Finding(
                f"step {step.id!r} ran {_h(ran)} on {step.resource!r} of lot {lot!r}, which the "
                "manifest does not engage",
                where=json_where(MANIFEST_FILE, "budget", "lots"),
                expected=f"{lot!r} among the engaged lots",
                found=", ".join(repr(x) for x in man.budget.lots) or "no lot engaged",
                hint="a machine the campaign did not rent runs nothing: record the lot as "
                f"engaged (and its price in the rental), or correct {PLAN_FILE} "
                f"$.schedule.steps[{i}].lot",
                code="schedule-fits.lot-not-engaged",
            )


def _run_overlaps(plan: Plan, timeline: Timeline) -> Iterator[Finding]:
    """One run never on two resources at once, even across lots (R3, R4)."""
    overlaps = sched.run_overlaps(timeline)
    if not overlaps:
        return
    try:
        chained = sched.makespan(sched.chain_runs(plan.schedule.steps)).makespan
        then = f" (chained, the schedule takes {_h(chained)})"
    except sched.ScheduleError:
        then = ""
    for overlap in overlaps:
        first, second = overlap.first, overlap.second
        yield Finding(
            f"run {overlap.run!r} is on two resources at once: step {first.id!r} "
            f"({_place(first)}) and step {second.id!r} ({_place(second)}) overlap from "
            f"{_h(max(first.start, second.start))} to {_h(min(first.end, second.end))} in the "
            "computed schedule",
            where=f"{_STEPS}[{_index(plan, second.id)}].after",
            expected=f"the steps of run {overlap.run!r} one after another",
            found=f"{_h(overlap.hours)} of overlap",
            hint=f"add {first.id!r} to the 'after' of {second.id!r}{then}: two lots can host "
            "independent variants but never shorten one run",
            code="schedule-fits.run-overlap",
        )


def _place(slot: sched.Slot) -> str:
    return f"{slot.resource}, lot {slot.lot}" if slot.lot else slot.resource


def _checkpoint_interval(policy: CheckpointPolicy) -> Iterator[Finding]:
    if sched.interval_respects_tolerable_loss(policy):
        return
    save = f" + {_h(as_hours(policy.save_hours))} per save" if policy.save_hours else ""
    yield Finding(
        f"a crash can lose {_h(sched.worst_case_loss_hours(policy))} of work "
        f"(interval {_h(as_hours(policy.interval_hours))}{save}), more than the tolerable "
        f"{_h(as_hours(policy.tolerable_loss_hours))}",
        where=json_where(PLAN_FILE, "checkpoint_policy", "interval_hours"),
        expected=f"at most {_h(sched.max_save_interval(policy))}",
        found=_h(as_hours(policy.interval_hours)),
        hint="save more often (the interval follows from the tolerable loss and the save cost), "
        "or state a larger tolerable loss",
        code="schedule-fits.checkpoint-interval",
    )


def _stated_hours(planned: PlannedSchedule, timeline: Timeline) -> Iterator[Finding]:
    computed = sched.sequential_hours(timeline)
    if planned.sequential_hours is not None and not _close(planned.sequential_hours, computed):
        yield Finding(
            f"sequential_hours says {_h(_number(planned.sequential_hours))}, but the steps "
            f"take {_h(computed)} from the start of preparation to the last step's end",
            where=json_where(PLAN_FILE, "schedule", "sequential_hours"),
            expected=_h(computed), found=_h(_number(planned.sequential_hours)),
            hint="steps on one resource run one after the other, independent steps overlap: "
            "state the computed makespan",
            code="schedule-fits.sequential-hours",
        )
    free = sched.uncommitted_hours(planned.window_hours, timeline)
    stated = planned.uncommitted_hours
    if stated is not None and not _close(stated, free):
        yield Finding(
            f"uncommitted_hours says {_h(_number(stated))}, but the "
            f"{_h(as_hours(planned.window_hours))} window minus the {_h(computed)} makespan "
            f"leaves {_h(free)}",
            where=json_where(PLAN_FILE, "schedule", "uncommitted_hours"),
            expected=_h(free), found=_h(_number(stated)),
            code="schedule-fits.uncommitted-hours",
        )


def _window(
    planned: PlannedSchedule, timeline: Timeline, reduction: sched.Reduction | None = None
) -> Iterator[Finding]:
    window = as_hours(planned.window_hours)
    excess = sched.window_overflow(window, timeline)
    if excess is not None:
        yield Finding(
            f"the schedule takes {_h(timeline.makespan)}, {_h(excess)} more than the "
            f"{_h(window)} window",
            where=json_where(PLAN_FILE, "schedule", "window_hours"),
            expected=f"a makespan of at most {_h(window)}", found=_h(timeline.makespan),
            hint=f"{protocol_advice(reduction) or 'reduce the protocol (drop an optional variant)'}"
            "; or plan a longer window",
            code="schedule-fits.window",
        )
    end = sched.retrieval_end(timeline)
    if end is not None and end > window:
        yield Finding(
            f"results are retrieved at {_h(end)}, after the {_h(window)} window closes",
            where=_STEPS,
            hint="retrieve the outputs before the rental period ends: move retrieval earlier "
            "or shorten what precedes it",
            code="schedule-fits.retrieval-after-window",
        )


# ------------------------------------------------------------------- lots (R4)


def reduction_for(
    plan: Plan, steps: Sequence[sched.StepLike], timeline: Timeline, keep: Iterable[str] = ()
) -> sched.Reduction | None:
    """The reduced protocol that fits the window and the lots, when the schedule does not."""
    lots = plan.budget.lots
    if sched.fits(plan.schedule.window_hours, lots, timeline):
        return None
    return sched.reduced_protocol(steps, plan.runs, plan.schedule.window_hours, lots, keep=keep)


def lot_findings(
    ctx: Context, plan: Plan, timeline: Timeline, reduction: sched.Reduction | None,
    prefix: str = "",
) -> Iterator[Finding]:
    """Each lot whose span in ``timeline`` overflows it, with both ways out (R4): the
    cheapest catalogue lot that covers the span, and the reduced protocol (``reduction``)."""
    lots = plan.budget.lots
    for use in sched.lot_uses(lots, timeline):
        if use.excess > 0:
            lot = next(lot for lot in lots if lot.id == use.lot)
            label = (f"lot {lot.id!r}: " if use.named
                     else "the machine steps (no step names a lot): ")
            yield _overflow_finding(ctx, lot, use.span, prefix + label, reduction,
                                    sched.off_lot_text(timeline, lot.id) if use.named else None)


def _overflow_finding(
    ctx: Context, lot: Lot, span: Decimal, prefix: str, reduction: sched.Reduction | None,
    off_lot: str | None = None,
) -> Finding:
    """``off_lot``: the steps outside the lot's span (they count in the window, not here)."""
    offers = _offers_for(ctx, lot)
    advice = overflow_advice(span, lot, None if isinstance(offers, str) else offers)
    if isinstance(offers, str):
        advice = f"{advice} ({offers})"
    ways = [w for w in (_cheapest_lot(ctx, lot, span, offers), protocol_advice(reduction)) if w]
    return Finding(
        f"{prefix}{advice}",
        where=f"{_STEPS} (lot {lot.id!r})",
        expected=f"at most {lot.days * 24} h on the lot",
        found=_h(span) + (f"; {off_lot}" if off_lot else ""),
        hint="; or ".join(ways or ["rent a lot that covers the span, or reduce the protocol"])
        + "; two lots can host independent variants but never shorten one run",
        code="schedule-fits.lot-overflow",
    )


def _cheapest_lot(ctx: Context, lot: Lot, span: Decimal, offers: Catalogue | str) -> str | None:
    """"rent the 7-day lot at 110.00 USD (+62.86 USD over the 3-day lot's 47.14 USD, 90 h
    idle)": a lot's price covers its duration, never an hourly rate."""
    plan = ctx.campaign.plan
    if isinstance(offers, str) or plan is None:
        return None
    options = lot_options(span, offers)
    if not options:
        return None
    best = options[0]
    cost = best.price * lot.quantity
    many = f" x {lot.quantity}" if lot.quantity > 1 else ""
    terms = [f"{_h(best.idle_hours)} idle"]
    if cost.currency == plan.budget.currency:
        now = Money(lot.price, plan.budget.currency) * lot.quantity
        delta = cost.amount - now.amount
        terms.insert(0, f"{'+' if delta >= 0 else '-'}{abs(delta):.2f} {cost.currency} over "
                        f"the {lot.days}-day lot's {now.format()}")
    return f"rent the {best.offer.days}-day lot{many} at {cost.format()} ({', '.join(terms)})"


def protocol_advice(reduction: sched.Reduction | None) -> str | None:
    """"reduce the protocol: drop exploratory run 'variant-b' (8 h of planned steps): the
    schedule then takes 70 h and fits ..." -- or why no reduced protocol fits."""
    if reduction is None:
        return None
    runs = ", ".join(f"{reduction.categories[r]} run {r!r}" for r in reduction.dropped)
    then = _h(rounded(reduction.timeline.makespan))
    if not reduction.fits:
        return (f"even dropping every optional run ({runs}) leaves {then}: rent a longer lot "
                "or revise the question")
    return (f"reduce the protocol: drop {runs} ({_h(rounded(reduction.step_hours))} of "
            f"planned steps): the schedule then takes {then} and fits the window and the lots")


def rounded(hours: Decimal) -> Decimal:
    """Hours for a message: to the hundredth when a ratio made them longer."""
    exponent = hours.as_tuple().exponent
    return hours.quantize(ROUNDING) if isinstance(exponent, int) and exponent < -2 else hours


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
    found = ctx.catalogue()
    return found if isinstance(found, Catalogue) else f"{found}, so no catalogue lot can be " \
        "suggested"


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
    # One rule for text: a blank explanation explains nothing (pytest_itera.core.text).
    explained = {d.step for d in actual.deviations if not says_nothing(d.explanation)}
    yield from _reserved(plan, man)
    yield from _observed_total(plan, actual, observed)
    yield from _observed_lots(plan, man, observed)
    yield from _blank_explanations(actual)
    recorded = _by_recorder(man)
    short = yield from _short_steps(plan, observed, explained, recorded=recorded,
                                    rehearsal=man.rehearsal)
    yield from _step_coverage(plan, observed, explained)
    if not man.rehearsal:  # a rehearsal's hours are the test machine's, not the rental's
        yield from _deviations(ctx, plan, observed, explained | short, recorded=recorded)
    yield from _stray_explanations(plan, actual, observed)
    yield from _decisions(plan, man)
    yield from _dropped_steps(plan, man, observed)
    yield from times_fit(ctx, plan, man, tolerance=deviation_tolerance(ctx, plan),
                         rounding=ROUNDING)


def _reserved(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """Reserved time is the plan's window or the hours the engaged lots reserve (the union of
    their windows, :func:`pytest_itera.core.schedule.reserved_hours`: an overlap counted
    once, a gap between two lots not reserved); observed fits in it."""
    reserved = as_hours(man.schedule.reserved_hours)
    window = as_hours(plan.schedule.window_hours)
    engaged = [lot for lot in plan.budget.lots if lot.id in man.budget.lots]
    lots = sched.reserved_hours(engaged, plan.schedule.steps)
    if reserved not in (window, lots):
        yield Finding(
            f"reserved_hours is {_h(reserved)}: neither the plan's {_h(window)} window nor "
            f"the engaged lots' {_h(lots)}",
            where=f"{_ACTUAL}.reserved_hours",
            expected=" or ".join(sorted({_h(window), _h(lots)})), found=_h(reserved),
            hint="record the time actually reserved: the window of the plan, or the duration "
            "of the lots engaged",
            code="plan-vs-actual.reserved-hours",
        )
    observed = as_hours(man.schedule.observed_hours)
    if reserved and observed > reserved:
        yield Finding(
            f"observed_hours {_h(observed)} exceed the {_h(reserved)} reserved",
            where=f"{_ACTUAL}.observed_hours",
            hint="work past the reservation was not covered by the rental: record the longer "
            "lot engaged, or correct the observed hours",
            code="plan-vs-actual.observed-over-reserved",
        )


def _observed_lots(
    plan: Plan, man: Manifest, observed: dict[str, Decimal]
) -> Iterator[Finding]:
    """The observed steps on each engaged lot fit in its duration (R4): a lot ends when its
    days end, so GPU work observed past that end ran on a lot the budget does not show."""
    if not observed:
        return
    try:
        timeline = sched.makespan(sched.as_observed(plan.schedule.steps, observed))
    except sched.ScheduleError:
        return  # schedule-fits reports the plan's broken graph
    engaged = [lot for lot in plan.budget.lots if lot.id in man.budget.lots]
    for over in sched.lot_overflows(engaged, timeline):
        yield Finding(
            f"the observed steps on lot {over.lot!r} span {_h(over.span)}, past its "
            f"{over.days}-day duration ({_h(Decimal(over.capacity))}) by {_h(over.excess)}",
            where=f"{_ACTUAL}.steps",
            expected=f"at most {_h(Decimal(over.capacity))} of observed work on lot {over.lot!r}",
            found=_h(over.span),
            hint="a lot is fixed-price for its duration: work past its end needs a longer or "
            "another lot, engaged and paid in the budget; or correct the observed hours",
            code="plan-vs-actual.lot-duration",
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
        code="plan-vs-actual.observed-hours",
    )


def plan_step(plan: Plan, step_id: str) -> int | None:
    return next((i for i, s in enumerate(plan.schedule.steps) if s.id == step_id), None)


def _blank_explanations(actual: ActualSchedule) -> Iterator[Finding]:
    for i, dev in enumerate(actual.deviations):
        if says_nothing(dev.explanation):
            yield Finding(
                f"the explanation of step {dev.step!r} is blank",
                where=f"{_ACTUAL}.deviations[{i}].explanation",
                expected="a text that says why the step deviated", found=repr(dev.explanation),
                hint="write what happened (an empty or whitespace-only text explains nothing)",
                code="plan-vs-actual.blank-explanation",
            )


def _by_recorder(man: Manifest) -> bool:
    """The campaign was written by pytest_itera.record (its journal is listed): fix lines
    name the recorder's argument, not the manifest field it writes."""
    return any(f.path == JOURNAL_FILE for f in man.files)


def _explain_fix(step: str, recorded: bool, why: str) -> str:
    """Where to explain a step: the recorder's close(explanations=...), or the manifest."""
    if recorded:
        return (f"explain it when closing: rec.close(explanations={{\"{step}\": \"{why}\"}}) "
                "(the recorder writes schedule.deviations)")
    return f"add {{\"step\": \"{step}\", \"explanation\": ...}} to schedule.deviations ({why})"


def _short_steps(
    plan: Plan, observed: dict[str, Decimal], explained: set[str], *, recorded: bool = False,
    rehearsal: bool = False,
) -> Generator[Finding, None, set[str]]:
    """A step that did not run, or ran less than half its hours, is explained whatever the
    tolerance (R9). Returns the steps it judged, which the tolerance rule then leaves alone.
    A rehearsal's steps run at the test machine's speed: only a step with no observed hours
    (it never ran) is judged there."""
    judged: set[str] = set()
    for short in sched.short_steps(plan.schedule.steps, observed):
        judged.add(short.step)
        if short.step in explained or (rehearsal and short.observed is not None):
            continue
        where = f"{_ACTUAL}.steps" if short.observed is None else f"{_ACTUAL}.deviations"
        if short.observed is None:
            fix = (f"time it with rec.step({short.step!r}) (rec.step({short.step!r}, hours=0) "
                   "if it did not run), then " + _explain_fix(short.step, True, "why")
                   if recorded else "record its observed hours (0 if it did not run) and "
                   "explain it in schedule.deviations")
        else:
            fix = _explain_fix(short.step, recorded, "what stopped it, and what was decided")
        yield Finding(
            f"{short.describe()} and no explanation",
            where=where,
            expected="an explanation in schedule.deviations, whatever the tolerance",
            found="none" if short.step not in observed else _h(observed[short.step]),
            hint=fix,
            code="plan-vs-actual.short-step",
        )
    return judged


def _step_coverage(
    plan: Plan, observed: dict[str, Decimal], explained: set[str]
) -> Iterator[Finding]:
    for step_id in sched.unplanned_steps(plan.schedule.steps, observed):
        if step_id not in explained:
            yield Finding(
                f"observed step {step_id!r} is not in the plan and has no explanation",
                where=f"{_ACTUAL}.steps",
                hint="explain the unplanned step in schedule.deviations (the plan is never "
                "edited after freezing)",
                code="plan-vs-actual.unplanned-step",
            )


def _deviations(
    ctx: Context, plan: Plan, observed: dict[str, Decimal], explained: set[str], *,
    recorded: bool = False,
) -> Iterator[Finding]:
    tolerance = deviation_tolerance(ctx, plan)
    for dev in sched.deviations(plan.schedule.steps, observed, tolerance):
        if dev.step not in explained:
            index = plan_step(plan, dev.step)
            yield Finding(
                f"{dev.describe(tolerance)}, without an explanation",
                where=f"{_ACTUAL}.deviations",
                expected=f"{_h(dev.planned)} ± {hours_text(tolerance * 100)} %",
                found=_h(dev.observed),
                hint=(_explain_fix(dev.step, True, "why it took that long") if recorded
                      else _explain_fix(dev.step, False, f"plan.json $.schedule.steps[{index}] "
                                        "stays as frozen")),
                code="plan-vs-actual.deviation-unexplained",
            )


def deviation_tolerance(ctx: Context, plan: Plan) -> Decimal:
    """The plan's own tolerance wins over the ini option itera_deviation_tolerance.

    Either is bounded at 0.5 (:data:`pytest_itera.core.schedule.MAX_TOLERANCE`).
    """
    if plan.schedule.deviation_tolerance is not None:
        return sched.bounded_tolerance(plan.schedule.deviation_tolerance)
    return sched.bounded_tolerance(ctx.options.deviation_tolerance)


def _stray_explanations(
    plan: Plan, actual: ActualSchedule, observed: dict[str, Decimal]
) -> Iterator[Finding]:
    for i, dev in enumerate(actual.deviations):
        if plan_step(plan, dev.step) is None and dev.step not in observed:
            yield Finding(f"deviation explains step {dev.step!r}, which is neither planned "
                          "nor observed", where=f"{_ACTUAL}.deviations[{i}].step",
                          hint="name a step of the plan or of schedule.steps",
                          code="plan-vs-actual.stray-explanation")


# ----------------------------------------------------------------- decisions


def _decisions(plan: Plan, man: Manifest) -> Iterator[Finding]:
    decisions = man.schedule.decisions
    ids = [d.id for d in decisions]
    for decision_id, n in sorted(Counter(ids).items()):
        if n > 1:
            yield Finding(f"decision id {decision_id!r} is recorded {n} times",
                          where=f"{_ACTUAL}.decisions", hint="give each decision its own id",
                          code="plan-vs-actual.decision-repeated")
    for i, decision in enumerate(decisions):
        if says_nothing(decision.text):
            yield Finding(
                f"decision {decision.id!r} has a blank text",
                where=f"{_ACTUAL}.decisions[{i}].text",
                expected="what was decided and why", found=repr(decision.text),
                hint="write the decision (continue, drop an optional variant, revise the "
                "question) and what it rests on; an empty or whitespace-only text is missing",
                code="plan-vs-actual.decision-blank",
            )
    planned = {r.id for r in plan.runs}
    for i, run in enumerate(man.runs):
        yield from _run_decision(i, run, run.id not in planned, man)
    yield from _decision_targets(man)
    yield from _after_the_pilot(plan, man)
    yield from _before_what_follows(plan, man)


def _pilot_end(plan: Plan, man: Manifest) -> tuple[str, datetime, str] | None:
    """The earliest end of a pilot run (role pilot): (run id, moment, field), or None."""
    ends: list[tuple[datetime, str, str]] = []
    for i, run in enumerate(man.runs):
        planned = plan.run(run.id)
        if planned is None or planned.role != "pilot":
            continue
        if run.ended_at is not None:
            ends.append((run.ended_at, run.id, json_where(MANIFEST_FILE, "runs", i, "ended_at")))
        elif run.stop is not None and run.stop.at is not None:
            ends.append((run.stop.at, run.id, json_where(MANIFEST_FILE, "runs", i, "stop", "at")))
    if not ends:
        return None
    moment, run_id, where = min(ends, key=lambda e: e[0])
    return run_id, moment, where


def _after_the_pilot(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """The decision point comes after the pilot (R2): no decision predates the pilot's end."""
    pilot = _pilot_end(plan, man)
    if pilot is None:
        return
    run_id, end, where = pilot
    for i, decision in enumerate(man.schedule.decisions):
        if decision.at is not None and decision.at < end:  # the schema requires a zone
            yield Finding(
                f"decision {decision.id!r} is dated {decision.at.isoformat()}, before the pilot "
                f"run {run_id!r} ended ({end.isoformat()}, {where})",
                where=f"{_ACTUAL}.decisions[{i}].at",
                expected=f"at or after {end.isoformat()}", found=decision.at.isoformat(),
                hint="the decision point comes after the pilot: a decision taken before its "
                "end cannot rest on its result; record when the decision was really taken",
                code="plan-vs-actual.decision-before-pilot",
            )




def _before_what_follows(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """The decision is taken at the decision point (R2, R9): the plan's one step of kind
    ``decision`` precedes, through ``after``, the steps of some runs; the first of those runs
    to start does not start before the first decision recorded. Several decision steps, or
    decisions without a moment: nothing here says which decision is whose."""
    points = [s for s in plan.schedule.steps if s.kind == "decision"]
    dated = [(d.at, i, d) for i, d in enumerate(man.schedule.decisions) if d.at is not None]
    if len(points) != 1 or not dated or len(dated) != len(man.schedule.decisions):
        return
    point = points[0]
    following = {s.id for s in _following(plan.schedule.steps, point.id)}
    # The runs whose planned steps all come after the decision point, by their start.
    starts = []
    for index, run in enumerate(man.runs):
        steps = [s.id for s in plan.schedule.steps if s.run == run.id]
        if run.started_at is not None and steps and following.issuperset(steps):
            starts.append((run.started_at, index, run, steps[0]))
    if not starts:
        return
    started, index, run, step = min(starts, key=lambda s: (s[0], s[1]))
    at, i, decision = min(dated, key=lambda d: (d[0], d[1]))
    if at <= started:
        return
    yield Finding(
        f"run {run.id} started at {started.isoformat()}, before the first decision, "
        f"{decision.id!r}, dated {at.isoformat()}; its step {step!r} comes after the plan's "
        f"decision point {point.id!r} "
        f"({json_where(MANIFEST_FILE, 'runs', index, 'started_at')})",
        where=f"{_ACTUAL}.decisions[{i}].at",
        expected=f"a decision at or before {started.isoformat()}", found=at.isoformat(),
        hint="decide at the decision point, before the runs that follow it start (continue, "
        "drop an optional variant, revise the question), and record the decision when it is "
        "taken (CampaignRecorder.decide)",
        code="plan-vs-actual.decision-after-point",
    )


def _following(steps: Sequence[Step], first: str) -> list[Step]:
    """The steps that come after step ``first`` through ``after``, transitively."""
    later: set[str] = {first}
    grew = True
    while grew:
        grew = False
        for step in steps:
            if step.id not in later and later.intersection(step.after):
                later.add(step.id)
                grew = True
    return [s for s in steps if s.id in later and s.id != first]


def _run_decision(i: int, run: RunRecord, added: bool, man: Manifest) -> Iterator[Finding]:
    decisions = man.schedule.decisions
    where = json_where(MANIFEST_FILE, "runs", i)
    if run.decision is not None and run.decision not in {d.id for d in decisions}:
        yield Finding(f"run {run.id} cites decision {run.decision!r}, which is not recorded",
                      where=f"{where}.decision",
                      expected=f"one of: {', '.join(d.id for d in decisions) or '(none recorded)'}",
                      hint="record the decision in schedule.decisions (id, text, drops/adds)",
                      code="plan-vs-actual.decision-unknown")
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
                code="plan-vs-actual.no-decision",
            )


def _dropped_steps(plan: Plan, man: Manifest, observed: dict[str, Decimal]
                   ) -> Iterator[Finding]:
    """A dropped run never ran (R2): the planned steps that name it were observed at 0 h.
    A run that ran and was then abandoned is stopped or rejected, with its cause."""
    dropped = {r.id: (i, r) for i, r in enumerate(man.runs) if r.outcome == "dropped"}
    for step in plan.schedule.steps:
        hours = observed.get(step.id, Decimal(0))
        if step.run not in dropped or hours <= 0:
            continue
        i, run = dropped[step.run]
        at = next((k for k, s in enumerate(man.schedule.steps) if s.id == step.id), None)
        yield Finding(
            f"run {run.id} is dropped"
            + (f" by decision {run.decision!r}" if run.decision else "")
            + f", but step {step.id!r}, which the plan gives to it, was observed to take "
            f"{_h(hours)}",
            where=f"{_ACTUAL}.steps[{at}].observed_hours" if at is not None else _ACTUAL,
            expected=f"0 h: a dropped run never ran ({MANIFEST_FILE} "
            f"$.runs[{i}].outcome is 'dropped')", found=_h(hours),
            hint="a run that started and was then abandoned is not dropped: record it as "
            "stopped (by a declared stop rule) or rejected, with its reason; a run that never "
            "ran has its steps observed at 0 h",
            code="plan-vs-actual.dropped-step-ran")


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
                                  hint="record every run the decisions name in manifest runs",
                                  code="plan-vs-actual.decision-target")
                elif field_name == "drops" and run.outcome != "dropped":
                    yield Finding(f"decision {decision.id!r} drops run {run_id}, but its "
                                  f"outcome is {run.outcome!r}", where=where,
                                  expected="'dropped'", found=repr(run.outcome),
                                  code="plan-vs-actual.decision-drop-outcome")


CHECKS = (
    Check("schedule-fits", "the planned schedule fits its window and lots, end to end",
          schedule_fits, needs=frozenset({"plan"}), order=55),
    Check("plan-vs-actual", "reserved and observed time, deviations and decisions reconciled",
          plan_vs_actual, order=56),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
