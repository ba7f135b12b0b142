"""Absolute paths that name the campaign folder itself (a tool's recorded output directory):
not a temporary-folder dependency, and read as the campaign-relative path they name."""

from __future__ import annotations

import os

from pytest_itera.checks.context import Context


def _own_prefixes(ctx: Context) -> tuple[str, ...]:
    """Absolute paths into the campaign folder itself are not temporary-folder dependencies.

    Real tools record their output directory (Lightning's ModelCheckpoint
    dirpath, a Trainer's output_dir): when the campaign lives under /tmp, those
    strings point at files the campaign keeps, not at files that will vanish.
    """

    def compute() -> tuple[str, ...]:
        roots = {os.path.abspath(ctx.root), os.path.realpath(ctx.root)}
        return tuple(root.rstrip("/") + "/" for root in roots)

    return ctx.memo("own-prefixes", compute)


def campaign_relative(ctx: Context, text: str) -> str | None:
    """The path inside the campaign folder that an absolute path string names, after
    resolving '..' ("." for the folder itself), or None: a sibling ("/tmp/x/camp-old/...")
    or an escape ("/tmp/x/camp/../other") is not the campaign."""
    path = os.path.normpath(text) + "/"
    for prefix in _own_prefixes(ctx):
        if path.startswith(prefix):
            return path[len(prefix):].rstrip("/") or "."
    return None
