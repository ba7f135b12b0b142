"""Quick probe of a reload interpreter: its Python and torch versions, without importing torch.

Standard library only, like ``server.py`` it runs under ``--itera-python``.  It prints one line
in the shape of the server's ``hello`` (``{"hello": 1, "python": ..., "torch": ...}``), read
from ``torch/version.py`` (where ``torch.__version__`` comes from), so that an unusable
interpreter is reported in milliseconds while the server, started beside it, imports torch.
The server checks the version it really imported again before it loads anything.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys

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


if __name__ == "__main__":
    version = torch_version()
    print(json.dumps({"hello": 1, "python": sys.version.split()[0], "torch": version,
                      "refused": None if version is None else too_old(version)}))
