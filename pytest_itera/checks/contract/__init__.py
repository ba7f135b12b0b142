"""Contract checks: manifest, plan-frozen, expected-ids, analysis-present (R2, R5, R8, R9)."""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.contract import analysis_present, expected_ids, manifest, plan_frozen

CHECKS = (manifest.CHECK, plan_frozen.CHECK, expected_ids.CHECK, analysis_present.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
