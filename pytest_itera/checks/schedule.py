"""Schedule checks: schedule-fits, plan-vs-actual (R3, R6, R9).

Filled in by its issue; registered as the plugin ``itera.schedule``.
"""

from __future__ import annotations

from pytest_itera.checks import Check

CHECKS: tuple[Check, ...] = ()


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
