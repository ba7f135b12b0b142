"""A synthetic journal writer: a plan's runs played on an injected timeline, no sleeps.

:func:`played` lays the plan's schedule out (``makespan``) with each step's hours scaled by
``slow`` (per step id or kind), and journals what the recorder journals of the example
campaign: the plan's freezing when the first lot step starts, each run's ``run-start``, a
checkpoint save every ``interval`` hours of its first step, its ``accepted`` at the end of
its first chain, each decision with its ``drops``, and the closure. :func:`write` writes the
lines (optionally tearing the last).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import plan_from
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.lot_forecast import at_hours

START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def played(plan: Mapping[str, Any], *, start: datetime = START,
           slow: Mapping[str, float] | None = None, drops: Mapping[str, Sequence[str]] = {},
           interval: float = 2, close: bool = True,
           plan_sha256: str = "0" * 64) -> list[dict[str, Any]]:
    """The journal events of ``plan`` played from ``start`` (the schedule's hour 0)."""
    typed = plan_from(plan)
    slow = slow or {}
    dropped = {run for runs in drops.values() for run in runs}
    kept = sched.without_runs(typed.schedule.steps, dropped)
    steps = [sched.ObservedStep(s.id, s.kind, s.resource,
                                s.hours * Decimal(str(slow.get(s.id, slow.get(s.kind, 1)))),
                                s.after, s.lot, s.run) for s in kept]
    timeline = sched.makespan(steps)
    lots = typed.budget.lots
    on_lot = [s.id for s in steps if sched.lot_of(s, lots) is not None
              and not sched.is_off_machine(s.resource)]
    first = min(timeline.slot(s).start for s in on_lot)
    timed: list[tuple[Decimal, int, dict[str, Any]]] = [
        (first, 0, {"event": "plan", "sha256": plan_sha256, "at": at_hours(start, first)})]
    for slot in timeline.slots:
        if slot.kind == "decision":
            timed.append((slot.end, 1, {"event": "decide", "id": slot.id, "text": slot.id,
                                        "drops": list(drops.get(slot.id, ())), "adds": [],
                                        "at": at_hours(start, slot.end)}))
    for run in typed.runs:
        chain = [s for s in steps if s.run == run.id]
        if not chain:
            continue
        head = timeline.slot(chain[0].id)
        covered = chain[:1]
        for step in chain[1:]:
            if covered[-1].id not in step.after:
                break
            covered.append(step)
        end = timeline.slot(covered[-1].id).end
        timed.append((head.start, 2, {"event": "run-start", "run": run.id,
                                      "at": at_hours(start, head.start)}))
        saved = head.start + Decimal(str(interval))
        while saved < head.end:
            timed.append((saved, 3, {"event": "checkpoint", "run": run.id,
                                     "path": f"runs/{run.id}/last.pt",
                                     "at": at_hours(start, saved)}))
            saved += Decimal(str(interval))
        timed.append((end, 4, {"event": "accepted", "run": run.id,
                               "at": at_hours(start, end)}))
    if close:
        timed.append((timeline.makespan, 9, {"event": "close", "manifest_digest": "0" * 64,
                                             "at": at_hours(start, timeline.makespan)}))
    timed.sort(key=lambda item: (item[0], item[1]))
    return [{**event, "at": iso(event["at"])} for _, _, event in timed]


def write(root: Path, events: Sequence[Mapping[str, Any]], *, torn: str = "") -> Path:
    """The journal file of ``events`` under ``root`` (and a torn last line when given)."""
    root.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)
    (root / JOURNAL_FILE).write_text(text + torn, "utf-8")
    return root / JOURNAL_FILE


def moments(events: Sequence[Mapping[str, Any]]) -> list[datetime]:
    """Each distinct moment of the journal, in order: where a replay judges it."""
    return sorted({datetime.fromisoformat(e["at"]) for e in events if "at" in e})


def hours(moment: datetime, hours: float) -> datetime:
    return moment + timedelta(hours=hours)
