"""What the plan gate's checks share: where they find the plan and the journal, what most of
them need, and how their messages write hours and the forecast's basis.

The collector (:mod:`pytest_itera.plugin.collect_plan`) seeds the ``Context.memo`` keys
:data:`PLAN_PATH` and :data:`JOURNAL_PATH`: a plan judged with ``--itera-plan`` may have
another name than ``plan.json``, and a folder may have no journal.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from pytest_itera.checks.common.schedule_fits import rounded
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Needs
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import PLAN_FILE
from pytest_itera.core.schedule import hours_text

# Context.memo keys the collector seeds: the plan file and the journal (None: no journal).
PLAN_PATH = "itera.plan-path"
JOURNAL_PATH = "itera.journal-path"
# What the checks judging a loaded plan need (plan-valid and plan-journal need nothing).
NEEDS_PLAN: frozenset[Needs] = frozenset({"plan"})


def rounded_hours(value: Decimal) -> str:
    """``81 h``, ``60.75 h``: to the hundredth when a ratio made the hours longer."""
    return f"{hours_text(rounded(value))} h"


def plan_path(ctx: Context) -> Path:
    return ctx.memo(PLAN_PATH, lambda: ctx.root / PLAN_FILE)


def journal_path(ctx: Context) -> Path | None:
    return ctx.memo(JOURNAL_PATH, lambda: None)


def forecast_basis(fc: sched.Forecast) -> str:
    """``4 steps measured; training steps x1.5``."""
    count = len(fc.measured)
    parts = [f"{count} step{'s' if count != 1 else ''} measured"]
    parts += [f"{kind} steps x{hours_text(rounded(ratio))}"
              for kind, ratio in sorted(fc.ratios.items()) if ratio != 1 and any(
                  s.kind == kind and s.id in fc.scaled for s in fc.steps)]
    return "; ".join(parts)
