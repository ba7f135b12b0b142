"""plan-vs-actual: the manifest's actual schedule reconciled with the frozen plan (R9).

Reserved and observed hours, the observed steps on each engaged lot, the deviations and
short steps with their explanations, and the decisions taken at the decision point (after
the pilot, before what follows it). The recorded moments fitting together are
:mod:`pytest_itera.checks.schedule.timeline`'s rules, of this same check. The arithmetic
lives in :mod:`pytest_itera.core.schedule`; this module reads the campaign and words the
findings. Stated hours may be rounded to the hundredth (36 s).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterator, Sequence
from datetime import datetime
from decimal import Decimal

from pytest_itera.checks.common.schedule_fits import ROUNDING
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.checks.schedule.timeline import TIMELINE_KINDS, times_fit
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    ActualSchedule,
    Manifest,
    Plan,
    RunRecord,
    Step,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.schedule import as_hours, hours_text, in_hours
from pytest_itera.core.text import says_nothing

_ACTUAL = json_where(MANIFEST_FILE, "schedule")


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
            f"reserved_hours is {in_hours(reserved)}: neither the plan's {in_hours(window)} "
            f"window nor the engaged lots' {in_hours(lots)}",
            where=f"{_ACTUAL}.reserved_hours",
            expected=" or ".join(sorted({in_hours(window), in_hours(lots)})),
            found=in_hours(reserved),
            hint="record the time actually reserved: the window of the plan, or the duration "
            "of the lots engaged",
            code="plan-vs-actual.reserved-hours",
        )
    observed = as_hours(man.schedule.observed_hours)
    if reserved and observed > reserved:
        yield Finding(
            f"observed_hours {in_hours(observed)} exceed the {in_hours(reserved)} reserved",
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
            f"the observed steps on lot {over.lot!r} span {in_hours(over.span)}, past its "
            f"{over.days}-day duration ({in_hours(Decimal(over.capacity))}) by "
            f"{in_hours(over.excess)}",
            where=f"{_ACTUAL}.steps",
            expected=f"at most {in_hours(Decimal(over.capacity))} of observed work on lot "
                     f"{over.lot!r}",
            found=in_hours(over.span),
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
    between = f"between {in_hours(base)} and {in_hours(base + extra)}" if extra else in_hours(base)
    yield Finding(
        f"observed_hours says {in_hours(stated)}, but the observed steps, run as the plan orders "
        f"them, take {between}",
        where=f"{_ACTUAL}.observed_hours",
        expected=between, found=in_hours(stated),
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
            found="none" if short.step not in observed else in_hours(observed[short.step]),
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
                expected=f"{in_hours(dev.planned)} ± {hours_text(tolerance * 100)} %",
                found=in_hours(dev.observed),
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
            f"{in_hours(hours)}",
            where=f"{_ACTUAL}.steps[{at}].observed_hours" if at is not None else _ACTUAL,
            expected=f"0 h: a dropped run never ran ({MANIFEST_FILE} "
            f"$.runs[{i}].outcome is 'dropped')", found=in_hours(hours),
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


KINDS: dict[str, Kind] = {
    "plan-vs-actual.reserved-hours": Kind(
        rule="reserved_hours is neither the plan's window nor the hours the engaged lots reserve",
        fix="record the time actually reserved: the plan's window, or the duration of the lots "
        "engaged"),
    "plan-vs-actual.observed-over-reserved": Kind(
        rule="observed_hours exceed the reserved hours",
        fix="record the longer lot engaged, or correct the observed hours"),
    "plan-vs-actual.lot-duration": Kind(
        rule="the observed steps on an engaged lot span more than its duration",
        fix="engage and pay a longer or another lot for the work past its end; or correct the "
        "observed hours"),
    "plan-vs-actual.observed-hours": Kind(
        rule="observed_hours is not the makespan of the observed steps run as the plan orders "
        "them",
        fix="state the observed makespan (first start to last end, overlaps counted once), not "
        "the sum of the steps' hours"),
    "plan-vs-actual.blank-explanation": Kind(
        rule="a deviation's explanation is blank (empty, whitespace or punctuation only)",
        fix="write what happened"),
    "plan-vs-actual.short-step": Kind(
        rule="a planned step did not run or ran less than half its hours, with no explanation",
        fix="record its observed hours (0 if it did not run) and explain it in "
        "schedule.deviations (rec.close(explanations=...))"),
    "plan-vs-actual.unplanned-step": Kind(
        rule="an observed step is not in the plan and has no explanation",
        fix="explain the unplanned step in schedule.deviations (the plan is never edited after "
        "freezing)"),
    "plan-vs-actual.deviation-unexplained": Kind(
        rule="a step deviates from its planned hours by more than the tolerance, with no "
        "explanation",
        fix="explain it in schedule.deviations (rec.close(explanations=...)); the plan stays as "
        "frozen"),
    "plan-vs-actual.stray-explanation": Kind(
        rule="a deviation explains a step that is neither planned nor observed",
        fix="name a step of the plan or of schedule.steps"),
    "plan-vs-actual.decision-repeated": Kind(
        rule="one decision id is recorded more than once",
        fix="give each decision its own id"),
    "plan-vs-actual.decision-blank": Kind(
        rule="a decision's text is blank (empty, whitespace or punctuation only)",
        fix="write what was decided and what it rests on"),
    "plan-vs-actual.decision-before-pilot": Kind(
        rule="a decision is dated before the pilot run ended",
        fix="record when the decision was really taken: after the pilot, on its result"),
    "plan-vs-actual.decision-after-point": Kind(
        rule="the first decision is dated after a run that follows the plan's decision step "
        "started",
        fix="decide at the decision point, before the runs that follow it start, and record the "
        "decision when taken"),
    "plan-vs-actual.decision-unknown": Kind(
        rule="a run cites a decision that is not recorded",
        fix="record the decision in schedule.decisions (id, text, drops/adds)"),
    "plan-vs-actual.no-decision": Kind(
        rule="a run was dropped, or added after the plan, without a recorded decision",
        fix="record the decision in schedule.decisions naming the run (drops/adds), and cite it "
        "in the run's 'decision'"),
    "plan-vs-actual.dropped-step-ran": Kind(
        rule="a dropped run's planned steps were observed to take time",
        fix="record a run that started and was abandoned as stopped or rejected; a dropped "
        "run's steps are observed at 0 h"),
    "plan-vs-actual.decision-target": Kind(
        rule="a decision drops or adds a run the manifest does not record",
        fix="record every run the decisions name in manifest runs"),
    "plan-vs-actual.decision-drop-outcome": Kind(
        rule="a decision drops a run whose outcome is not 'dropped'",
        fix="record the dropped run's outcome as 'dropped', or correct the decision"),
    **TIMELINE_KINDS,
}

CHECK = Check("plan-vs-actual", "reserved and observed time, deviations and decisions reconciled",
              plan_vs_actual, kinds=KINDS)
