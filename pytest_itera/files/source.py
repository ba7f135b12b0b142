"""A campaign in S3-compatible object storage: listing, streamed reads, sha256, and a local copy.

``s3://bucket/prefix/`` is read through obstore (the Rust ``object_store`` crate: one wheel,
no botocore pin, retries with backoff and request timeouts built in), configured from the
standard environment it reads (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ...): never from the command
line, and no message carries a credential. Plain HTTP is allowed only when the environment's
endpoint itself is an ``http://`` URL.

The checks read a local folder: :func:`stage` copies the objects under the prefix into a
folder outside the campaign (each streamed to disk in bounded chunks, several at a time, its
sha256 computed on the way, once), refusing keys the local equivalent would refuse: a ``.``
or ``..`` segment, an empty segment (a leading ``/``), and two keys that differ only by case.
What it could not or would not copy is not an error but a fact the checks judge
(:class:`Staged`): an object the store did not give (its cause), a checkpoint over the cache
cap (left in the store, its size as listed; spooled alone, hashed and scanned when it is
judged: :meth:`Staged.spool`), a binary file no
check reads (streamed for its sha256 only; not downloaded at all where the store holds its
SHA-256, ``--itera-store-checksums``).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import queue
import re
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_itera.core.text import size_text

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ClientConfig, RetryConfig

    from pytest_itera.files.scan import FileFacts
    from pytest_itera.files.tree import Entry

__all__ = ["INSTALL", "Held", "S3Location", "S3Source", "SourceError", "Staged", "StoredObject",
           "client", "endpoint", "fetch", "full_sha256", "is_remote", "stage", "status_of"]

INSTALL = "pip install 'pytest-itera[s3]'"
CHUNK = 8 << 20  # bytes per piece of a GET handed on: the memory per object being read
SNIFF = 64 << 10  # the first bytes read of an object that may need no local copy
SCHEME = "s3://"
CAP_OPTION = "itera_store_cache_max"
_WHOLE_GET = "24h"  # the request timeout of a GET of an object's bytes: never the bound
CHANGED = "changed while it was being copied"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")


class SourceError(Exception):
    """The store cannot be read as a campaign (the message names the URL and the key)."""


def is_remote(text: str) -> bool:
    return text.startswith(SCHEME)


def endpoint() -> str:
    """The endpoint of the standard environment ("" for AWS itself)."""
    return (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            or os.environ.get("AWS_ENDPOINT") or "")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # without leading or trailing '/'; "" for the whole bucket

    @classmethod
    def parse(cls, url: str) -> S3Location:
        rest = url.removeprefix(SCHEME)
        bucket, _, prefix = rest.partition("/")
        if not _BUCKET.fullmatch(bucket):
            raise SourceError(f"{url}: {bucket!r} is not an S3 bucket name")
        prefix = prefix.strip("/")
        if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
            raise SourceError(f"{url}: the prefix has an empty, '.' or '..' segment")
        return cls(bucket, prefix)

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}/" if self.prefix else f"{SCHEME}{self.bucket}/"

    def key(self, relpath: str) -> str:
        """The bucket's key of the campaign's ``relpath``."""
        return f"{self.prefix}/{relpath}" if self.prefix else relpath


@dataclass(frozen=True)
class StoredObject:
    key: str  # relative to the prefix, '/'-separated
    size: int
    etag: str | None = None  # every piece is read If-Match this version


Fingerprint = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Held:
    """What the session knows of one object of the prefix, and where its bytes are."""

    size: int
    sha256: str | None = None  # hex; None: it could not be read
    copied: bool = False  # a local copy is at the same relative path
    error: str | None = None  # why it could not be read from the store (names its URL)
    by_store: bool = False  # sha256 is the store's own ChecksumSHA256, no byte was hashed
    over_cap: bool = False  # a checkpoint left in the store: the cache cap
    etag: str | None = None  # (over the cap) the version listed: a spool reads only that one
    binary: bool = True  # (not copied) a NUL in its first bytes
    # (not copied) a binary file no check reads, sniffed only: its sha256 is left to the
    # process whose item asks for it (Staged.facts), one GET then, as the listed version
    deferred: bool = False
    # (st_dev, st_ino, size, mtime_ns, ctime_ns) of the copy as written (scan.FileFacts):
    # the seal reuses the sha256 where a new stat of the copy gives the same.
    fingerprint: Fingerprint | None = None


@dataclass(frozen=True)
class Staged:
    """The local copy of one prefix, and what the store said of each of its objects."""

    root: Path
    url: str
    cap: int
    objects: dict[str, Held]
    checksums: bool = False  # --itera-store-checksums: the store's SHA-256 used where held
    timeout: float = 30.0  # of each request to the store (a spool's too)
    # The deferred objects this process hashed (Staged._hashed), and the lock of that.
    _deferred: dict[str, Held | str] = field(default_factory=dict, init=False, repr=False,
                                            compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False,
                                  compare=False)

    # -- across processes: a pytest-xdist worker reads the controller's copy and this --

    @staticmethod
    def sidecar(root: Path) -> Path:
        """Beside the copy, never inside it."""
        return root.with_name(root.name + ".itera-store.json")

    def save(self) -> None:
        doc = {"url": self.url, "cap": self.cap, "checksums": self.checksums,
               "timeout": self.timeout,
               "objects": {key: asdict(held) for key, held in self.objects.items()}}
        self.sidecar(self.root).write_text(json.dumps(doc), encoding="utf-8")

    @classmethod
    def load(cls, root: Path) -> Staged:
        doc = json.loads(cls.sidecar(root).read_text(encoding="utf-8"))
        objects = {}
        for key, fields in doc["objects"].items():
            fp = fields.pop("fingerprint")
            objects[key] = Held(**fields, fingerprint=tuple(fp) if fp else None)
        return cls(root, doc["url"], int(doc["cap"]), objects, bool(doc["checksums"]),
                   float(doc["timeout"]))

    # -- what the checks see ----------------------------------------------------------

    @cached_property
    def elsewhere(self) -> dict[str, Held]:
        """The objects with no local copy: unreadable, over the cap, or binary files no
        check reads (only hashed, or spared by the store's checksum)."""
        return {key: held for key, held in self.objects.items() if not held.copied}

    def entries(self, walked: Iterable[Entry]) -> tuple[Entry, ...]:
        """The walk of the copy, with one regular-file entry for each object that has no
        local copy (an unreadable one carries why, as an unreadable local file would)."""
        from pytest_itera.files.tree import Entry

        mine = {e.path: e for e in walked}
        for key, held in self.elsewhere.items():
            if key not in mine:
                mine[key] = Entry(key, "file", held.size, 0, error=held.error and self.trouble(key))
        return tuple(sorted(mine.values(), key=lambda e: e.path))

    def trouble(self, key: str) -> str:
        """An unreadable object's words, naming its URL (Entry.error, FileFacts.error)."""
        return f"could not be read from the store ({self.url}{key}): {self.objects[key].error}"

    def facts(self, key: str, *, hashed: bool = True) -> FileFacts | None:
        """The facts of an object with no local copy, from the store (None: it has one): one
        it would not give, or a binary file no check reads (its sha256 as it streamed, or
        the store's; a deferred one is streamed now, unless ``hashed`` is False: what the
        temp-path scan needs of it, no byte read). A checkpoint over the cap has its facts
        from its spool instead (Context.spooled_facts)."""
        from pytest_itera.files.scan import FileFacts

        held = self.objects.get(key)
        if held is None or held.copied:
            return None
        if held.error is not None:
            return FileFacts(key, 0, None, False, (), 0, error=self.trouble(key))
        if held.deferred and not hashed and key not in self._deferred:
            return FileFacts(key, held.size, None, True, (), 0)  # what a scan finds in it
        if held.deferred:
            got = self._hashed(key)
            if isinstance(got, str):
                return FileFacts(key, 0, None, True, (), 0, error=got)
            return FileFacts(key, got.size, got.sha256, True, (), 0)
        return FileFacts(key, held.size, held.sha256, held.binary, (), 0)

    def deferred(self, key: str) -> bool:
        """Whether the object at ``key`` is a binary file left in the store for the item that
        asks for its sha256 (``stage(defer=True)``)."""
        held = self.objects.get(key)
        return held is not None and held.deferred

    def _hashed(self, key: str) -> Held | str:
        """A deferred object streamed now, once per process (from the version listed: If-Match
        its ETag), hashed and never written: its Held, or why it could not be had."""
        with self._lock:
            done = self._deferred.get(key)
            if done is None:
                held = self.objects[key]
                try:
                    done = self._source.stream(StoredObject(key, held.size, held.etag))
                except SourceError as exc:
                    done = f"could not be read from the store ({self.url}{key}): {exc}"
                self._deferred[key] = done
            return done

    def digest(self, key: str) -> Held | None:
        """A copied object whose sha256 was computed while it streamed (or is the store's)."""
        held = self.objects.get(key)
        return held if held is not None and held.copied and held.sha256 else None

    def reused(self, facts: FileFacts, *, keep: bool) -> FileFacts:
        """The scan of a copied object (``hash=False``) with the sha256 its copy computed,
        and (``keep``: a seal is written) the copy's fingerprint, for report.seal's reuse."""
        held = self.objects[facts.path]
        if facts.error is not None or held.sha256 is None:
            return facts
        from pytest_itera.files.scan import FileFacts  # by keyword: whatever its kind of record

        return FileFacts(path=facts.path, size=facts.size, sha256=held.sha256,
                         binary=facts.binary, hits=facts.hits, hit_count=facts.hit_count,
                         unscanned=facts.unscanned,
                         fingerprint=held.fingerprint if keep and facts.size == held.size
                         else None)

    def over_cap(self, path: str) -> bool:
        """Whether some bytes of the checkpoint at ``path`` (a file or a folder) were left in
        the store by the cache cap (:meth:`spool` brings them for the time of its
        judgement); False: it is all here (or unreadable, which files-intact reports)."""
        return bool(self.left_of(path))

    def left_of(self, path: str) -> list[str]:
        """The objects of the checkpoint at ``path`` (a file or a folder) the cap left in the
        store."""
        unit = path.strip("/")
        return [k for k, _ in self._over if k == unit or k.startswith(unit + "/")]

    def spool(self, path: str, into: Path) -> dict[str, Held | str]:
        """The objects of the checkpoint at ``path`` the cap left in the store, copied into
        the folder ``into`` (at their relative paths) from the version listed (If-Match its
        ETag), each hashed as it streams: its Held, or why it could not be had (a finding's
        words). The caller judges the copy and removes ``into``: one checkpoint on local disk
        at a time, never the whole campaign."""
        source = self._source
        parts = into.with_name(into.name + ".itera-parts")  # beside it, never inside
        parts.mkdir(parents=True, exist_ok=True)
        done: dict[str, Held | str] = {}
        unit = path.strip("/")
        try:
            for key, held in self.objects.items():  # its documents, in the local copy already
                if held.copied and key.startswith(unit + "/"):
                    target = into.joinpath(*key.split("/"))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(self.root.joinpath(*key.split("/")), target)
            for key in self.left_of(path):
                held = self.objects[key]
                item = StoredObject(key, held.size, held.etag)
                try:
                    got = source.copy(item, into.joinpath(*key.split("/")),
                                      parts / uuid.uuid4().hex)
                except SourceError as exc:
                    done[key] = f"could not be read from the store ({self.url}{key}): {exc}"
                    continue
                if held.sha256 is not None and got.sha256 != held.sha256:
                    done[key] = (f"changed in the store ({self.url}{key}) since it was listed: "
                                 f"its sha256 is now {got.sha256}, was {held.sha256}")
                    continue
                done[key] = got
        finally:
            shutil.rmtree(parts, ignore_errors=True)
        return done

    def unreadable(self) -> dict[str, str]:
        """Object -> why it could not be read: the cause files-intact owns."""
        return {key: f"could not be read from the store: {held.error}"
                for key, held in self.objects.items() if held.error is not None}

    @cached_property
    def _source(self) -> S3Source:
        """The store, for the spools (one client per process, whatever their number)."""
        return S3Source(S3Location.parse(self.url), timeout=self.timeout)

    @cached_property
    def _over(self) -> tuple[tuple[str, Held], ...]:
        return tuple((key, held) for key, held in self.objects.items() if held.over_cap)

    def left_out(self) -> list[str]:
        """The objects the cap left in the store."""
        return [key for key, _ in self._over]

    def by_store(self) -> tuple[str, ...]:
        """The objects verified by the store's own SHA-256 (none of their bytes hashed)."""
        return tuple(key for key, held in self.objects.items() if held.by_store)


class S3Source:
    """One prefix of one bucket, read with bounded retries and timeouts."""

    def __init__(self, location: S3Location, *, timeout: float = 30.0, retries: int = 3,
                 concurrency: int = 4) -> None:
        try:
            import obstore
            from obstore.store import S3Store
        except ImportError:
            raise SourceError(f"{location.url}: reading object storage needs obstore: "
                              f"{INSTALL}") from None
        self.location, self.concurrency, self._obstore = location, concurrency, obstore
        self.timeout, self.retries = timeout, retries
        client: ClientConfig = {
            "timeout": f"{max(int(timeout * 1000), 1)}ms",
            "connect_timeout": f"{max(int(min(timeout, 10.0) * 1000), 1)}ms",
        }
        if endpoint().startswith("http://"):
            client["allow_http"] = True
        retry: RetryConfig = {
            "max_retries": retries, "retry_timeout": timedelta(seconds=timeout * 2),
            "backoff": {"init_backoff": timedelta(milliseconds=100),
                        "max_backoff": timedelta(seconds=2), "base": 2.0}}
        self._store = S3Store(location.bucket, prefix=location.prefix or None,
                              client_options=client, retry_config=retry)
        # The objects' bytes: one GET each, as long as it takes (obstore's timeout bounds a
        # whole request); a stall is bounded by :meth:`chunks`' own watch instead.
        self._bytes = S3Store(location.bucket, prefix=location.prefix or None,
                              client_options={**client, "timeout": _WHOLE_GET},
                              retry_config=retry)

    def list(self) -> list[StoredObject]:
        """Every object under the prefix (folder markers skipped), keys checked like paths."""
        found: list[StoredObject] = []
        try:
            for batch in self._obstore.list(self._store, chunk_size=1000):
                for meta in batch:
                    key = str(meta["path"])
                    if (not key or key.endswith("/")) and int(meta["size"]) == 0:
                        continue  # a console's folder marker
                    found.append(StoredObject(key, int(meta["size"]), meta.get("e_tag")))
        except Exception as exc:
            raise SourceError(f"{self.location.url}: cannot be listed ({_why(exc)})") from None
        # A console's "folder" is an empty object named like the folder (obstore drops the
        # trailing '/'): an empty key with keys under it is that marker, not a file.
        folders = {key.rsplit("/", 1)[0] for key in (o.key for o in found) if "/" in key}
        folders |= {f.rsplit("/", i)[0] for f in list(folders) for i in range(f.count("/") + 1)}
        found = [o for o in found if o.size or o.key not in folders]
        _check_keys(self.location, [o.key for o in found])
        return sorted(found, key=lambda o: o.key)

    def chunks(self, item: StoredObject, size: int | None = None,
               offset: int = 0) -> Iterator[bytes]:
        """The object's bytes from ``offset`` (to ``size`` only, if given) in pieces of at
        most ``CHUNK`` bytes, from one ranged GET If-Match the listed version. The GET runs
        on a thread of its own and hands its pieces over: no piece within ``timeout``
        seconds is a stall, and the GET is asked again from the byte reached, ``retries``
        times (a ranged GET per piece would bound each piece by the request timeout, but
        costs a store that reads the whole object for each range a whole read per piece).
        SourceError: the cause, in a finding's words (the URL is the caller's to name)."""
        end = min(item.size, size if size is not None else item.size)
        reached, stalls = offset, 0
        while reached < end:
            stalled = False
            for piece in self._get(item, reached, end):
                if piece is None:
                    stalled = True
                    break
                reached += len(piece)
                yield piece
            if not stalled:
                break
            stalls += 1
            if stalls > self.retries:
                raise SourceError(f"no answer within {self.timeout:g} s after {self.retries} "
                                  f"retries (bytes {reached}-{end - 1})")
        if reached != end:
            raise SourceError(f"a short read: {reached - offset} bytes came for bytes "
                              f"{offset}-{end - 1}")

    def _get(self, item: StoredObject, start: int, end: int) -> Iterator[bytes | None]:
        """Bytes ``start``..``end`` of one GET, read by a thread; None once it stalls (no
        piece within ``timeout``), then nothing more: the caller asks again."""
        from obstore.exceptions import PreconditionError

        options: GetOptions = {"range": (start, end)}
        if item.etag:
            options["if_match"] = item.etag
        # One piece waits while the caller holds one and the next is read: ~3 x CHUNK per
        # object in memory at most.
        pieces: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=1)
        stop = threading.Event()

        def hand(value: bytes | BaseException | None) -> bool:
            while not stop.is_set():
                try:
                    pieces.put(value, timeout=0.2)
                    return True
                except queue.Full:
                    continue
            return False

        def read() -> None:
            try:
                got = self._obstore.get(self._bytes, item.key, options=options)
                for piece in got.stream(min_chunk_size=CHUNK):
                    if not hand(bytes(piece)):
                        return
                hand(None)
            except BaseException as exc:  # handed over: raised in the reading thread
                hand(exc)

        threading.Thread(target=read, name="itera-store-get", daemon=True).start()
        reached = start
        try:
            while True:
                try:
                    value = pieces.get(timeout=self.timeout)
                except queue.Empty:
                    yield None
                    return
                if value is None:
                    return
                if isinstance(value, PreconditionError):
                    raise SourceError(f"{CHANGED} (its ETag is no longer {item.etag})")
                if isinstance(value, BaseException):
                    raise SourceError(f"{_cause(value, self.timeout)} (bytes {reached}-"
                                      f"{end - 1})")
                reached += len(value)
                yield value
        finally:
            stop.set()  # a reading thread still waiting to hand a piece over gives up

    def head(self, item: StoredObject) -> bytes:
        """The object's first bytes (one ranged GET): what a scan would sniff."""
        return next(iter(self.chunks(StoredObject(item.key, min(item.size, SNIFF), item.etag))),
                    b"")

    def opened(self, item: StoredObject) -> tuple[bytes, Iterator[bytes]]:
        """The object's first bytes (at least SNIFF of them, or all), and the rest of the
        same GET: what decides whether it needs a local copy, without asking twice."""
        rest = self.chunks(item)
        first = b""
        for piece in rest:
            first += piece
            if len(first) >= SNIFF:
                break
        return first, rest

    def stream(self, item: StoredObject, head: bytes = b"",
               rest: Iterator[bytes] | None = None) -> Held:
        """Its size and sha256, no copy. ``head``: its first bytes, read already
        (:meth:`head`, or :meth:`opened` with the ``rest`` of that GET): never asked for
        twice."""
        digest, size, first = hashlib.sha256(), 0, head[:SNIFF]
        for piece in itertools.chain((head,) if head else (),
                                     rest if rest is not None else
                                     self.chunks(item, offset=len(head))):
            first = first or piece[:SNIFF]
            digest.update(piece)
            size += len(piece)
        return Held(size, digest.hexdigest(), binary=b"\0" in first[:8192])

    def copy(self, item: StoredObject, dest: Path, part: Path, known: str | None = None,
             first: bytes = b"", rest: Iterator[bytes] | None = None) -> Held:
        """Stream one object to ``part``, then move it to ``dest``; its size and sha256
        (``known``: the store's, then the bytes are not hashed). ``first``: its first bytes,
        read already (:meth:`head`, or :meth:`opened` with the ``rest`` of that GET): never
        asked for twice."""
        digest, size = None if known is not None else hashlib.sha256(), 0
        dest.parent.mkdir(parents=True, exist_ok=True)
        with part.open("wb") as out:
            for piece in itertools.chain((first,) if first else (),
                                         rest if rest is not None else
                                         self.chunks(item, offset=len(first))):
                if digest is not None:
                    digest.update(piece)
                size += len(piece)
                out.write(piece)
        part.replace(dest)
        st = os.stat(dest)
        fingerprint = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        sha256 = known if digest is None else digest.hexdigest()
        return Held(size, sha256, copied=True, by_store=known is not None,
                    fingerprint=fingerprint)


def stage(source: S3Source, dest: Path, cap: int, *, checksums: bool = False,
          spare: bool = True, defer: bool = False) -> Staged:
    """Copy the prefix into ``dest`` (created, emptied first), at most ``source.concurrency``
    objects at a time, each streamed once (its sha256 computed on the way).

    Every object the checks read as text or data is copied; a checkpoint's bytes (the
    manifest's ``checkpoints`` and ``adapters`` paths, a folder as one) count against ``cap``,
    in path order: one that does not fit is left in the store (with the store's SHA-256 where
    ``checksums`` finds one), read when it is judged (:meth:`Staged.spool`), never written
    here. An object that cannot be read after the retries is left out, with why: the
    checks judge it (:meth:`Staged.entries`). ``spare`` (unless a seal covers the files of
    the copy): a binary file the checks never read (not a checkpoint, nothing to scan
    inside, judged from its first 64 KiB) is never written, only hashed as it streams.
    ``checksums``: an object whose store holds a full-object SHA-256 is not hashed, and
    such a spared file is not downloaded at all. ``defer`` (the items run in other
    processes, pytest-xdist's workers): such a file is only sniffed (its first 64 KiB), and
    hashed by the process whose item asks for its sha256 (:meth:`Staged.facts`). SourceError
    only when the prefix cannot be listed, or (no readable manifest) its bytes exceed
    ``cap``."""
    objects = {o.key: o for o in source.list()}
    parts = dest.with_name(dest.name + ".itera-parts")  # beside the copy, never inside it
    for folder in (dest, parts):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    held: dict[str, Held] = {}
    sums = _Checksums(source) if checksums else None
    try:
        for name in _DOCUMENTS:  # first: the manifest says which objects are checkpoints
            if name in objects:
                held[name] = fetch(source, objects[name], dest, parts, "copy", sums)
                if held[name].error is not None:  # nothing can be judged without it
                    raise SourceError(f"{source.location.url}{name} could not be read from "
                                      f"the store: {held[name].error}")
        units = _checkpoints(dest / _DOCUMENTS[0]) if held.get(_DOCUMENTS[0], _NONE).copied \
            else None
        plan = _plan(source.location, objects, held, units, cap)
        with ThreadPoolExecutor(max_workers=max(source.concurrency, 1)) as pool:
            done = pool.map(lambda key: (key, fetch(source, objects[key], dest, parts,
                                                     plan[key], sums, spare=spare,
                                                     defer=defer)), plan)
            held.update(done)
    finally:
        shutil.rmtree(parts, ignore_errors=True)
        if sums is not None:
            sums.close()
    return Staged(dest, source.location.url, cap, dict(sorted(held.items())), checksums,
                  source.timeout)


_DOCUMENTS = ("manifest.json", "plan.json")
Action = Literal["copy", "hash", "sniff"]  # write it locally; only stream its sha256; HEAD it


def _plan(location: S3Location, objects: dict[str, StoredObject], held: dict[str, Held],
          units: list[str] | None, cap: int) -> dict[str, Action]:
    """What to do with each object not fetched yet: the cap decides for the checkpoints."""
    todo = [key for key in objects if key not in held]
    if units is None:  # no manifest to say what a checkpoint is: every byte counts
        total = sum(o.size for o in objects.values())
        if total > cap:
            biggest = ", ".join(f"{o.key} ({size_text(o.size)})" for o in
                                sorted(objects.values(), key=lambda o: -o.size)[:3])
            raise SourceError(f"{location.url}: its {size_text(total)} exceed the local cache "
                              f"cap of {size_text(cap)} (largest: {biggest}) and it has no "
                              "readable manifest.json to tell its checkpoints from its "
                              "evidence; raise the cap (itera_store_cache_max) or accept the "
                              "campaign from a local copy")
        return dict.fromkeys(todo, "copy")
    plan: dict[str, Action] = dict.fromkeys(todo, "sniff")
    used = 0
    for unit in sorted(set(units)):
        keys = [k for k in todo if k == unit or k.startswith(unit.rstrip("/") + "/")]
        for key in keys:  # a checkpoint folder's own documents: read by the checks, small
            if key != unit and key.endswith(_UNIT_DOCUMENTS) and objects[key].size <= SNIFF:
                plan[key] = "copy"
        size = sum(objects[k].size for k in keys if plan[k] == "sniff")
        fits = used + size <= cap
        used += size if fits else 0
        for key in keys:
            if plan[key] == "sniff":
                plan[key] = "copy" if fits else "hash"
    return plan


_NONE = Held(0)
# The files of a checkpoint folder that the checks read as documents (adapter_config.json, a
# model's config.json, a tokenizer's): copied whatever the cap, when no larger than SNIFF.
_UNIT_DOCUMENTS = (".json", ".txt", ".md", ".yaml", ".yml")


def fetch(source: S3Source, item: StoredObject, dest: Path, parts: Path, action: Action,
          sums: _Checksums | None, *, spare: bool = False, defer: bool = False) -> Held:
    """One object: copied, streamed for its sha256, or (``sniff``: not a checkpoint) copied
    unless its bytes are needless on disk (``spare``: no check reads them, judged from its
    first bytes): then only its sha256 is kept, the store's where it holds one, else hashed
    as it streams, never written (``defer``: hashed later, by the process that asks). Its
    trouble as a finding's words."""
    target = dest.joinpath(*item.key.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)  # a folder checkpoint left out: still a folder
    try:
        known = sums.sha256(item) if sums is not None else None
        head, rest = b"", None
        if action == "sniff":
            action = "copy"
            if spare and item.size > SNIFF and known is not None:
                head = source.head(item)  # 64 KiB: the rest may not be needed at all
                if not _read_by_checks(head):
                    return Held(item.size, known, by_store=True, binary=True)
            elif spare and item.size > SNIFF and defer:  # 64 KiB now, the rest if needed
                head = source.head(item)
                if not _read_by_checks(head):
                    return Held(item.size, binary=True, deferred=True, etag=item.etag)
            elif spare and item.size > SNIFF:  # its bytes are hashed anyway: one GET
                head, rest = source.opened(item)
                if not _read_by_checks(head[:SNIFF]):
                    return source.stream(item, head, rest)
        if action == "hash":  # not read here: read once, hashed and scanned, when spooled
            return Held(item.size, known, by_store=known is not None, over_cap=True,
                        etag=item.etag)
        return source.copy(item, target, parts / uuid.uuid4().hex, known, head, rest)
    except SourceError as exc:
        return Held(item.size, error=str(exc))


def _read_by_checks(head: bytes) -> bool:
    """Whether a file starting with ``head`` is read by a check or the temp-path scan: text,
    a compressed or Parquet data file, or a container the scan reads inside."""
    from pytest_itera.files.packed import packing
    from pytest_itera.files.scan import BINARY_SNIFF

    if b"\0" not in head[:BINARY_SNIFF] or packing(head) is not None:
        return True
    return head[:4] == b"PK\x03\x04" or head[:1] == b"\x80" or _safetensors(head)


def _safetensors(head: bytes) -> bool:
    return len(head) >= 9 and head[8:9] == b"{"


def _checkpoints(manifest: Path) -> list[str] | None:
    """The checkpoint and adapter paths the manifest lists (files or folders), or None when
    it cannot be read as a manifest (then nothing tells a checkpoint from evidence)."""
    try:
        doc = json.loads(manifest.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    paths: list[str] = []
    for name in ("checkpoints", "adapters"):
        records = doc.get(name) or []
        if not isinstance(records, list):
            return None
        for record in records:
            path = record.get("path") if isinstance(record, dict) else None
            if isinstance(path, str) and path.strip("/"):
                paths.append(path.strip("/"))
    return paths


class _Checksums:
    """The store's own full-object SHA-256 of each object (S3 ``ChecksumSHA256``), through
    boto3's ``head_object(ChecksumMode="ENABLED")``: obstore does not expose it. The same
    standard environment (credentials, region, endpoint) as obstore; bounded retries and
    timeouts. None where the store holds none, only a composite one (multipart), or does
    not answer: then the bytes are hashed."""

    def __init__(self, source: S3Source) -> None:
        self.location = source.location
        self._client = client(source.location, "--itera-store-checksums",
                              timeout=source.timeout, retries=source.retries)

    def sha256(self, item: StoredObject) -> str | None:
        key = self.location.key(item.key)
        options = {"IfMatch": item.etag} if item.etag else {}
        try:
            head = self._client.head_object(Bucket=self.location.bucket, Key=key,
                                            ChecksumMode="ENABLED", **options)
        except Exception as exc:
            if status_of(exc) == 412:
                raise SourceError(f"{self.location.url}{item.key}: {CHANGED} (its ETag is no "
                                  f"longer {item.etag})") from None
            return None
        return full_sha256(head)[0]

    def close(self) -> None:
        """Its connections, now (not whenever the client is collected)."""
        self._client.close()


def client(location: S3Location, needs: str, *, timeout: float, retries: int) -> Any:
    """A boto3 S3 client of the standard environment (credentials, region, endpoint: the
    same as obstore's), its requests bounded by ``timeout`` and ``retries``. boto3 because
    obstore exposes neither an object's ChecksumSHA256 nor a way to send one."""
    try:
        import boto3  # type: ignore[import-untyped]
        from botocore.config import Config  # type: ignore[import-untyped]
    except ImportError:
        raise SourceError(f"{location.url}: {needs} needs boto3: {INSTALL}") from None
    config = Config(connect_timeout=min(timeout, 10.0), read_timeout=timeout,
                    retries={"max_attempts": retries + 1, "mode": "standard"})
    return boto3.session.Session().client("s3", endpoint_url=endpoint() or None, config=config)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a boto3 error (None: no answer came)."""
    status = getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def full_sha256(head: Mapping[str, Any]) -> tuple[str | None, str]:
    """The full-object SHA-256 (hex) of a ``head_object(ChecksumMode="ENABLED")`` answer, and
    why not when None: "composite" (a multipart upload's checksum is of its parts unless
    the store says FULL_OBJECT) or "none" (the store holds no SHA-256 of it)."""
    value, kind = head.get("ChecksumSHA256"), head.get("ChecksumType")
    etag = str(head.get("ETag") or "")
    if not isinstance(value, str):
        return None, "none"
    if re.search(r"-\d+$", value) or kind == "COMPOSITE":
        return None, "composite"
    if kind != "FULL_OBJECT" and re.search(r"-\d+\"?$", etag):
        return None, "composite"
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return None, "none"
    return (raw.hex(), "") if len(raw) == 32 else (None, "none")


def _check_keys(location: S3Location, keys: list[str]) -> None:
    folded: dict[str, str] = {}
    for key in keys:
        parts = key.split("/")
        if key.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise SourceError(f"{location.url}: the key {key!r} has an empty, '.' or '..' "
                              "segment; a folder cannot hold it")
        other = folded.setdefault(key.casefold(), key)
        if other != key:
            raise SourceError(f"{location.url}: the keys {other!r} and {key!r} differ only by "
                              "case; a case-insensitive folder cannot hold both")


def _cause(exc: BaseException, timeout: float) -> str:
    """A read's failure in a finding's words: "HTTP 500 after 3 retries", "no answer within
    30 s after 3 retries"; else the store's first line."""
    text = str(exc)
    retries = re.search(r"after (\d+) retr", text)
    after = f" after {retries.group(1)} retries" if retries else ""
    status = re.search(r"status(?: code)?:? (\d{3})\b", text)
    if status:
        return f"HTTP {status.group(1)}{after}"
    if re.search(r"(?i)timed? ?out|deadline", text):
        return f"no answer within {timeout:g} s{after}"
    return _why(exc)


def _why(exc: BaseException) -> str:
    """The first line of the store's error: the URL and the HTTP status, no headers."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return re.sub(r"(?i)(x-amz-[a-z-]+|signature|credential)=[^&\s]+", r"\1=…", first)[:300]

