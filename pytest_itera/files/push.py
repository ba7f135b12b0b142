"""Push a closed campaign to S3-compatible object storage, then verify it there.

``python -m pytest_itera push out/ s3://bucket/prefix/`` uploads every file the manifest
lists (and ``plan.json``, then ``manifest.json`` last: a prefix that holds a manifest holds
what it lists) with the object's full SHA-256 sent along (``x-amz-checksum-sha256``: the
store refuses bytes that do not match it, and keeps it, so that ``--itera-store-checksums``
verifies the object later with one HEAD). An object larger than a single PUT allows
(5 GiB) goes up in parts: its checksum is then of its parts (composite), named as such,
and it is hashed when verified.

A push that stops (killed, a lost connection) is continued by running it again: an object
already there with the manifest's size and SHA-256 is skipped (a multipart one by the
SHA-256 its upload wrote in its metadata). The end is a verification
in place: every listed object is there with its size and SHA-256 (the store's, by HEAD;
hashed as it streams where the store has only a composite one or none), and nothing else
is under the prefix. The local folder is only read.

The store's settings come from the standard environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ...), as for an ``s3://``
campaign; every request is bounded by a timeout and a few retries.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pytest_itera.core.text import size_text
from pytest_itera.files.source import (
    CHUNK,
    S3Location,
    SourceError,
    client,
    full_sha256,
    status_of,
)
from pytest_itera.files.tree import sha256_file

__all__ = ["SINGLE_MAX", "PushError", "Pushed", "Wanted", "campaign_files", "command", "push"]

SINGLE_MAX = 5 << 30  # the largest object S3 takes in one PUT: above, parts (composite)
PART = 64 << 20  # bytes per part of a larger object
_T = TypeVar("_T")
# A multipart object's metadata: the SHA-256 of the whole file, so that a push run again
# skips it (its parts were each checked by the store); the verification hashes it anyway.
META = "itera-sha256"
SHOWN = 20  # objects named in one problem before "and N more"


class PushError(Exception):
    """The push cannot start: the folder is no closed campaign, the store cannot be
    reached or listed, or the prefix holds another campaign's objects (the message names
    the folder, the URL or the objects, and what to do)."""


@dataclass(frozen=True)
class Wanted:
    """One file of the campaign as the manifest records it."""

    key: str  # '/'-separated, relative to the campaign folder and to the prefix
    path: Path
    size: int
    sha256: str  # hex


@dataclass(frozen=True)
class _Listed:
    size: int
    etag: str


@dataclass
class Pushed:
    """What the push did, and what the verification found (each problem names its object
    and what to do)."""

    url: str
    wanted: int
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already there, the right checksum
    # verified by their bytes, and why: "composite" (a checksum of parts), "none"
    hashed: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    sent: int = 0  # bytes uploaded
    seconds: float = 0.0  # the uploads' wall time

    @property
    def rate(self) -> float | None:
        """Bytes per second of the uploads (None when nothing was uploaded): the rate
        ``watch --upload-rate`` counts a retrieval's push at."""
        return self.sent / self.seconds if self.sent and self.seconds > 0 else None

    @property
    def complete(self) -> bool:
        """The store holds exactly the manifest's files, each verified in place."""
        return not self.problems

    def lines(self) -> list[str]:
        head = (f"{self.url}: {self.wanted} objects verified in place ({len(self.uploaded)} "
                f"uploaded, {len(self.skipped)} already there)" if self.complete else
                f"{self.url}: NOT COMPLETE — {len(self.problems)} problem"
                f"{'s' if len(self.problems) != 1 else ''} ({len(self.uploaded)} uploaded, "
                f"{len(self.skipped)} already there)")
        lines = [head, *(f"  {p}" for p in self.problems)]
        if self.rate is not None:
            mib = f"{self.rate / (1 << 20):.1f}MiB/s"
            lines.append(f"  uploaded {size_text(self.sent)} in {self.seconds:.1f} s: {mib} "
                         f"(watch --upload-rate {mib} counts the retrieval's push at it)")
        for why, words in _HASHED.items():
            keys = sorted(k for k, w in self.hashed.items() if w == why)
            if keys:
                lines.append(f"  note: {len(keys)} verified by hashing their bytes, {words}: "
                             f"{_names(keys)}")
        return lines


_HASHED = {"composite": "the store's SHA-256 of each being of its parts (a multipart upload), "
                        "not of the object",
           "none": "the store holding no SHA-256 of them"}


def campaign_files(folder: Path) -> list[Wanted]:
    """The files of the closed campaign in ``folder``, in upload order: the listed files,
    the plan, then ``manifest.json`` (hashed now: nothing records its digest)."""
    manifest = folder / "manifest.json"
    try:
        doc = json.loads(manifest.read_bytes())
        records = [(f["path"], int(f["bytes"]), str(f["sha256"])) for f in doc["files"]]
        plan = doc["plan"]
        records.append((plan["path"], (folder / plan["path"]).stat().st_size,
                        str(plan["sha256"])))
        digest, size = sha256_file(manifest)
    except FileNotFoundError as exc:
        raise PushError(f"{folder}: {Path(exc.filename or manifest).name} is not there: push "
                        "a closed campaign (CampaignRecorder.close writes its manifest.json)") \
            from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PushError(f"{manifest}: not a manifest that lists files and a plan "
                        f"({type(exc).__name__}: {exc})") from None
    wanted = [Wanted(key, folder.joinpath(*key.split("/")), size_, sha) for key, size_, sha
              in records]
    return [*wanted, Wanted("manifest.json", manifest, size, digest)]


def push(folder: Path, url: str, *, out: TextIO | None = None, timeout: float = 30.0,
         retries: int = 3, concurrency: int = 4, single_max: int = SINGLE_MAX,
         part: int = PART, uploaded: Callable[[str], None] | None = None) -> Pushed:
    """Upload what the store lacks of the campaign in ``folder``, then verify it all in
    place. ``out``: the progress line (stderr). ``uploaded``: called with each key once its
    object is stored (the tests stop a push there). PushError: nothing could be pushed."""
    location = _location(url)
    wanted = campaign_files(folder)
    store = _Store(location, timeout=timeout, retries=retries)
    try:
        return _pushed(store, wanted, out, concurrency, single_max, part, uploaded)
    finally:
        store.close()


def _pushed(store: _Store, wanted: list[Wanted], out: TextIO | None, concurrency: int,
            single_max: int, part: int, uploaded: Callable[[str], None] | None) -> Pushed:
    """:func:`push` once the store is reached: its connections are closed after."""
    location = store.location
    listed = store.listing()
    names = {w.key for w in wanted}
    others = sorted(set(listed) - names)
    if others:
        raise PushError(f"{location.url} already holds {len(others)} "
                        f"{'objects that are' if len(others) != 1 else 'object that is'} "
                        "not this campaign's: "
                        f"{_names(others)}; push to an empty prefix, or remove them")
    result = Pushed(location.url, len(wanted))
    progress = _Progress(out if out is not None else sys.stderr, wanted)
    todo = []
    for w, there in _each(lambda w: store.holds(w, listed.get(w.key)), wanted, concurrency):
        if there:
            result.skipped.append(w.key)
            progress.done(w)
        else:
            todo.append(w)
    last = [w for w in todo if w.key == "manifest.json"]  # after what it lists
    started = time.monotonic()
    for batch in ([w for w in todo if w.key != "manifest.json"], last):
        for w, problem in _each(lambda w: store.upload(w, single_max, part), batch,
                                concurrency):
            if problem is not None:
                result.problems.append(problem)
                continue
            result.uploaded.append(w.key)
            result.sent += w.size
            progress.done(w)
            if uploaded is not None:
                uploaded(w.key)
        if result.problems:  # no manifest over a store that lacks what it lists
            break
    result.seconds = time.monotonic() - started
    progress.end()
    if not result.problems:
        _verify(store, wanted, result, concurrency)
    return result


def _location(url: str) -> S3Location:
    if not url.startswith("s3://"):
        raise PushError(f"{url}: give an s3://bucket/prefix/ URL")
    try:
        return S3Location.parse(url)
    except SourceError as exc:
        raise PushError(str(exc)) from None


def command(folder: Path, url: str, *, timeout: float, concurrency: int) -> int:
    """``python -m pytest_itera push``: 0 only when the store holds exactly the manifest's
    files, each verified in place; 4: not a folder; 130: interrupted (Ctrl-C); 1 otherwise
    (the problems on stdout, a push that could not start on stderr)."""
    if not folder.is_dir():
        print(f"{folder}: not a folder", file=sys.stderr)
        return 4
    try:
        result = push(folder, url, timeout=timeout, concurrency=concurrency)
    except PushError as exc:
        print(f"push: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"push: interrupted; run it again to continue: the objects already in {url} "
              "with their SHA-256 are skipped", file=sys.stderr)
        return 130
    print("\n".join(result.lines()))
    return 0 if result.complete else 1


def _verify(store: _Store, wanted: list[Wanted], result: Pushed, concurrency: int) -> None:
    """Every listed object there, its size and SHA-256 the manifest's; nothing else."""
    listed = store.listing()
    for key in sorted(set(listed) - {w.key for w in wanted}):
        result.problems.append(f"{store.location.url}{key}: under the prefix but not in the "
                               "manifest (written by something else during the push): remove "
                               "it, or push to an empty prefix")
    for w, (problem, hashed) in _each(lambda w: store.verify(w, listed.get(w.key)), wanted,
                                      concurrency):
        if problem is not None:
            result.problems.append(problem)
        elif hashed:
            result.hashed[w.key] = hashed


def _each(work: Callable[[Wanted], _T], wanted: list[Wanted],
          concurrency: int) -> Iterator[tuple[Wanted, _T]]:
    """``work`` on each file, ``concurrency`` at a time, in order; an interruption (Ctrl-C,
    an exception of the caller's) cancels what has not started instead of waiting for it."""
    pool = ThreadPoolExecutor(max_workers=max(concurrency, 1))
    try:
        futures = [pool.submit(work, w) for w in wanted]
        for w, future in zip(wanted, futures, strict=True):
            yield w, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _Store:
    """The prefix, through boto3 (the only client that sends and reads S3's checksums)."""

    def __init__(self, location: S3Location, *, timeout: float, retries: int) -> None:
        try:
            self._client = client(location, "push", timeout=timeout, retries=retries)
        except SourceError as exc:
            raise PushError(str(exc)) from None
        self.location, self.timeout = location, timeout

    def close(self) -> None:
        """Its connections, now (not whenever the client is collected)."""
        self._client.close()

    def listing(self) -> dict[str, _Listed]:
        """Every object under the prefix (a console's empty folder markers aside)."""
        prefix = f"{self.location.prefix}/" if self.location.prefix else ""
        found: dict[str, _Listed] = {}
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=prefix)
            for page in pages:
                for item in page.get("Contents", ()):
                    key = str(item["Key"])[len(prefix):]
                    if key and not (key.endswith("/") and int(item["Size"]) == 0):
                        found[key] = _Listed(int(item["Size"]), str(item.get("ETag") or ""))
        except Exception as exc:
            raise PushError(f"{self.location.url}: cannot be listed ({self._cause(exc)})") \
                from None
        return found

    def holds(self, w: Wanted, listed: _Listed | None) -> bool:
        """Whether the object is already there with the manifest's size and SHA-256."""
        if listed is None or listed.size != w.size:
            return False
        try:
            head = self._head_of(w.key, listed.etag)
        except Exception:
            return False  # changed since the listing, or no answer: upload it again
        sha256, why = full_sha256(head)
        if why == "composite":  # in parts, each checked by the store: the sha256 sent along
            sha256 = (head.get("Metadata") or {}).get(META)
        return sha256 == w.sha256

    def upload(self, w: Wanted, single_max: int, part: int) -> str | None:
        """Store one file, its SHA-256 sent along; None, or the problem (naming it)."""
        name = f"{self.location.url}{w.key}"
        try:
            digest, size = sha256_file(w.path)
        except OSError as exc:
            return f"{w.key}: cannot be read ({exc.strerror or exc}): not pushed"
        if (digest, size) != (w.sha256, w.size):
            return (f"{w.key}: the local file is not the one the manifest lists ({size} bytes, "
                    f"sha256 {digest}; the manifest says {w.size} bytes, {w.sha256}): not "
                    "pushed; the folder changed after its closure (reopen and close it again)")
        key = self.location.key(w.key)
        try:
            with w.path.open("rb") as body:
                if w.size <= single_max:
                    self._client.put_object(
                        Bucket=self.location.bucket, Key=key, Body=body, ContentLength=w.size,
                        ChecksumAlgorithm="SHA256",
                        ChecksumSHA256=base64.b64encode(bytes.fromhex(digest)).decode())
                else:
                    from boto3.s3.transfer import TransferConfig  # type: ignore[import-untyped]

                    self._client.upload_fileobj(
                        body, self.location.bucket, key,
                        ExtraArgs={"ChecksumAlgorithm": "SHA256", "Metadata": {META: digest}},
                        Config=TransferConfig(multipart_threshold=single_max,
                                              multipart_chunksize=part, use_threads=False))
        except Exception as exc:
            return f"{name}: not stored ({self._cause(exc)}): run the push again"
        return None

    def verify(self, w: Wanted, listed: _Listed | None) -> tuple[str | None, str]:
        """(the problem, or None; why its bytes were hashed: "composite", "none", or "")."""
        name = f"{self.location.url}{w.key}"
        if listed is None:
            return f"{name}: not in the store after the push: run the push again", ""
        if listed.size != w.size:
            return (f"{name}: {listed.size} bytes in the store, the manifest says {w.size}: "
                    "run the push again"), ""
        try:
            sha256, why = self._head(w.key, listed.etag)
            hashed = sha256 is None
            if sha256 is None:
                sha256 = self._hash(w.key, listed.etag)
        except _Changed:
            return (f"{name}: changed while it was being verified (its ETag is no longer "
                    f"{listed.etag}): something else writes under the prefix; run the push "
                    "again when it stops"), ""
        except Exception as exc:
            return f"{name}: cannot be verified ({self._cause(exc)}): run the push again", ""
        if sha256 != w.sha256:
            whose = "its bytes have" if hashed else "the store's SHA-256 of it is"
            return (f"{name}: {whose} sha256 {sha256}, the manifest says {w.sha256}: run the "
                    "push again"), ""
        return None, why if hashed else ""

    def _head(self, relpath: str, etag: str) -> tuple[str | None, str]:
        return full_sha256(self._head_of(relpath, etag))

    def _head_of(self, relpath: str, etag: str) -> dict[str, Any]:
        try:
            head: dict[str, Any] = self._client.head_object(
                Bucket=self.location.bucket, Key=self.location.key(relpath),
                ChecksumMode="ENABLED", IfMatch=etag)
        except Exception as exc:
            if status_of(exc) == 412:
                raise _Changed from None
            raise
        return head

    def _hash(self, relpath: str, etag: str) -> str:
        """The object's SHA-256, computed as it streams (If-Match its listed version)."""
        try:
            answer = self._client.get_object(Bucket=self.location.bucket,
                                             Key=self.location.key(relpath), IfMatch=etag)
        except Exception as exc:
            if status_of(exc) == 412:
                raise _Changed from None
            raise
        digest = hashlib.sha256()
        for piece in answer["Body"].iter_chunks(CHUNK):
            digest.update(piece)
        return digest.hexdigest()

    def _cause(self, exc: BaseException) -> str:
        """A boto3 failure in a user's words, never a credential."""
        kind = type(exc).__name__
        if kind in ("NoCredentialsError", "PartialCredentialsError"):
            return ("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
                    "AWS_PROFILE) in the environment")
        if kind in ("ReadTimeoutError", "ConnectTimeoutError", "ConnectionClosedError"):
            return f"no answer within {self.timeout:g} s after the retries"
        if kind == "EndpointConnectionError":
            return "the endpoint cannot be reached"
        status = status_of(exc)
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        if status is not None:
            return f"HTTP {status}{f' {code}' if code else ''}"
        return kind


class _Changed(Exception):
    """The object is no longer the version listed (HTTP 412 to If-Match)."""


class _Progress:
    """One line: objects and bytes done of the total. Redrawn in place on a terminal,
    otherwise written at most every few seconds (a log), and once at the end."""

    EVERY = 5.0

    def __init__(self, out: TextIO, wanted: list[Wanted]) -> None:
        self.out, self.total, self.size = out, len(wanted), sum(w.size for w in wanted)
        self.count = self.bytes = 0
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.shown = time.monotonic()

    def done(self, w: Wanted) -> None:
        self.count, self.bytes = self.count + 1, self.bytes + w.size
        now = time.monotonic()
        if self.tty:
            self.out.write(f"\r{self._line()}")
            self.out.flush()
        elif now - self.shown >= self.EVERY:
            self.out.write(f"{self._line()}\n")
            self.shown = now

    def end(self) -> None:
        self.out.write(f"{chr(13) if self.tty else ''}{self._line()}\n")
        self.out.flush()

    def _line(self) -> str:
        return (f"push: {self.count}/{self.total} objects, {size_text(self.bytes)} of "
                f"{size_text(self.size)}")


def _names(keys: list[str]) -> str:
    shown = ", ".join(keys[:SHOWN])
    return shown + (f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else "")
