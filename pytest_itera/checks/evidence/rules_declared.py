"""rules-declared, on a closed campaign: the plan declared its stop rules before the trials
and a decision point after the pilot (R2, R5).

The rule is :func:`pytest_itera.checks.common.rules_declared.rules_declared`, shared with the
plan gate, which refuses to freeze a plan that breaks it; its kinds are declared beside it.
"""

from __future__ import annotations

from pytest_itera.checks.common.rules_declared import KINDS, rules_declared
from pytest_itera.checks.context import Check

__all__ = ["CHECK", "KINDS"]

CHECK = Check("rules-declared",
              "stop rules declared before the trials; a decision after the pilot",
              rules_declared, needs=frozenset({"plan"}), kinds=KINDS)
