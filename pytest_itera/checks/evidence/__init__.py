"""Evidence checks: rules-declared, measurements-agree, stop-rules-applied, role-evidence.

R2 (a decision point after the pilot; the data check and the resume check prove their
roles), R5 (stop rules written before the trials and applied to every run) and R6 (a
resume reproduces its reference run). Registered as the plugin ``itera.evidence``.

The manifest is a copy; the evidence is each run's measurements file
(:mod:`pytest_itera.files.measurements`), the files of the folder and the data check's
records. The run-scoped checks here are part of ``Context.run_failures``: an accepted
run that fails one of them is not counted as an accepted deliverable.

A stop rule of kind ``other`` (free-form parameters) is not evaluated: it never fails a
run, and the terminal summary says which rules were not evaluated. A
``pytest_itera_stop_rule`` hook implementation may judge any rule (``other`` included)
by returning a :class:`RuleVerdict`.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.evidence import (
    journal_agrees,
    measurements_agree,
    role_evidence,
    rules_declared,
    stop_rules_applied,
)

CHECKS = (
    rules_declared.CHECK,
    measurements_agree.CHECK,
    stop_rules_applied.CHECK,
    role_evidence.CHECK,
    journal_agrees.CHECK,
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
