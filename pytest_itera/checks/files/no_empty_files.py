"""no-empty-files (R8): an empty file is no verified output, nor an empty directory that
a run relies on (named after a run, or a checkpoint's or adapter's path): its outputs were
never written or not retrieved."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.files.inventory import judged_entries, records_of
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import AdapterRecord, CheckpointRecord
from pytest_itera.core.findings import Finding
from pytest_itera.files.tree import Entry


def no_empty_files(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """No empty regular file anywhere; no empty directory that a run relies on."""
    entries = judged_entries(ctx)
    for entry in entries:
        if entry.kind == "file" and entry.size == 0:
            listed = bool(records_of(ctx, entry.path))
            yield Finding(
                f"{entry.path} is empty{' (listed in the manifest)' if listed else ''}",
                where=entry.path,
                hint="an empty output is not a verified output: rerun the step that writes it",
                code="no-empty-files.empty-file",
            )
    yield from _empty_dirs(ctx, entries)


def _empty_dirs(ctx: Context, entries: Sequence[Entry]) -> Iterator[Finding]:
    dirs = [e for e in entries if e.kind == "dir" and not e.error]
    parents = Counter(e.path.rsplit("/", 1)[0] for e in ctx.entries() if "/" in e.path)
    relied = _relied_on(ctx)
    for entry in dirs:
        if parents[entry.path] == 0 and _is_relied_on(entry.path, relied):
            yield Finding(
                f"directory {entry.path} is empty, and a run relies on it",
                where=entry.path,
                hint="its outputs were never written or not retrieved",
                code="no-empty-files.empty-dir",
            )


def _relied_on(ctx: Context) -> tuple[set[str], set[str]]:
    man = ctx.campaign.manifest
    if man is None:
        return set(), set()
    refs: list[CheckpointRecord | AdapterRecord] = [*man.checkpoints, *man.adapters]
    paths = {r.path.rstrip("/") for r in refs}
    return paths, {r.id for r in man.runs}


def _is_relied_on(path: str, relied: tuple[set[str], set[str]]) -> bool:
    paths, run_ids = relied
    return path in paths or any(part in run_ids for part in path.split("/"))


KINDS: dict[str, Kind] = {
    "no-empty-files.empty-file": Kind(
        rule="a regular file of the campaign folder is empty (listed in the manifest or not)",
        fix="an empty output is not a verified output: rerun the step that writes it"),
    "no-empty-files.empty-dir": Kind(
        rule="a directory a run relies on (its id, a checkpoint or adapter path) is empty",
        fix="its outputs were never written or not retrieved: rerun or retrieve them"),
}

CHECK = Check(
    "no-empty-files",
    "no empty file, no empty directory a run relies on",
    no_empty_files,
    needs=frozenset(),
    fast=True,
    kinds=KINDS,
)
