"""Where an adapter's base ships, and what in it proves the base's revision (adapter-pinned).

A base folder shipped in the campaign *beside* an adapter (a folder next to the adapter's
folder) is that adapter's base unless the manifest says otherwise (it is another adapter,
or another adapter's ``base_path``): adapter-pinned hashes and compares it whether or not
the adapter's record declares ``base_path``, so that dropping ``base_path``/``base_digest``
from the manifest does not hide the base that ships.

A folder beside an adapter is a base when it says so: it holds ``itera-base.json`` (what
``CampaignRecorder.record_base`` writes when the base is fetched), it is a hub cache folder
(``models--org--name`` with ``snapshots/`` or ``refs/``, or a ``snapshots/<commit>``
folder), or it is named ``base…`` and holds a model (``config.json``). A folder holding
``adapter_config.json`` is an adapter, never a base.

What proves the revision of a shipped base: ``itera-base.json``, the ``snapshots/<commit>``
folder of a hub cache in its path, or the ``refs/`` of a hub cache folder (each ref file holds
the commit it points at). A shipped base with none of them cannot prove a 40-hex
``base_revision``: the revision is then only what the manifest says.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence

from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import BASE_RECORD, COMMIT_HEX, AdapterRecord
from pytest_itera.core.findings import Finding

_HUB_REPO = re.compile(r"(?:^|/)models--[^/]+$")
_REF_CAP = 4096  # a ref file holds one commit id


def base_beside(ctx: Context, adapter: AdapterRecord,
                adapters: Sequence[AdapterRecord]) -> str | None:
    """The base folder shipped next to ``adapter``'s folder, or None (see the module)."""
    folder = adapter.path.rstrip("/")
    parent = posixpath.dirname(folder)
    claimed = {a.path.rstrip("/") for a in adapters}
    claimed |= {a.base_path.rstrip("/") for a in adapters if a.base_path is not None}
    prefix = f"{parent}/" if parent else ""
    for entry in ctx.entries():
        rest = entry.path[len(prefix):] if entry.path.startswith(prefix) else None
        if entry.kind != "dir" or not rest or "/" in rest or entry.path in claimed:
            continue
        if _is_base(ctx, entry.path, rest):
            return entry.path
    return None


def _is_base(ctx: Context, folder: str, name: str) -> bool:
    if ctx.entry(f"{folder}/adapter_config.json") is not None:
        return False
    if ctx.entry(f"{folder}/{BASE_RECORD}") is not None:
        return True
    if _HUB_REPO.search(folder) and any(ctx.entry(f"{folder}/{sub}") is not None
                                        for sub in ("snapshots", "refs")):
        return True
    return name.lower().startswith("base") and ctx.entry(f"{folder}/config.json") is not None


def hub_refs(ctx: Context, base: str) -> Iterator[tuple[str, str | None]]:
    """(where, commit) for each ``refs/<name>`` file of a shipped hub cache folder."""
    prefix = f"{base.rstrip('/')}/refs/"
    for entry in ctx.entries():
        if entry.kind != "file" or not entry.path.startswith(prefix):
            continue
        resolved = ctx.regular_file(entry.path)
        text = None
        if not isinstance(resolved, str) and entry.size <= _REF_CAP:
            try:
                text = resolved.read_text("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                text = None
        if text and COMMIT_HEX.fullmatch(text):  # a ref that holds no commit proves nothing
            yield f"its hub cache ref {entry.path}", text


def unproven_revision(adapter: AdapterRecord, base: str, where: str,
                      declared: bool) -> Finding:
    """A 40-hex base_revision that the shipped base cannot confirm: it records no revision."""
    how = "" if declared else (" (it ships beside the adapter: the manifest names no "
                               "base_path, but a base shipped next to an adapter is its base)")
    return Finding(
        f"the base revision {adapter.base_revision!r} of adapter {adapter.path} is not proven "
        f"by the shipped base {base}{how}: the base carries no revision record",
        where=f"{where}.base_revision",
        expected=f"{base}/{BASE_RECORD} (or a hub cache snapshots/<commit> folder, or its "
        f"refs/) recording {adapter.base_revision!r}",
        found=f"no {BASE_RECORD}, no snapshots/<commit> in its path, no refs/",
        hint="write itera-base.json with CampaignRecorder.record_base(<base folder>, model=..., "
        "revision=...) when the base is fetched (or ship the hub cache's snapshots/<commit> "
        "folder); a base trained in the campaign records revision null",
        code="adapter-pinned.revision-not-proven",
    )
