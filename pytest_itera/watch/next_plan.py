"""``python -m pytest_itera next-plan DIR --to DRAFT``: the next campaign's plan from this one.

The closure guide ends: the next campaign "starts with a better estimate and a shorter list
of uncertainties". The draft (``DRAFT/plan.json``, ``itera-plan/3`` without ``frozen_at``)
is this campaign's plan with each step's hours the observed ones, rounded up by a stated
margin (to the quarter hour): the save, restore and retrieval steps take their observed
cost like every other. A step that did not run or ran less than half its hours (a dropped
or stopped run: :func:`pytest_itera.core.schedule.short_steps`) keeps its planned hours: no
measure says better. The plan schema has no room for what is not measured, so
``DRAFT/uncertainties.md`` beside it keeps the planned hours apart from the observed ones,
every deviation with its explanation, the steps whose kind ran once only, the estimates not
measured, and the lot advice the plan gate gives for the new schedule. The draft is judged
by the plan gate's checks in process (the same as ``pytest --itera-plan DRAFT``).

Observed hours come from the closed campaign's manifest, else from the journal (the steps
the forecast measures: :func:`pytest_itera.watch.status.judge`). Nothing is written into DIR.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from typing import Any

from pytest_itera.checks.context import Context
from pytest_itera.checks.engine import evaluate, pairs
from pytest_itera.checks.model import Options
from pytest_itera.checks.plan import CHECKS as PLAN_CHECKS
from pytest_itera.checks.plan.gate import JOURNAL_PATH, PLAN_PATH
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    Lot,
    Step,
    load_campaign,
    load_plan,
)
from pytest_itera.core.journal import JOURNAL_FILE, played_clock_line
from pytest_itera.core.money import example_catalogue, lot_options, overflow_advice
from pytest_itera.core.schedule import as_hours, hours_text
from pytest_itera.record.base import atomic_write_json
from pytest_itera.watch.status import FolderError, judge, open_folder

__all__ = [
    "DEFAULT_MARGIN",
    "UNCERTAINTIES_FILE",
    "NextPlan",
    "gate_failures",
    "next_plan",
    "write_next_plan",
]

DEFAULT_MARGIN = Decimal("0.10")
QUARTER = Decimal("0.25")
UNCERTAINTIES_FILE = "uncertainties.md"


@dataclass(frozen=True)
class NextPlan:
    """The draft and what it leaves uncertain."""

    plan: dict[str, Any]
    planned: Mapping[str, Decimal]  # this campaign's planned hours, per step
    observed: Mapping[str, Decimal]  # its observed hours, per step (when measured)
    kept: tuple[str, ...]  # steps that keep their planned hours: not measured
    uncertainties: tuple[str, ...]
    lot_advice: tuple[str, ...]


def rounded_up(hours: Decimal, margin: Decimal) -> Decimal:
    """``hours`` plus the margin, rounded up to the quarter hour."""
    return ((hours * (1 + margin)) / QUARTER).to_integral_value(ROUND_CEILING) * QUARTER


def _observed(root: Path) -> tuple[dict[str, Decimal], list[tuple[str, str]], str]:
    """Observed hours per step, the deviations (step, explanation) and where they come from."""
    if (root / MANIFEST_FILE).is_file():
        manifest = load_campaign(root).manifest
        if manifest is not None and manifest.schedule is not None:
            deviations = [(d.step, d.explanation) for d in manifest.schedule.deviations]
            return sched.observed_hours(manifest.schedule.steps), deviations, MANIFEST_FILE
    fc = judge(open_folder(root), datetime.now(UTC))  # at the journal's last moment at least
    return {s.step: s.worked for s in fc.steps if s.measured}, [], JOURNAL_FILE


def next_plan(root: Path, *, margin: Decimal = DEFAULT_MARGIN) -> NextPlan:
    """The draft of the next campaign's plan from the campaign at ``root``."""
    folder = open_folder(root)
    data = json.loads((root / PLAN_FILE).read_text("utf-8"))
    observed, deviations, source = _observed(root)
    steps = folder.plan.schedule.steps
    planned = {s.id: as_hours(s.hours) for s in steps}
    short = {s.step for s in sched.short_steps(steps, observed)}
    draft = copy.deepcopy(data)
    for key in ("frozen_at", "recorded"):
        draft.pop(key, None)
    kept: list[str] = []
    for step in draft["schedule"]["steps"]:
        if step["id"] in short or step["id"] not in observed:
            kept.append(step["id"])
            continue
        step["hours"] = _number(rounded_up(observed[step["id"]], margin))
    timeline = sched.makespan(_steps(draft))
    window = as_hours(draft["schedule"]["window_hours"])
    draft["schedule"]["sequential_hours"] = _number(timeline.makespan)
    draft["schedule"]["uncommitted_hours"] = _number(window - timeline.makespan)
    advice = _lot_advice(folder.plan.budget.lots, timeline)
    notes = _uncertainties(folder.plan.schedule.steps, observed, deviations, kept, source,
                           played_clock_line(root) is not None, margin)
    return NextPlan(draft, planned, observed, tuple(kept), tuple(notes), tuple(advice))


def _steps(draft: Mapping[str, Any]) -> list[sched.ObservedStep]:
    return [sched.ObservedStep(s["id"], s["kind"], s["resource"], as_hours(s["hours"]),
                               tuple(s.get("after", ())), s.get("lot"), s.get("run"))
            for s in draft["schedule"]["steps"]]


def _number(hours: Decimal) -> int | float:
    """Hours as the plan writes them: an integer when whole."""
    return int(hours) if hours == hours.to_integral_value() else float(hours)


def _lot_advice(lots: Sequence[Lot], timeline: sched.Timeline) -> list[str]:
    catalogue = example_catalogue()
    found = []
    for use in sched.lot_uses(lots, timeline):
        lot = next(lot for lot in lots if lot.id == use.lot)
        over = overflow_advice(use.span, lot, catalogue)
        if over is not None:
            found.append(f"lot {lot.id}: {over}")
            continue
        options = lot_options(use.span, catalogue.for_gpu(lot.gpu))
        cheapest = (f"; the cheapest lot that covers it: {options[0].offer.describe()}"
                    if options else "")
        found.append(f"lot {lot.id} ({lot.days} days): the schedule spans "
                     f"{hours_text(use.span)} h of its {use.capacity} h{cheapest}")
    return found


def _uncertainties(steps: Sequence[Step], observed: Mapping[str, Decimal],
                   deviations: list[tuple[str, str]], kept: list[str], source: str,
                   played: bool, margin: Decimal) -> list[str]:
    notes = []
    if played:
        notes.append("this campaign was recorded on a played clock: its observed hours were "
                     "played, not measured; measure them on the rented machine")
    notes += [f"deviation of step {step}: {why}" for step, why in deviations]
    kinds: dict[str, list[str]] = {}
    for step in steps:
        if step.id in observed and step.id not in kept:
            kinds.setdefault(step.kind, []).append(step.id)
    notes += [f"step {ids[0]} ran once only: the only measure of {kind} steps"
              for kind, ids in sorted(kinds.items()) if len(ids) == 1]
    notes += [f"step {sid}: an estimate not measured (its planned hours are kept)"
              for sid in kept]
    notes.append("checkpoint_policy.save_hours: the cost of one save is not timed by the "
                 "journal; the save steps' observed hours are")
    notes.append(f"observed hours from {source}, rounded up by {margin * 100:.0f} % to the "
                 "quarter hour")
    return notes


def gate_failures(plan_file: Path) -> list[str]:
    """The plan gate's checks on ``plan_file``, in process (``pytest --itera-plan``): the
    findings of each failing check, [] when it passes."""
    checks = {c.id: c for c in PLAN_CHECKS}
    context = Context(load_plan(plan_file), Options(), checks)
    context.memo(PLAN_PATH, lambda: plan_file)
    context.memo(JOURNAL_PATH, lambda: None)
    failures = []
    for check, target in pairs(context, checks.values()):
        outcome = evaluate(context, check, target)
        if outcome.failed:
            failures += [f"{check.id}: {f.message}" for f in outcome.findings]
    return failures


def write_next_plan(root: Path, to: Path, *, margin: Decimal = DEFAULT_MARGIN) -> list[str]:
    """Write ``to/plan.json`` and ``to/uncertainties.md``; returns the gate's failures."""
    target = to / PLAN_FILE
    if target.exists():
        raise FolderError(f"{target} exists: a plan is never overwritten")
    if to.resolve() == root.resolve():
        raise FolderError(f"{to}: the draft is written beside, never into, the campaign")
    drafted = next_plan(root, margin=margin)
    to.mkdir(parents=True, exist_ok=True)
    atomic_write_json(target, drafted.plan)
    (to / UNCERTAINTIES_FILE).write_text(_markdown(drafted), "utf-8")
    return gate_failures(target)


def _markdown(drafted: NextPlan) -> str:
    rows = ["| step | planned h | observed h | next h |", "| --- | --- | --- | --- |"]
    for step in drafted.plan["schedule"]["steps"]:
        seen = drafted.observed.get(step["id"])
        rows.append(f"| {step['id']} | {hours_text(drafted.planned[step['id']])} | "
                    f"{'-' if seen is None else hours_text(seen.quantize(Decimal('0.01')))} | "
                    f"{step['hours']} |")
    return "\n".join([
        f"# Uncertainties left: {drafted.plan['campaign']}", "",
        "The draft plan.json beside this file takes each step's observed hours, rounded up; "
        "the planned hours of the campaign it comes from are kept here.", "", *rows, "",
        "## Uncertainties", "", *(f"- {note}" for note in drafted.uncertainties), "",
        "## Lot advice", "", *(f"- {line}" for line in drafted.lot_advice), ""])
