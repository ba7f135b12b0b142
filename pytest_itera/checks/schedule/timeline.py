"""Recorded times fit together: part of plan-vs-actual (R9, issue 24 point 9).

The manifest records when each run started, ended or was stopped and when the campaign
was closed; the recorder's journal (``itera-journal.jsonl``, when listed) records when each
checkpoint was saved. plan-vs-actual already reconciles the observed hours with the plan;
these rules reconcile the recorded moments with the observed hours and with one another:

- every end comes at or after its start (``ended_at`` after ``started_at``);
- ``closed_at`` comes at or after every recorded moment (runs, stops, decisions, saves);
- two runs never overlap on one GPU resource (the GPU steps of ``itera-plan/2`` name their
  run and resource): runs may overlap only on different GPUs, and a lot provides at most
  ``gpus_per_lot x quantity`` of them (schedule-fits judges the lot's GPU count);
- a run whose planned steps all come (through ``after``) after every step of another run
  starts at or after that run's recorded end: times never run backwards across runs;
- a checkpoint save the journal times comes at or after its run's recorded start;
- a checkpoint save the journal times lies outside the recorded span of every other run
  on its GPU(s): a run saves on its GPU, and one GPU trains one run at a time;
- the runs whose GPU steps name one lot were recorded within its days (first start to
  last end);
- a run's recorded span (start to end or stop), less the interruptions the journal records
  within it, is at most the observed hours of the steps that name it, within the deviation
  tolerance plus the hundredth of an hour that stated hours may be rounded to (so a run of
  a few seconds is judged to 36 s, not to 10 % of its seconds); a shorter span is not a
  contradiction: a run's steps may be timed apart from its recorded start and end (an
  adapter trained after another run);
- the interval between a run's consecutive checkpoint saves, as the journal times them
  (``checkpoint`` events with an ``at``; one event per save, so a file overwritten at each
  save appears once per save), is at most the plan's
  ``checkpoint_policy.tolerable_loss_hours``, not counting the interruptions the journal
  records between them (a step resumed after its process died: no work was at risk while
  no process ran). The recorder journals each save
  (``CampaignRecorder.checkpoint_saved``) and each listing with its moment; a journal that
  times no save (an older recorder's, which journaled each file once, when listed) is not
  judged on it; a journal that times some of a run's saves but not others cannot prove it,
  when the run lasted longer than the tolerable loss.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Manifest, Plan, aware_moment
from pytest_itera.core.findings import Finding
from pytest_itera.core.journal import JOURNAL_FILE, gap_of
from pytest_itera.core.schedule import as_hours, hours_text, in_hours

CHECK_ID = "plan-vs-actual"
_SHOWN = 5  # overlaps shown one by one; the rest are counted
_MAX_JOURNAL_LINE = 1024 * 1024  # a checkpoint event is a few hundred bytes


def _hours(start: datetime, end: datetime) -> Decimal:
    return (Decimal((end - start).total_seconds()) / 3600).quantize(Decimal("0.0001"))


def _at(moment: datetime) -> str:
    return moment.isoformat()


@dataclass(frozen=True)
class Span:
    """A run's recorded life: its start, and its end (``ended_at``, else ``stop.at``)."""

    run: str
    index: int  # in the manifest's runs
    start: datetime
    end: datetime
    end_field: str  # "ended_at" or "stop.at"

    @property
    def hours(self) -> Decimal:
        return _hours(self.start, self.end)


@dataclass(frozen=True)
class Save:
    """A checkpoint save the journal timed."""

    run: str
    path: str
    at: datetime
    line: int


@dataclass(frozen=True)
class Saves:
    """What the journal says about checkpoint saves: timed ones, untimed ones, bad times."""

    timed: tuple[Save, ...] = ()
    untimed: tuple[tuple[str, str, int], ...] = ()  # (run, path, line)
    bad: tuple[tuple[int, str], ...] = ()  # (line, why)
    # The interruptions the journal records (a step or a run resumed after its process
    # died): from the last moment it recorded to the resumption, no work was done, so none
    # was at risk.
    pauses: tuple[tuple[datetime, datetime], ...] = ()

    def worked(self, start: datetime, end: datetime) -> Decimal:
        """The hours from ``start`` to ``end`` less the interruptions within them."""
        idle, reached = timedelta(0), start
        for since, until in sorted(self.pauses):  # overlapping records count once
            since, until = max(since, reached), min(until, end)
            if until > since:
                idle += until - since
                reached = until
        return _hours(start, end - idle)


def spans(man: Manifest) -> list[Span]:
    """The runs whose start and end are both recorded, in the manifest's order."""
    found = (span(run.id, i, run.started_at, run.ended_at,
                  run.stop.at if run.stop is not None else None)
             for i, run in enumerate(man.runs))
    return [s for s in found if s is not None]


def span(run: str, index: int, started: datetime | None, ended: datetime | None,
         stopped: datetime | None) -> Span | None:
    """A run's recorded life (the checks' and the recorder's): from its start to its end,
    ``ended_at``, else its stop's moment; None until both are recorded."""
    end, field = (ended, "ended_at") if ended is not None else (stopped, "stop.at")
    return None if started is None or end is None else Span(run, index, started, end, field)


def times_fit(
    ctx: Context, plan: Plan, man: Manifest, *, tolerance: Decimal, rounding: Decimal
) -> Iterator[Finding]:
    """Every rule of this module, in the order a reader checks a timeline."""
    recorded = spans(man)
    saves = journal_saves(ctx, man)
    yield from ends_after_starts(man)
    yield from closed_last(man, saves)
    ordered = [s for s in recorded if s.end >= s.start]
    yield from gpu_overlaps(plan, ordered)
    yield from runs_in_step_order(plan, ordered, rounding)
    yield from runs_within_lots(plan, ordered, rounding)
    yield from saves_after_starts(ordered, saves)
    yield from saves_during_other_runs(plan, ordered, saves)
    yield from span_fits_steps(plan, man, ordered, tolerance, rounding, saves)
    yield from save_intervals(plan, ordered, saves)


# ------------------------------------------------------------------ order of moments


def ends_after_starts(man: Manifest) -> Iterator[Finding]:
    """A run ends at or after it starts (stop.at before started_at is stop-records')."""
    for i, run in enumerate(man.runs):
        if run.started_at is not None and run.ended_at is not None \
                and run.ended_at < run.started_at:
            yield Finding(
                f"run {run.id} ends before it starts: ended_at {_at(run.ended_at)} is "
                f"{in_hours(_hours(run.ended_at, run.started_at))} before started_at "
                f"{_at(run.started_at)}",
                where=f"{MANIFEST_FILE} $.runs[{i}].ended_at",
                expected=f"at or after {_at(run.started_at)}", found=_at(run.ended_at),
                hint="record the moments the run really started and ended (UTC, with their "
                "zone): the recorder writes them at start() and at its outcome",
                code=f"{CHECK_ID}.end-before-start")


def closed_last(man: Manifest, saves: Saves) -> Iterator[Finding]:
    """``closed_at`` comes at or after every moment the campaign records."""
    moments = [(what, f"{MANIFEST_FILE} {path}", moment) for what, path, moment in man.moments()]
    for save in saves.timed:
        moments.append((f"checkpoint {save.path} of run {save.run} was saved",
                        f"{JOURNAL_FILE}:{save.line}", save.at))
    later = [m for m in moments if m[2] > man.closed_at]
    for what, where, moment in sorted(later, key=lambda m: m[2])[-1:]:
        others = f" (and {len(later) - 1} other recorded moments)" if len(later) > 1 else ""
        yield Finding(
            f"the manifest was closed at {_at(man.closed_at)}, "
            f"{in_hours(_hours(man.closed_at, moment))} before {what} ({where}){others}",
            where=f"{MANIFEST_FILE} $.closed_at",
            expected=f"at or after {_at(moment)}, the last recorded moment",
            found=_at(man.closed_at),
            hint="a campaign is closed after everything it records: record the moment the "
            "manifest was really written (the recorder's close() does), or correct the "
            "moment recorded after it",
            code=f"{CHECK_ID}.closed-before")


# --------------------------------------------------------------------- GPU overlaps


def gpu_runs(plan: Plan) -> dict[str, list[tuple[str, str | None]]]:
    """Run id -> the (GPU resource, lot) pairs its planned steps name (itera-plan/2)."""
    out: dict[str, list[tuple[str, str | None]]] = {}
    for step in plan.schedule.steps:
        if step.run is None or not sched.is_gpu(step.resource):
            continue
        place = (step.resource, sched.lot_of(step, plan.budget.lots))
        if place not in out.setdefault(step.run, []):
            out[step.run].append(place)
    return out


def gpu_overlaps(plan: Plan, recorded: Sequence[Span]) -> Iterator[Finding]:
    """Two runs that name one GPU resource never overlap in their recorded times."""
    places = gpu_runs(plan)
    by_place: dict[tuple[str, str | None], list[Span]] = {}
    for span in recorded:
        for place in places.get(span.run, ()):
            by_place.setdefault(place, []).append(span)
    found: dict[tuple[str, str], tuple[Span, Span, tuple[str, str | None]]] = {}
    for place, on_it in sorted(by_place.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        holder: Span | None = None  # the run whose recorded end is the latest so far
        for span in sorted(on_it, key=lambda s: (s.start, s.end, s.index)):
            if holder is not None and span.start < holder.end:
                found.setdefault((holder.run, span.run), (holder, span, place))
            if holder is None or span.end > holder.end:
                holder = span
    pairs = sorted(found.values(), key=lambda f: (f[1].start, f[1].index))
    for first, second, (resource, lot) in pairs[:_SHOWN]:
        overlap = _hours(second.start, min(first.end, second.end))
        on = f"GPU {resource!r}" + (f" of lot {lot!r}" if lot else "")
        yield Finding(
            f"runs {first.run} and {second.run} overlap on {on}: {first.run} ran from "
            f"{_at(first.start)} to {_at(first.end)}, {second.run} started at "
            f"{_at(second.start)} ({in_hours(overlap)} of overlap)",
            where=f"{MANIFEST_FILE} $.runs[{second.index}].started_at",
            expected=f"{second.run} starts at or after {_at(first.end)} ({first.run}'s "
            f"{first.end_field}): one GPU trains one run at a time",
            found=_at(second.start),
            hint="record when each run really started and ended; runs that trained at the "
            f"same time name different GPUs in {PLAN_FILE} $.schedule.steps[].resource, on "
            "lots that provide them (gpus_per_lot x quantity)",
            code=f"{CHECK_ID}.gpu-overlap")
    if len(pairs) > _SHOWN:
        yield Finding(f"... and {len(pairs) - _SHOWN} more pairs of runs overlap on a GPU",
                      where=f"{MANIFEST_FILE} $.runs", code=f"{CHECK_ID}.gpu-overlap")


# ------------------------------------------------------- runs in the plan's order


def runs_in_step_order(plan: Plan, recorded: Sequence[Span], rounding: Decimal
                       ) -> Iterator[Finding]:
    """A run whose every planned step comes (through ``after``) after every step of another
    run starts at or after that run's recorded end, whatever their resources: the plan's
    order is the order the work was done in, and times never run backwards across runs."""
    ancestors = sched.ancestors(plan.schedule.steps)
    steps: dict[str, list[str]] = {}
    for step in plan.schedule.steps:
        if step.run is not None:
            steps.setdefault(step.run, []).append(step.id)
    slack = timedelta(hours=float(rounding))
    for later in recorded:
        for earlier in recorded:
            mine, theirs = steps.get(later.run), steps.get(earlier.run)
            if later.run == earlier.run or not mine or not theirs \
                    or not all(set(theirs) <= ancestors.get(s, frozenset()) for s in mine):
                continue
            if later.start + slack >= earlier.end:
                continue
            yield Finding(
                f"run {later.run} started at {_at(later.start)}, "
                f"{in_hours(_hours(later.start, earlier.end))} before run {earlier.run} ended "
                f"({earlier.end_field} {_at(earlier.end)}), but the plan puts every step of "
                f"{later.run} ({', '.join(repr(s) for s in mine)}) after every step of "
                f"{earlier.run} ({', '.join(repr(s) for s in theirs)})",
                where=f"{MANIFEST_FILE} $.runs[{later.index}].started_at",
                expected=f"at or after {_at(earlier.end)}", found=_at(later.start),
                hint="record when each run really started and ended; work done in another "
                f"order than planned is a deviation: explain it in {MANIFEST_FILE} "
                "$.schedule.deviations and keep the recorded times true (never reorder them)",
                code=f"{CHECK_ID}.run-order")


def runs_within_lots(plan: Plan, recorded: Sequence[Span], rounding: Decimal
                     ) -> Iterator[Finding]:
    """The runs whose GPU steps all name one lot ran inside its duration: from the first
    recorded start to the last recorded end is at most its days x 24 h (a lot is rented for
    its days; its runs cannot start before it began nor end after it ended)."""
    places = gpu_runs(plan)
    for lot in plan.budget.lots:
        on_it = [s for s in recorded if places.get(s.run)
                 and all(place_lot == lot.id for _, place_lot in places[s.run])]
        if not on_it:
            continue
        first = min(on_it, key=lambda s: (s.start, s.index))
        last = max(on_it, key=lambda s: (s.end, -s.index))
        span = _hours(first.start, last.end)
        limit = Decimal(lot.days * 24)
        if span <= limit + rounding:
            continue
        yield Finding(
            f"the runs on lot {lot.id!r} were recorded over {in_hours(span)}, from {first.run}'s "
            f"start at {_at(first.start)} to {last.run}'s {last.end_field} at "
            f"{_at(last.end)}, longer than the lot's {lot.days} days ({in_hours(limit)}) by "
            f"{in_hours(span - limit)}",
            where=f"{MANIFEST_FILE} $.runs[{last.index}].{last.end_field}",
            expected=f"at most {in_hours(limit)} from the first run's start to the last run's end",
            found=in_hours(span),
            hint="a lot is rented for its days: record the runs' real start and end, and "
            "engage (and pay) the lot that covered the work past its end",
            code=f"{CHECK_ID}.lot-recorded-span")


# ----------------------------------------------------------- span vs observed hours


def span_fits_steps(
    plan: Plan, man: Manifest, recorded: Sequence[Span], tolerance: Decimal, rounding: Decimal,
    saves: Saves | None = None,
) -> Iterator[Finding]:
    """A run's recorded span is at most its steps' observed hours (within the tolerance);
    the interruptions the journal records within the span are not in either (a step's
    observed hours never count them)."""
    pauses = saves if saves is not None else Saves()
    try:
        observed = sched.observed_hours(man.schedule.steps)
    except (TypeError, ValueError):
        return  # plan-vs-actual reports unreadable hours
    steps: dict[str, list[str]] = {}
    for step in plan.schedule.steps:
        if step.run is not None:
            steps.setdefault(step.run, []).append(step.id)
    for span in recorded:
        mine = steps.get(span.run)
        if not mine:
            continue  # no step names the run (itera-plan/1): nothing to compare with
        total = sum((observed.get(s, Decimal(0)) for s in mine), Decimal(0))
        allowed = total * (1 + tolerance) + rounding
        worked = pauses.worked(span.start, span.end)
        if worked <= allowed:
            continue
        parts = ", ".join(f"{s!r} {in_hours(observed.get(s, Decimal(0)))}" for s in mine)
        idle = span.hours - worked
        yield Finding(
            f"run {span.run}'s recorded times span {in_hours(worked)} (started_at "
            f"{_at(span.start)} to {span.end_field} {_at(span.end)}"
            + (f", not counting {in_hours(idle)} of interruption" if idle else "")
            + f"), but the steps that name it were observed to take {in_hours(total)} ({parts})",
            where=f"{MANIFEST_FILE} $.runs[{span.index}].{span.end_field}",
            expected=f"at most {in_hours(total)} + {hours_text(tolerance * 100)} % (the deviation "
            f"tolerance) + {in_hours(rounding)} (rounding): {in_hours(allowed.quantize(rounding))}",
            found=in_hours(worked),
            hint="the run's recorded start and end and its steps' observed hours must tell the "
            f"same story: record the steps' real observed hours in {MANIFEST_FILE} "
            "$.schedule.steps (explaining the deviation), or the run's real start and end",
            code=f"{CHECK_ID}.run-span")


# ------------------------------------------------------------ checkpoint save times


def journal_saves(ctx: Context, man: Manifest) -> Saves:
    """The checkpoint saves of the listed journal (memoised); none without a journal."""
    if not any(f.path == JOURNAL_FILE for f in man.files):
        return Saves()
    path = ctx.regular_file(JOURNAL_FILE)
    if isinstance(path, str):
        return Saves()  # files-intact says what is wrong with a listed file
    journal: Path = path
    found: Saves = ctx.memo("timeline:saves", lambda: read_saves(journal))
    return found


def read_saves(path: Path) -> Saves:
    """Stream the journal: each ``checkpoint`` event, with its ``at`` when it has one."""
    timed: list[Save] = []
    untimed: list[tuple[str, str, int]] = []
    bad: list[tuple[int, str]] = []
    pauses: list[tuple[datetime, datetime]] = []
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n") or len(raw) > _MAX_JOURNAL_LINE:
                    continue  # a torn last line
                if b'"interrupted"' in raw:
                    pauses += _pause(_event(raw))
                if b'"checkpoint"' not in raw:
                    continue  # another event
                event = _event(raw)
                if event is None or event.get("event") != "checkpoint":
                    continue
                run, ckpt, at = event.get("run"), event.get("path"), event.get("at")
                if not isinstance(run, str) or not isinstance(ckpt, str):
                    continue  # the journal's own check says so
                if at is None:
                    untimed.append((run, ckpt, number))
                    continue
                moment = aware_moment(at)
                if moment is None:
                    bad.append((number, f"checkpoint {ckpt}: 'at' {at!r} is not a timestamp "
                                "with its zone"))
                else:
                    timed.append(Save(run, ckpt, moment, number))
    except OSError:
        return Saves()
    return Saves(tuple(timed), tuple(untimed), tuple(bad), tuple(pauses))


def _pause(event: Mapping[str, object] | None) -> list[tuple[datetime, datetime]]:
    """A step's interruption (``since`` to ``until``), or the time no process ran before
    a continuation that found runs open (``resumed``), when the event records one."""
    gap = gap_of(event) if event is not None else None
    if gap is None or gap.kind != "interrupted":
        return []
    since, until = aware_moment(gap.since), aware_moment(gap.until)
    return [(since, until)] if since is not None and until is not None and since < until \
        else []


def _event(raw: bytes) -> Mapping[str, object] | None:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def saves_after_starts(recorded: Sequence[Span], saves: Saves) -> Iterator[Finding]:
    """A run saves its checkpoints after it starts: a save the journal times before the
    run's recorded start belongs to something else (another run, another campaign)."""
    started = {s.run: s for s in recorded}
    for save in saves.timed:
        span = started.get(save.run)
        if span is None or save.at >= span.start:
            continue
        yield Finding(
            f"checkpoint {save.path} of run {save.run} was saved at {_at(save.at)}, "
            f"{in_hours(_hours(save.at, span.start))} before the run started "
            f"({_at(span.start)})",
            where=f"{JOURNAL_FILE}:{save.line}",
            expected=f"a save at or after {_at(span.start)} ({MANIFEST_FILE} "
            f"$.runs[{span.index}].started_at)", found=_at(save.at),
            hint="a checkpoint is saved by its own run while it runs: list the run that "
            "really saved it, or record the run's real start",
            code=f"{CHECK_ID}.save-before-start")


def saves_during_other_runs(plan: Plan, recorded: Sequence[Span],
                            saves: Saves) -> Iterator[Finding]:
    """A run that saves a checkpoint is on its GPU: a save the journal times strictly inside
    another run's recorded span, where every GPU of the saving run is one the other run's
    steps name, puts two runs on one GPU at once."""
    places = gpu_runs(plan)
    shown = 0
    for save in saves.timed:
        mine = set(places.get(save.run, ()))
        if not mine:
            continue
        other = next((s for s in recorded if s.run != save.run and s.start < save.at < s.end
                      and mine <= set(places.get(s.run, ()))), None)
        if other is None:
            continue
        shown += 1
        if shown > _SHOWN:
            continue
        resources = ", ".join(repr(r) for r, _ in sorted(mine, key=lambda p: p[0]))
        yield Finding(
            f"checkpoint {save.path} of run {save.run} was saved at {_at(save.at)}, while run "
            f"{other.run} ran on the same GPU ({resources}) from {_at(other.start)} to "
            f"{_at(other.end)}",
            where=f"{JOURNAL_FILE}:{save.line}",
            expected=f"a save outside {other.run}'s recorded span ({MANIFEST_FILE} "
            f"$.runs[{other.index}].started_at to {other.end_field}): one GPU trains one run "
            "at a time", found=_at(save.at),
            hint="record when each run really started and ended, and list each checkpoint "
            "under the run that saved it; runs that trained at the same time name different "
            f"GPUs in {PLAN_FILE} $.schedule.steps[].resource",
            code=f"{CHECK_ID}.save-during-run")
    if shown > _SHOWN:
        yield Finding(f"... and {shown - _SHOWN} more checkpoint saves timed during another "
                      "run on the same GPU", where=JOURNAL_FILE, code=f"{CHECK_ID}.save-during-run")


def save_intervals(plan: Plan, recorded: Sequence[Span], saves: Saves) -> Iterator[Finding]:
    """Consecutive saves of a run are at most ``tolerable_loss_hours`` apart."""
    tolerable = as_hours(plan.checkpoint_policy.tolerable_loss_hours)
    for line, why in saves.bad:
        yield Finding(
            f"cannot prove the checkpoint save interval: {JOURNAL_FILE} line {line}: {why}",
            where=f"{JOURNAL_FILE}:{line}",
            hint="the recorder writes each save's moment as an ISO-8601 UTC timestamp; "
            "restore the journal as it was written",
            code=f"{CHECK_ID}.save-times-unproven")
    by_run: dict[str, list[Save]] = {}
    for save in saves.timed:
        by_run.setdefault(save.run, []).append(save)
    lasted = {s.run: s.hours for s in recorded}
    untimed: dict[str, list[tuple[str, int]]] = {}
    for run, ckpt, line in saves.untimed:
        untimed.setdefault(run, []).append((ckpt, line))
    for run, missing in sorted(untimed.items()):
        # A journal that times saves, but not these, while the run lasted long enough to
        # need more than one: the interval cannot be judged.
        if saves.timed and lasted.get(run, Decimal(0)) > tolerable:
            ckpt, line = missing[0]
            yield Finding(
                f"cannot prove that run {run} saved a checkpoint at least every "
                f"{in_hours(tolerable)} (checkpoint_policy.tolerable_loss_hours): {JOURNAL_FILE} "
                f"line {line} records checkpoint {ckpt} without the moment it was saved"
                + (f" ({len(missing) - 1} more)" if len(missing) > 1 else ""),
                where=f"{JOURNAL_FILE}:{line}",
                expected="each checkpoint event with its 'at'",
                hint="journal every save of the run with the moment it happened ('at', an "
                "ISO-8601 UTC timestamp), or none of them",
                code=f"{CHECK_ID}.save-times-unproven")
    for run, timed in sorted(by_run.items()):
        ordered = sorted(timed, key=lambda s: (s.at, s.line))
        for before, after in pairwise(ordered):
            gap = saves.worked(before.at, after.at)
            if gap <= tolerable:
                continue
            idle = _hours(before.at, after.at) - gap
            yield Finding(
                f"run {run} saved {before.path} at {_at(before.at)} and its next checkpoint "
                f"{after.path} at {_at(after.at)}: {in_hours(gap)} apart"
                + (f" (not counting {in_hours(idle)} of interruption)" if idle else "")
                + f", more than the {in_hours(tolerable)} the plan tolerates losing",
                where=f"{JOURNAL_FILE}:{after.line}",
                expected=f"consecutive saves at most {in_hours(tolerable)} apart "
                f"({PLAN_FILE} $.checkpoint_policy.tolerable_loss_hours)",
                found=in_hours(gap),
                hint="save more often (checkpoint_policy.interval_hours): a crash between these "
                "saves would have lost more work than the plan accepts",
                code=f"{CHECK_ID}.save-interval")


TIMELINE_KINDS: dict[str, Kind] = {
    f"{CHECK_ID}.end-before-start": Kind(
        rule="a run's recorded ended_at comes before its started_at",
        fix="record the moments the run really started and ended (UTC, with their zone)"),
    f"{CHECK_ID}.closed-before": Kind(
        rule="closed_at comes before a moment the campaign records (a run's start, end or "
        "stop, a decision, a journaled checkpoint save)",
        fix="record the moment the manifest was really written, or correct the moment "
        "recorded after it"),
    f"{CHECK_ID}.gpu-overlap": Kind(
        rule="two runs whose planned steps name the same GPU resource overlap in their "
        "recorded times",
        fix="record when each run really started and ended; runs trained at the same time "
        "name different GPUs"),
    f"{CHECK_ID}.run-order": Kind(
        rule="a run whose planned steps all come after another run's started before that "
        "run's recorded end",
        fix="record the real start and end; explain work done in another order in "
        "schedule.deviations"),
    f"{CHECK_ID}.lot-recorded-span": Kind(
        rule="the runs on one lot were recorded, first start to last end, over more than "
        "the lot's days",
        fix="record the runs' real start and end, and engage (and pay) the lot that covered "
        "the work past its end"),
    f"{CHECK_ID}.run-span": Kind(
        rule="a run's recorded span, less its interruptions, exceeds its steps' observed "
        "hours plus the tolerance",
        fix="record the steps' real observed hours (explaining the deviation), or the run's "
        "real start and end"),
    f"{CHECK_ID}.save-before-start": Kind(
        rule="the journal times a checkpoint save before its run's recorded start",
        fix="list the run that really saved the checkpoint, or record the run's real start"),
    f"{CHECK_ID}.save-during-run": Kind(
        rule="the journal times a checkpoint save inside another run's recorded span on the "
        "same GPU",
        fix="record when each run really started and ended, and list each checkpoint under "
        "the run that saved it"),
    f"{CHECK_ID}.save-times-unproven": Kind(
        rule="the journal times some checkpoint saves but not all (or unreadably): the save "
        "interval cannot be proven",
        fix="journal every save with the moment it happened ('at', ISO-8601 UTC), or none "
        "of them"),
    f"{CHECK_ID}.save-interval": Kind(
        rule="consecutive checkpoint saves of a run are further apart than the plan's "
        "tolerable_loss_hours",
        fix="save more often (checkpoint_policy.interval_hours)"),
}
