"""Observed hours per planned step: :class:`StepTimer` (what ``rec.step(id)`` returns) and
:class:`StepClock`, which the campaign recorder journals and close() turns into the
manifest's observed hours."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pytest_itera.record.base import Campaign, RecordError

__all__ = ["STEP_EVENTS", "StepClock", "StepTimer"]

# A finished step is {"event": "step", "step": <id>, "hours": <number>} (what the plan
# gate's forecast reads); a running one, {"event": "step-start", ...}.
STEP_EVENTS = frozenset({"step-start", "step"})


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

    def timer(self, step_id: str, hours: float | None) -> StepTimer:
        self._planned(step_id)
        if hours is not None:
            self.add(step_id, _hours_value(step_id, hours))
        return StepTimer(self, step_id)

    def _planned(self, step_id: str) -> None:
        self._campaign._require_plan()
        steps = [s["id"] for s in self._campaign.plan["schedule"]["steps"]]
        if step_id not in steps:
            raise RecordError(f"step {step_id!r} is not in the plan (steps: {', '.join(steps)}); "
                              "the plan is never edited: time the planned step it belongs to")

    def start(self, step_id: str, at: datetime | str | None) -> None:
        self._planned(step_id)
        if step_id in self.running:
            raise RecordError(f"step {step_id!r} is already running (started "
                              f"{self.running[step_id].isoformat()}); end it first")
        moment = self._moment(at)
        self._campaign._event("step-start", step=step_id, at=moment.isoformat())
        self.running[step_id] = moment

    def end(self, step_id: str, at: datetime | str | None) -> Decimal:
        self._planned(step_id)
        began = self.running.get(step_id)
        if began is None:
            raise RecordError(f"step {step_id!r} was never started: call "
                              f"rec.step({step_id!r}).start() first, or give hours= for work "
                              "timed elsewhere")
        moment = self._moment(at)
        if moment < began:
            raise RecordError(f"step {step_id!r} ends at {moment.isoformat()}, before it "
                              f"started ({began.isoformat()})")
        hours = _hours_value(step_id, round((moment - began).total_seconds() / 3600, 6))
        self._campaign._event("step", step=step_id, hours=float(hours),
                              started_at=began.isoformat(), at=moment.isoformat())
        del self.running[step_id]
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
        if kind == "step-start":
            self.start(facts["step"], facts["at"])
        elif "started_at" in facts:  # a timed step: the same hours, recomputed
            self.end(facts["step"], facts["at"])
        else:
            self.add(facts["step"], Decimal(str(facts["hours"])))

    def require_ended(self) -> None:
        if self.running:
            raise RecordError(f"steps started and never ended: {', '.join(self.running)}; "
                              "end each (rec.step(id).end()) before closing")


def _hours_value(step_id: str, hours: float) -> Decimal:
    if isinstance(hours, bool) or not isinstance(hours, int | float | Decimal) or not (
            math.isfinite(hours) and hours >= 0):
        raise RecordError(f"step {step_id!r}: hours={hours!r} is not a number of hours >= 0")
    return Decimal(str(hours))


