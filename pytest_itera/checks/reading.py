"""Reading a campaign's files ahead of the items that judge them: reader threads for large
files, a helper process for many small ones (no pytest import).

Each file is read once per process, in one streamed pass (size, sha256, temporary paths:
``files.scan``), here or on a background reader; :class:`FileReader` keeps what was read for
the :class:`~pytest_itera.checks.context.Context` that owns it (issues 19 and 29: 100,000
small files, several large ones at the speed of several cores).
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pytest_itera.checks.model import Options
    from pytest_itera.files.batch import Helper
    from pytest_itera.files.scan import FileFacts, TempMatcher
    from pytest_itera.files.source import Staged
    from pytest_itera.files.tree import Entry

__all__ = ["READER_NICENESS", "FileReader", "Folder", "background_priority"]


class Folder(Protocol):
    """What a reader reads from: the walk of a campaign folder (the Context's)."""

    by_path: dict[str, Entry]

    @property
    def options(self) -> Options: ...

    @property
    def stored(self) -> Staged | None: ...

    @property
    def root_slash(self) -> str: ...

    def entries(self) -> tuple[Entry, ...]: ...

    def matcher(self) -> TempMatcher: ...

    def readable_path(self, relpath: str) -> Path | str: ...

    def spooled_facts(self, relpath: str) -> FileFacts | None: ...

READER_NICENESS = 10


def background_priority() -> None:
    """A reader thread yields the CPU to the threads and processes the run waits for: the
    reload server's torch import (the longest step of a run, on the other core) and the items.
    With a core free it reads as fast as before; the items still wait for what it reads
    (issue 29). Linux only: there a thread has a niceness of its own, set by its id."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            me = threading.get_native_id()
            nice = os.getpriority(os.PRIO_PROCESS, me)  # the process's, inherited
            os.setpriority(os.PRIO_PROCESS, me, min(19, nice + READER_NICENESS))


class FileReader:
    """The facts of a Context's files, each read once: on the asking thread, on a reader
    thread (:meth:`read_ahead`) or by the helper process (:meth:`help_with`)."""

    def __init__(self, ctx: Folder, *, keep_digests: bool = False,
                 read_early: bool = False) -> None:
        self._ctx = ctx
        self._lock = threading.RLock()
        # A file's facts; a Future only for a file handed to the reader threads (read_ahead):
        # a Future and its lock per small file cost ~1.4 KiB each (issue 19).
        self._facts: dict[str, FileFacts | Future[FileFacts]] = {}
        self._readers: queue.SimpleQueue[tuple[str, Future[FileFacts]] | None] | None = None
        self._reader_count = 0
        self.closed = False
        self._helper: Helper | None = None  # small files read on the second core (read_ahead)
        # A whole run reads every file of the walk: the helper starts as soon as the walk is
        # done (the items are made meanwhile), not at read_ahead.
        self.read_early = read_early
        self._misses = 0  # facts asked for and not known yet, while a helper runs
        # A seal will be written: each file's sha256 and fingerprint, kept past close.
        self._keep_digests = keep_digests
        self._digests: dict[str, tuple[str, tuple[int, int, int, int, int]]] = {}

    def start_early(self, small: int) -> None:
        """Before the walk: start the helper's interpreter now when ``small`` files will be
        handed to it (:attr:`read_early`)."""
        if self.read_early and self.may_help(small):
            self._helper = self.start_helper()

    def facts(self, relpath: str) -> FileFacts:
        """Size, sha256 and temp-path hits of one file, from a single streamed read: here,
        or on a reader thread if :meth:`read_ahead` got to it first; once per process."""
        known = self._facts.get(relpath)  # once known, no lock (a dict read is atomic)
        if known is None:
            with self._lock:
                known = self._facts.get(relpath)
                if known is None and self._helper is not None:
                    known = self._helped(relpath)
                if known is None:
                    # Read here, under the lock (the reader threads never take it for a
                    # read): no Future for a file no reader thread was handed.
                    known = self._facts[relpath] = self._scan(relpath)
        return known.result() if isinstance(known, Future) else known

    def _helped(self, relpath: str) -> FileFacts | Future[FileFacts] | None:
        """What the helper process has read so far (looked at every 32nd file asked for: a
        look is a syscall), with this file's facts if they are among them. The first facts of
        a file stand: once it sends one this process has read, the two have met, and it stops."""
        assert self._helper is not None
        self._misses += 1
        if self._misses % 32 == 1:
            for facts in self._helper.arrived():
                if self._facts.setdefault(facts.path, facts) is not facts:
                    self._helper.close()
                    break
            if not self._helper.running:
                self._helper = None
        return self._facts.get(relpath)

    def read_ahead(self, relpaths: Iterable[str], workers: int) -> None:
        """Start reading these files now, ``workers`` at a time, on background threads, in
        the order given, while the items run: os.read, SHA-256 and the scan release the
        GIL, so a campaign of many large files is read at the speed of several cores.
        :meth:`facts` then waits for each.  Only large regular files of the folder's walk,
        never with --itera-fast (which hashes nothing)."""
        if self._ctx.options.fast or workers < 2:
            return
        from pytest_itera.files.scan import SMALL_FILE

        self._ctx.entries()  # built here, before any reader thread looks at it
        # Only large regular files of the walk: small files are mostly Python-level work (a
        # reader thread would only contend with the items for the GIL). One lookup per path,
        # no call: a run of 100,000 small files hands them all over (issue 29).
        by_path = self._ctx.by_path
        with self._lock:
            wanted = [r for r in dict.fromkeys(relpaths) if r not in self._facts
                      and (e := by_path.get(r)) is not None and e.kind == "file"]
            self.help_with([r for r in wanted if by_path[r].size < SMALL_FILE])
            todo: list[tuple[str, Future[FileFacts]]] = [
                (r, Future()) for r in wanted if by_path[r].size >= SMALL_FILE]
            if len(todo) < 2:
                return  # nothing to overlap
            if self._readers is None:
                self._ctx.matcher()  # compiled once, here, not by two readers at a time
                self._readers = queue.SimpleQueue()
                self._reader_count = workers
                for n in range(workers):
                    # Daemons: an interrupted run must not wait for a large file's last byte.
                    threading.Thread(target=self._reader, args=(self._readers,),
                                     name=f"itera-read-{n}", daemon=True).start()
            for relpath, pending in todo:
                self._facts[relpath] = pending
                self._readers.put((relpath, pending))

    def help_with(self, small: list[str]) -> None:
        """Many small files: a helper process reads them from the last (files.batch); one
        helper per Context, started here unless it was before the walk."""
        helper = self._helper
        if helper is not None and helper.asked:
            return
        if not self.may_help(len(small)):
            if helper is not None:
                helper.close()
            self._helper = None
            return
        self._helper = helper = helper or self.start_helper()
        if helper is not None:
            helper.read(self._ctx.root_slash, small)

    def may_help(self, small: int) -> bool:
        from pytest_itera.files.batch import HELPER_ABOVE

        # Not for an s3:// campaign's copy: its digests came with the copy (never hashed
        # again) and its objects left in the store are not in the folder to read.
        return small > HELPER_ABOVE and not self._ctx.options.fast and not self.closed \
            and os.name == "posix" and self._ctx.stored is None

    def start_helper(self) -> Helper | None:
        from pytest_itera.files.batch import Helper

        try:
            return Helper(self._ctx.matcher().patterns, fingerprint=self._keep_digests)
        except OSError:  # no interpreter to start: this process reads them all
            return None

    def _reader(self, jobs: queue.SimpleQueue[tuple[str, Future[FileFacts]] | None]) -> None:
        background_priority()
        while (job := jobs.get()) is not None:
            relpath, pending = job
            if self.closed:
                pending.cancel()
            elif pending.set_running_or_notify_cancel():
                self._fill(relpath, pending)

    def _fill(self, relpath: str, pending: Future[FileFacts]) -> None:
        try:
            pending.set_result(self._scan(relpath))
        except BaseException as exc:  # a bug, handed to whoever asks for these facts
            pending.set_exception(exc)

    @cached_property
    def _scan_file(self) -> Callable[..., FileFacts]:
        """``files.scan.scan_file``, imported once: an import statement costs ~1 µs, once per
        small file of a 100,000-file campaign (issue 29)."""
        from pytest_itera.files.scan import scan_file

        return scan_file

    def scan_spooled(self, path: Path, relpath: str) -> FileFacts:
        """The temp-path scan of a file of a checkpoint spooled from the store (its sha256
        is the spool's, computed as it streamed): no lock, the spool holds its own."""
        return self._scan_file(path, relpath, self._ctx.matcher(), hash=False)

    def _scan(self, relpath: str) -> FileFacts:
        ctx = self._ctx
        spooled = ctx.spooled_facts(relpath) if ctx.stored is not None else None
        if spooled is not None:  # a checkpoint's file the cache cap left in the store
            return spooled
        stored = ctx.stored.facts(relpath) if ctx.stored is not None else None
        if stored is not None:  # an object left in the store: what the store said of it
            return stored
        path = ctx.readable_path(relpath)
        fast = ctx.options.fast
        if ctx.stored is not None and ctx.stored.digest(relpath) and not fast:
            # Hashed while it streamed: scanned here (text, records), never hashed again.
            return ctx.stored.reused(self._scan_file(path, relpath, ctx.matcher(), hash=False,
                                                     walked=isinstance(path, str)),
                                     keep=self._keep_digests)
        return self._scan_file(
            path,
            relpath,
            None if fast else ctx.matcher(),
            hash=not fast,
            fingerprint=self._keep_digests,
            walked=isinstance(path, str),  # a regular file of the walk (readable_path)
        )

    def verified_digests(self) -> dict[str, tuple[str, tuple[int, int, int, int, int]]]:
        """Relative path -> (sha256, fingerprint) of each file this process hashed with a
        fingerprint (``keep_digests``; see ``FileFacts.fingerprint``), also after
        :meth:`close`: the seal reuses a digest whose file a new stat shows unchanged."""
        with self._lock:
            self.keep_facts()
            return dict(self._digests)

    def keep_facts(self) -> None:
        for relpath, known in self._facts.items():
            if isinstance(known, Future):
                if not known.done() or known.cancelled() or known.exception() is not None:
                    continue
                known = known.result()
            if known.sha256 is not None and known.fingerprint is not None:
                self._digests[relpath] = (known.sha256, known.fingerprint)

    def close(self) -> None:
        """Stop the readers and the helper; keep the digests a seal reuses, drop the rest."""
        self.closed = True  # reader threads drop what is still queued
        with self._lock:
            if self._keep_digests:
                self.keep_facts()
            self._facts = {}
        if self._helper is not None:
            self._helper.close()
            self._helper = None
        if self._readers is not None:
            for _ in range(self._reader_count):
                self._readers.put(None)
