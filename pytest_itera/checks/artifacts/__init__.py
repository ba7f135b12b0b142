"""Checkpoint and adapter checks: checkpoint-reloads, resume-complete, artifacts-required,
adapter-pinned (R1, R5, R6, R8).

A file that is present but cannot be reloaded is not a verified output. Every checkpoint
and adapter is reloaded through ``Context.reload``: a ``pytest_itera_reload`` hook first,
else a fresh interpreter (``pytest_itera.reload.Reloader``, ``weights_only=True``, on CPU).
Paths are resolved inside the campaign before anything is loaded (``reloading``).

Evidence, not declarations: resume parts count by their content (the reload child judges
them and reports typed ``PartFault``s); accepted runs and the must resume check must ship
their artifacts; an adapter's base is identified by its hub commit and, when shipped, its
tree digest (``pytest_itera.files.tree``) and its own record of its revision; the diverged
weights of a run stopped by its non-finite rule are evidence of the stop
(``checkpoint_reloads.informational``).

One module per check, named after it; this package is the plugin ``itera.artifacts``, its
table ``CHECKS``. The reload interpreter (``--itera-python``) is probed once, before any item
runs, by ``pytest_itera.plugin.reloads``: a wrong one is one usage error, not one failure
per checkpoint.
"""

from __future__ import annotations

from pytest_itera.checks.artifacts import (
    adapter_pinned,
    artifacts_required,
    checkpoint_reloads,
    resume_complete,
)
from pytest_itera.checks.context import Check

CHECKS = (checkpoint_reloads.CHECK, resume_complete.CHECK, adapter_pinned.CHECK,
          artifacts_required.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
