"""Quick probe of a reload interpreter: its Python and torch versions, without importing torch.

Standard library only, like the server (``server/``) it runs under ``--itera-python``.  It
prints one line in the shape of the server's ``hello`` (``{"hello": 1, "python": ...,
"torch": ...}``), read from ``torch/version.py`` (where ``torch.__version__`` comes from), so
that an unusable interpreter is reported in milliseconds while the server, started beside it,
imports torch.
The server checks the version it really imported again before it loads anything.
It also says whether the packages some formats need (numpy for pickled RNG states,
safetensors) are importable there, again without importing them: a missing one is the
reviewer's environment to fix, told before any item runs, never a verdict on the campaign.

The pytest process runs it through ``Reloader.probe`` (no import of torch there either).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from typing import Any

MIN_TORCH = (2, 10)


def too_old(version: str) -> str | None:
    """Why a torch of this version must not load checkpoints, or None."""
    try:
        major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    except ValueError:
        return f"cannot parse the torch version {version!r}"
    if (major, minor) >= MIN_TORCH:
        return None
    return (f"torch {version} is older than 2.10: weights_only=True can be bypassed there "
            "(CVE-2025-32434, CVE-2026-24747); upgrade torch in the training interpreter")


def torch_version() -> str | None:
    try:
        spec = importlib.util.find_spec("torch")  # finds the package, does not import it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as fh:
            text = fh.read(1 << 16)
    except OSError:
        return None
    found = re.search(r"^__version__\s*(?::\s*\w+\s*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return found.group(1) if found else None


# What the reload server imports for some formats (its own hello reports the same keys).
OPTIONAL_PACKAGES = ("numpy", "safetensors")


def package_version(name: str) -> str | None:
    """The version of an importable package ("unknown" without metadata), None when absent."""
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def hello() -> dict[str, Any]:
    version = torch_version()
    facts: dict[str, Any] = {"hello": 1, "python": sys.version.split()[0], "torch": version,
                             "refused": None if version is None else too_old(version)}
    facts.update({name: package_version(name) for name in OPTIONAL_PACKAGES})
    return facts


if __name__ == "__main__":
    print(json.dumps(hello()))
