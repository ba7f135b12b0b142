"""The checks: plain functions over a loaded campaign that return findings (no pytest import).

A check is a plain function over a loaded campaign that returns findings.
Built-in families (``checks/files/``, ``checks/contract/``, ...) and
users' conftest.py files contribute checks the same way, through the
``pytest_itera_checks`` hook; the pytest layer turns each (check, target)
into one item, and :mod:`pytest_itera.checks.engine` is the one engine that runs them.

- ``model``: what a check is (:class:`Check`, :class:`Options`, the hook types);
- ``context``: what a check sees (:class:`Context`, one per campaign);
- ``engine``: the engine, one (check, target) at a time or a whole folder;
- one package per family (its checks), ``common`` for what two families share, and the
  facts a report carries (``closure``), waivers.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check, Context, blocked_by_contract
from pytest_itera.checks.model import (
    FAMILIES,
    Needs,
    Options,
    PlanPin,
    ReloadHook,
    Scope,
    StopRuleHook,
    item_name,
)

__all__ = [
    "FAMILIES", "Check", "Context", "Needs", "Options", "PlanPin", "ReloadHook", "Scope",
    "StopRuleHook", "blocked_by_contract", "item_name",
]
