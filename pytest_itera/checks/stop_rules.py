"""Stop rules (R5) evaluated on a run's own measurements: one implementation for the recorder,
which refuses at once, and the checks, which judge the closed folder (no pytest import)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RuleVerdict", "Status"]

Status = Literal["triggered", "clear", "unproven", "not_evaluated"]


@dataclass(frozen=True)
class RuleVerdict:
    """A stop rule evaluated on one run's evidence.

    ``triggered``: the evidence triggers the rule (``step``: the first step that does, when
    the evidence has steps); ``clear``: it does not; ``unproven``: the evidence needed is
    missing or unreadable (a failure for an accepted run); ``not_evaluated``: the rule is
    not machine-readable (kind ``other``): reported, never a failure. ``detail`` says what
    was observed, ``where`` the file and line of the evidence.
    """

    status: Status
    detail: str
    step: int | None = None
    where: str | None = None
    hint: str | None = None
