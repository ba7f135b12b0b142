"""Budget check: budget-consistent (R4, R7).

Filled in by its issue; registered as the plugin ``itera.budget``.
"""

from __future__ import annotations

from pytest_itera.checks import Check

CHECKS: tuple[Check, ...] = ()


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
