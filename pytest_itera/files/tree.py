"""The campaign folder as a sorted tuple of lstat'ed entries (no pytest import).

Nothing here opens a regular file or follows a symbolic link: entries come from
``os.scandir`` + ``lstat``, symlinks are described (target, whether they escape)
but never descended, and FIFOs, sockets and devices are listed, never opened.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from stat import S_ISREG
from typing import Literal

EntryKind = Literal["file", "dir", "symlink", "fifo", "socket", "device", "other"]

# The path of the marker entry that says the walk stopped early, and of the root itself.
ROOT_PATH = "."

_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


@dataclass(frozen=True)
class Entry:
    """One lstat'ed thing inside the campaign folder."""

    path: str  # POSIX, relative to the root ("runs/control/last.pt"); dotfiles included
    kind: EntryKind
    size: int  # lstat st_size; 0 for anything that is not a regular file
    mtime_ns: int
    target: str | None = None  # symlinks: the os.readlink text
    escapes: bool = False  # symlink that resolves outside the root, dangles, or loops
    error: str | None = None  # e.g. "permission denied" for a directory that cannot be listed


def walk(root: Path, *, limit: int = 1_000_000) -> tuple[Entry, ...]:
    """Every entry under ``root`` (root excluded), sorted by path.

    Iterative (deep trees do not hit the recursion limit) and deterministic: the
    traversal visits names in sorted order, so even a truncated walk keeps the
    same entries on every xdist worker. Past ``limit`` entries the walk stops and
    one marker entry (path ".", kind "other") says so in its ``error``.
    Raises FileNotFoundError/NotADirectoryError when ``root`` is not a directory.
    """
    base = os.path.abspath(root)
    if not stat.S_ISDIR(os.stat(base).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", base)
    real_root = os.path.realpath(base)
    children, error = _scan_dir(base)
    if error is not None:
        return (Entry(ROOT_PATH, "dir", 0, os.stat(base).st_mtime_ns, error=error),)
    found: list[Entry] = []
    # Stack of (relative dir path, its sorted children); reversed so pops go in order.
    stack: list[tuple[str, list[os.DirEntry[str]]]] = [("", children[::-1])]
    while stack:
        rel_dir, pending = stack[-1]
        if not pending:
            stack.pop()
            continue
        if len(found) >= limit:
            found.sort(key=_path_key)
            return (*found, _truncated(limit))
        child = pending.pop()
        rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
        # The child's lstat through its DirEntry: the path is built in C (100,000 files).
        try:
            st = child.stat(follow_symlinks=False)
        except OSError as exc:
            found.append(_vanished(rel, exc))
            continue
        if S_ISREG(st.st_mode):  # most entries: no call to describe them
            found.append(Entry(rel, "file", st.st_size, st.st_mtime_ns))
        elif stat.S_ISDIR(st.st_mode):
            below, error = _scan_dir(child.path)
            found.append(Entry(rel, "dir", 0, st.st_mtime_ns, error=error))
            if below:
                stack.append((rel, below[::-1]))
        else:
            found.append(_described(child.path, real_root, rel, st))
    found.sort(key=_path_key)
    return tuple(found)


def _scan_dir(full: str) -> tuple[list[os.DirEntry[str]], str | None]:
    """The children sorted by name, or an error sentence; never raises for OS errors."""
    try:
        with os.scandir(full) as it:
            return sorted(it, key=_name_key), None
    except OSError as exc:
        return [], os_reason(exc)


_name_key = attrgetter("name")  # sort keys in C: 100,000 entries (issue 29)


def _vanished(rel: str, exc: OSError) -> Entry:
    reason = "vanished during the walk" if exc.errno == errno.ENOENT else os_reason(exc)
    return Entry(rel, "other", 0, 0, error=reason)


def entry_at(root: Path, relpath: str) -> Entry | None:
    """The entry :func:`walk` would list for ``relpath``, without walking the whole folder
    (None where the walk would list nothing): reached through real, listable directories
    only, each component under the name the folder holds (one listing per folder above)."""
    if syntax_problem(relpath) is not None or relpath == ROOT_PATH:
        return None
    base = os.path.abspath(root)
    parts = relpath.split("/")
    for depth, name in enumerate(parts):
        names, error = _list_dir(os.path.join(base, *parts[:depth]))
        if error is not None or name not in names:
            return None
        if depth < len(parts) - 1:
            try:
                st = os.lstat(os.path.join(base, *parts[: depth + 1]))
            except OSError:
                return None
            if not stat.S_ISDIR(st.st_mode):
                return None
    return _visit(base, os.path.realpath(base), relpath)[0]


_path_key = attrgetter("path")


def _truncated(limit: int) -> Entry:
    message = f"walk truncated: more than {limit} entries, the rest were not listed"
    return Entry(ROOT_PATH, "other", 0, 0, error=message)


def _list_dir(full: str) -> tuple[list[str], str | None]:
    """Sorted child names, or an error sentence; never raises for OS errors."""
    try:
        with os.scandir(full) as it:
            return sorted(e.name for e in it), None
    except OSError as exc:
        return [], os_reason(exc)


def _visit(base: str, real_root: str, rel: str) -> tuple[Entry, list[str]]:
    """The entry for ``rel`` and, for a listable directory, its sorted child names."""
    full = os.path.join(base, rel)
    try:
        st = os.lstat(full)
    except OSError as exc:
        return _vanished(rel, exc), []
    if stat.S_ISDIR(st.st_mode):
        names, error = _list_dir(full)
        return Entry(rel, "dir", 0, st.st_mtime_ns, error=error), names
    return _described(full, real_root, rel, st), []


def _described(full: str, real_root: str, rel: str, st: os.stat_result) -> Entry:
    """The entry of anything but a directory, from its lstat."""
    kind = _kind(st.st_mode)
    if kind == "symlink":
        return _symlink_entry(full, real_root, rel, st)
    size = st.st_size if kind == "file" else 0
    return Entry(rel, kind, size, st.st_mtime_ns)


def _symlink_entry(full: str, real_root: str, rel: str, st: os.stat_result) -> Entry:
    try:
        target: str | None = os.readlink(full)
    except OSError as exc:
        return Entry(rel, "symlink", 0, st.st_mtime_ns, escapes=True, error=os_reason(exc))
    escapes = _resolve_strict(full, real_root) is None
    return Entry(rel, "symlink", 0, st.st_mtime_ns, target=target, escapes=escapes)


def _resolve_strict(full: str, real_root: str) -> str | None:
    """The real path when it exists inside ``real_root``; None if it dangles, loops or escapes.

    os.path.realpath only lstat's and readlink's: nothing is opened.
    """
    try:
        real = os.path.realpath(full, strict=True)
    except OSError:
        return None
    return real if is_within(real, real_root) else None


def is_within(path: str, root: str) -> bool:
    """True when the absolute ``path`` is ``root`` or below it (both already real paths)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _kind(mode: int) -> EntryKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def os_reason(exc: OSError) -> str:
    """A short lower-case sentence for an OSError ("permission denied", ...)."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc)


RefusalKind = Literal["written", "link-leaves", "link-loops"]


class PathRefusal(str):
    """Why a manifest path is refused: the one sentence itself (it compares and prints as
    that text), and its ``kind`` typed, so that no reader parses the sentence: ``written``
    (not a plain normalized relative path), ``link-leaves`` (a symlink component leaves the
    folder: copy its target in), ``link-loops``."""

    kind: RefusalKind

    def __new__(cls, reason: str, kind: RefusalKind) -> PathRefusal:
        refusal = super().__new__(cls, reason)
        refusal.kind = kind
        return refusal

    def __getnewargs__(self) -> tuple[str, RefusalKind]:  # type: ignore[override]
        """Copies and pickles keep the kind (a refusal travels inside findings' facts)."""
        return str(self), self.kind


def resolve_inside(root: Path, relpath: str) -> Path | PathRefusal:
    """The absolute real path for a manifest path, or a one-sentence reason it is refused.

    Accepted: a normalized relative POSIX path ("runs/x/last.pt") whose symlink
    components, if any, resolve inside the root. Symlinks inside the folder are
    resolved in the returned path, so callers can open it with O_NOFOLLOW. The
    path need not exist (a missing file is the caller's finding, not ours).
    Only lstat/readlink are used: nothing is opened and no link is followed out.
    """
    reason = syntax_problem(relpath)
    if reason is not None:
        return PathRefusal(reason, "written")
    base = os.path.abspath(root)
    real_root = os.path.realpath(base)
    parts = relpath.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        refused = _component_reason(os.path.join(base, prefix), real_root, prefix)
        if refused is not None:
            return refused
    return Path(os.path.realpath(os.path.join(base, relpath)))


def syntax_problem(relpath: str) -> str | None:
    """Why ``relpath`` is not a normalized relative POSIX path inside the folder, in one
    clause, or None: the rule of :func:`resolve_inside`, and of the recorder's paths."""
    if relpath == "":
        return "is empty"
    if "\0" in relpath:
        return "contains a NUL byte"
    if relpath.startswith("/") or _WINDOWS_ABSOLUTE.match(relpath):
        return "is absolute"
    parts = relpath.split("/")
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 1
        if depth < 0:
            return "'..' leaves the campaign folder"
    if ".." in parts:
        return "contains '..' (write the normalized path)"
    if "" in parts or "." in parts:
        return "is not normalized (no '.', empty or trailing components: write 'a/b')"
    return None


def _component_reason(full: str, real_root: str, prefix: str) -> PathRefusal | None:
    """Why the path component ``prefix`` is refused, if it is a symlink that leaves."""
    try:
        st = os.lstat(full)
    except OSError:
        return None  # missing (or unreadable) here: nothing below can be a symlink out
    if not stat.S_ISLNK(st.st_mode):
        return None
    try:
        target = os.readlink(full)
    except OSError:
        return None  # vanished since the lstat: nothing left to follow
    try:
        real = os.path.realpath(full, strict=True)
    except FileNotFoundError:
        real = os.path.realpath(full)  # dangling: judge where it would point
    except OSError:
        return PathRefusal(f"symlink {prefix} -> {target} loops", "link-loops")
    if is_within(real, real_root):
        return None
    return PathRefusal(f"symlink {prefix} -> {target} leaves the campaign folder", "link-leaves")


# ----------------------------------------------------------------------------- tree digest


class DigestRefused(ValueError):
    """A folder has no tree digest: it holds a link, a special file, or something unreadable."""


def digest_of(files: Iterable[tuple[str, str]]) -> str:
    """The tree digest of ``(path relative to the folder, sha256 of the file)`` pairs.

    SHA-256 of the lines ``"<sha256>  <path>\\n"`` sorted by path (bytewise, UTF-8): what
    ``cd BASE && find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum
    | sha256sum`` prints for ordinary file names (docs/contract-v2.md).
    """
    lines = sorted((path.encode("utf-8", "surrogateescape"), digest) for path, digest in files)
    total = hashlib.sha256()
    for path, digest in lines:
        total.update(digest.encode("ascii") + b"  " + path + b"\n")
    return total.hexdigest()


def tree_digest_of(entries: Iterable[Entry], sha256_of: Callable[[str], str]) -> str:
    """The tree digest of a folder's walk (paths relative to the folder); ``sha256_of``
    gives the sha256 of one regular file by that relative path (and may raise
    DigestRefused). Links, FIFOs, sockets, devices and unreadable entries are refused:
    the digest names regular files only, and a link would make it depend on what lies
    outside."""
    files = []
    for entry in entries:
        if entry.error is not None:
            raise DigestRefused(f"{entry.path}: {entry.error}")
        if entry.kind == "symlink":
            raise DigestRefused(f"{entry.path} is a symbolic link (to {entry.target!r}); the tree "
                                "digest refuses links: copy the file itself into the folder")
        if entry.kind == "file":
            files.append((entry.path, sha256_of(entry.path)))
        elif entry.kind != "dir":
            raise DigestRefused(f"{entry.path} is a {entry.kind}, not a regular file")
    return digest_of(files)


def tree_digest(root: Path) -> str:
    """The tree digest of the folder ``root``: every regular file under it, by content
    and relative path (docs/contract-v2.md). Raises DigestRefused for a folder holding a
    link or a special file, OSError when ``root`` is not a readable folder."""

    def sha256_of(relpath: str) -> str:
        digest = hashlib.sha256()
        fd = os.open(os.path.join(root, relpath), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()

    return tree_digest_of(walk(root), sha256_of)


def sha256_file(path: Path) -> tuple[str, int]:
    """The sha256 and byte count of ``path``, streamed in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
