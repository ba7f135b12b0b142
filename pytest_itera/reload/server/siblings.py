"""The reload folder's standalone modules, loaded by path, once each.

``-I`` keeps that folder off sys.path and the reload interpreter may not have pytest-itera
installed, so ``formats.py`` (the parts-per-format table), ``probe.py`` (the torch version
rule) and ``sandbox.py`` are loaded from their files: one piece of code for the client, the
probe and this server.  Standard library only: imported before torch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["formats", "probe", "sandbox"]

RELOAD = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name: str) -> ModuleType:
    """``reload/<name>.py`` as the module ``_itera_reload_<name>``, loaded once."""
    qualified = f"_itera_reload_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, os.path.join(RELOAD, f"{name}.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module  # before running it: a dataclass looks its module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[qualified]
        raise
    return module


if TYPE_CHECKING:  # the same files, seen by mypy through the package that holds them
    from pytest_itera.reload import formats, probe, sandbox
else:
    formats = load("formats")
    probe = load("probe")
    sandbox = load("sandbox")
