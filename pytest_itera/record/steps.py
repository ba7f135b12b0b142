"""Observed hours per planned step: :class:`StepTimer` (what ``rec.step(id)`` returns) and
:class:`StepClock`, which the campaign recorder journals and close() turns into the
manifest's observed hours.

A step left open by a process that died (killed, pre-empted) is *inherited* by the process
that continues the campaign: :meth:`StepClock.open_steps` names it, and its first
``start()`` or ``end()`` resumes it. The time is split honestly (docs/recorder.md, "Continue
from anywhere"): the step worked from its start to the last moment the journal records
after it (``last_seen``), those hours are the step's; from ``last_seen`` to the moment it
resumes is an *interruption*, journaled with its hours and never counted as the step's
work; the step then runs again from that moment. All of it is one journal line, a ``step``
event with an ``interrupted`` object, so a kill between the two halves loses nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.schedule import in_hours
from pytest_itera.record.base import Campaign, RecordError

__all__ = ["STEP_EVENTS", "Interruption", "OpenStep", "StepClock", "StepTimer"]

# A finished step is {"event": "step", "step": <id>, "hours": <number>} (what the plan
# gate's forecast reads); a running one, {"event": "step-start", ...}. A step resumed after
# its process died is a "step" event (the hours it worked) with an "interrupted" object:
# {"since": <last moment the journal records>, "until": <resumed at>, "hours": <the gap>}.
STEP_EVENTS = frozenset({"step-start", "step"})


@dataclass(frozen=True)
class OpenStep:
    """A step started and not ended (what :meth:`CampaignRecorder.open_steps` returns)."""

    id: str
    started_at: datetime  # when it (or its last resumption) started
    last_seen: datetime  # the last moment the journal records since then
    inherited: bool  # left open by an earlier process: rec.step(id) resumes it


@dataclass(frozen=True)
class Interruption:
    """The gap between a dead process's last journaled moment and the step's resumption:
    shown in the journal and the manifest's deviations, never counted as work."""

    step: str
    since: datetime
    until: datetime
    hours: Decimal

    def describe(self) -> str:
        return (f"interrupted: the process running it ended after {_iso(self.since)} (the "
                f"last moment its journal records) and it resumed at {_iso(self.until)}; "
                f"those {in_hours(self.hours)} are not counted as its work")


class StepTimer:
    """One planned step's timing: a context manager, or :meth:`start` then :meth:`end`."""

    def __init__(self, clock: StepClock, step_id: str) -> None:
        self._clock = clock
        self.id = step_id

    def start(self, at: datetime | str | None = None) -> StepTimer:
        self._clock.start(self.id, at)
        return self

    def end(self, at: datetime | str | None = None) -> Decimal:
        """End the step; returns the hours it took."""
        return self._clock.end(self.id, at)

    def __enter__(self) -> StepTimer:
        return self.start()

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self.end()  # a step that failed still took its time


class StepClock:
    """Observed hours per planned step, from the recorder's clock or given hours."""

    def __init__(self, campaign: Campaign) -> None:
        self._campaign = campaign
        self.hours: dict[str, Decimal] = {}
        self.running: dict[str, datetime] = {}
        self.last_seen: dict[str, datetime] = {}  # running step -> last journaled moment
        self.inherited: set[str] = set()  # running steps a dead process left open
        self.interruptions: list[Interruption] = []

    def timer(self, step_id: str, hours: float | None) -> StepTimer:
        self._planned(step_id)
        self._refuse_retimed(step_id)
        if hours is not None:
            self.add(step_id, _hours_value(step_id, hours))
        return StepTimer(self, step_id)

    def _planned(self, step_id: str) -> None:
        self._campaign._require_plan()
        steps = [s["id"] for s in self._campaign.plan["schedule"]["steps"]]
        if step_id not in steps:
            raise RecordError(f"step {step_id!r} is not in the plan (steps: {', '.join(steps)}); "
                              "the plan is never edited: time the planned step it belongs to")

    def finished(self) -> dict[str, Decimal]:
        """The steps the journal closed (timed and not running), with their hours."""
        return {s: h for s, h in self.hours.items() if s not in self.running}

    def _refuse_retimed(self, step_id: str) -> None:
        """A step is timed once: a second timing would add to the hours the journal closed
        (and fail plan-vs-actual at closure, far from its cause). Replaying a journal of an
        older recorder that timed a step twice is not refused."""
        if self._campaign._replaying or step_id not in self.finished():
            return
        raise RecordError(
            f"step {step_id!r} is already timed: {JOURNAL_FILE} closed it with "
            f"{in_hours(self.hours[step_id])} of observed hours; timing it again would add "
            f"to them. A script that continues a campaign skips the steps the journal "
            f"finished: `if {step_id!r} not in rec.finished_steps: ...` (rec.finished_steps: "
            "each closed step and its hours)")

    def start(self, step_id: str, at: datetime | str | None) -> None:
        self._planned(step_id)
        if step_id not in self.running:
            self._refuse_retimed(step_id)
        moment = self._moment(at)
        if step_id in self.inherited:
            self._resume(step_id, moment)
            return
        if step_id in self.running:
            raise RecordError(f"step {step_id!r} is already running (started "
                              f"{self.running[step_id].isoformat()}) in this process; end "
                              "it first")
        self._campaign._event("step-start", step=step_id, at=moment.isoformat())
        self._started(step_id, moment)

    def _started(self, step_id: str, moment: datetime) -> None:
        self.running[step_id] = moment
        self.last_seen[step_id] = moment

    def _resume(self, step_id: str, moment: datetime) -> None:
        """Resume a step a dead process left open: one ``step`` event journals the hours it
        worked (to the last moment its journal records) and the interruption since."""
        began = self.running[step_id]
        seen = max(began, self.last_seen.get(step_id, began))
        if moment < seen:
            raise RecordError(
                f"step {step_id!r} resumes at {moment.isoformat()}, before the last moment "
                f"its journal records ({seen.isoformat()}); give a later time: "
                "rec.last_moment() is the last moment the journal records (a played clock "
                "that continues a campaign starts there)")
        worked = _span(step_id, began, seen)
        gap = _span(step_id, seen, moment)
        self._campaign._event(
            "step", step=step_id, hours=float(worked), started_at=began.isoformat(),
            at=seen.isoformat(), interrupted={"since": seen.isoformat(),
                                              "until": moment.isoformat(),
                                              "hours": float(gap)})
        self._interrupted(step_id, worked, Interruption(step_id, seen, moment, gap))

    def _interrupted(self, step_id: str, worked: Decimal, gap: Interruption) -> None:
        self.hours[step_id] = self.hours.get(step_id, Decimal(0)) + worked
        self.interruptions.append(gap)
        self.inherited.discard(step_id)
        self._started(step_id, gap.until)

    def end(self, step_id: str, at: datetime | str | None) -> Decimal:
        self._planned(step_id)
        if step_id in self.inherited:  # a dead process's step, ended by this one
            self._resume(step_id, self._moment(at))
        began = self.running.get(step_id)
        if began is None:
            raise RecordError(f"step {step_id!r} was never started: call "
                              f"rec.step({step_id!r}).start() first, or give hours= for work "
                              "timed elsewhere")
        moment = self._moment(at)
        if moment < began:
            raise RecordError(f"step {step_id!r} ends at {moment.isoformat()}, before it "
                              f"started ({began.isoformat()})")
        hours = _span(step_id, began, moment)
        self._campaign._event("step", step=step_id, hours=float(hours),
                              started_at=began.isoformat(), at=moment.isoformat())
        del self.running[step_id]
        del self.last_seen[step_id]
        self.hours[step_id] = self.hours.get(step_id, Decimal(0)) + hours
        return hours

    def add(self, step_id: str, hours: Decimal) -> None:
        self._campaign._event("step", step=step_id, hours=float(hours))
        self.hours[step_id] = self.hours.get(step_id, Decimal(0)) + hours

    def _moment(self, at: datetime | str | None) -> datetime:
        moment = datetime.fromisoformat(at) if isinstance(at, str) else (
            at if at is not None else self._campaign._clock())
        if moment.tzinfo is None:
            raise RecordError(f"{moment.isoformat()} has no time zone; give a UTC time")
        return moment.astimezone(UTC)

    def apply(self, kind: str, facts: Mapping[str, Any]) -> None:
        """Replay one journaled step event."""
        if kind == "step-start":
            self.start(facts["step"], facts["at"])
        elif "interrupted" in facts:  # resumed after its process died
            gap = facts["interrupted"]
            since, until = self._moment(gap["since"]), self._moment(gap["until"])
            self.end(facts["step"], facts["at"])  # the hours it worked, recomputed
            self._interrupted(facts["step"], Decimal(0), Interruption(
                facts["step"], since, until, _span(facts["step"], since, until)))
        elif "started_at" in facts:  # a timed step: the same hours, recomputed
            self.end(facts["step"], facts["at"])
        else:
            self.add(facts["step"], Decimal(str(facts["hours"])))

    def seen(self, at: object) -> None:
        """A journaled moment (replay): the running steps were alive then."""
        if not isinstance(at, str):
            return
        try:
            moment = self._moment(at)
        except (ValueError, RecordError):
            return
        for step_id, last in self.last_seen.items():
            self.last_seen[step_id] = max(last, moment)

    def inherit(self) -> None:
        """After replay: every step still running was left open by a dead process."""
        self.inherited = set(self.running)

    def open_steps(self) -> tuple[OpenStep, ...]:
        return tuple(OpenStep(step_id, began, self.last_seen.get(step_id, began),
                              step_id in self.inherited)
                     for step_id, began in self.running.items())

    def require_ended(self) -> None:
        if self.running:
            left = [f"{s} (left open by a process that died: ending it journals the gap)"
                    if s in self.inherited else s for s in self.running]
            raise RecordError(f"steps started and never ended: {', '.join(left)}; "
                              "end each (rec.step(id).end()) before closing")


def _span(step_id: str, began: datetime, ended: datetime) -> Decimal:
    return _hours_value(step_id, round((ended - began).total_seconds() / 3600, 6))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hours_value(step_id: str, hours: float) -> Decimal:
    if isinstance(hours, bool) or not isinstance(hours, int | float | Decimal) or not (
            math.isfinite(hours) and hours >= 0):
        raise RecordError(f"step {step_id!r}: hours={hours!r} is not a number of hours >= 0")
    return Decimal(str(hours))


