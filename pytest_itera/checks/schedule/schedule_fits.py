"""schedule-fits: the planned schedule fits its window and its lots, end to end (R3, R4, R6).

The rule is :mod:`pytest_itera.checks.common.schedule_fits`: the plan gate applies it too,
to a plan judged alone (plan-schedule-fits). Here it judges a closed campaign's plan, and
the manifest's engaged lots.
"""

from __future__ import annotations

from pytest_itera.checks.common.schedule_fits import SCHEDULE_FITS_KINDS, schedule_fits
from pytest_itera.checks.context import Check
from pytest_itera.checks.model import Kind

KINDS: dict[str, Kind] = SCHEDULE_FITS_KINDS

CHECK = Check("schedule-fits", "the planned schedule fits its window and lots, end to end",
              schedule_fits, needs=frozenset({"plan"}), kinds=KINDS)
