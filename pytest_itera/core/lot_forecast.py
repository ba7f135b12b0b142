"""The lot's end, forecast while the campaign runs (issue 37): what ``watch`` judges.

Pure arithmetic over the frozen plan and the journal's events up to a moment ``now``; no
file is read here. The journal says what ran:

- a step timed by the recorder: ``step-start`` (running since ``at``), ``step`` (its hours
  worked; with an ``interrupted`` object it resumed after a restart and runs again since
  ``interrupted.until``);
- a run: ``run-start``, then its outcome (``accepted``, ``stopped``, ``rejected``); a
  decision's ``drops`` takes runs out. A journal without step events (the example's) is
  read through its runs: an accepted run's span, less its restarts, is the work of its
  first chain of steps (each after the one before), split in proportion to their planned
  hours; a stopped or rejected run's steps left are dropped (they never run);
- every step before a started step, through ``after`` or on the same resource, is done;
  a step whose every predecessor is done and that no event times runs since the last
  moment the journal records (setup, a decision, the analysis).

Each step left takes its hours from this campaign's observed rate for its kind
(:func:`pytest_itera.core.schedule.forecast`: measured/planned hours of the finished steps
of that kind); a running step, what its forecast hours leave after the hours it has
worked. The time a restart lost is in the past: it is in ``now`` once and never again,
neither as work nor as a forecast. The steps left are laid out from ``now`` with the plan's
rules (:func:`pytest_itera.core.schedule.makespan`), each engaged lot's clock running since
its start (the first lot's: the journal's first moment, when the recorder froze the plan on
the rented machine; another lot's: the first event of one of its steps or runs), the
retrieval counted on the lot whose files it fetches, and the ``lead`` the user keeps before
the lot's end. A negative margin comes with the smallest set of useful or exploratory runs
not started whose steps, dropped, make it fit (:func:`pytest_itera.core.schedule.reduced_protocol`,
must runs never), or the next lot's advice, and the last safe moment to start the retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_UP, Decimal
from itertools import pairwise
from typing import Any, Literal

from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Lot, Plan, Step, aware_moment
from pytest_itera.core.money import Catalogue, overflow_advice
from pytest_itera.core.open_facts import OpenFacts
from pytest_itera.core.schedule import ObservedStep, as_hours, hours_text
from pytest_itera.core.text import size_text

__all__ = ["LotEnd", "LotForecast", "PushTime", "RuleFired", "RunProgress", "SaveGap",
           "StepProgress", "Upload", "events_until", "forecast_lot", "rate_of"]

OUTCOMES = frozenset({"accepted", "stopped", "rejected"})
# Events whose ``at`` is when they happened (a checkpoint listing's ``at`` is its save's).
_TIMED = frozenset({"plan", "run-start", "accepted", "stopped", "rejected", "decide",
                    "step-start", "step", "resumed", "close", "reopen", "clock", "checkpoint"})
_ROOT = "itera:elapsed"  # the laid-out schedule's steps for the time each lot already ran
_LEAD = "itera:lead"
_HOUR = Decimal(3600)
RENTAL_SOURCE = "the journal's first event (no lot start recorded)"
MAX_HOURS = Decimal(10**6)  # a journal's hours above this (114 years) are no measure
State = Literal["done", "running", "pending", "dropped"]


def moment_of(event: Mapping[str, Any]) -> datetime | None:
    """When an event happened; None for one that does not say (a log line, a listing)."""
    if event.get("event") not in _TIMED or (event.get("event") == "checkpoint"
                                            and "format" in event):
        return None
    return aware_moment(event.get("at"))


def events_until(events: Sequence[Mapping[str, Any]],
                 now: datetime) -> list[Mapping[str, Any]]:
    """The journal as of ``now``: its events up to the first that happened later."""
    for index, event in enumerate(events):
        moment = moment_of(event)
        if moment is not None and moment > now:
            return list(events[:index])
    return list(events)


def hours_between(start: datetime, end: datetime) -> Decimal:
    """Hours from ``start`` to ``end`` (negative when ``end`` is earlier), to the second."""
    return Decimal(round((end - start).total_seconds())) / _HOUR


def at_hours(start: datetime, hours: Decimal) -> datetime:
    return start + timedelta(seconds=float(hours * _HOUR))


@dataclass(frozen=True)
class StepProgress:
    """One planned step as of ``now``: its state, the work it did and what is left."""

    step: str
    kind: str
    run: str | None
    state: State
    worked: Decimal  # hours of work observed (measured, or elapsed while running)
    measured: bool  # its hours are measured (a step event, or an accepted run's span)
    remaining: Decimal  # forecast hours still to work
    end: datetime | None  # forecast end (None: done or dropped)


@dataclass(frozen=True)
class RunProgress:
    """One planned run: a progress line of the status."""

    run: str
    category: str
    state: Literal["done", "running", "pending", "dropped", "stopped"]
    worked: Decimal
    remaining: Decimal
    end: datetime | None  # forecast end of its last step left
    late: bool  # its last step ends after its lot's deadline (the end less the lead)


@dataclass(frozen=True)
class LotEnd:
    """One lot's end against the forecast: the margin left after the lead."""

    lot: str
    days: int
    start: datetime | None  # None: none of its steps has started nor will
    end: datetime | None
    engaged: bool  # its clock runs already
    span: Decimal  # hours from its start to its forecast last step (retrieval and lead in)
    margin: Decimal  # hours left before the deadline (negative: it will not fit)
    retrieval_start: datetime | None  # the last safe moment to start its retrieval
    advice: str | None  # the next lot's cost when it overflows


@dataclass(frozen=True)
class RuleFired:
    run: str
    rule: str
    at: datetime | None
    reason: str


@dataclass(frozen=True)
class SaveGap:
    """A training run that went longer without a checkpoint save than the tolerable loss
    allows (:func:`pytest_itera.core.schedule.max_save_interval`): a crash then loses more."""

    run: str
    since: datetime  # its start or its last save before the gap
    until: datetime  # the next save, its outcome, or now
    hours: Decimal
    allowed: Decimal

    def describe(self) -> str:
        return (f"run {self.run} went {_h(self.hours)} without a checkpoint save (from "
                f"{_iso(self.since)} to {_iso(self.until)}), over the {_h(self.allowed)} the "
                "tolerable loss allows (interval + save cost)")


@dataclass(frozen=True)
class Upload:
    """What the retrieval has to move: the folder's bytes now, at the upload rate the user
    measured (``python -m pytest_itera push`` prints it), in bytes per second."""

    bytes: int
    rate: Decimal  # bytes per second, > 0

    @property
    def hours(self) -> Decimal:
        return Decimal(self.bytes) / self.rate / _HOUR


_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|[KMGT]?bit|B)?\s*(?:/\s*s)?\s*",
                   re.IGNORECASE)
_RATE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 1 << 10,
               "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def rate_of(text: str) -> Decimal:
    """An upload rate in bytes per second, from ``40MiB/s``, ``300 Mbit/s``, ``1.5GB/s`` or a
    number of bytes per second; ValueError when it is none, or not above 0."""
    found = _RATE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not a rate (e.g. 40MiB/s, 300Mbit/s)")
    number, unit = Decimal(found[1]), (found[2] or "B").lower()
    if unit.endswith("bit"):
        rate = number * _RATE_UNITS.get(unit.removesuffix("it"), 1) / 8
    else:
        rate = number * _RATE_UNITS[unit]
    if rate <= 0:
        raise ValueError(f"{text!r}: a rate must be above 0")
    return rate


@dataclass(frozen=True)
class PushTime:
    """The push counted in the retrieval: its hours, and what the plan's retrieval steps left
    had before (when the push takes longer, the last of them takes the difference)."""

    upload: Upload
    planned: Decimal  # the forecast hours of the retrieval steps left, before the push
    step: str | None  # the retrieval step lengthened (None: the plan's hours cover it)
    steps_left: int  # retrieval steps not done (0: nothing to count it on)

    @property
    def added(self) -> Decimal:
        return max(Decimal(0), self.upload.hours - self.planned) if self.steps_left else \
            Decimal(0)

    def describe(self) -> str:
        moved = (f"the push of {size_text(self.upload.bytes)} at "
                 f"{size_text(int(self.upload.rate))}/s takes {_h(self.upload.hours)}")
        if not self.steps_left:
            return f"{moved}: no retrieval step is left in the plan to count it on"
        if self.step is None:
            return (f"{moved}, within the {_h(self.planned)} the retrieval steps left are "
                    "forecast")
        return (f"{moved}, {_h(self.added)} more than the {_h(self.planned)} the retrieval "
                f"steps left are forecast: counted on step {self.step!r}")


@dataclass(frozen=True)
class LotForecast:
    """The judgement of an open campaign at ``now`` (typed; ``watch --json`` writes it)."""

    campaign: str
    now: datetime
    lead: Decimal
    rental_start: datetime | None
    end: datetime  # when the last step left is forecast to end
    steps: tuple[StepProgress, ...]
    runs: tuple[RunProgress, ...]
    lots: tuple[LotEnd, ...]
    ratios: Mapping[str, Decimal]  # step kind -> observed / planned hours
    lost_hours: Decimal  # time restarts lost, counted once (it is in ``now`` already)
    drop: tuple[str, ...]  # the smallest set of optional runs to drop (empty: none needed)
    drop_fits: bool  # dropping ``drop`` makes every lot fit
    rules: tuple[RuleFired, ...]
    saves: tuple[SaveGap, ...]  # training runs over the save interval so far
    closed: bool
    events: int  # journal events judged
    notes: tuple[str, ...] = field(default_factory=tuple)
    # What else is judged on the open campaign (the folder's files: pytest_itera.watch.judged)
    facts: OpenFacts = field(default_factory=OpenFacts)
    push: PushTime | None = None  # the push counted in the retrieval (an upload rate given)

    @property
    def rental_source(self) -> str | None:
        """Where :attr:`rental_start` comes from, said in the status. Neither the plan nor
        the journal records a lot's start: ``frozen_at`` may precede the rental (a plan
        frozen before renting), a receipt or quote says a day (``issued_on``), not a moment;
        the recorder journals the plan on the rented machine, at its first moment."""
        return RENTAL_SOURCE if self.rental_start is not None else None

    @property
    def margin(self) -> Decimal | None:
        """The smallest lot margin; None without lots."""
        return min((lot.margin for lot in self.lots), default=None)

    @property
    def on_track(self) -> bool:
        return self.margin is None or self.margin >= 0

    @property
    def late_musts(self) -> tuple[str, ...]:
        return tuple(r.run for r in self.runs if r.late and r.category == "must")

    @property
    def retrieval_start(self) -> datetime | None:
        """The last safe moment to start the retrieval (the earliest over the lots)."""
        return min((lot.retrieval_start for lot in self.lots
                    if lot.retrieval_start is not None), default=None)

    def warning(self) -> str | None:
        """What to do when the margin is negative, in the guide's terms; None on track."""
        if self.on_track:
            return None
        over = [lot for lot in self.lots if lot.margin < 0]
        head = "; ".join(f"lot {lot.lot} ends {_iso(lot.end)}: the forecast overruns it by "
                         f"{_h(-lot.margin)} (lead {_h(self.lead)} kept)" for lot in over)
        if self.drop and self.drop_fits:
            todo = (f"drop {', '.join(self.drop)} (the smallest set of optional runs not "
                    "started; must runs are never dropped)")
        else:
            advice = [lot.advice for lot in over if lot.advice]
            todo = "; ".join(advice) if advice else "consider the next lot"
            if self.drop:
                todo = f"dropping {', '.join(self.drop)} is not enough: {todo}"
        safe = self.retrieval_start
        tail = f"; start the retrieval by {_iso(safe)} at the latest" if safe else ""
        return f"WARNING {head}: {todo}{tail}"


def _h(hours: Decimal) -> str:
    return f"{hours_text(hours.quantize(Decimal('0.01'), rounding=ROUND_UP))} h"


def _iso(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else "(unknown)"


# ------------------------------------------------------------------ what the journal says


@dataclass
class _Seen:
    """The journal's facts, read once, in order."""

    worked: dict[str, Decimal] = field(default_factory=dict)  # step -> hours of step events
    running: dict[str, datetime] = field(default_factory=dict)  # step -> running since
    finished: set[str] = field(default_factory=set)
    ended: dict[str, datetime] = field(default_factory=dict)  # finished step -> its end
    run_start: dict[str, datetime] = field(default_factory=dict)
    outcome: dict[str, tuple[str, datetime | None]] = field(default_factory=dict)
    run_lost: dict[str, Decimal] = field(default_factory=dict)
    saves: dict[str, list[datetime]] = field(default_factory=dict)  # run -> its saves
    dropped: set[str] = field(default_factory=set)
    rules: list[RuleFired] = field(default_factory=list)
    lost: Decimal = Decimal(0)
    first: datetime | None = None
    last: datetime | None = None
    closed: bool = False
    notes: list[str] = field(default_factory=list)


def _read(events: Iterable[Mapping[str, Any]]) -> _Seen:
    seen = _Seen()
    for line, event in enumerate(events, 1):
        moment = moment_of(event)
        if moment is not None:
            if seen.last is not None and moment < seen.last:
                seen.notes.append(f"journal line {line} ({event.get('event')}) is at "
                                  f"{_iso(moment)}, before {_iso(seen.last)}: the clock went "
                                  "backwards; it is read as the later moment")
                moment = seen.last
            seen.first = seen.first or moment
            seen.last = moment
        _apply(seen, event, moment)
    return seen


def _apply(seen: _Seen, event: Mapping[str, Any], moment: datetime | None) -> None:
    kind, run = event.get("event"), event.get("run")
    if kind in ("step-start", "step") and isinstance(event.get("step"), str):
        _step_event(seen, event, moment)
    elif kind == "run-start" and isinstance(run, str) and moment is not None:
        seen.run_start.setdefault(run, moment)
    elif kind in OUTCOMES and isinstance(run, str):
        seen.outcome[run] = (str(kind), moment)
        if kind == "stopped":
            seen.rules.append(RuleFired(run, str(event.get("rule")), moment,
                                        str(event.get("reason", ""))))
    elif kind == "decide" and isinstance(drops := event.get("drops"), list):
        seen.dropped.update(r for r in drops if isinstance(r, str))
    elif kind == "resumed":
        lost = _lost(event)
        seen.lost += lost
        runs = event.get("runs")
        for name in runs if isinstance(runs, list) else ():
            if isinstance(name, str):
                seen.run_lost[name] = seen.run_lost.get(name, Decimal(0)) + lost
    elif kind == "checkpoint" and isinstance(run, str) and moment is not None:
        seen.saves.setdefault(run, []).append(moment)
    elif kind == "close":
        seen.closed = True
    elif kind == "reopen":
        seen.closed = False


def _step_event(seen: _Seen, event: Mapping[str, Any], moment: datetime | None) -> None:
    step = str(event["step"])
    if event["event"] == "step-start":
        if moment is not None:
            seen.running[step] = moment
        return
    hours = _hours_field(event.get("hours", 0))
    seen.worked[step] = seen.worked.get(step, Decimal(0)) + hours
    gap = event.get("interrupted")
    until = aware_moment(gap.get("until")) if isinstance(gap, dict) else None
    if until is not None:  # resumed after a restart: it runs again since then
        seen.lost += _lost(event)
        seen.running[step] = until
        return
    seen.running.pop(step, None)
    seen.finished.add(step)
    if moment is not None:
        seen.ended[step] = moment


def _lost(event: Mapping[str, Any]) -> Decimal:
    """The hours an interruption lost: from its moments (``since`` to ``until``), else its
    ``hours``."""
    gap = event.get("interrupted")
    if not isinstance(gap, dict):
        return Decimal(0)
    since, until = aware_moment(gap.get("since")), aware_moment(gap.get("until"))
    if since is not None and until is not None:
        return max(Decimal(0), hours_between(since, until))
    return _hours_field(gap.get("hours", 0))


def _hours_field(value: object) -> Decimal:
    """A journal's hours, or 0 for what is no measure (not a number, negative, above
    :data:`MAX_HOURS`)."""
    try:
        hours = as_hours(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return Decimal(0)
    return hours if hours <= MAX_HOURS else Decimal(0)


# ------------------------------------------------------------------------- the forecast


def forecast_lot(plan: Plan, events: Sequence[Mapping[str, Any]], now: datetime, *,
                 lead: Decimal | int = 0, catalogue: Catalogue | None = None,
                 upload: Upload | None = None) -> LotForecast:
    """Judge the campaign of ``plan`` from its journal ``events`` as of ``now`` (events
    after ``now`` are not read: :func:`events_until`); see the module's docstring.
    ``upload``: the bytes to push and the rate: the retrieval steps left take at least the
    push's hours (the last of them the difference), so the lot's margin and the moment to
    start the retrieval count it."""
    if now.tzinfo is None:
        raise ValueError(f"now ({now.isoformat()}) has no time zone; give a UTC moment")
    lead = as_hours(lead)
    judged = events_until(events, now)
    seen = _read(judged)
    notes = list(seen.notes)
    planned = {s.id for s in plan.schedule.steps}
    notes += [f"journal step {sid!r} is not a step of the plan: not read"
              for sid in sorted((set(seen.worked) | set(seen.running)) - planned)]
    for sid in set(seen.running) - planned:
        del seen.running[sid]
    if seen.last is not None and now < seen.last:
        notes.append(f"now ({_iso(now)}) is before the journal's last moment "
                     f"({_iso(seen.last)}): judged as of that moment")
        now = seen.last
    steps = list(plan.schedule.steps)
    gone = _gone_runs(seen)
    kept = sched.without_runs(steps, gone)
    measured, ended = _measured(steps, seen)
    fc = sched.forecast(kept, {k: v for k, v in measured.items()
                               if k in {s.id for s in kept}})
    hours = {s.id: s.hours for s in fc.steps}
    done, running = _states(kept, seen, measured, ended, _first_lot_step(plan, kept))
    if seen.closed:  # closed: whatever the journal did not time is over
        done, running = {s.id for s in kept}, {}
    worked = {sid: seen.worked.get(sid, Decimal(0)) + max(Decimal(0), hours_between(since, now))
              for sid, since in running.items()}
    remaining = {s.id: Decimal(0) if s.id in done else
                 max(Decimal(0), hours[s.id] - worked[s.id]) if s.id in running else hours[s.id]
                 for s in kept}
    pushed = None if upload is None else _count_push(upload, kept, remaining, done)
    lots = plan.budget.lots
    starts = _lot_starts(plan, steps, seen, done | set(running))
    layout = _layout(kept, lots, remaining, done, starts, now, lead)
    timeline = sched.makespan(layout)
    anchor = min(starts.values(), default=now)
    ends = {s.id: at_hours(anchor, timeline.slot(s.id).end) for s in kept if s.id not in done}
    last_end = max(ends.values(), default=seen.last or now)
    lot_ends = _lot_ends(lots, timeline, layout, starts, anchor, lead, remaining, kept,
                         catalogue)
    drop, fits = _reduction(plan, layout, lots, timeline, lot_ends, seen, done, running)
    progress = tuple(
        StepProgress(s.id, s.kind, s.run,
                     "done" if s.id in done else "running" if s.id in running else "pending",
                     measured.get(s.id, worked.get(s.id, Decimal(0))), s.id in measured,
                     remaining[s.id], ends.get(s.id))
        for s in kept) + tuple(StepProgress(s.id, s.kind, s.run, "dropped", measured.get(
            s.id, Decimal(0)), s.id in measured, Decimal(0), None)
            for s in steps if s.run in gone)
    return LotForecast(
        campaign=plan.campaign, now=now, lead=lead, rental_start=min(starts.values(),
                                                                     default=None),
        end=last_end, steps=progress,
        runs=_runs(plan, progress, seen, gone, lot_ends, lead, lots),
        lots=lot_ends, ratios=dict(fc.ratios), lost_hours=seen.lost, drop=drop,
        drop_fits=fits, rules=tuple(seen.rules), saves=_save_gaps(plan, seen, now),
        closed=seen.closed, events=len(judged),
        notes=tuple(notes), push=pushed)


def _count_push(upload: Upload, kept: list[ObservedStep], remaining: dict[str, Decimal],
                done: set[str]) -> PushTime:
    """The push's hours laid on the retrieval steps left: what they lack goes to the last of
    them in the plan's order (``remaining`` is updated)."""
    left = [s.id for s in kept if s.kind == "retrieval" and s.id not in done]
    planned = sum((remaining[sid] for sid in left), Decimal(0))
    lengthened = left[-1] if left and upload.hours > planned else None
    if lengthened is not None:
        remaining[lengthened] += upload.hours - planned
    return PushTime(upload, planned, lengthened, len(left))


def _gone_runs(seen: _Seen) -> set[str]:
    """Runs whose steps left never run: dropped by a decision, stopped or rejected (the
    hours a stopped run worked say nothing of a rate: they are no measure either)."""
    return seen.dropped | {r for r, (kind, _) in seen.outcome.items() if kind != "accepted"}


def _measured(steps: list[Step], seen: _Seen
              ) -> tuple[dict[str, Decimal], dict[str, datetime]]:
    """Measured hours and when each measured step ended: the finished step events, then
    each accepted run's span spread over its first chain of steps (when none of its steps
    has step events)."""
    measured = {sid: seen.worked[sid] for sid in seen.finished if sid in seen.worked}
    ends = {sid: seen.ended[sid] for sid in seen.finished if sid in seen.ended}
    timed = {s.run for s in steps if s.id in seen.worked or s.id in seen.running}
    for run, (kind, end) in seen.outcome.items():
        start = seen.run_start.get(run)
        if kind != "accepted" or run in timed or start is None or end is None:
            continue
        chain = _first_chain([s for s in steps if s.run == run])
        planned = sum((as_hours(s.hours) for s in chain), Decimal(0))
        span = max(Decimal(0), hours_between(start, end) - seen.run_lost.get(run, Decimal(0)))
        for step in chain:
            share = as_hours(step.hours) / planned if planned else Decimal(1) / len(chain)
            measured[step.id] = span * share
            ends[step.id] = end
    return measured, ends


def _first_chain(steps: list[Step]) -> list[Step]:
    """A run's first steps, each after the one before: what its span covers."""
    chain = steps[:1]
    for step in steps[1:]:
        if chain[-1].id not in step.after:
            break
        chain.append(step)
    return chain


def _states(kept: list[ObservedStep], seen: _Seen, measured: Mapping[str, Decimal],
            ended: Mapping[str, datetime], first_lot_step: str | None
            ) -> tuple[set[str], dict[str, datetime]]:
    """The steps done, and the running ones with the moment each runs since.

    A step known started (or ended) at a moment makes every step before it done by then; a
    ready step no event times runs since the last of its predecessors ended."""
    known = dict(ended)
    for sid, since in seen.running.items():
        known.setdefault(sid, since)
    for run, since in seen.run_start.items():
        first = _first_left(kept, run, set(measured))
        if run not in seen.outcome and first is not None:
            known.setdefault(first, since)
    if first_lot_step is not None and seen.first is not None:
        known.setdefault(first_lot_step, seen.first)
    waits = _waits(kept)
    done = set(measured) | seen.finished
    ends = dict(ended)
    for sid, moment in known.items():
        for before in _before(sid, waits):
            done.add(before)
            ends[before] = min(ends.get(before, moment), moment)
    running = {sid: since for sid, since in seen.running.items() if sid not in done}
    for run, since in seen.run_start.items():
        first = _first_left(kept, run, done)
        if run not in seen.outcome and first is not None and first not in running:
            running[first] = since
    busy = {s.resource for s in kept if s.id in running}
    for step in kept:  # ready, untimed: it runs since the last of its predecessors ended
        if (step.id in done or step.id in running or step.resource in busy
                or (step.run is not None and step.run not in seen.run_start)
                or seen.first is None):
            continue
        if all(w in done for w in waits[step.id]):
            if step.id == first_lot_step:
                running[step.id] = seen.first
            else:
                running[step.id] = max((ends[w] for w in waits[step.id] if w in ends),
                                       default=seen.first)
            busy.add(step.resource)
    return done, running


def _first_lot_step(plan: Plan, kept: list[ObservedStep]) -> str | None:
    """The first step of the planned schedule on a lot: the rental starts with it."""
    lots = plan.budget.lots
    timeline = sched.makespan(kept)
    on_lot = [s for s in kept if sched.lot_of(s, lots) is not None
              and not sched.is_off_machine(s.resource)]
    return min(on_lot, key=lambda s: timeline.slot(s.id).start).id if on_lot else None


def _first_left(kept: list[ObservedStep], run: str, done: set[str]) -> str | None:
    return next((s.id for s in kept if s.run == run and s.id not in done), None)


def _waits(steps: list[ObservedStep]) -> dict[str, tuple[str, ...]]:
    """What each step waits for: its ``after`` and the step listed before it on its
    resource (:func:`pytest_itera.core.schedule.makespan`'s rules)."""
    last: dict[str, str] = {}
    waits: dict[str, tuple[str, ...]] = {}
    for step in steps:
        before = (last[step.resource],) if step.resource in last else ()
        waits[step.id] = (*step.after, *before)
        last[step.resource] = step.id
    return waits


def _before(sid: str, waits: Mapping[str, tuple[str, ...]]) -> set[str]:
    found: set[str] = set()
    stack = list(waits.get(sid, ()))
    while stack:
        current = stack.pop()
        if current not in found:
            found.add(current)
            stack.extend(waits.get(current, ()))
    return found


def _lot_starts(plan: Plan, steps: list[Step], seen: _Seen,
                begun: set[str]) -> dict[str, datetime]:
    """When each engaged lot's clock started: the first lot of the plan's schedule at the
    journal's first moment; another, at the first event of its steps or runs."""
    lots = plan.budget.lots
    if seen.first is None or not lots:
        return {}
    timeline = sched.makespan(steps)
    lot_ids = {lot.id for lot in lots}
    named = {s.id: sched.lot_of(s, lots) for s in steps}
    firsts = sorted(((timeline.slot(s.id).start, named[s.id]) for s in steps
                     if named[s.id] in lot_ids and not sched.is_off_machine(s.resource)),
                    key=lambda pair: pair[0])
    first_lot = firsts[0][1] if firsts else lots[0].id
    starts: dict[str, datetime] = {str(first_lot): seen.first}
    for step in steps:
        lot = named[step.id]
        if lot is None or lot in starts or step.id not in begun:
            continue
        moments = [m for m in (seen.running.get(step.id),
                               seen.run_start.get(step.run) if step.run else None)
                   if m is not None]
        starts[lot] = min(moments, default=seen.last or seen.first)
    return starts


def _layout(kept: list[ObservedStep], lots: Sequence[Lot], remaining: Mapping[str, Decimal],
            done: set[str], starts: Mapping[str, datetime], now: datetime,
            lead: Decimal) -> list[ObservedStep]:
    """The steps left, laid out after the hours each engaged lot already ran, the retrieval
    on its lot, and the lead at each lot's end."""
    anchor = min(starts.values(), default=now)
    roots: list[ObservedStep] = []
    for lot, start in starts.items():
        gap = hours_between(anchor, start)
        resource = f"{_ROOT}:{lot}"
        if gap > 0:
            roots.append(ObservedStep(f"{resource}:before", "elapsed", resource, gap, (), None))
        roots.append(ObservedStep(resource, "elapsed", resource,
                                  max(Decimal(0), hours_between(start, now)), (), lot))
    root_ids = tuple(r.id for r in roots if r.lot is not None)
    left = [s for s in kept if s.id not in done]
    lot_of = {s.id: sched.lot_of(s, lots) for s in kept}
    laid = [ObservedStep(s.id, s.kind, s.resource, remaining[s.id],
                         (*(d for d in s.after if d not in done), *root_ids),
                         lot_of[s.id] if s.kind != "retrieval" or lot_of[s.id] else
                         _fetched_lot(s, kept, lot_of), s.run)
            for s in left]
    leads = [ObservedStep(f"{_LEAD}:{lot.id}", "lead", f"{_LEAD}:{lot.id}", lead,
                          tuple(s.id for s in laid if s.lot == lot.id) or root_ids, lot.id)
             for lot in lots if any(s.lot == lot.id for s in laid) or lot.id in starts]
    return [*roots, *laid, *leads]


def _fetched_lot(step: ObservedStep, kept: list[ObservedStep],
                 lot_of: Mapping[str, str | None]) -> str | None:
    """The lot whose files an off-lot retrieval fetches: the last lot among its steps
    before."""
    before = _before(step.id, {s.id: tuple(s.after) for s in kept})
    lots = [lot_of[s.id] for s in kept if s.id in before and lot_of[s.id] is not None]
    return lots[-1] if lots else None


def _lot_ends(lots: Sequence[Lot], timeline: sched.Timeline, layout: list[ObservedStep],
              starts: Mapping[str, datetime], anchor: datetime, lead: Decimal,
              remaining: Mapping[str, Decimal], kept: list[ObservedStep],
              catalogue: Catalogue | None) -> tuple[LotEnd, ...]:
    found = []
    laid = {s.id: s for s in layout}
    for lot in lots:
        span_at = timeline.lot_spans.get(lot.id)
        if span_at is None:
            found.append(LotEnd(lot.id, lot.days, None, None, False, Decimal(0),
                                Decimal(lot.days * 24), None, None))
            continue
        start = at_hours(anchor, span_at[0])
        end = at_hours(start, Decimal(lot.days * 24))
        span = span_at[1] - span_at[0]
        retrievals = [s for s in kept if s.kind == "retrieval" and s.id in laid
                      and laid[s.id].lot == lot.id]
        safe = max((at_hours(end, -(lead + remaining[s.id])) for s in retrievals),
                   default=None)
        advice = overflow_advice(span, lot, catalogue)
        found.append(LotEnd(lot.id, lot.days, start, end, lot.id in starts, span,
                            Decimal(lot.days * 24) - span, safe,
                            f"lot {lot.id!r}: {advice}" if advice else None))
    return tuple(found)


def _reduction(plan: Plan, layout: list[ObservedStep], lots: Sequence[Lot],
               timeline: sched.Timeline, lot_ends: Sequence[LotEnd], seen: _Seen,
               done: set[str], running: Mapping[str, datetime]) -> tuple[tuple[str, ...], bool]:
    """The smallest set of optional runs not started to drop, when a lot overflows."""
    if all(lot.margin >= 0 for lot in lot_ends):
        return (), True
    started = set(seen.run_start) | {s.run for s in layout
                                     if s.run and (s.id in done or s.id in running)}
    found = sched.reduced_protocol(layout, plan.runs, timeline.makespan, lots, keep=started)
    if found is None:
        return (), False
    return found.dropped, found.fits


def _runs(plan: Plan, progress: Sequence[StepProgress], seen: _Seen, gone: set[str],
          lot_ends: Sequence[LotEnd], lead: Decimal,
          lots: Sequence[Lot]) -> tuple[RunProgress, ...]:
    deadline = {lot.lot: at_hours(lot.end, -lead) for lot in lot_ends if lot.end is not None}
    lot_by_step = {s.id: sched.lot_of(s, lots) for s in plan.schedule.steps}
    found = []
    for run in plan.runs:
        mine = [p for p in progress if p.run == run.id]
        ends = [p.end for p in mine if p.end is not None]
        late = any(p.end is not None and lot_by_step.get(p.step) in deadline
                   and p.end > deadline[str(lot_by_step[p.step])] for p in mine)
        found.append(RunProgress(run.id, run.category, _run_state(run.id, mine, seen, gone),
                                 sum((p.worked for p in mine), Decimal(0)),
                                 sum((p.remaining for p in mine), Decimal(0)),
                                 max(ends, default=None), late))
    return tuple(found)


def _run_state(run: str, mine: Sequence[StepProgress], seen: _Seen, gone: set[str]
               ) -> Literal["done", "running", "pending", "dropped", "stopped"]:
    if run in seen.dropped:
        return "dropped"
    if run in gone:
        return "stopped"
    if any(p.state == "running" for p in mine):
        return "running"
    if all(p.state == "done" for p in mine) and (mine or run in seen.outcome):
        return "done"
    return "pending"


def _save_gaps(plan: Plan, seen: _Seen, now: datetime) -> tuple[SaveGap, ...]:
    """Each training run's longest time without a save, when it exceeds the interval the
    tolerable loss allows: from its start to its first save, between saves, and from its
    last save to its outcome (or to now, while it runs)."""
    allowed = sched.max_save_interval(plan.checkpoint_policy)
    training = {s.run for s in plan.schedule.steps if s.kind == "training" and s.run}
    found = []
    for run, start in seen.run_start.items():
        if run not in training:
            continue
        end = seen.outcome.get(run, ("", None))[1] or now
        points = sorted([start, *(m for m in seen.saves.get(run, []) if start <= m <= end),
                         end])
        since, until = max(pairwise(points), key=lambda pair: pair[1] - pair[0])
        hours = hours_between(since, until)
        if hours > allowed:
            found.append(SaveGap(run, since, until, hours, allowed))
    return tuple(found)
