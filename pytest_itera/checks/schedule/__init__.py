"""Schedule checks: schedule-fits, plan-vs-actual (R3, R4, R6, R9).

Registered as the plugin ``itera.schedule``. The arithmetic lives in
:mod:`pytest_itera.core.schedule`; each check's module reads the campaign and words the
findings. Stated hours may be rounded to the hundredth (36 s): a plan
computed with floats or rounded by hand is not refused for 1e-15 h.

The price catalogue used to advise on an overflowing lot is ``Context.catalogue()``,
the same catalogue in force that budget-consistent judges the lots against.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.schedule import plan_vs_actual, schedule_fits

CHECKS = (schedule_fits.CHECK, plan_vs_actual.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
