"""The schedule-fits rule: a plan's schedule fits its window and its lots, end to end (R3,
R4, R6), with its finding kinds (:data:`SCHEDULE_FITS_KINDS`).

Two families apply it: the schedule family's schedule-fits on a closed campaign, and the
plan gate's plan-schedule-fits and plan-forecast (re-coded under their ids) on a plan judged
alone or re-forecast from the journal. An overflowing window or lot is told both ways out:
the cheapest catalogue lot that covers the span (``Context.catalogue()``, the catalogue in
force) and the reduced protocol that fits. Stated hours may be rounded to the hundredth.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    CheckpointPolicy,
    Lot,
    Manifest,
    Plan,
    PlannedSchedule,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.money import Catalogue, Money, Offer, lot_options, overflow_advice
from pytest_itera.core.schedule import Timeline, as_hours, in_hours

ROUNDING = Decimal("0.01")  # hours: stated figures may be rounded to the hundredth


_STEPS = json_where(PLAN_FILE, "schedule", "steps")


def _number(value: float) -> Decimal:
    """A stated number of hours, exactly as written (may be negative, unlike as_hours)."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _close(stated: float, computed: Decimal) -> bool:
    return abs(_number(stated) - computed) <= ROUNDING


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
                f"step {step.id!r} ran {in_hours(ran)} on {step.resource!r} of lot {lot!r}, "
                f"which the "
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
        then = f" (chained, the schedule takes {in_hours(chained)})"
    except sched.ScheduleError:
        then = ""
    for overlap in overlaps:
        first, second = overlap.first, overlap.second
        yield Finding(
            f"run {overlap.run!r} is on two resources at once: step {first.id!r} "
            f"({_place(first)}) and step {second.id!r} ({_place(second)}) overlap from "
            f"{in_hours(max(first.start, second.start))} to "
            f"{in_hours(min(first.end, second.end))} in the computed schedule",
            where=f"{_STEPS}[{_index(plan, second.id)}].after",
            expected=f"the steps of run {overlap.run!r} one after another",
            found=f"{in_hours(overlap.hours)} of overlap",
            hint=f"add {first.id!r} to the 'after' of {second.id!r}{then}: two lots can host "
            "independent variants but never shorten one run",
            code="schedule-fits.run-overlap",
        )


def _place(slot: sched.Slot) -> str:
    return f"{slot.resource}, lot {slot.lot}" if slot.lot else slot.resource


def _checkpoint_interval(policy: CheckpointPolicy) -> Iterator[Finding]:
    if sched.interval_respects_tolerable_loss(policy):
        return
    save = f" + {in_hours(as_hours(policy.save_hours))} per save" if policy.save_hours else ""
    yield Finding(
        f"a crash can lose {in_hours(sched.worst_case_loss_hours(policy))} of work "
        f"(interval {in_hours(as_hours(policy.interval_hours))}{save}), more than the tolerable "
        f"{in_hours(as_hours(policy.tolerable_loss_hours))}",
        where=json_where(PLAN_FILE, "checkpoint_policy", "interval_hours"),
        expected=f"at most {in_hours(sched.max_save_interval(policy))}",
        found=in_hours(as_hours(policy.interval_hours)),
        hint="save more often (the interval follows from the tolerable loss and the save cost), "
        "or state a larger tolerable loss",
        code="schedule-fits.checkpoint-interval",
    )


def _stated_hours(planned: PlannedSchedule, timeline: Timeline) -> Iterator[Finding]:
    computed = sched.sequential_hours(timeline)
    if planned.sequential_hours is not None and not _close(planned.sequential_hours, computed):
        yield Finding(
            f"sequential_hours says {in_hours(_number(planned.sequential_hours))}, but the steps "
            f"take {in_hours(computed)} from the start of preparation to the last step's end",
            where=json_where(PLAN_FILE, "schedule", "sequential_hours"),
            expected=in_hours(computed), found=in_hours(_number(planned.sequential_hours)),
            hint="steps on one resource run one after the other, independent steps overlap: "
            "state the computed makespan",
            code="schedule-fits.sequential-hours",
        )
    free = sched.uncommitted_hours(planned.window_hours, timeline)
    stated = planned.uncommitted_hours
    if stated is not None and not _close(stated, free):
        yield Finding(
            f"uncommitted_hours says {in_hours(_number(stated))}, but the "
            f"{in_hours(as_hours(planned.window_hours))} window minus the {in_hours(computed)} "
            f"makespan "
            f"leaves {in_hours(free)}",
            where=json_where(PLAN_FILE, "schedule", "uncommitted_hours"),
            expected=in_hours(free), found=in_hours(_number(stated)),
            code="schedule-fits.uncommitted-hours",
        )


def _window(
    planned: PlannedSchedule, timeline: Timeline, reduction: sched.Reduction | None = None
) -> Iterator[Finding]:
    window = as_hours(planned.window_hours)
    excess = sched.window_overflow(window, timeline)
    if excess is not None:
        yield Finding(
            f"the schedule takes {in_hours(timeline.makespan)}, {in_hours(excess)} more than the "
            f"{in_hours(window)} window",
            where=json_where(PLAN_FILE, "schedule", "window_hours"),
            expected=f"a makespan of at most {in_hours(window)}", found=in_hours(timeline.makespan),
            hint=f"{protocol_advice(reduction) or 'reduce the protocol (drop an optional variant)'}"
            "; or plan a longer window",
            code="schedule-fits.window",
        )
    end = sched.retrieval_end(timeline)
    if end is not None and end > window:
        yield Finding(
            f"results are retrieved at {in_hours(end)}, after the {in_hours(window)} window closes",
            where=_STEPS,
            hint="retrieve the outputs before the rental period ends: move retrieval earlier "
            "or shorten what precedes it",
            code="schedule-fits.retrieval-after-window",
        )


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
        found=in_hours(span) + (f"; {off_lot}" if off_lot else ""),
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
    terms = [f"{in_hours(best.idle_hours)} idle"]
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
    then = in_hours(rounded(reduction.timeline.makespan))
    if not reduction.fits:
        return (f"even dropping every optional run ({runs}) leaves {then}: rent a longer lot "
                "or revise the question")
    return (f"reduce the protocol: drop {runs} ({in_hours(rounded(reduction.step_hours))} of "
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


SCHEDULE_FITS_KINDS: dict[str, Kind] = {
    "schedule-fits.missing-kind": Kind(
        rule="the schedule has no step of a required kind (setup, data load, validation, "
        "checkpoint save and restore, outputs, retrieval)",
        fix="schedule the whole campaign, not only training"),
    "schedule-fits.zero-hours-kind": Kind(
        rule="the schedule plans 0 h for a required step kind",
        fix="plan the real cost of the step kind on the rented machine"),
    "schedule-fits.retrieval-order": Kind(
        rule="the retrieval step does not come (through 'after') after every output and "
        "checkpoint step",
        fix="add the missing steps to the 'after' of the retrieval step (directly or "
        "through a step it waits for)"),
    "schedule-fits.restore-order": Kind(
        rule="a checkpoint restore step does not come (through 'after') after a checkpoint save",
        fix="add the save step to the restore's 'after'"),
    "schedule-fits.unknown-lot": Kind(
        rule="a step runs on a lot the budget does not have",
        fix="name a lot of plan.json budget.lots"),
    "schedule-fits.lotless-step": Kind(
        rule="a GPU step names no lot while the plan rents several",
        fix="name the lot whose machine runs the step"),
    "schedule-fits.unknown-run": Kind(
        rule="a step serves a run the plan does not have",
        fix="name a run of plan.json runs"),
    "schedule-fits.v1-runs-unproven": Kind(
        rule="an itera-plan/1 plan's training steps name no run: one run on two resources at "
        "once cannot be ruled out",
        fix="re-close the campaign with itera-plan/2 and itera-manifest/2, naming each "
        "training step's run"),
    "schedule-fits.training-without-run": Kind(
        rule="a training step names no run",
        fix="name the run each training step serves (steps[].run)"),
    "schedule-fits.lot-capacity": Kind(
        rule="a lot's steps use more GPU resources than it provides (gpus_per_lot x quantity)",
        fix="run the lot's steps on the GPUs it has, or engage a lot with more GPUs"),
    "schedule-fits.lot-not-engaged": Kind(
        rule="a machine step ran on a lot the manifest does not engage (budget.lots)",
        fix="record the lot as engaged (and its price in the rental), or correct the step's lot"),
    "schedule-fits.not-computable": Kind(
        rule="the schedule cannot be computed (a dependency cycle, or a step waiting for an "
        "unknown step)",
        fix="fix the steps' 'after' lists and their order on each resource"),
    "schedule-fits.run-overlap": Kind(
        rule="one run's steps are on two resources at once in the computed schedule",
        fix="chain the run's steps with 'after': two lots never shorten one run"),
    "schedule-fits.checkpoint-interval": Kind(
        rule="the checkpoint save interval plus the save's cost exceeds the tolerable loss",
        fix="save more often, or state a larger tolerable loss"),
    "schedule-fits.sequential-hours": Kind(
        rule="the stated sequential_hours is not the computed makespan",
        fix="state the computed makespan"),
    "schedule-fits.uncommitted-hours": Kind(
        rule="the stated uncommitted_hours is not the window minus the computed makespan",
        fix="state the window minus the computed makespan"),
    "schedule-fits.window": Kind(
        rule="the schedule's makespan exceeds the window",
        fix="reduce the protocol (drop an optional variant), or plan a longer window"),
    "schedule-fits.retrieval-after-window": Kind(
        rule="results are retrieved after the window closes",
        fix="move retrieval earlier, or shorten what precedes it"),
    "schedule-fits.lot-overflow": Kind(
        rule="the steps on a lot span more than its duration",
        fix="rent the cheapest lot that covers the span, or reduce the protocol"),
}
