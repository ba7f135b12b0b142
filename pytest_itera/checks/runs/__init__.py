"""Run checks: stop-records, config-identity, predictions-cover-corpus, conclusion-consistent.

R1 (a decision on a frozen corpus, a negative result is a result), R2 (roles
and categories) and R5 (stop rules before the runs; a stopped run keeps its ID
and reason; a changed configuration gets a new ID). Registered as the plugin
``itera.runs``. One module per check, named after its id.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.runs import (
    conclusion_consistent,
    config_identity,
    predictions_cover_corpus,
    stop_records,
)

CHECKS = (stop_records.CHECK, config_identity.CHECK, predictions_cover_corpus.CHECK,
          conclusion_consistent.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
