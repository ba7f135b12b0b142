"""Where a closure report comes from, and what the reload interpreter must have (no pytest import).

A report that stands on its own says when it was made (UTC), by which versions of the plugin,
pytest, Python and torch -- in the pytest process and in the reload interpreter, whose
versions the probe reads without importing anything -- from which command line, and over
which plan.json and manifest.json (their sha256).

The environment is not evidence: a package the campaign's declared formats need in the
reload interpreter (safetensors for safetensors files, numpy for pickled RNG states) and that
is missing there is the reviewer's to install, said before any item runs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Campaign, Manifest

__all__ = [
    "document_digests",
    "missing_packages",
    "needed_packages",
    "process_versions",
    "reload_interpreter",
    "utc_now",
]


def utc_now() -> str:
    """``2026-12-01T09:30:00Z``: seconds are enough for a closure record."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def process_versions() -> dict[str, str | None]:
    """This process's versions; torch's from its metadata (torch is never imported here)."""
    return {
        "executable": sys.executable,
        "plugin": _version("pytest-itera"),
        "pytest": _version("pytest"),
        "python": platform.python_version(),
        "torch": _version("torch"),
    }


def reload_interpreter(python: str, hello: Mapping[str, Any] | None) -> dict[str, Any]:
    """The reload interpreter as its probe saw it; versions None when it gave no answer."""
    facts: dict[str, Any] = {"executable": python}
    for key in ("python", "torch", "numpy", "safetensors"):
        value = hello.get(key) if hello is not None else None
        facts[key] = value if isinstance(value, str) else None
    facts["probed"] = hello is not None
    return facts


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def document_digests(root: Path) -> dict[str, str | None]:
    """The sha256 of plan.json and manifest.json as they are now (None when unreadable)."""
    return {"plan_sha256": _sha256(root / PLAN_FILE),
            "manifest_sha256": _sha256(root / MANIFEST_FILE)}


# ---------------------------------------------------------- what reloads need


def needed_packages(campaign: Campaign) -> dict[str, str]:
    """Package -> the first declared artifact that needs it in the reload interpreter.

    From what the documents declare, nothing read: a safetensors file (a checkpoint in that
    format, or listed under a checkpoint or adapter folder) needs ``safetensors``; a resume
    checkpoint claiming RNG states needs ``numpy`` (trainers pickle numpy's generator state).
    """
    man = campaign.manifest
    if man is None:
        return {}
    needs: dict[str, str] = {}
    holding = _safetensors_holders(f.path for f in man.files)
    for path, fmt, claims in _artifacts(man):
        if fmt == "safetensors" or path.rstrip("/") in holding:
            needs.setdefault("safetensors", path)
        if "rng" in claims:
            needs.setdefault("numpy", f"{path} (claims RNG states)")
    return needs


def _artifacts(man: Manifest) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """(path, declared format, claimed parts) of each checkpoint and adapter."""
    return [*((c.path, c.format, c.claims) for c in man.checkpoints),
            *((a.path, None, ()) for a in man.adapters)]


def _safetensors_holders(paths: Iterable[str]) -> set[str]:
    """Every listed .safetensors file and each folder above it (a checkpoint or adapter may
    be a folder): one pass over the files, not one per checkpoint."""
    holding: set[str] = set()
    for path in paths:
        if path.endswith(".safetensors"):
            parts = path.split("/")
            holding.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return holding


def missing_packages(
    campaigns: Sequence[Campaign], interpreter: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(package, what needs it) for each package the campaigns need and the probed reload
    interpreter lacks; nothing when the probe gave no answer (the server then says)."""
    if not interpreter.get("probed"):
        return []
    missing: dict[str, str] = {}
    for campaign in campaigns:
        for package, why in needed_packages(campaign).items():
            if interpreter.get(package) is None:
                missing.setdefault(package, why)
    return sorted(missing.items())
