"""The plan's resume parts, as resume-complete and artifacts-required both word them: where
the plan states what a run's resume checkpoints must hold, and why a part counts as absent
(missing, present but empty, not restorable, or impossible in that format by design).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import (
    Plan,
)
from pytest_itera.reload import ReloadResult

if TYPE_CHECKING:
    pass


def required_by(ctx: Context, run_id: str) -> str:
    """Where the plan states the resume parts of a run's checkpoints."""
    return required_in(ctx.campaign.plan, run_id)


def required_in(plan: Plan | None, run_id: str) -> str:
    planned = plan.run(run_id) if plan is not None else None
    if planned is not None and planned.resume_state is not None:
        return f"the plan's resume_state for run {run_id}"
    return "the plan's checkpoint_policy.resume_state"


def why_absent(result: ReloadResult, part: str) -> str:
    """``rng (not restorable)``, ``optimizer (present but empty)``, ``rng (<by design>)``."""
    fault = result.fault(part)
    if fault is not None:
        return f"{part} ({'present but empty' if fault.kind == 'empty' else 'not restorable'})"
    reason = result.missing_reasons.get(part)
    return f"{part} ({reason})" if reason else part
