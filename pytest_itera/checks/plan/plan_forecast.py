"""plan-forecast: the forecast from the measured steps fits the window and the lots (R4, R9).

At the post-pilot decision point: the journal's measured steps, the planned steps of their
kinds scaled by the measured ratio, and the others as planned. An overflow is told with the
reduced protocol that fits, and a lot overflow with the cheapest lot too (the schedule-fits
rule, re-coded). The plan stays as frozen: what to do is a decision to record.
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.common.schedule_fits import (
    SCHEDULE_FITS_KINDS,
    lot_findings,
    protocol_advice,
    reduction_for,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind, recoded_kinds
from pytest_itera.checks.plan.gate import NEEDS_PLAN, forecast_basis, rounded_hours
from pytest_itera.checks.plan.journal import Journal, journal_of, journal_targets
from pytest_itera.core import schedule as sched
from pytest_itera.core.findings import Finding, recoded
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.schedule import as_hours


def plan_forecast(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """The re-forecast schedule (measured, scaled, planned) fits the window and the lots."""
    plan = ctx.campaign.plan
    assert plan is not None  # guaranteed by Check.needs
    journal = journal_of(ctx)
    if not isinstance(journal, Journal):
        yield Finding(f"no forecast: {journal or 'no journal'}", where=JOURNAL_FILE,
                      code="plan-forecast.no-forecast")
        return
    fc = sched.forecast(plan, journal.hours)
    reduction = reduction_for(plan, fc.steps, fc.timeline, keep=fc.started_runs)
    window = as_hours(plan.schedule.window_hours)
    if fc.makespan > window:
        yield Finding(
            f"forecast: the schedule now takes {rounded_hours(fc.makespan)} "
            f"({forecast_basis(fc)}), {rounded_hours(fc.makespan - window)} more than the "
            f"{rounded_hours(window)} window",
            where=JOURNAL_FILE, expected=f"at most {rounded_hours(window)}",
            found=rounded_hours(fc.makespan),
            hint=f"{protocol_advice(reduction) or 'reduce the protocol'}; or plan a longer "
            "window. The plan stays as frozen: record the decision at the decision point",
            code="plan-forecast.window")
    yield from recoded(lot_findings(ctx, plan, fc.timeline, reduction, prefix="forecast: "),
                       "plan-forecast")


KINDS: dict[str, Kind] = {
    "plan-forecast.no-forecast": Kind(
        rule="no forecast can be made: the journal is missing or cannot be read",
        fix="restore the journal the recorder wrote (plan-journal tells what is wrong)"),
    "plan-forecast.window": Kind(
        rule="the forecast schedule, from the measured steps, takes longer than the window",
        fix="reduce the protocol, or plan a longer window; record the decision at the decision "
        "point"),
    **{code: kind for code, kind in recoded_kinds(SCHEDULE_FITS_KINDS, "plan-forecast").items()
       if code == "plan-forecast.lot-overflow"},
}

CHECK = Check("plan-forecast",
              "the forecast from the measured steps fits the window and the lots",
              plan_forecast, scope="plan", targets=journal_targets, needs=NEEDS_PLAN,
              fast=True, kinds=KINDS)
