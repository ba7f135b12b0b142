"""One streamed pass per file: size, SHA-256 and a scan for paths into temporary folders.

No pytest import. Every byte of a file is read once, in chunks, with memory
bounded independently of the file size. Two exceptions, both small and both
only where there is something to report or inspect:

* a text file with temp-path hits has the prefix up to its last reported hit
  re-read (``pread``) once, to turn byte offsets into line/column; clean files
  (the common case) pay nothing for line numbers;
* the ``data.pkl`` member of a torch.save zip archive is read a second time
  through ``zipfile`` (capped at :data:`RECORD_CAP`) to scan the pickle record.

Why: counting newlines in every chunk (``bytes.count``, ~3 GB/s) costs half of
the SHA-256 time on the scanning thread, which alone would break the 1.25x
budget of issue 8 (see benchmarks/bench_scan.py).

Large files are hashed on a persistent one-thread executor of the scanning thread
(hashlib and ahocorasick-rs both release the GIL), overlapped with the scan of the
same chunk on the scanning thread; several files may be scanned at once on
different threads (``Context.read_ahead``). Nothing from the file is ever
unpickled.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import re
import stat
import struct
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple

import ahocorasick_rs

from pytest_itera.files.tree import os_reason

SMALL_FILE: Final = 64 * 1024  # below this, one read, no thread (per-file overhead matters)
BINARY_SNIFF: Final = 8192  # a NUL byte in the first 8 KiB makes a file binary
RECORD_CAP: Final = 64 << 20  # most bytes scanned in a pickle record / safetensors header
EXCERPT_MAX: Final = 120

# macOS keeps /tmp, /var/tmp and /var/folders under /private: a tool that resolves its paths
# records "/private/tmp/...".
_UNIX_DIRS = ("/tmp/", "/var/tmp/", "/dev/shm/", "/var/folders/", "/private/tmp/",
              "/private/var/tmp/", "/private/var/folders/")
_PERCENT = ("%TEMP%", "%TMP%")
# The raw spelling, its JSON-escaped spelling, and the forward-slash one.
_APPDATA = ("AppData\\Local\\Temp", "AppData\\\\Local\\\\Temp", "AppData/Local/Temp")
_APPDATA_CASINGS = (("Local", "Temp"), ("local", "temp"), ("LOCAL", "TEMP"))


def tempdir_patterns() -> tuple[str, ...]:
    """The current temp dir as a directory pattern, unless a default already covers it."""
    tmp = tempfile.gettempdir().rstrip("/")
    pattern = tmp + "/"
    if not tmp.startswith("/") or any(pattern.startswith(d) for d in _UNIX_DIRS):
        return ()
    return (pattern,)


DEFAULT_TEMP_PATTERNS: Final[tuple[str, ...]] = (
    *_UNIX_DIRS,
    *_PERCENT,
    *_APPDATA,
    *tempdir_patterns(),
)

# Directory patterns ("/tmp/") match "/tmp" followed by a non-name byte ("/tmp/x",
# '"/tmp"', "/tmp" at the end of a line) and preceded by one ("/home/u/tmp/" is not
# a temp folder), but not "/tmpfs", "/tmp_data" or "/mytmp/".
_DIR_PATTERNS = frozenset(p for p in DEFAULT_TEMP_PATTERNS if p.startswith("/"))

_LITERAL, _PATH, _APPDATA_RULE, _CANARY = 0, 1, 2, 3

# Needles that never match text (0xF8-0xFB never occur in UTF-8) and exist only to steer
# the automaton's choice of prefilter. With at most three distinct first bytes (our
# defaults start with '/', '%' or '\\') aho-corasick picks a memchr3 start-byte
# prefilter that stops at every '/' of path-heavy text (3 GB/s on JSONL with paths,
# 0.5 GB/s with a '/' every 12 bytes). Four more distinct first and rare bytes rule
# that prefilter and the rare-byte one out, and the SIMD "Teddy" multi-literal
# prefilter is chosen instead: 13 GB/s on both (benchmarks/bench_scan.py).
_CANARIES = tuple(bytes([b]) * 4 for b in (0xF8, 0xF9, 0xFA, 0xFB))


def _byte_table(chars: bytes, *, high: bool) -> bytes:
    table = bytearray(256)
    for b in chars:
        table[b] = 1
    if high:
        table[0x80:] = b"\x01" * 128
    return bytes(table)


_ALNUM = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123))
# Bytes that continue a file or directory name (UTF-8 bytes of non-ASCII names count).
_NAME = _byte_table(_ALNUM + b"_-.~", high=True)
# Bytes that end the path-like token shown as the excerpt.
_DELIM = _byte_table(bytes(range(33)) + b"\x7f\"'`<>()[]{},;|=", high=False)
# Pickle opcodes whose one-byte length sits right before the string (SHORT_BINUNICODE,
# SHORT_BINBYTES, SHORT_BINSTRING): that length byte may look like a name byte.
_PICKLE_SHORT_STRINGS = frozenset((0x8C, 0x43, 0x55))
# BINUNICODE, BINBYTES, BINSTRING: a four-byte little-endian length (protocol 2, torch.save).
_PICKLE_LONG_STRINGS = frozenset((0x58, 0x42, 0x54))


@dataclass(frozen=True)
class TempHit:
    """One path into a temporary folder.

    For text files ``line``/``column`` are 1-based, the column counted in
    characters (the line prefix decoded as UTF-8 with errors="replace"). For a
    record inside a binary container (``where`` is set) ``line`` is 1 and
    ``column`` is the byte offset inside that record + 1.
    """

    pattern: str
    line: int
    column: int
    excerpt: str
    where: str | None = None


class FileFacts(NamedTuple):
    """What one read of a file found. One per file read, kept for the run: a named tuple has
    no __dict__, is built ~20x faster than a frozen dataclass and travels from a helper
    process as a plain tuple (100,000 small files, issue 29: files.batch)."""

    path: str  # display path (relative)
    size: int  # bytes actually read
    sha256: str | None  # None when hashing was off or reading failed
    binary: bool
    hits: tuple[TempHit, ...]  # at most max_hits, in file order
    hit_count: int  # total
    error: str | None = None
    unscanned: str | None = None  # why part of the file was not scanned (a cap), None: all
    # The error is that the file changed, was replaced or was removed while it was read:
    # something is still writing into the folder (typed, so that no reader parses ``error``).
    moving: bool = False
    # (st_dev, st_ino, size, mtime_ns, ctime_ns) of the file the digest is of, taken before
    # its read (and size and mtime unchanged after it): where a later stat of the path gives
    # the same, the bytes are the ones hashed (report.seal reuses the digest). None: not asked
    # for, or the file changed within the file system's timestamp granularity of its read
    # (a same-size write then might not move its ctime: "racy", never reused).
    fingerprint: tuple[int, int, int, int, int] | None = None


class TempMatcher:
    """The temp patterns compiled once into a byte automaton; immutable, so thread-safe.

    Patterns from :data:`DEFAULT_TEMP_PATTERNS` keep their boundary rules (and
    the Windows ones their common casings); any other pattern is a plain
    literal. Speed note: the automaton skips ahead with a SIMD multi-literal
    prefilter (see ``_CANARIES``); user patterns that occur often in the data
    (or more than ~60 of them, which disables that prefilter) slow the scan of
    text files down.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns: tuple[str, ...] = tuple(dict.fromkeys(patterns))
        if not self.patterns or "" in self.patterns:
            raise ValueError("temp patterns must be a non-empty list of non-empty strings")
        needles: dict[bytes, tuple[int, int, int]] = {}
        for index, pattern in enumerate(self.patterns):
            for needle, rule, back in _needles_for(pattern):
                needles.setdefault(needle, (index, rule, back))
        for canary in _CANARIES:  # last: a real needle with the same bytes wins
            needles.setdefault(canary, (0, _CANARY, 0))
        # (pattern index, rule, look-behind length) per automaton needle.
        self._rules: tuple[tuple[int, int, int], ...] = tuple(needles.values())
        self._ac = ahocorasick_rs.BytesAhoCorasick(
            list(needles), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_LONGEST
        )
        self._longest = max(len(n) + back for n, (_, _, back) in needles.items())

    def __repr__(self) -> str:
        return f"TempMatcher({list(self.patterns)!r})"


def _needles_for(pattern: str) -> list[tuple[bytes, int, int]]:
    if pattern in _DIR_PATTERNS:
        return [(pattern[:-1].encode(), _PATH, 0)]
    if pattern in _APPDATA:
        sep = pattern[len("AppData") : pattern.index("Local")]
        return [
            ((sep + local + sep + temp).encode(), _APPDATA_RULE, len("AppData"))
            for local, temp in _APPDATA_CASINGS
        ]
    if pattern in _PERCENT:
        spellings = dict.fromkeys((pattern, pattern.lower(), pattern.title()))
        return [(s.encode(), _LITERAL, 0) for s in spellings]
    return [(pattern.encode("utf-8", "surrogateescape"), _LITERAL, 0)]


def find_in_text(text: str, matcher: TempMatcher) -> str | None:
    """The first temp pattern that ``text`` points into, by the rules of a file scan
    (boundaries, casings), or None: for strings about to be written (pytest_itera.record)."""
    scanner = _Scan(matcher, record=False, max_hits=1)
    scanner.feed(text.encode("utf-8", "surrogateescape"), final=True)
    return matcher.patterns[scanner.found[0][1]] if scanner.found else None


_WINDOWS_PATTERNS = frozenset((*_PERCENT, *_APPDATA))
_SEPARATORS = re.compile(r"[\\/]+")


def temp_pattern_of(value: str, matcher: TempMatcher) -> str | None:
    r"""The temp pattern a path *value* falls under (a base model's name, a config path), or
    None: the patterns and boundary rules of a file scan, applied to the whole value as one
    path. Two of them read a path, not text:

    * a Unix directory pattern ("/tmp/") matches only where the value starts, case and
      separator as written: "/tmp", "/tmp/x"; not "file:///tmp/x", "x /tmp/y", "/TMP/x" or
      "\tmp\x" (text holding "--out=/tmp/x" does point into /tmp: the scan reports it);
    * a Windows pattern (%TEMP%, %TMP%, AppData\Local\Temp) matches in any case and with
      either separator, as Windows reads the path ("%tEmP%", "appdata/Local\TEMP"); a scan
      of text finds their common spellings only.

    Any other pattern (the user's) is the literal a scan finds, anywhere, case as written.
    """
    for offset, pattern in _text_hits(value, matcher):
        if pattern not in _WINDOWS_PATTERNS and (offset == 0 or pattern not in _DIR_PATTERNS):
            return pattern
    # Lower case, one backslash per separator run: a spelling every Windows pattern's needles
    # hold (their lower-case casing), whatever case and separators the value was written in.
    folded = _SEPARATORS.sub(lambda _: "\\", value).lower()
    return next((p for _, p in _text_hits(folded, matcher) if p in _WINDOWS_PATTERNS), None)


def _text_hits(text: str, matcher: TempMatcher) -> list[tuple[int, str]]:
    """(offset, pattern) of every hit in ``text``, by the rules of a file scan."""
    data = text.encode("utf-8", "surrogateescape")
    scanner = _Scan(matcher, record=False, max_hits=len(data))
    scanner.feed(data, final=True)
    return [(offset, matcher.patterns[index]) for offset, index, _ in scanner.found]


# Scanning a stream ---------------------------------------------------------------------


class _Scan:
    """Finds matcher hits in a byte stream fed in pieces of any size.

    A hit is handled by the first piece that holds it with enough context on
    both sides (``_left`` bytes before, ``_right`` after); the last
    ``_left + _right`` bytes are carried over, so a hit across two pieces is
    found exactly once. Large pieces are scanned in place (no copy); only a
    small seam around each boundary is concatenated.
    """

    def __init__(self, matcher: TempMatcher, *, record: bool, max_hits: int) -> None:
        self._m = matcher
        self._record = record
        self._max = max_hits
        # Enough left context that a scan started there agrees with the global leftmost
        # matches, plus the excerpt; enough right context for the boundary byte and excerpt.
        self._left = 2 * matcher._longest + EXCERPT_MAX
        self._right = matcher._longest + EXCERPT_MAX + 8
        self._tail = b""
        self._pos = 0  # stream offset of the next byte fed
        self._done = 0  # hits starting before this offset have been handled
        self._closed = False
        self.found: list[tuple[int, int, str]] = []  # (offset, pattern index, excerpt)
        self.count = 0

    def feed(self, data: bytes, *, final: bool = False) -> None:
        if self._closed:
            return
        self._closed = final
        pos, span = self._pos, self._left + self._right
        end = pos + len(data)
        stop = end if final else end - self._right
        if len(data) >= 2 * span:
            self._take(self._tail + data[:span], pos - len(self._tail), pos + self._left, final)
            self._take(data, pos, stop, final, low=pos + self._left)
            self._tail = data[-span:]
        else:
            buf = self._tail + data
            self._take(buf, end - len(buf), stop, final)
            self._tail = buf[-span:]
        self._done = max(self._done, stop)
        self._pos = end

    def finish(self) -> None:
        self.feed(b"", final=True)

    def _take(self, buf: bytes, base: int, stop: int, final: bool, low: int = -1) -> None:
        """Handle the needles of ``buf`` (stream offset ``base``) starting in [done, stop)."""
        low = max(low, self._done)
        if low >= stop:
            return
        at_end = final and base + len(buf) == stop
        for index, start, end in self._m._ac.find_matches_as_indexes(buf):
            if base + start < low:
                continue
            if base + start >= stop:
                break
            self._candidate(buf, base, index, start, end, at_end)

    def _candidate(self, buf: bytes, base: int, index: int, s: int, e: int, at_end: bool) -> None:
        pattern, rule, back = self._m._rules[index]
        if rule == _CANARY:
            return
        start = s - back
        if rule != _LITERAL and not self._bounded(buf, start, s, e, rule, at_end):
            return
        self.count += 1
        if len(self.found) < self._max:
            string_end = _pickle_string_end(buf, start) if self._record else None
            self.found.append((base + start, pattern, _excerpt(buf, start, e, string_end)))

    def _bounded(self, buf: bytes, start: int, s: int, e: int, rule: int, at_end: bool) -> bool:
        if start < 0 or (rule == _APPDATA_RULE and buf[start:s].lower() != b"appdata"):
            return False
        right_ok = at_end if e == len(buf) else not _NAME[buf[e]]
        return right_ok and self._left_ok(buf, start)

    def _left_ok(self, buf: bytes, start: int) -> bool:
        if start == 0 or not _NAME[buf[start - 1]]:
            return True
        return self._record and start >= 2 and buf[start - 2] in _PICKLE_SHORT_STRINGS


def _pickle_string_end(buf: bytes, start: int) -> int | None:
    """Where a pickled string starting at ``start`` ends, if a string opcode precedes it.

    Pickle strings carry their length, not a delimiter: the token rule would run
    into the next opcode ("/tmp/run/ckptq" for a BINPUT after the string).
    """
    if start >= 2 and buf[start - 2] in _PICKLE_SHORT_STRINGS:
        return start + buf[start - 1]
    if start >= 5 and buf[start - 5] in _PICKLE_LONG_STRINGS:
        return start + int.from_bytes(buf[start - 4 : start], "little")
    return None


def _excerpt(buf: bytes, s: int, e: int, string_end: int | None = None) -> str:
    """The path-like token around buf[s:e], printable, at most EXCERPT_MAX characters.

    With ``string_end`` (a pickled string starting at ``s``), exactly that string.
    """
    lo, floor = s, max(0, s - EXCERPT_MAX // 2)
    hi, ceiling = e, min(len(buf), s + 2 * EXCERPT_MAX)
    if string_end is not None and string_end >= e:
        hi = min(string_end, ceiling)
    else:
        while lo > floor and not _DELIM[buf[lo - 1]]:
            lo -= 1
        ceiling = min(len(buf), lo + 2 * EXCERPT_MAX)
        while hi < ceiling and not _DELIM[buf[hi]]:
            hi += 1
    text = buf[lo:hi].decode("utf-8", "replace")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return text if len(text) <= EXCERPT_MAX else text[: EXCERPT_MAX - 1] + "…"


def _line_columns(
    read_at: Callable[[int, int], bytes], offsets: list[int], chunk: int
) -> list[tuple[int, int]]:
    """(line, column) for sorted byte offsets, reading the prefix once, in chunks."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    line, chars, pos = 1, 0, 0
    out: list[tuple[int, int]] = []
    for offset in offsets:
        while pos < offset:
            data = read_at(pos, min(chunk, offset - pos))
            if not data:
                break
            newlines = data.count(b"\n")
            if newlines:
                line += newlines
                decoder.reset()
                chars = len(decoder.decode(data[data.rfind(b"\n") + 1 :]))
            else:
                chars += len(decoder.decode(data))
            pos += len(data)
        pending = 1 if decoder.getstate()[0] else 0  # a cut sequence reads as one U+FFFD
        out.append((line, chars + pending + 1))
    return out


# Reading -------------------------------------------------------------------------------

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _read(fd: int, size: int) -> bytes:
    """Every chunk of every file goes through here (tests hook it to change a file mid-read)."""
    return os.read(fd, size)


class _HashPool:
    """A persistent hashing thread per scanning thread (the caller's, or a read-ahead
    reader's: files read side by side must not queue behind one hasher), re-made after a
    fork."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._pid = os.getpid()

    def get(self) -> ThreadPoolExecutor:
        if self._pid != os.getpid():
            self.forget()
        pool: ThreadPoolExecutor | None = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = ThreadPoolExecutor(1, thread_name_prefix="itera-sha256")
        return pool

    def forget(self) -> None:
        # In a forked child the threads are gone: start afresh.
        self._local = threading.local()
        self._pid = os.getpid()


_HASH_POOL = _HashPool()
os.register_at_fork(after_in_child=_HASH_POOL.forget)


def _hash_then_read(hasher: hashlib._Hash, data: bytes, fd: int, size: int) -> bytes:
    hasher.update(data)
    return _read(fd, size)


Feed = Callable[[int, bytes], None]


def _pump(
    fd: int,
    first: bytes,
    hasher: hashlib._Hash | None,
    feed: Feed | None,
    chunk: int,
    *,
    threaded: bool,
) -> int:
    """Hash and feed every chunk from ``first`` to EOF; returns the bytes read.

    ``threaded`` with both a hasher and a feed: chunk k is hashed (and k+1
    read) on the hash thread while this thread scans chunk k.
    """
    total, data = 0, first
    if not threaded or hasher is None or feed is None:
        while data:
            if hasher is not None:
                hasher.update(data)
            if feed is not None:
                feed(total, data)
            total += len(data)
            data = _read(fd, chunk)
        return total
    pool = _HASH_POOL.get()
    while data:
        future = pool.submit(_hash_then_read, hasher, data, fd, chunk)
        try:
            feed(total, data)
        finally:
            following = future.result()  # never leave the fd to the worker on the way out
        total += len(data)
        data = following
    return total


def _region_feed(scanner: _Scan, lo: int, hi: int) -> Feed:
    """A feed that hands the scanner only the bytes [lo, hi) of the stream."""

    def feed(offset: int, data: bytes) -> None:
        a, b = max(lo, offset), min(hi, offset + len(data))
        if a < b:
            piece = (
                data if (a, b) == (offset, offset + len(data)) else data[a - offset : b - offset]
            )
            scanner.feed(piece, final=b == hi)

    return feed


# The pass over one file ----------------------------------------------------------------


class _Sniff(NamedTuple):  # one per file read: a tuple is built ~3x faster (issue 29)
    binary: bool
    region: tuple[int, int] | None  # the stream bytes to scan; None: nothing
    where: str | None  # None for text, else the record's name
    zip_records: bool  # a zip: scan its */data.pkl members after the pass


_ZIP = _Sniff(True, None, None, True)
_OPAQUE = _Sniff(True, None, None, False)  # binary, nothing in it to scan


def _sniff(first: bytes, size: int) -> _Sniff:
    if b"\0" not in (first if len(first) <= BINARY_SNIFF else first[:BINARY_SNIFF]):
        return _Sniff(False, (0, size), None, False)
    if first.startswith(b"PK\x03\x04"):
        return _ZIP
    header = _safetensors_header(first, size)
    if header is not None:
        return _Sniff(True, header, "safetensors header", False)
    if first.startswith(b"\x80") and size < RECORD_CAP:
        # Strings in a pickle are raw UTF-8, so a literal scan of its bytes finds them.
        return _Sniff(True, (0, size), "pickle record", False)
    return _OPAQUE


def _safetensors_header(first: bytes, size: int) -> tuple[int, int] | None:
    """The [start, end) of a safetensors JSON header: u64 little-endian length, then '{'.
    Any length the file holds: a large header is scanned in chunks like any stream."""
    if len(first) < 10 or first[8] != 0x7B:  # "{" after the length
        return None
    length = int.from_bytes(first[:8], "little")
    if not 2 <= length <= size - 8:
        return None
    return (8, 8 + length)


def scan_file(
    path: Path | str,
    display: str,
    matcher: TempMatcher | None,
    *,
    hash: bool = True,
    chunk_size: int = 1 << 20,
    max_hits: int = 20,
    fingerprint: bool = False,
    walked: bool = False,
) -> FileFacts:
    """Size, SHA-256 and temp-path hits of one regular file, in one streamed pass.

    ``matcher=None`` turns the scan off. Never raises for OS-level trouble and
    never blocks: FIFOs, devices and sockets are refused before opening (``walked``: by
    the walk's lstat; one swapped in since is opened non-blocking, never read), a
    symlink is never followed, and every problem comes back as ``error``.
    Binary files are hashed, not text-scanned, except the records of known
    containers (torch.save zip ``data.pkl``, safetensors header, plain pickle);
    see :class:`TempHit` for how their positions read. ``fingerprint``: also say which
    file the digest is of (:attr:`FileFacts.fingerprint`). ``walked``: the caller's walk
    of the folder has just lstat'ed ``path`` as a regular file (``tree.walk``), so it is
    opened without another lstat (O_NOFOLLOW and O_NONBLOCK: a link is refused, a FIFO
    swapped in since never blocks) and judged by its fstat (one syscall less per file:
    issue 29, 100,000 small files).
    """
    started = time.time_ns() if fingerprint else 0
    st: os.stat_result | None = None
    if not walked:
        try:
            st = os.lstat(path)
        except OSError as exc:
            return _failed(display, _open_reason(exc))
        if not stat.S_ISREG(st.st_mode):
            return _failed(display, _not_regular(st.st_mode))
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        return _failed(display, _open_reason(exc))
    try:
        before = None
        if st is None:
            st = before = os.fstat(fd)
        facts = _scan_fd(fd, st, display, matcher, hash, max(chunk_size, 1), max_hits, before)
    except OSError as exc:
        return _failed(display, f"could not be read ({os_reason(exc)})")
    finally:
        os.close(fd)
    # The open file never changed, but the path may now name another file: one renamed over
    # it while it was read (an atomic save) would otherwise pass with the old file's digest.
    moved = _moved(path, st)
    if moved is None or facts.error:
        if fingerprint and facts.error is None and facts.sha256 is not None:
            return facts._replace(fingerprint=_fingerprint(st, started))
        return facts
    reason, moving = moved
    return _failed(display, reason, size=facts.size, binary=facts.binary, moving=moving)


def _scan_fd(
    fd: int,
    st: os.stat_result,
    display: str,
    matcher: TempMatcher | None,
    hash: bool,
    chunk: int,
    max_hits: int,
    before: os.stat_result | None = None,
) -> FileFacts:
    if before is None:
        before = os.fstat(fd)
    if not stat.S_ISREG(before.st_mode):
        return _failed(display, _not_regular(before.st_mode))
    if before is not st and (before.st_dev, before.st_ino) != (st.st_dev, st.st_ino):
        return _failed(display, "was replaced during the scan", moving=True)
    # Ask for no more than the file holds (+1 to see growth): allocating a full chunk
    # for a 1 KiB file would triple the per-file cost.
    want = min(max(chunk, BINARY_SNIFF), before.st_size + 1)
    first = _read(fd, want)
    sniff = _sniff(first, before.st_size)
    if len(first) < want:  # a short read: the whole file is in hand
        total, digest, hits, count = _scan_whole(first, sniff, matcher, hash, max_hits)
    else:
        total, digest, hits, count = _scan_stream(fd, first, sniff, matcher, hash, max_hits, chunk)
    unscanned = None
    if matcher is not None and sniff.zip_records:
        more, more_count, unscanned = _zip_hits(fd, before.st_size, matcher,
                                                max_hits - len(hits), chunk)
        hits, count = hits + more, count + more_count
    # A growth after the short read, or any write during the stream, shows here.
    changed = _changed(fd, before, total)
    if changed is not None:
        return _failed(display, changed, size=total, binary=sniff.binary, moving=True)
    return FileFacts(display, total, digest, sniff.binary, tuple(hits), count,
                     unscanned=unscanned)


_Outcome = tuple[int, str | None, list[TempHit], int]  # bytes read, sha256, hits, hit count


def _scan_whole(
    data: bytes, sniff: _Sniff, matcher: TempMatcher | None, hash: bool, max_hits: int
) -> _Outcome:
    """The cheap path for small files (per-file overhead counts with 100,000 of them)."""
    digest = hashlib.sha256(data).hexdigest() if hash else None
    if matcher is None or sniff.region is None:
        return len(data), digest, [], 0
    lo, hi = sniff.region
    record = data if (lo, hi) == (0, len(data)) else data[lo:hi]
    if not matcher._ac.find_matches_as_indexes(record):
        return len(data), digest, [], 0
    scanner = _Scan(matcher, record=sniff.where is not None, max_hits=max_hits)
    scanner.feed(record)
    scanner.finish()
    hits, count = _hits(scanner, sniff.where, lambda at, n: record[at : at + n], len(record))
    return len(data), digest, hits, count


def _scan_stream(
    fd: int,
    first: bytes,
    sniff: _Sniff,
    matcher: TempMatcher | None,
    hash: bool,
    max_hits: int,
    chunk: int,
) -> _Outcome:
    hasher = hashlib.sha256() if hash else None
    scanner, feed = None, None
    if matcher is not None and sniff.region is not None:
        scanner = _Scan(matcher, record=sniff.where is not None, max_hits=max_hits)
        feed = _region_feed(scanner, *sniff.region)
    if hasher is None and scanner is None:  # nothing to do with the rest (its sha256 is known)
        return os.fstat(fd).st_size, None, [], 0
    total = _pump(fd, first, hasher, feed, chunk, threaded=True)
    digest = None if hasher is None else hasher.hexdigest()
    if scanner is None:
        return total, digest, [], 0
    scanner.finish()
    # Line numbers only for files with hits: re-read the prefix up to the last one.
    hits, count = _hits(scanner, sniff.where, lambda at, n: os.pread(fd, n, at), chunk)
    return total, digest, hits, count


def _hits(
    scanner: _Scan, where: str | None, read_at: Callable[[int, int], bytes], chunk: int
) -> tuple[list[TempHit], int]:
    patterns = scanner._m.patterns
    if where is not None:
        hits = [TempHit(patterns[p], 1, off + 1, text, where) for off, p, text in scanner.found]
        return hits, scanner.count
    places = _line_columns(read_at, [off for off, _, _ in scanner.found], chunk)
    hits = [
        TempHit(patterns[p], line, column, text)
        for (_, p, text), (line, column) in zip(scanner.found, places, strict=True)
    ]
    return hits, scanner.count


_ZIP_ERRORS = (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError,
               zlib.error, struct.error)
ZIP_ENTRY_CAP: Final = 100_000  # a torch.save archive has ~1 entry per storage
ZIP_RECORDS_SCANNED: Final = 16  # */data.pkl records scanned per archive (torch.save writes 1)
_EOCD = struct.Struct("<4s4xHHIIH")  # signature, entries here, entries, cd size, cd offset
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4s6xH4x4xIIHHH8xI")  # method, csize, usize, name/extra/comment, offset
_LOCAL = struct.Struct("<4s22xHH")


@dataclass(frozen=True)
class _Member:
    name: str
    offset: int  # of its local header
    size: int  # compressed
    method: int


def _zip_hits(
    fd: int, size: int, matcher: TempMatcher, max_hits: int, chunk: int
) -> tuple[list[TempHit], int, str | None]:
    """Hits in the ``<prefix>/data.pkl`` members of a torch.save archive (never unpickled),
    and why part of it was not scanned (None: all of it).

    The zip directory is streamed, never held: memory stays bounded whatever the number of
    entries the archive declares (zipfile would build an object per entry in this process).
    A broken archive yields no hits here: whether it loads is the reload check's job.
    """
    hits: list[TempHit] = []
    count = 0
    try:
        members, unscanned = _pickle_members(fd, size, chunk)
        for member in members:
            scanner = _Scan(matcher, record=True, max_hits=max(0, max_hits - len(hits)))
            _feed_member(scanner, fd, member, chunk)
            more, more_count = _hits(scanner, f"{member.name} (pickle record)", _no_read, chunk)
            hits += more
            count += more_count
    except _ZIP_ERRORS:
        return hits, count, None
    return hits, count, unscanned


def _directory(fd: int, size: int) -> tuple[int, int]:
    """(offset, entry count) of the zip's central directory, zip64 included."""
    tail = min(size, 65_557)  # EOCD record + the longest comment
    end = os.pread(fd, tail, size - tail)
    at = end.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(end):
        raise zipfile.BadZipFile("no end of central directory")
    _, _, entries, _, offset, _ = _EOCD.unpack_from(end, at)
    if entries == 0xFFFF or offset == 0xFFFFFFFF:
        locator = os.pread(fd, _ZIP64_LOCATOR.size, size - tail + at - _ZIP64_LOCATOR.size)
        sig, _, where, _ = _ZIP64_LOCATOR.unpack(locator)
        if sig != b"PK\x06\x07":
            raise zipfile.BadZipFile("no zip64 locator")
        record = _ZIP64_EOCD.unpack(os.pread(fd, _ZIP64_EOCD.size, where))
        if record[0] != b"PK\x06\x06":
            raise zipfile.BadZipFile("no zip64 end of central directory")
        entries, offset = record[7], record[9]
    return offset, entries


def _pickle_members(fd: int, size: int, chunk: int) -> tuple[list[_Member], str | None]:
    """The */data.pkl members, read from the directory in chunks (at most ZIP_ENTRY_CAP
    entries, ZIP_RECORDS_SCANNED members kept), and why the rest was not read."""
    offset, declared = _directory(fd, size)
    members: list[_Member] = []
    # ``at``: the next entry in ``buf``, which is compacted only when refilled (slicing it
    # at each entry would copy the buffer once per entry).
    buf, at, pos, seen = b"", 0, offset, 0
    while seen < declared:
        if seen >= ZIP_ENTRY_CAP:
            return members, (f"its zip directory declares {declared} entries; only the first "
                             f"{ZIP_ENTRY_CAP} were scanned for pickle records (a torch.save "
                             "archive has about one entry per tensor storage)")
        if len(buf) - at < _CENTRAL.size + 3 * 0xFFFF:
            more = os.pread(fd, chunk, pos)
            buf, at, pos = buf[at:] + more, 0, pos + len(more)
        if len(buf) - at < _CENTRAL.size:
            break
        sig, method, csize, usize, n, e, c, local = _CENTRAL.unpack_from(buf, at)
        start = at + _CENTRAL.size
        if sig != b"PK\x01\x02" or len(buf) < start + n + e + c:
            break
        name = buf[start:start + n].decode("utf-8", "replace")
        if name.count("/") == 1 and name.endswith("/data.pkl") and \
                len(members) < ZIP_RECORDS_SCANNED:
            extra = buf[start + n:start + n + e]
            csize, local = _zip64_sizes(extra, usize, csize, local)
            members.append(_Member(name, local, csize, method))
        at = start + n + e + c
        seen += 1
    return members, None


def _zip64_sizes(extra: bytes, usize: int, csize: int, local: int) -> tuple[int, int]:
    """The compressed size and header offset, from the zip64 extra field where they
    overflowed 32 bits (it holds usize, csize, offset in that order, each only if needed)."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            values = list(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            if usize == 0xFFFFFFFF and values:
                values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
            if local == 0xFFFFFFFF and values:
                local = values.pop(0)
            break
        at += 4 + length
    return csize, local


def _feed_member(scanner: _Scan, fd: int, member: _Member, chunk: int) -> None:
    """Feed at most RECORD_CAP bytes of one member (stored or deflated) to the scanner."""
    sig, n, e = _LOCAL.unpack(os.pread(fd, _LOCAL.size, member.offset))
    if sig != b"PK\x03\x04":
        raise zipfile.BadZipFile("no local header")
    pos, left = member.offset + _LOCAL.size + n + e, member.size
    inflate = zlib.decompressobj(-15) if member.method == zipfile.ZIP_DEFLATED else None
    if member.method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return
    fed = 0
    while left > 0 and fed < RECORD_CAP:
        data = os.pread(fd, min(chunk, left), pos)
        if not data:
            break
        pos, left = pos + len(data), left - len(data)
        if inflate is not None:
            data = inflate.decompress(data, RECORD_CAP - fed)  # bounded output
        scanner.feed(data[: RECORD_CAP - fed])
        fed += len(data)
    scanner.finish()


def _no_read(offset: int, size: int) -> bytes:
    raise AssertionError("records have no lines to count")  # pragma: no cover


def _moved(path: Path | str, st: os.stat_result) -> tuple[str, bool] | None:
    """Why the path no longer names the file that was read, and whether it moved (False: it
    could not be checked); None: it still does."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return "was removed during the scan", True
    except OSError as exc:
        return f"could not be checked after the scan ({os_reason(exc)})", False
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        return "was replaced during the scan (another file now has its name)", True
    return None


# More than any file system's timestamp granularity (ext4, XFS: a clock tick; FAT: 2 s).
RACY_NS: Final = 3_000_000_000


def _fingerprint(st: os.stat_result, started: int) -> tuple[int, int, int, int, int] | None:
    """The file's identity and times as read (``st``: its lstat before the open; a change
    after it moves the ctime, which no user can set), or None when that ctime is within
    :data:`RACY_NS` of the read's start: a write in the same timestamp tick could leave it
    unchanged (git's "racy clean" files)."""
    if st.st_ctime_ns >= started - RACY_NS:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _changed(fd: int, before: os.stat_result, total: int) -> str | None:
    after = os.fstat(fd)
    if after.st_size != before.st_size or total != before.st_size:
        now = after.st_size if after.st_size != before.st_size else total
        return f"changed while being read (size {before.st_size} -> {now})"
    if after.st_mtime_ns != before.st_mtime_ns:
        return "changed while being read (modified during the scan)"
    return None


def _failed(display: str, error: str, *, size: int = 0, binary: bool = False,
            moving: bool = False) -> FileFacts:
    return FileFacts(display, size, None, binary, (), 0, error, moving=moving)


def _open_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "vanished during the scan"
    if exc.errno == errno.ELOOP:
        return "is a symbolic link, not a regular file"
    if exc.errno == errno.ENXIO:
        return "is a socket, not a regular file"
    return os_reason(exc)


def _not_regular(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    )
    for test, name in kinds:
        if test(mode):
            return f"is {name}, not a regular file"
    return "is not a regular file"
