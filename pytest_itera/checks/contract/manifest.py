"""manifest: both documents present, JSON, schema-valid, and about the same campaign, the plan
frozen. Its rule is :func:`pytest_itera.checks.common.documents.manifest`, which the plan gate
applies too; every check that needs a document that does not load is "not evaluated", pointing
back at this item."""

from __future__ import annotations

from pytest_itera.checks.common import documents
from pytest_itera.checks.context import Check
from pytest_itera.checks.model import Kind

KINDS: dict[str, Kind] = {
    code: kind for code, kind in documents.KINDS.items() if code.startswith("manifest.")
}

CHECK = Check(
    "manifest",
    "plan.json and manifest.json present, JSON, schema-valid",
    documents.manifest,
    needs=frozenset(),
    fast=True,
    kinds=KINDS,
)
