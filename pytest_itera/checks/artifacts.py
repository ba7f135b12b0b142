"""Checkpoint and adapter checks: checkpoint-reloads, resume-complete, adapter-pinned (R6, R8).

Filled in by its issue; registered as the plugin ``itera.artifacts``.
"""

from __future__ import annotations

from pytest_itera.checks import Check

CHECKS: tuple[Check, ...] = ()


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
