"""Run checks: stop-records, config-identity, predictions-cover-corpus, conclusion-consistent (R1, R2, R5).

Filled in by its issue; registered as the plugin ``itera.runs``.
"""

from __future__ import annotations

from pytest_itera.checks import Check

CHECKS: tuple[Check, ...] = ()


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
