"""Metrics checks: metrics-recomputed (a run's metrics are what its predictions give).

Registered as the plugin ``itera.metrics``. One module per check, named after its id.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.metrics import metrics_recomputed

CHECKS = (metrics_recomputed.CHECK,)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
