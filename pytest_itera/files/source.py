"""A campaign in S3-compatible object storage: listing, streamed reads, sha256, and a local copy.

``s3://bucket/prefix/`` is read through obstore (the Rust ``object_store`` crate: one wheel,
no botocore pin, retries with backoff and request timeouts built in), configured from the
standard environment it reads (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ...): never from the command
line, and no message carries a credential. Plain HTTP is allowed only when the environment's
endpoint itself is an ``http://`` URL.

The checks read a local folder: :func:`stage` copies every object under the prefix into a
folder outside the campaign (each object streamed to disk in bounded chunks, several at a
time, its sha256 computed on the way), refusing up front a prefix whose bytes exceed the
cache cap, and refusing keys the local equivalent would refuse: a ``.`` or ``..`` segment,
an empty segment (a leading ``/``), and two keys that differ only by case.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ClientConfig

__all__ = ["INSTALL", "S3Location", "S3Source", "SourceError", "Staged", "StoredObject",
           "is_remote", "stage"]

INSTALL = "pip install 'pytest-itera[s3]'"
CHUNK = 8 << 20  # bytes per ranged GET: the memory per object being read
SCHEME = "s3://"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")


class SourceError(Exception):
    """The store cannot be read as a campaign (the message names the URL and the key)."""


def is_remote(text: str) -> bool:
    return text.startswith(SCHEME)


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


@dataclass(frozen=True)
class StoredObject:
    key: str  # relative to the prefix, '/'-separated
    size: int
    etag: str | None = None  # every piece is read If-Match this version


@dataclass(frozen=True)
class Staged:
    """The local copy: where it is, and each object's size and sha256 as read from the store."""

    root: Path
    objects: dict[str, tuple[int, str]]


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
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
            "AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT") or ""
        client: ClientConfig = {
            "timeout": f"{max(int(timeout * 1000), 1)}ms",
            "connect_timeout": f"{max(int(min(timeout, 10.0) * 1000), 1)}ms",
        }
        if endpoint.startswith("http://"):
            client["allow_http"] = True
        self._store = S3Store(
            location.bucket, prefix=location.prefix or None, client_options=client,
            retry_config={"max_retries": retries, "retry_timeout": timedelta(seconds=timeout * 2),
                          "backoff": {"init_backoff": timedelta(milliseconds=100),
                                      "max_backoff": timedelta(seconds=2), "base": 2.0}})

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

    def chunks(self, item: StoredObject) -> Iterator[bytes]:
        """The object's bytes in pieces of ``CHUNK`` bytes, one ranged GET each (so a request
        timeout bounds a piece, not the whole object), each If-Match the listed version."""
        from obstore.exceptions import PreconditionError

        for start in range(0, item.size, CHUNK):
            end = min(start + CHUNK, item.size)
            options: GetOptions = {"range": (start, end)}
            if item.etag:
                options["if_match"] = item.etag
            where = f"{self.location.url}{item.key}"
            try:
                piece = bytes(self._obstore.get(self._store, item.key, options=options).bytes())
            except PreconditionError:
                raise SourceError(f"{where}: changed while it was being copied (its ETag is no "
                                  f"longer {item.etag})") from None
            except Exception as exc:
                raise SourceError(f"{where}: cannot be read at bytes {start}-{end - 1} "
                                  f"({_why(exc)})") from None
            if len(piece) != end - start:
                raise SourceError(f"{where}: {len(piece)} bytes came for bytes {start}-{end - 1}")
            yield piece

    def copy(self, item: StoredObject, dest: Path, part: Path) -> tuple[int, str]:
        """Stream one object to ``part``, then move it to ``dest``; its size and sha256."""
        digest, size = hashlib.sha256(), 0
        dest.parent.mkdir(parents=True, exist_ok=True)
        with part.open("wb") as out:
            for piece in self.chunks(item):
                digest.update(piece)
                size += len(piece)
                out.write(piece)
        if size != item.size:
            part.unlink()
            raise SourceError(f"{self.location.url}{item.key}: {size} bytes were read, the "
                              f"listing said {item.size} (the object changed during the copy)")
        part.replace(dest)
        return size, digest.hexdigest()


def stage(source: S3Source, dest: Path, cap: int) -> Staged:
    """Copy every object under the prefix into ``dest`` (created, emptied first), at most
    ``source.concurrency`` at a time; SourceError when the bytes exceed ``cap``."""
    objects = source.list()
    total = sum(o.size for o in objects)
    if total > cap:
        biggest = ", ".join(f"{o.key} ({_size(o.size)})"
                            for o in sorted(objects, key=lambda o: -o.size)[:3])
        raise SourceError(f"{source.location.url}: its {_size(total)} exceed the local cache "
                          f"cap of {_size(cap)} (largest: {biggest}); raise the cap "
                          "(itera_store_cache_max) or accept the campaign from a local copy")
    parts = dest.with_name(dest.name + ".itera-parts")  # beside the copy, never inside it
    for folder in (dest, parts):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)

    def copy(numbered: tuple[int, StoredObject]) -> tuple[int, str]:
        number, item = numbered
        return source.copy(item, dest.joinpath(*item.key.split("/")), parts / str(number))

    try:
        with ThreadPoolExecutor(max_workers=max(source.concurrency, 1)) as pool:
            done = list(pool.map(copy, enumerate(objects)))
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    return Staged(dest, {o.key: found for o, found in zip(objects, done, strict=True)})


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


def _why(exc: BaseException) -> str:
    """The first line of the store's error: the URL and the HTTP status, no headers."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return re.sub(r"(?i)(x-amz-[a-z-]+|signature|credential)=[^&\s]+", r"\1=…", first)[:300]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
