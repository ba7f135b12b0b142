"""What the file checks judge: the walk's entries less the ignored ones (``itera_ignore``,
the plugin's own outputs), and the manifest's file records indexed by path. Each is computed
once per Context and shared by files-intact and no-empty-files (100,000 files, issue 29)."""

from __future__ import annotations

from fnmatch import fnmatchcase

from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import FileRecord
from pytest_itera.files.outputs import own_outputs
from pytest_itera.files.tree import Entry


def ignored(ctx: Context, relpath: str) -> bool:
    """Left out of the file checks: an ``itera_ignore`` pattern, or the plugin's own output
    (a closure report written inside the campaign: :func:`own_outputs_of`)."""
    patterns = ctx.options.ignore
    return ((bool(patterns) and any(fnmatchcase(relpath, pattern) for pattern in patterns))
            or relpath in own_outputs_of(ctx))


def judged_entries(ctx: Context) -> tuple[Entry, ...]:
    """The walk's entries that are not :func:`ignored`, in walk order: sifted once per
    Context for every file check (three passes over 100,000 files, issue 29)."""

    def compute() -> tuple[Entry, ...]:
        if not ctx.options.ignore and not own_outputs_of(ctx):
            return ctx.entries()  # nothing is ignored (the usual case): no pass at all
        return tuple(e for e in ctx.entries() if not ignored(ctx, e.path))

    return ctx.memo("files.judged", compute)


def own_outputs_of(ctx: Context) -> dict[str, str]:
    """The unlisted files that are the plugin's own outputs, recognised by their content
    (:mod:`pytest_itera.files.outputs`): the next acceptance does not trip on them."""
    return ctx.memo("own-outputs", lambda: own_outputs(
        ctx.root, ctx.output_candidates(), by_path(ctx)[0]))


def listed_files(ctx: Context) -> tuple[FileRecord, ...]:
    man = ctx.campaign.manifest
    return man.files if man is not None else ()


def records_of(ctx: Context, relpath: str) -> list[tuple[int, FileRecord]]:
    """(index in $.files, record) for a listed path (:func:`by_path`)."""
    first, again = by_path(ctx)
    if relpath in again:
        return again[relpath]
    found = first.get(relpath)
    return [] if found is None else [found]


_Index = tuple[dict[str, tuple[int, FileRecord]], dict[str, list[tuple[int, FileRecord]]]]


def by_path(ctx: Context) -> _Index:
    """The listed paths' records, indexed once per Context: scanning the list for each item
    made a 1,000-run campaign quadratic (issue 8). The first record of each path is kept
    bare, a list only for a path listed more than once (a list per listed file costs ~90
    bytes, with 100,000 of them)."""

    def build() -> _Index:
        first: dict[str, tuple[int, FileRecord]] = {}
        again: dict[str, list[tuple[int, FileRecord]]] = {}
        for i, record in enumerate(listed_files(ctx)):
            seen = first.get(record.path)
            if seen is None:
                first[record.path] = (i, record)
            else:
                again.setdefault(record.path, [seen]).append((i, record))
        return first, again

    return ctx.memo("files-by-path", build)
