"""plan-schedule-fits: ``schedule-fits`` on the plan alone, before renting (R3, R4, R6).

The rule is :mod:`pytest_itera.checks.common.schedule_fits`, re-coded under this check's id:
the same makespan, window, lot, stated hours, step kinds and checkpoint interval, with the
cheapest lot that fits and the reduced protocol when the schedule overflows.
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.common.schedule_fits import SCHEDULE_FITS_KINDS, schedule_fits
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind, recoded_kinds
from pytest_itera.checks.plan.gate import NEEDS_PLAN
from pytest_itera.core.findings import Finding, recoded


def plan_schedule_fits(ctx: Context, target: str | None) -> Iterator[Finding]:
    """``schedule-fits`` on the plan alone: the same makespan, window and lot rules."""
    yield from recoded(schedule_fits(ctx, target), "plan-schedule-fits")


# The plan is judged alone: no manifest engages a lot, no step ran.
KINDS: dict[str, Kind] = recoded_kinds(SCHEDULE_FITS_KINDS, "plan-schedule-fits",
                                       without=("schedule-fits.lot-not-engaged",))

CHECK = Check("plan-schedule-fits", "the end-to-end schedule fits the window and every lot",
              plan_schedule_fits, scope="plan", needs=NEEDS_PLAN, fast=True,
              kinds=KINDS)
