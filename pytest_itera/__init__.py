"""pytest-itera: acceptance checks for a closed ML campaign folder (plan.json + manifest.json).

The public API is the few names below, each imported on first use so that ``import
pytest_itera`` stays cheap (no torch, no jsonschema): the pytest plugin itself is
``pytest_itera.plugin`` (the ``pytest11`` entry point) and needs none of them.

- record a campaign: :class:`CampaignRecorder` (``pytest_itera.record.campaign``);
- resume checkpoints: :func:`save_resume_checkpoint`, :func:`load_resume_checkpoint`;
- judge a folder without pytest: :func:`check_campaign` -> :class:`Verdict`;
- load one: :func:`load_campaign` -> :class:`Campaign`;
- add checks (``pytest_itera_checks`` hook): :class:`Check`, :class:`Context`, :class:`Finding`.

Everything else is importable from its module, but is the package's own. The package is laid
out by layer (``core`` < ``files``, ``reload`` < ``checks`` < ``report`` < ``record`` < ``plugin``);
the flat module paths of earlier releases (``pytest_itera.money``, ``pytest_itera.resume``,
...) still import, as the very module of the layered path (:data:`MOVED`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_itera.checks.context import Check, Context
    from pytest_itera.core.campaign import Campaign, load_campaign
    from pytest_itera.core.findings import Finding
    from pytest_itera.record.campaign import CampaignRecorder
    from pytest_itera.record.resume import load_resume_checkpoint, save_resume_checkpoint
    from pytest_itera.report.verify import Verdict, check_campaign

__all__ = [
    "Campaign", "CampaignRecorder", "Check", "Context", "Finding", "Verdict", "check_campaign",
    "load_campaign", "load_resume_checkpoint", "save_resume_checkpoint",
]

# name -> the module that defines it
_HOMES = {
    "Campaign": "pytest_itera.core.campaign",
    "load_campaign": "pytest_itera.core.campaign",
    "Check": "pytest_itera.checks",
    "Context": "pytest_itera.checks",
    "Finding": "pytest_itera.core.findings",
    "CampaignRecorder": "pytest_itera.record.campaign",
    "load_resume_checkpoint": "pytest_itera.record.resume",
    "save_resume_checkpoint": "pytest_itera.record.resume",
    "Verdict": "pytest_itera.report.verify",
    "check_campaign": "pytest_itera.report.verify",
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


# The flat layout's module paths -> where each module lives now. ``import pytest_itera.money``
# binds the same module object as ``import pytest_itera.core.money`` (one module, two names),
# imported only when asked for.
MOVED = {
    f"pytest_itera.{old}": f"pytest_itera.{new}" for old, new in {
        "campaign": "core.campaign", "money": "core.money", "schedule": "core.schedule",
        "text": "core.text", "findings": "core.findings", "portable": "core.portable",
        "atomic": "core.atomic", "journal": "core.journal", "provenance": "core.provenance",
        "tree": "files.tree", "scan": "files.scan", "predictions": "files.predictions",
        "measurements": "files.measurements", "closure": "checks.closure",
        "waivers": "checks.waivers", "verify": "report.verify", "seal": "report.seal",
        "tally": "record.tally", "resume": "record.resume", "integrations": "record.integrations",
        "options": "plugin.options", "collect": "plugin.collect",
        "collect_plan": "plugin.collect_plan", "session": "plugin.session",
        "fixtures": "plugin.fixtures", "hookspecs": "plugin.hookspecs",
    }.items()
}


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a flat module path (or a module below one) and loads it as its layered module."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        home = _moved_home(name) if name.startswith("pytest_itera.") else None
        if home is None:
            return None
        return importlib.machinery.ModuleSpec(name, self, origin=home)

    def __init__(self) -> None:
        self._own: dict[str, Any] = {}

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(str(spec.origin))
        self._own[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set the module's __spec__ to the alias's: put its own back.
        assert module.__spec__ is not None
        module.__spec__ = self._own.pop(module.__spec__.name)


def _moved_home(name: str) -> str | None:
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return None


class _Plain(importlib.abc.MetaPathFinder):
    """The package's own modules load as plain modules (the interpreter's path finder), ahead
    of pytest's assertion-rewriting hook.

    pytest marks every top-level package of an entry-point plugin's distribution for
    rewriting. Its loader parses, rewrites and compiles each module, and caches only its own
    pyc, which it cannot write under PYTHONDONTWRITEBYTECODE=1 (this machine, many training
    images): the plugin was compiled again in every run, ~0.25 s of CPU from a source tree and
    ~0.35 s for an installed package, whose bytecode pip compiled and pytest's loader ignores
    (issue 29, benchmarks/RESULTS.md; PYTEST_DONT_REWRITE docstrings saved ~0.05 s: pytest
    still parses and compiles). The package holds no test asserts, only invariants; the
    user's test files and conftests are found and rewritten by pytest as before.
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if path is None or not name.startswith("pytest_itera."):
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)


if not any(isinstance(finder, _Moved) for finder in sys.meta_path):
    # First: a module below a moved package (pytest_itera.integrations.transformers) must be
    # the layered one, not a second copy the path finder would load from the same file.
    # Then the package's own modules, before pytest's rewriting hook (_Plain).
    sys.meta_path[0:0] = [_Moved(), _Plain()]
