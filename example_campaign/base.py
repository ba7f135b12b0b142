"""The adapter's base, shipped in the campaign and identified like a hub model.

A hub model is pinned by the 40-hex commit it was fetched at. This base is built
by the campaign (the control's weights), so the campaign commits it itself: its
revision is the id of the git commit that holds exactly its files (computed here
without git; ``git commit`` with the same files, author, date and message gives
the same id, which RELOAD.md shows how to check). The recorder then writes
``itera-base.json`` ({"model", "revision"}) into the folder, and the manifest pins
the whole folder by its tree digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime

AUTHOR = "example_campaign <example-campaign@pytest-itera.invalid>"


def _object_id(kind: str, body: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(body)}\0".encode() + body, usedforsecurity=False).hexdigest()


def blob_id(data: bytes) -> str:
    return _object_id("blob", data)


def tree_id(files: Mapping[str, bytes]) -> str:
    """The git tree of a flat folder of regular files (mode 100644)."""
    if any("/" in name for name in files):
        raise ValueError("a flat folder only: no sub-folders")
    body = b"".join(
        b"100644 " + name.encode("utf-8") + b"\0" + bytes.fromhex(blob_id(files[name]))
        for name in sorted(files, key=lambda n: n.encode("utf-8"))
    )
    return _object_id("tree", body)


def commit_message(model: str) -> str:
    return f"{model}: the control's weights, exported as the adapter's base"


def commit_id(files: Mapping[str, bytes], *, model: str, when: datetime) -> str:
    """The id of the root commit holding ``files`` by :data:`AUTHOR` at ``when`` (UTC)."""
    stamp = f"{int(when.timestamp())} +0000"
    body = (f"tree {tree_id(files)}\nauthor {AUTHOR} {stamp}\ncommitter {AUTHOR} {stamp}\n\n"
            f"{commit_message(model)}\n")
    return _object_id("commit", body.encode("utf-8"))
