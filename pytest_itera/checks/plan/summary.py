"""The plan gate's summary: the planned schedule, the window edge, uncommitted time, each
lot's span with the catalogue lots that fit it, and the forecast when a journal is there.

Printed by the collector (:mod:`pytest_itera.plugin.collect_plan`) beside the items: what a
planner reads before renting, whatever the verdict.
"""

from __future__ import annotations

from decimal import Decimal

from pytest_itera.checks.common.schedule_fits import (
    rounded,
)
from pytest_itera.checks.plan.gate import forecast_basis, rounded_hours
from pytest_itera.checks.plan.journal import Journal
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Plan
from pytest_itera.core.money import Catalogue, Money, Offer, lot_options
from pytest_itera.core.schedule import as_hours, hours_text


def offers_for(plan: Plan, gpu: str, catalogue: Catalogue) -> Catalogue:
    """The catalogue's offers for ``gpu`` and the plan's own lots of it, one per duration
    and price."""
    own = [Offer(p.offer, p.gpu, p.gpus_per_lot, p.days, Money(p.price, plan.budget.currency))
           for p in plan.budget.lots if p.gpu == gpu]
    offers: dict[tuple[int, Decimal, str], Offer] = {}
    for offer in (*catalogue.for_gpu(gpu).offers, *own):
        offers.setdefault((offer.days, offer.price.amount, offer.price.currency), offer)
    return Catalogue(catalogue.provider, catalogue.currency, tuple(offers.values()))


def summary_lines(label: str, plan: Plan, catalogue: Catalogue | str,
                  journal: Journal | str | None = None) -> list[str]:
    """The planned schedule, the window edge, uncommitted time and the lot comparison
    (``catalogue``: the one in force, or why it cannot be used)."""
    try:
        timeline = sched.makespan(plan.schedule.steps)
    except sched.ScheduleError:
        return [f"plan {label}: the schedule cannot be computed (see plan-valid)"]
    window = as_hours(plan.schedule.window_hours)
    free = window - timeline.makespan
    lines = [f"plan {label} ({plan.campaign}): {rounded_hours(timeline.makespan)} from "
             f"preparation to retrieval in the {rounded_hours(window)} window: "
             + (f"{rounded_hours(free)} uncommitted" if free >= 0
                else f"{rounded_hours(-free)} OVER the window")]
    if plan.frozen_at is None:
        lines.append("  a draft (no frozen_at): CampaignRecorder.freeze_plan sets it when it "
                     "freezes the plan, before the first run")
    lines += _timeline_lines(timeline, window)
    for use in sched.lot_uses(plan.budget.lots, timeline):
        lot = next(lot for lot in plan.budget.lots if lot.id == use.lot)
        lines.append(f"  lot {lot.id} ({lot.days} days, {lot.price} {plan.budget.currency}"
                     f"{f' x {lot.quantity}' if lot.quantity > 1 else ''}): spans "
                     f"{rounded_hours(use.span)} of {use.capacity} h"
                     + ("" if use.excess <= 0 else f": {rounded_hours(use.excess)} OVER the lot"))
        off = sched.off_lot_text(timeline, lot.id) if use.named else None
        if off is not None:
            lines.append(f"    {off}")
        options = [] if isinstance(catalogue, str) else lot_options(
            use.span, offers_for(plan, lot.gpu, catalogue))
        table = " | ".join(f"{o.offer.days}-day {o.price.format()} "
                           f"({rounded_hours(o.idle_hours)} idle)" for o in options) or (
            catalogue if isinstance(catalogue, str) else "none in the catalogue")
        lines.append(f"    lots that fit {rounded_hours(use.span)} of {lot.gpu}: {table}")
    if isinstance(journal, Journal):
        fc = sched.forecast(plan, journal.hours)
        left = window - fc.makespan
        lines.append(f"  forecast ({forecast_basis(fc)}): {rounded_hours(fc.makespan)}: "
                     + (f"{rounded_hours(left)} uncommitted" if left >= 0
                        else f"{rounded_hours(-left)} OVER the window"))
    return lines


def _timeline_lines(timeline: sched.Timeline, window: Decimal) -> list[str]:
    width = max((len(s.id) for s in timeline.slots), default=4)
    rows = [f"  {'step'.ljust(width)}  {'resource':<10} {'start':>7} {'end':>7}"]
    rows += [f"  {s.id.ljust(width)}  {s.resource:<10} {hours_text(rounded(s.start)):>7} "
             f"{hours_text(rounded(s.end)):>7}" for s in timeline.slots]
    rows.append(f"  {'window edge'.ljust(width)}  {'':<10} {'':>7} {hours_text(window):>7}")
    return rows
