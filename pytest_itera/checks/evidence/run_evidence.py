"""A run's own evidence, as the evidence checks read it: its measurements file (or the
sentence that says why there is none), the role the plan gives it, and what an
``itera-manifest/1`` campaign cannot prove. Shared by measurements-agree,
stop-rules-applied and role-evidence, so that they say the same thing about the same file.
"""

from __future__ import annotations

from pytest_itera.checks.common.rules_declared import CONTRACT
from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import (
    Manifest,
    Plan,
    RunRecord,
)
from pytest_itera.files.measurements import Measurements, Unreadable

SHOWN = 5  # problems of an unreadable file shown one by one


def planned_role(plan: Plan, run_id: str) -> str | None:
    """The role the plan gives the run (data_check, resume_check, ...), or None if unplanned."""
    planned = plan.run(run_id)
    return planned.role if planned is not None else None


def v1(man: Manifest, what: str) -> str:
    """The sentence that tells a /1 manifest what it cannot prove, or ""."""
    if man.version >= 2:
        return ""
    return (f"; itera-manifest/1 cannot prove {what}: re-close the campaign with "
            f"itera-manifest/2 ({CONTRACT})")


def run_measurements(ctx: Context, run: RunRecord) -> Measurements | str:
    """The run's measurements, or why there are none (a sentence about "its measurements")."""
    if run.measurements is None:
        return f"run {run.id} records no measurements file (runs[].measurements)"
    found = ctx.measurements(run.measurements)
    if isinstance(found, Unreadable):
        return f"its measurements cannot be read: {found.summary()}"
    return found


def measurements_file(run: RunRecord) -> tuple[str, ...]:
    """The run's measurements file, as a finding's subjects: a finding about it is the check
    that owns the file's problem (files-intact, measurements-agree), "not judged" here."""
    return (run.measurements,) if run.measurements is not None else ()


def measurements_hint(run: RunRecord) -> str:
    """What to do when the run's measurements are missing, or cannot be read."""
    if run.measurements is None:
        return ("record the run's measurements file: its series, final metrics and checked "
                f"inputs (RunRecorder writes runs/{run.id}/measurements.jsonl; {CONTRACT})")
    return f"write the measurements as JSON Lines ({CONTRACT}, 'Measurements file')"
