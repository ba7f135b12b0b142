"""files-intact (R8): every file of the folder listed in manifest.json, and every listed
file present, inside the folder, a regular file under a portable name, with its recorded size
and sha256. A missing file is traced to where its bytes went (a rename, a renamed folder):
the fix then says which move to undo."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.files.inventory import by_path, judged_entries, listed_files, records_of
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, FileRecord
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.portable import RENAME_HINT, collision_problem, collisions, path_problem

CONTRACT_FILES = (PLAN_FILE, MANIFEST_FILE)
_NOT_A_FILE = {
    "fifo": "a FIFO (named pipe)",
    "socket": "a socket",
    "device": "a device file",
    "dir": "a directory",
    "symlink": "a symbolic link",
    "other": "not a regular file",
}


def file_targets(ctx: Context) -> Iterable[str]:
    present = (
        e.path
        for e in judged_entries(ctx)
        if (e.kind != "dir" or e.error) and e.path not in CONTRACT_FILES
    )
    return {*present, *(f.path for f in listed_files(ctx))}


def files_intact(ctx: Context, target: str | None) -> Iterator[Finding]:
    assert target is not None
    if not intact_suspects(ctx, (target,)):
        return
    records = records_of(ctx, target)
    if not records:
        yield from _unlisted(ctx, target)
        return
    index, record = records[0]
    where = json_where(MANIFEST_FILE, "files", index)
    if len(records) > 1:
        yield Finding(
            f"{target} is listed {len(records)} times", where=where, hint="list each file once",
            code="files-intact.listed-twice"
        )
    yield from _unportable(ctx, record.path, f"{where}.path")
    yield from _listed_file(ctx, record, where)


def intact_suspects(ctx: Context, members: Sequence[str]) -> Sequence[str]:
    """The files :func:`files_intact` may fail (a folder item's, or one file), in one pass.

    The common case is judged at the cost of a few lookups (100,000 listed files, issue
    29): listed once, a regular file of the walk, read without error, with the size and
    sha256 recorded, under a portable name that collides with no other. Every other file
    is a suspect, judged again from scratch by the path that says what is wrong; so is
    every file with --itera-fast, which reads nothing.
    """
    if ctx.options.fast:
        return members
    first, again = by_path(ctx)
    collide = _collisions(ctx)
    entry, facts = ctx.entry, ctx.facts
    suspects = []
    for path in members:
        found = first.get(path)
        walked = entry(path)
        if found is None or path in again or walked is None or walked.kind != "file" \
                or path in collide or path == MANIFEST_FILE or path_problem(path) is not None:
            suspects.append(path)
            continue
        read, record = facts(path), found[1]
        if read.error is not None or read.size != record.bytes or read.sha256 != record.sha256:
            suspects.append(path)
    return suspects


def _collisions(ctx: Context) -> dict[str, tuple[str, ...]]:
    return ctx.memo("portable-collisions",
                    lambda: collisions(record.path for record in listed_files(ctx)))


def _unportable(ctx: Context, relpath: str, where: str) -> Iterator[Finding]:
    """The one portability rule (pytest_itera.core.portable) on a listed path: campaigns are
    retrieved to other systems, where such a name escapes the folder or names another file."""
    problem = path_problem(relpath)
    if problem is not None:
        yield Finding(f"listed file {relpath!r} {problem}", where=where, hint=RENAME_HINT,
                      code="files-intact.unportable")
    others = _collisions(ctx).get(relpath)
    if others:
        yield Finding(f"listed file {relpath!r} {collision_problem(others)}", where=where,
                      hint="give each file a name that differs by more than letter case or "
                      "accents' encoding",
                      code="files-intact.name-collision")


def _unlisted(ctx: Context, relpath: str) -> Iterator[Finding]:
    entry = ctx.entry(relpath)
    if entry is not None and entry.error:
        yield Finding(f"{relpath} {entry.error}", where=relpath, code="files-intact.unreadable")
        return
    kind = "" if entry is None or entry.kind == "file" else f" ({_describe(entry.kind)})"
    renamed = {new: old for old, new in renames(ctx).items()}.get(relpath)
    if renamed is not None:
        moved = _folder_rename(ctx, renamed)
        yield Finding(
            f"{relpath} is in the campaign folder but not listed in the manifest: renamed "
            f"from {renamed}? (the sha256 of that missing listed file)", where=relpath,
            hint=f"rename {moved[1]} back to {moved[0]}" if moved else
            f"move it back to {renamed}, or correct the manifest",
            subjects=(renamed,), code="files-intact.unlisted")
        return
    yield Finding(
        f"{relpath}{kind} is in the campaign folder but not listed in the manifest",
        where=relpath,
        hint="list it in manifest.json files (pytest_itera.record.campaign does this), remove it, "
        "or add a pattern to the itera_ignore ini option",
        code="files-intact.unlisted",
    )


def _missing(ctx: Context, record: FileRecord, where: str) -> Finding:
    """A listed file that is not there: where its bytes went, when another path has them."""
    new = renames(ctx).get(record.path)
    if new is None:
        return Finding(f"listed file {record.path} is missing", where=where,
                       hint="retrieve it before the rental ends, or correct the manifest",
                       code="files-intact.missing")
    moved = _folder_rename(ctx, record.path)
    if moved is not None:
        old, folder, count, first = moved
        if first != record.path:  # one finding for the folder: on its first missing file
            return Finding(
                f"listed file {record.path} is missing: moved with {first} (the folder {old} "
                f"renamed to {folder}?)", where=where, hint=f"rename {folder} back to {old}",
                subjects=(first,), code="files-intact.missing")
        return Finding(
            f"listed file {record.path} is missing: the folder {old} renamed to {folder}? "
            f"({count} of its missing listed files are there, same sha256: {new})",
            where=where, hint=f"rename {folder} back to {old} (or list the files where they "
            "are now, with the recorder)", code="files-intact.missing")
    return Finding(
        f"listed file {record.path} is missing: renamed to {new}? (same sha256)", where=where,
        hint=f"move {new} back to {record.path}, or correct the manifest",
        code="files-intact.missing")


def renames(ctx: Context) -> dict[str, str]:
    """Missing listed path -> another path of the folder with its recorded sha256 (and size):
    an unlisted file, or a listed one that no longer has its own bytes. Only files of the
    same size are hashed, and nothing with --itera-fast (which hashes nothing)."""

    def compute() -> dict[str, str]:
        listed = listed_files(ctx)
        missing = [r for r in listed if ctx.entry(r.path) is None]
        if not missing or ctx.options.fast:
            return {}
        records = {r.path: r for r in listed}
        sizes = {r.bytes for r in missing}
        by_size: dict[int, list[str]] = {}
        for entry in judged_entries(ctx):
            if entry.kind == "file" and entry.size in sizes and entry.path not in CONTRACT_FILES:
                own = records.get(entry.path)
                if own is None or own.bytes != entry.size or own.sha256 != \
                        ctx.facts(entry.path).sha256:
                    by_size.setdefault(entry.size, []).append(entry.path)
        out: dict[str, str] = {}
        taken: set[str] = set()
        for record in missing:
            for path in by_size.get(record.bytes, ()):
                if path not in taken and ctx.facts(path).sha256 == record.sha256:
                    out[record.path] = path
                    taken.add(path)
                    break
        return out

    return ctx.memo("files.renames", compute)


def _folder_rename(ctx: Context, missing: str) -> tuple[str, str, int, str] | None:
    """(old folder, new folder, how many missing files moved so, the first of them) when the
    missing file went with others of its folder to the same relative places under another
    folder."""

    def compute() -> dict[str, tuple[str, str, int, str]]:
        pairs: dict[tuple[str, str], list[str]] = {}
        for old, new in renames(ctx).items():
            a, b = old.split("/"), new.split("/")
            same = 0
            while same < min(len(a), len(b)) - 1 and a[-1 - same] == b[-1 - same]:
                same += 1
            if same:
                pairs.setdefault(("/".join(a[:-same]), "/".join(b[:-same])), []).append(old)
        return {old: (folders[0], folders[1], len(moved), min(moved))
                for folders, moved in pairs.items() if len(moved) > 1 for old in moved}

    return ctx.memo("files.folder-renames", compute).get(missing)


def _listed_file(ctx: Context, record: FileRecord, where: str) -> Iterator[Finding]:
    if record.path == MANIFEST_FILE:
        yield Finding(
            "manifest.json lists itself: its own sha256 cannot be recorded inside it",
            where=where,
            hint="remove the entry; manifest.json and plan.json are checked by their own items",
            code="files-intact.lists-manifest",
        )
        return
    entry = ctx.entry(record.path)
    # A regular file of the walk is inside the folder as written (Context.inside): no
    # pathlib.Path per listed file.
    inside = None if entry is not None and entry.kind == "file" else ctx.inside(record.path)
    if isinstance(inside, str):
        yield Finding(
            f"listed file {record.path!r}: {inside}",
            where=where,
            # The path is already relative: a link that leaves is fixed by copying its target.
            hint="copy the file itself into the campaign folder" if inside.kind == "link-leaves"
            else "list paths relative to the campaign folder, inside it",
            code="files-intact.outside",
        )
        return
    if entry is None:
        yield _missing(ctx, record, where)
        return
    if entry.kind == "symlink" and entry.escapes:
        yield Finding(
            f"{record.path} is a symlink to {entry.target!r}, which leaves the campaign folder",
            where=where,
            hint="copy the file itself into the campaign folder",
            code="files-intact.outside",
        )
        return
    if entry.kind not in ("file", "symlink"):
        yield Finding(f"{record.path} is {_describe(entry.kind)}", where=where,
                      code="files-intact.not-a-file")
        return
    yield from _content(ctx, record, where, entry.size if entry.kind == "file" else None)


def _content(ctx: Context, record: FileRecord, where: str, size: int | None) -> Iterator[Finding]:
    if ctx.options.fast and size is not None:
        if size != record.bytes:
            yield _size_finding(record, size, where)
        return
    facts = ctx.facts(record.path)
    if facts.error is not None:
        yield Finding(f"{record.path} cannot be read: {facts.error}", where=where,
                      hint="something is still writing into the campaign folder: let it "
                      "finish, then run again" if facts.moving else None,
                      code="files-intact.unreadable")
        return
    if facts.size != record.bytes:
        yield _size_finding(record, facts.size, where)
    if facts.sha256 is not None and facts.sha256 != record.sha256:
        held = ctx.stored.objects.get(record.path) if ctx.stored is not None else None
        by = " (the sha256 is the store's own SHA-256 of the object: --itera-store-checksums)" \
            if held is not None and held.by_store else ""
        yield Finding(
            f"{record.path} does not have the sha256 recorded in the manifest{by}",
            where=f"{where}.sha256",
            expected=record.sha256,
            found=facts.sha256,
            hint="the file changed or was corrupted in transfer: retrieve it again",
            code="files-intact.sha256",
        )


def _size_finding(record: FileRecord, size: int, where: str) -> Finding:
    return Finding(
        f"{record.path} is {size} bytes, the manifest says {record.bytes}",
        where=f"{where}.bytes",
        expected=f"{record.bytes} bytes",
        found=f"{size} bytes",
        hint="the file is truncated or changed: retrieve it again",
        code="files-intact.size",
    )


def _describe(kind: str) -> str:
    return _NOT_A_FILE.get(kind, kind)


KINDS: dict[str, Kind] = {
    "files-intact.listed-twice": Kind(
        rule="manifest.json lists the same file path more than once",
        fix="list each file once"),
    "files-intact.unportable": Kind(
        rule="a listed path is not portable: absolute, with '..', or a name another system "
        "refuses",
        fix=RENAME_HINT),
    "files-intact.name-collision": Kind(
        rule="two listed paths differ only by letter case or by the encoding of their accents",
        fix="give each file a name that differs by more than letter case or accents' encoding"),
    "files-intact.unreadable": Kind(
        rule="a file of the campaign folder cannot be read (or is still being written)",
        fix="make the file readable; a file still being written: let it finish, then run again"),
    "files-intact.unlisted": Kind(
        rule="a file is in the campaign folder but not listed in manifest.json (perhaps a "
        "renamed listed file)",
        fix="list it in manifest.json files (pytest_itera.record.campaign does this), remove it, "
        "or add a pattern to the itera_ignore ini option"),
    "files-intact.missing": Kind(
        rule="a file listed in manifest.json is not in the campaign folder (perhaps renamed, "
        "alone or with its folder)",
        fix="retrieve it before the rental ends, move it back, or correct the manifest"),
    "files-intact.lists-manifest": Kind(
        rule="manifest.json lists itself, whose own sha256 cannot be recorded inside it",
        fix="remove the entry; manifest.json and plan.json are checked by their own items"),
    "files-intact.outside": Kind(
        rule="a listed file lies outside the campaign folder, or is a symlink that leaves it",
        fix="copy the file itself into the campaign folder, listed by a relative path"),
    "files-intact.not-a-file": Kind(
        rule="a listed path is not a regular file (a directory, a FIFO, a socket, a device file)",
        fix="list regular files only"),
    "files-intact.sha256": Kind(
        rule="a listed file's sha256 differs from the one recorded in manifest.json",
        fix="the file changed or was corrupted in transfer: retrieve it again"),
    "files-intact.size": Kind(
        rule="a listed file's size differs from the bytes recorded in manifest.json",
        fix="the file is truncated or changed: retrieve it again"),
}

CHECK = Check(
    "files-intact",
    "every file listed, present, inside the folder, with its size and sha256",
    files_intact,
    scope="file",
    targets=file_targets,
    suspects=intact_suspects,
    needs=frozenset({"manifest"}),
    fast=True,
    reads=True,
    kinds=KINDS,
)
