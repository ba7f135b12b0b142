"""Metrics checks: metrics-recomputed (a run's metrics are what its predictions give),
predictions-from-model (its predictions are what its delivered weights predict).

Registered as the plugin ``itera.metrics``. One module per check, named after its id.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.metrics import metrics_recomputed, predictions_from_model

CHECKS = (metrics_recomputed.CHECK, predictions_from_model.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
