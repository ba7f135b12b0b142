"""What a check is and what it sees: :class:`Check`, and :class:`Context` (the campaign, the
options and the facts derived from them, each once). No pytest import."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pytest_itera.checks.model import item_position
from pytest_itera.checks.reading import FileReader
from pytest_itera.core.campaign import Campaign, Manifest, Plan, RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.files.measurements import Measurements, Unreadable, read_measurements
from pytest_itera.files.measurements import Problem as MeasurementProblem

if TYPE_CHECKING:
    from pytest_itera.checks.model import Kind, Needs, Options, ReloadHook, Scope
    from pytest_itera.core.money import Catalogue
    from pytest_itera.files.scan import FileFacts, TempMatcher
    from pytest_itera.files.source import Held, Staged
    from pytest_itera.files.tree import Entry, PathRefusal
    from pytest_itera.reload import Reloader, ReloadResult

T = TypeVar("T")

# Above this many targets, a per-file check (scope "file") gets one item per folder instead of
# one per file (the ini itera_group_files_above): pytest costs ~1 ms and ~8 KiB per item, a
# small file's hash far less (issue 19).
GROUP_FILES_ABOVE = 2000


def folder_group(relpath: str) -> str:
    """The group target of a file: ``<folder>/*`` (the files directly in that folder), ``*``
    for the campaign folder's own files."""
    folder, slash, _ = relpath.rpartition("/")
    return f"{folder}/*" if slash else "*"


@dataclass(frozen=True)
class Check:
    """A named acceptance check.

    ``targets`` lists what one item each is made for (file paths, run ids,
    checkpoint paths); for a campaign-scoped check it is None and one item is
    made. ``run`` returns the findings for one target (None for campaign
    scope): an empty result means the check passed.
    """

    id: str
    summary: str
    run: Callable[[Context, str | None], Iterable[Finding]]
    scope: Scope = "campaign"
    targets: Callable[[Context], Iterable[str]] | None = None
    needs: frozenset[Needs] = frozenset({"plan", "manifest"})
    fast: bool = False  # also part of the --itera-fast look
    # Its verdict needs checkpoint reloads: the reload server is started as soon as such an
    # item is selected, and a target (a checkpoint or adapter path) is handed over at once.
    reloads: bool = False
    # Its target is a file whose bytes it needs (Context.facts): selected items' targets are
    # read ahead, a few files at a time.
    reads: bool = False
    # A folder item's files that may fail, in one pass over them all (scope "file"): a cheap,
    # conservative filter; every file it leaves out has no finding, the others go to ``run``
    # (100,000 listed files, issue 29: no generator per passing file). None: all go to ``run``.
    suspects: Callable[[Context, Sequence[str]], Iterable[str]] | None = None
    # The values it judged, as plain data that travel on its item's report to the closure
    # report (conclusion-consistent: each compared run's decision metric), so the report
    # never recomputes them (a pytest-xdist controller would, from scratch).
    facts: Callable[[Context, str | None], list[Any]] | None = None
    # The kinds of finding it reports (code -> Kind: the rule, the fix), declared by its
    # module as KINDS; every finding it builds names one (tests/checks/test_codes.py).
    kinds: Mapping[str, Kind] = field(default_factory=dict)



class Verdicts(Protocol):
    """What a check may ask of the other checks' verdicts on its campaign (the engine's)."""

    def findings(self, check_id: str, target: str | None = None) -> tuple[Finding, ...]: ...

    def run_failures(self, run_id: str) -> list[tuple[str, str]]: ...

    def targets(self, check: Check) -> Sequence[str | None]: ...


def _idle(ready: Callable[[], bool]) -> None:
    """Nothing to do while a reload is awaited (no engine is judging ahead)."""


class Context:
    """What checks see: the campaign, the options and the facts derived from them.

    One Context per campaign per process. Every file is read at most once per process
    (``facts``, by its :class:`~pytest_itera.checks.reading.FileReader`), every derived fact
    computed once (``memo``); the verdicts of the checks are the engine's
    (``engine.judge``), which a check may consult through :attr:`verdicts`.
    """

    def __init__(
        self,
        campaign: Campaign,
        options: Options,
        checks: Mapping[str, Check],
        *,
        matcher_factory: Callable[[], TempMatcher] | None = None,
        reloader_factory: Callable[[], Reloader] | None = None,
        reload_hook: ReloadHook | None = None,
        close_reloader: bool = True,
        group_files_above: int | None = GROUP_FILES_ABOVE,
        keep_digests: bool = False,
        stored: Staged | None = None,
        read_early: bool = False,
    ) -> None:
        self.campaign = campaign
        self.options = options
        self.checks = checks
        self._matcher_factory = matcher_factory
        self._reloader_factory = reloader_factory
        self._reload_hook = reload_hook
        # False when the factory hands out a reloader shared by the whole pytest process.
        self._close_reloader = close_reloader
        self._lock = threading.RLock()
        self._entries: tuple[Entry, ...] | None = None
        self._candidates: tuple[str, ...] | None = None  # output_candidates, kept past close
        self.by_path: dict[str, Entry] = {}
        self._matcher: TempMatcher | None = None
        self._reloader: Reloader | None = None
        # A file's facts; a Future only for a file handed to the reader threads (read_ahead):
        # a Future and its lock per small file cost ~1.4 KiB each (issue 19).
        self._closed = False
        self.reader = FileReader(self, keep_digests=keep_digests, read_early=read_early)
        self._reloads: dict[tuple[str, str | None], ReloadResult] = {}
        # A checkpoint the cache cap left in the store, judged while spooled alone (its
        # reload verdict, the facts of its files); one spool at a time per process.
        self._spools: dict[str, tuple[ReloadResult, dict[str, FileFacts]]] = {}
        self._spool_lock = threading.Lock()
        self._memo: dict[str, Any] = {}
        self.group_above = group_files_above  # None: one item per file, always
        # The engine's verdicts on this campaign (engine.judge), which a check may consult.
        self.engine: Verdicts | None = None
        # What the engine does while a reload handed over ahead is awaited (engine.Judge).
        self.while_waiting: Callable[[Callable[[], bool]], None] = _idle
        # An s3:// campaign (files.source): the root is its local copy; the objects left in
        # the store (unreadable, over the cache cap, spared by the store's checksum) are
        # entries all the same, and the sha256 streamed during the copy is not computed again.
        self.stored = stored

    @property
    def root(self) -> Path:
        return self.campaign.root

    @property
    def verdicts(self) -> Verdicts:
        """Other checks' verdicts on this campaign (the budget counts the runs that passed
        their own checks), as the engine computes them once (:func:`engine.judge`)."""
        if self.engine is None:
            raise RuntimeError("this check consults other checks' verdicts: judge the campaign "
                               "through pytest_itera.checks.engine (judge, evaluate, outcomes)")
        return self.engine

    @verdicts.setter
    def verdicts(self, verdicts: Verdicts) -> None:
        self.engine = verdicts

    @cached_property
    def root_slash(self) -> str:
        """The root as a string ending in "/": a walked file's path is that + its relpath."""
        return os.path.join(os.fspath(self.root), "")

    def catalogue(self) -> Catalogue | str:
        """The price catalogue lots are judged against, or why the one given cannot be used."""
        if self.options.catalogue is not None:
            return self.options.catalogue
        from pytest_itera.core.money import example_catalogue

        return self.memo("example-catalogue", example_catalogue)

    # -- the tree and its bytes -------------------------------------------------

    def entries(self) -> tuple[Entry, ...]:
        """Every entry of the folder (lstat, sorted, links never followed)."""
        if self._entries is None:
            from pytest_itera.files.scan import SMALL_FILE

            man = self.campaign.manifest
            if man is not None:  # the helper's interpreter starts during the walk
                self.reader.start_early(sum(r.bytes < SMALL_FILE for r in man.files))
            self._entries = self._walk()
            self.by_path = {e.path: e for e in self._entries}
            if self.reader.read_early:
                self.reader.help_with([e.path for e in self._entries
                                       if e.kind == "file" and e.size < SMALL_FILE])
        return self._entries

    def entry(self, relpath: str) -> Entry | None:
        if self._closed and self._entries is None:
            # Asked after the items (the report's evidence): that one path, not a new walk
            # of the whole folder, which close() let go of.
            from pytest_itera.files.tree import entry_at

            if self.stored is not None and relpath in self.stored.elsewhere:
                return next(e for e in self.stored.entries(()) if e.path == relpath)
            return entry_at(self.root, relpath)
        self.entries()
        return self.by_path.get(relpath)

    def output_candidates(self) -> tuple[str, ...]:
        """The regular files of the walk named like one of the plugin's own outputs
        (``files.outputs.SUFFIXES``), kept past :meth:`close` (they are few): the report's
        notes on those outputs need no second walk of the folder."""
        if self._candidates is None:
            from pytest_itera.files.outputs import SUFFIXES

            entries = self._entries
            if entries is None and not self._closed:
                entries = self.entries()  # the checks' walk, which they will need anyway
            elif entries is None:
                entries = self._walk()
            self._candidates = tuple(e.path for e in entries
                                     if e.kind == "file" and e.path.lower().endswith(SUFFIXES))
        return self._candidates

    def _walk(self) -> tuple[Entry, ...]:
        from pytest_itera.files.tree import walk

        walked = walk(self.root)
        return walked if self.stored is None else self.stored.entries(walked)

    def matcher(self) -> TempMatcher:
        if self._matcher is None:
            from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, TempMatcher

            factory = self._matcher_factory
            self._matcher = (
                factory()
                if factory
                else TempMatcher((*DEFAULT_TEMP_PATTERNS, *self.options.temp_patterns))
            )
        return self._matcher

    def facts(self, relpath: str) -> FileFacts:
        """Size, sha256 and temp-path hits of one file, from a single streamed read, once per
        process (:class:`~pytest_itera.checks.reading.FileReader`)."""
        return self.reader.facts(relpath)

    def scanned(self, relpath: str) -> FileFacts:
        """What the temp-path scan finds in one file: :meth:`facts`, except that a binary file
        left in the store for the item that hashes it (an xdist worker's) is not downloaded
        for this: no scan reads inside it."""
        stored = self.stored
        if stored is not None and stored.deferred(relpath):
            found = stored.facts(relpath, hashed=False)
            assert found is not None
            return found
        return self.reader.facts(relpath)

    def read_ahead(self, relpaths: Iterable[str], workers: int) -> None:
        """Start reading these files now, on background threads (``FileReader.read_ahead``)."""
        self.reader.read_ahead(relpaths, workers)

    def verified_digests(self) -> dict[str, tuple[str, tuple[int, int, int, int, int]]]:
        """Relative path -> (sha256, fingerprint) of each file hashed with a fingerprint, also
        after :meth:`close`: the seal reuses a digest whose file a new stat shows unchanged."""
        return self.reader.verified_digests()

    def documents(self) -> tuple[Plan, Manifest]:
        """The plan and the manifest, for a check whose ``needs`` guarantee both."""
        plan, man = self.campaign.plan, self.campaign.manifest
        assert plan is not None  # guaranteed by Check.needs
        assert man is not None
        return plan, man

    def recorded(self, run_id: str) -> tuple[int, RunRecord]:
        """(index in the manifest's runs, record) of a recorded run: a run check's target."""
        man = self.documents()[1]
        position = man.run_position(run_id)
        assert position is not None  # targets are recorded run ids
        return position, man.runs[position]

    def measurements(self, relpath: str) -> Measurements | Unreadable:
        """The measurements file at ``relpath``, read once per Context.

        The path must stay inside the folder and be a regular file (:meth:`regular_file`):
        a link out, a FIFO or a missing file is an :class:`Unreadable` saying so.
        """
        return self.memo(f"measurements:{relpath}", lambda: self._read_measurements(relpath))

    def _read_measurements(self, relpath: str) -> Measurements | Unreadable:
        resolved = self.regular_file(relpath)
        if isinstance(resolved, str):
            return Unreadable(relpath, (MeasurementProblem(None, resolved),))
        return read_measurements(Path(os.path.realpath(resolved)), relpath)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A value computed once per campaign per process (what checks derive from it)."""
        if key in self._memo:  # computed: no lock (asked once per file by the file checks)
            known: T = self._memo[key]
            return known
        with self._lock:
            if key not in self._memo:
                self._memo[key] = compute()
            value: T = self._memo[key]
            return value

    def inside(self, relpath: str) -> Path | PathRefusal:
        """``tree.resolve_inside`` (a file or a folder), without its lstat per component for
        a plain file.

        The walk lists only what it reached through real directories, never
        through a link, and under normalised names: a path it lists as a regular
        file is inside the folder as written.
        """
        entry = self.entry(relpath)
        if entry is not None and entry.kind == "file":
            return self.root / relpath
        from pytest_itera.files.tree import resolve_inside

        return resolve_inside(self.root, relpath)

    def regular_file(self, relpath: str) -> Path | str:
        """The real path of a file the documents point at, or why it is refused.

        Inside the folder (no '..', not absolute, no link out), present, and a
        regular file (or a link to one inside the folder).
        """
        resolved = self.inside(relpath)
        if isinstance(resolved, str):
            return str(resolved)  # a plain reason: it travels in findings to xdist controllers
        entry = self.entry(relpath)
        if entry is None:
            return "is missing"
        if entry.error:
            return entry.error
        if entry.kind == "symlink" and entry.escapes:
            return "is a symbolic link that leaves the campaign folder"
        if entry.kind not in ("file", "symlink"):
            return f"is a {entry.kind}, not a regular file"
        return resolved

    def readable_path(self, relpath: str) -> Path | str:
        """A link that stays inside the folder is read through; any other path as is (a
        regular file of the walk as a plain string: its name is already normalised, and
        a pathlib.Path per small file costs more than its hash)."""
        entry = self.entry(relpath)
        if entry is not None and entry.kind == "file":
            return self.root_slash + relpath
        path = self.root / relpath
        if entry is not None and entry.kind == "symlink" and not entry.escapes:
            return Path(os.path.realpath(path))
        return path

    # -- checkpoints --------------------------------------------------------------

    def reload(self, relpath: str, claimed_format: str | None) -> ReloadResult:
        """The fresh-process reload verdict for one checkpoint (memoised).

        A path that does not resolve inside the folder is refused here, whoever
        asks: no loader (built-in or a ``pytest_itera_reload`` hook) ever sees a
        path outside the campaign. Hooks are asked first; None lets the
        built-in loader (``pytest_itera.reload.Reloader``) do it.
        """
        key = (relpath, claimed_format)
        with self._lock:
            if key not in self._reloads:
                self._reloads[key] = self._reload_once(relpath, claimed_format)
            return self._reloads[key]

    def _reload_once(self, relpath: str, claimed_format: str | None) -> ReloadResult:
        from pytest_itera.reload import ReloadResult

        inside = self.inside(relpath)
        if isinstance(inside, str):
            return ReloadResult(path=relpath, ok=False, format=None,
                                cause=f"{relpath}: the path {inside}; not loaded")
        out = self.links_out(relpath)
        if out:  # whoever asks: no loader reads a file outside the folder through a link
            return ReloadResult(path=relpath, ok=False, format=None,
                                cause=f"{relpath}: it holds a link that does not stay inside "
                                f"the campaign folder ({out[0]}); not loaded")
        if self.stored is not None and self.stored.over_cap(relpath):
            return self._spooled(relpath, claimed_format)[0]
        if self._reload_hook is not None:
            result = self._reload_hook(inside, relpath, claimed_format)
            if result is not None:
                return result
        reloader = self.reloader()
        self.while_waiting(lambda: reloader.ready(inside))
        done = self._reloads.get((relpath, claimed_format))
        if done is not None:  # a check judged meanwhile asked for it too
            return done
        return reloader.reload(inside, relpath)

    def links_out(self, relpath: str) -> list[str]:
        """The links under the folder ``relpath`` (the walk's) that lead out of the campaign
        folder; [] for a file or a folder without one."""
        prefix = relpath.strip("/") + "/"
        # The walk's links that leave, listed once: asked for each checkpoint reloaded.
        leaving = self.memo("links.out", lambda: tuple(
            e.path for e in self.entries() if e.kind == "symlink" and e.escapes))
        return [path for path in leaving if path.startswith(prefix)]

    def spooled_facts(self, relpath: str) -> FileFacts | None:
        """The facts of a file of a checkpoint the cache cap left in the store, read while
        its checkpoint was spooled (:meth:`_spooled`); None: not such a file."""
        stored, man = self.stored, self.campaign.manifest
        held = stored.objects.get(relpath) if stored is not None else None
        if held is None or not held.over_cap or man is None:
            return None
        for path in (*(c.path for c in man.checkpoints), *(a.path for a in man.adapters)):
            unit = path.strip("/")
            if relpath == unit or relpath.startswith(unit + "/"):
                return self._spooled(unit, None)[1].get(relpath)
        return None

    def _spooled(self, unit: str, claimed_format: str | None
                 ) -> tuple[ReloadResult, dict[str, FileFacts]]:
        """A checkpoint the cache cap left in the store (``unit``: its path, a file or a
        folder), judged once per process: its objects copied alone into a private folder
        outside the campaign (:meth:`_spool`), each scanned and hashed, the whole reloaded,
        then removed. An object that could not be had makes its file unreadable and the
        reload unproven (``not-copied``)."""
        from pytest_itera.files.scan import FileFacts
        from pytest_itera.reload import ReloadResult

        with self._spool_lock:
            if unit in self._spools:
                return self._spools[unit]
            with self._spool(unit) as (folder, done, lost):
                facts: dict[str, FileFacts] = {}
                for key, got in done.items():
                    if isinstance(got, str):
                        facts[key] = FileFacts(key, 0, None, True, (), 0, error=got)
                        continue
                    scanned = self.reader.scan_spooled(folder.joinpath(*key.split("/")), key)
                    facts[key] = scanned._replace(sha256=got.sha256) \
                        if scanned.error is None else scanned
                result = ReloadResult(path=unit, ok=False, format=None, failure="not-copied",
                                      cause=f"cannot prove {unit} reloads: {lost}") \
                    if lost else self._reload_spooled(folder / unit, unit, claimed_format)
            self._spools[unit] = (result, facts)
            return self._spools[unit]

    @contextmanager
    def on_disk(self, relpath: str) -> Iterator[Path | str]:
        """The checkpoint at ``relpath`` on local disk for the time of the block: its path in
        the folder, or, for one the cache cap left in the store, a spool of it alone (as
        :meth:`_spooled`), removed after; a str: why it could not be spooled."""
        if self.stored is None or not self.stored.over_cap(relpath):
            inside = self.inside(relpath)
            yield inside if isinstance(inside, Path) else str(inside)
            return
        unit = relpath.strip("/")
        with self._spool_lock, self._spool(unit) as (folder, _, lost):
            yield f"{unit}: {lost}" if lost else folder / unit

    @contextmanager
    def _spool(self, unit: str) -> Iterator[tuple[Path, dict[str, Held | str], str | None]]:
        """The objects of ``unit`` the cap left in the store, in a private folder for the time
        of the block (one at a time: the caller holds the spool lock, and the local disk
        holds the evidence and one checkpoint): the folder, each object's Held or why it
        could not be had, and (None when all came) the words for what was lost."""
        import shutil
        import tempfile

        stored = self.stored
        assert stored is not None
        folder = Path(tempfile.mkdtemp(prefix="itera-spool-"))
        try:
            done = stored.spool(unit, folder)
            lost = [f"{key} {got}" for key, got in done.items() if isinstance(got, str)]
            yield folder, done, (f"it was left in the store by the local cache cap and could "
                                 f"not be spooled: {'; '.join(lost)}") if lost else None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _reload_spooled(self, path: Path, unit: str, claimed_format: str | None
                        ) -> ReloadResult:
        if self._reload_hook is not None:
            result = self._reload_hook(path, unit, claimed_format)
            if result is not None:
                return result
        return self.reloader().reload(path, unit)

    def reload_ahead(self, relpaths: Iterable[str]) -> None:
        """Let the built-in loader start on these checkpoints now, several at a time, while
        the caller goes on; :meth:`reload` then collects each verdict.  Only for paths a
        check has located (inside the folder, a regular file or a folder), and never when a
        ``pytest_itera_reload`` hook may answer instead."""
        if self._reload_hook is not None or self._reloader_factory is None:
            return
        stored = self.stored  # a checkpoint the cache cap left in the store: never loaded
        here = [r for r in relpaths if stored is None or not stored.over_cap(r)]
        paths = [p for p in map(self.inside, here) if not isinstance(p, str)]
        if paths:
            self.reloader().prefetch(paths)

    def reloader(self) -> Reloader:
        if self._reloader is None:
            if self._reloader_factory is None:
                raise RuntimeError("no reloader configured")
            self._reloader = self._reloader_factory()
        return self._reloader

    def close(self) -> None:
        """The items are done: stop the readers and the reloader, and let go of what was
        kept per file (facts, walk entries, memoised values: a few objects per listed file,
        which the last garbage collections of the process would otherwise walk through).
        A later question is answered again from the folder."""
        self._closed = True
        self.reader.close()
        with self._lock:
            if self._entries is not None:
                self.output_candidates()
            self._entries, self.by_path = None, {}
            self._memo = {}
        if self._reloader is not None and self._close_reloader:
            self._reloader.close()
        self._reloader = None


def in_order(checks: Iterable[Check]) -> list[Check]:
    """Checks in item order: by their row in ``model.ITEM_ORDER``, then id (every list of
    items, and the runs' index)."""
    return sorted(checks, key=lambda c: (item_position(c.id), c.id))


def blocked_by_contract(campaign: Campaign, check: Check) -> Finding | None:
    """A check that needs a document which did not load cannot be evaluated: say so."""
    missing = [
        name
        for name, doc in (("plan", campaign.plan), ("manifest", campaign.manifest))
        if name in check.needs and doc is None
    ]
    if not missing:
        return None
    files = " and ".join(f"{name}.json" for name in missing)
    return Finding(
        f"{NOT_JUDGED} manifest failed ({files} did not load)",
        hint="fix the problems reported by the 'manifest' item first",
        code=f"{check.id}.not-evaluated",
    )


# How an item that depends on another check's failure says so, once (run.Outcome.not_judged).
NOT_JUDGED = "not judged:"
