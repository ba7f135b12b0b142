"""pytest-itera: acceptance checks for a closed ML campaign folder (plan.json + manifest.json).

The public API is the few names below, each imported on first use so that ``import
pytest_itera`` stays cheap (no torch, no jsonschema): the pytest plugin itself is
``pytest_itera.plugin`` (the ``pytest11`` entry point) and needs none of them.

- record a campaign: :class:`CampaignRecorder` (``pytest_itera.record``);
- resume checkpoints: :func:`save_resume_checkpoint`, :func:`load_resume_checkpoint`;
- judge a folder without pytest: :func:`check_campaign` -> :class:`Verdict`;
- load one: :func:`load_campaign` -> :class:`Campaign`;
- add checks (``pytest_itera_checks`` hook): :class:`Check`, :class:`Context`, :class:`Finding`.

Everything else is importable from its module, but is the package's own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_itera.campaign import Campaign, load_campaign
    from pytest_itera.checks import Check, Context
    from pytest_itera.findings import Finding
    from pytest_itera.record import CampaignRecorder
    from pytest_itera.resume import load_resume_checkpoint, save_resume_checkpoint
    from pytest_itera.verify import Verdict, check_campaign

__all__ = [
    "Campaign", "CampaignRecorder", "Check", "Context", "Finding", "Verdict", "check_campaign",
    "load_campaign", "load_resume_checkpoint", "save_resume_checkpoint",
]

# name -> the module that defines it
_HOMES = {
    "Campaign": "pytest_itera.campaign",
    "load_campaign": "pytest_itera.campaign",
    "Check": "pytest_itera.checks",
    "Context": "pytest_itera.checks",
    "Finding": "pytest_itera.findings",
    "CampaignRecorder": "pytest_itera.record",
    "load_resume_checkpoint": "pytest_itera.resume",
    "save_resume_checkpoint": "pytest_itera.resume",
    "Verdict": "pytest_itera.verify",
    "check_campaign": "pytest_itera.verify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_itera' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
