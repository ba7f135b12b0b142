"""no-temp-paths (R8): no file of the campaign depends on a temporary folder, which does
not outlive the rental. The scan itself is part of the files' one streamed read
(Context.facts); a path into the campaign folder itself is no such dependency."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from pytest_itera.checks.common.paths import campaign_relative
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.files.inventory import judged_entries
from pytest_itera.checks.model import Kind
from pytest_itera.core.findings import Finding


def scan_targets(ctx: Context) -> Iterable[str]:
    return [
        e.path
        for e in judged_entries(ctx)
        if e.kind == "file" or (e.kind == "symlink" and not e.escapes)
    ]


def scan_suspects(ctx: Context, members: Sequence[str]) -> list[str]:
    """The files of a folder item that :func:`no_temp_paths` may fail, in one pass: those
    read with an error, not wholly scanned, or with a hit."""
    facts = ctx.scanned
    return [m for m in members
            if (f := facts(m)).error is not None or f.unscanned is not None or f.hit_count]


def no_temp_paths(ctx: Context, target: str | None) -> Iterator[Finding]:
    assert target is not None
    facts = ctx.scanned(target)
    if facts.error is not None:
        yield Finding(f"{target} cannot be scanned: {facts.error}", where=target,
                      code="no-temp-paths.unreadable")
        return
    if facts.unscanned is not None:
        yield Finding(f"{target} was not fully scanned for temporary paths: {facts.unscanned}",
                      where=target, hint="a file this shape is not a torch.save checkpoint: "
                      "save it with torch.save, or remove it from the campaign",
                      code="no-temp-paths.unscanned")
    hits = [h for h in facts.hits if campaign_relative(ctx, h.excerpt.strip("'\"` ")) is None]
    for hit in hits:
        inside = f" ({hit.where})" if hit.where else ""
        yield Finding(
            f"path into a temporary folder: {hit.excerpt}",
            where=f"{target}:{hit.line}:{hit.column}{inside}",
            hint="a temporary folder does not outlive the rental: record paths relative "
            "to the campaign folder and copy the file in",
            code="no-temp-paths.temp-path",
        )
    unseen = facts.hit_count - len(facts.hits)
    if unseen > 0:
        yield Finding(
            f"{'... and ' if hits else ''}{unseen} more possible temporary paths in {target}",
            where=target,
            hint="fix the paths above, then run again to see the rest",
            code="no-temp-paths.more",
        )


KINDS: dict[str, Kind] = {
    "no-temp-paths.unreadable": Kind(
        rule="a file cannot be read, so it cannot be scanned for temporary paths",
        fix="make the file readable, then run again"),
    "no-temp-paths.unscanned": Kind(
        rule="a file was not fully scanned for temporary paths (a shape no torch.save checkpoint "
        "has)",
        fix="save it with torch.save, or remove it from the campaign"),
    "no-temp-paths.temp-path": Kind(
        rule="a file holds a path into a temporary folder (reported with line and column)",
        fix="record paths relative to the campaign folder and copy the file in"),
    "no-temp-paths.more": Kind(
        rule="a file holds more possible temporary paths than the ones reported",
        fix="fix the paths reported, then run again to see the rest"),
}

CHECK = Check(
    "no-temp-paths",
    "no path into a temporary folder",
    no_temp_paths,
    scope="file",
    targets=scan_targets,
    suspects=scan_suspects,
    needs=frozenset(),
    reads=True,
    kinds=KINDS,
)
