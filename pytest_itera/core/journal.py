"""The recorder's journal: every event, one JSON line, appended and fsynced as it happens.

A rented machine can be pre-empted, a script can crash, a power cut can tear a
write. ``itera-journal.jsonl`` sits inside the campaign folder (listed in the
manifest like any other file), so whoever continues the campaign, on this
machine or another, rebuilds the recorder's state from it.

Each event is written with one ``os.write`` on a descriptor opened with
``O_APPEND`` and then fsynced: a reader sees whole lines. A last line without
its newline, or that is not JSON, is a torn write (the power went while the
kernel wrote it): it is never used; :meth:`Journal.open` cuts it off and says so
(``Journal.torn``), and the recorder records that it did.

A closure is journaled too (``close``, just before ``manifest.json`` is written) with the
:func:`manifest_digest` of the manifest it writes, and so is each reopening (``reopen``, with
its reason and the sha256 of the manifest it replaces): a manifest replaced without a
reopening is found (journal-agrees), and the reports say how often a campaign was reopened
(:func:`reopenings`).

The journal is a hash chain: each event carries ``prev``, the sha256 of the line before it
(:func:`line_digest`: the line's bytes, without its newline); the first, the sha256 of
``plan.json``. A line removed, inserted or rewritten breaks the chain at the line after it
(journal-agrees names it); a journal rewritten whole and chained again is caught by a pin,
``<line>:<digest>`` (:meth:`Journal.pin`): the digest of that line commits to every line
before it, and a pin written elsewhere (a CI log, the provider's order note) proves the
journal up to there (``--itera-journal-pin``). Journals of older recorders carry no ``prev``:
they are read as before and said to be unchained.

The clock is evidence: the journal's first line (the ``plan`` event) says which clock the
recorder read, ``"clock": "real"`` (``datetime.now(UTC)``, the default) or ``"clock":
"played"`` (a ``clock=`` callable the script injected: the guides' played clock, a test's
fixed clock); a process that continues a real-clock journal on a played clock journals a
``clock`` event before its first event. A campaign any line of whose journal says
``"played"`` was recorded on a played clock (:func:`played_clock_line`): its observed hours
were not measured.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_itera.core.atomic import fsync_dir

__all__ = [
    "JOURNAL_FILE",
    "JOURNAL_FORMAT",
    "PLAYED_CLOCK",
    "REAL_CLOCK",
    "Gap",
    "Journal",
    "JournalError",
    "TornLine",
    "gap_of",
    "gaps",
    "is_played",
    "line_digest",
    "manifest_digest",
    "played_clock_line",
    "read_events",
]

JOURNAL_FILE = "itera-journal.jsonl"
JOURNAL_FORMAT = "itera-journal/1"
REAL_CLOCK = "real"  # the recorder read datetime.now(UTC): the hours were measured
PLAYED_CLOCK = "played"  # the script injected clock=: the hours were not measured


class JournalError(ValueError):
    """A journal that cannot be continued (not a journal, a broken line before the last)."""


@dataclass(frozen=True)
class TornLine:
    """The tail of the journal that a torn write left: never replayed."""

    line: int  # its 1-based line number
    bytes: int
    text: str  # what it held, shortened, for the report

    def describe(self) -> str:
        return (f"{JOURNAL_FILE} line {self.line} is torn ({self.bytes} bytes, "
                f"{self.text!r}): an interrupted write; it was cut off and not replayed")


def line_digest(raw: bytes) -> str:
    """The sha256 of one journal line (its bytes, without the newline): the next line's
    ``prev``, and a pin's digest."""
    return hashlib.sha256(raw.rstrip(b"\n")).hexdigest()


class Journal:
    """One campaign's journal file: read once when opened, then appended to."""

    def __init__(self, path: Path, events: list[dict[str, Any]], torn: TornLine | None,
                 head: str | None = None) -> None:
        self.path = path
        self.events = events
        self.torn = torn
        self.head = head  # the digest of the last line: the next event's prev
        self.chain_start: str | None = None  # the first event's prev (the plan's sha256)

    def pin(self) -> str | None:
        """``<line>:<digest>`` of the last line (None for an empty journal): it proves every
        line up to it."""
        return f"{len(self.events)}:{self.head}" if self.events and self.head else None

    @classmethod
    def open(cls, root: Path) -> Journal:
        """The journal of ``root`` (empty when there is none); a torn tail is cut off."""
        path = Path(root) / JOURNAL_FILE
        if not path.exists():
            return cls(path, [], None)
        data = path.read_bytes()
        events, good, torn = _parse(data)
        if torn is not None:
            os.truncate(path, good)  # the next append must not continue a broken line
        last = data[:good].rstrip(b"\n").rsplit(b"\n", 1)[-1] if good else None
        return cls(path, events, torn, line_digest(last) if last is not None else None)

    def append(self, event: Mapping[str, Any]) -> None:
        """Write ``event`` as one line, chained to the last (``prev``), atomically appended
        and fsynced."""
        prev = self.head if self.events else self.chain_start
        chained = {**dict(event), "prev": prev} if prev is not None else dict(event)
        line = (json.dumps(chained, allow_nan=False, ensure_ascii=False,
                           separators=(",", ":")) + "\n").encode("utf-8")
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
            if written != len(line):  # a short write (disk full): undo it, say so
                os.ftruncate(fd, os.fstat(fd).st_size - written)
                raise OSError(f"{JOURNAL_FILE}: short write ({written} of {len(line)} bytes)")
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.path.parent)
        self.events.append(chained)
        self.head = line_digest(line)


def read_events(root: Path) -> tuple[list[dict[str, Any]], TornLine | None]:
    """The journal's whole events and its torn tail, read without touching the file (what a
    reader that follows a campaign another process records needs: :meth:`Journal.open`
    cuts a torn tail off). Raises OSError when it cannot be read and :class:`JournalError`
    for a broken line before the last."""
    events, _, torn = _parse((Path(root) / JOURNAL_FILE).read_bytes())
    return events, torn


def _parse(data: bytes) -> tuple[list[dict[str, Any]], int, TornLine | None]:
    """The events, the byte length of the whole lines, and the torn tail if any."""
    events: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the file ends with a newline
        whole = len(lines)
    else:
        whole = len(lines) - 1  # the last line has no newline: a torn write
    for number, raw in enumerate(lines, 1):
        event = _event(raw) if number <= whole else None
        if event is None:
            if number < len(lines):
                raise JournalError(
                    f"{JOURNAL_FILE} line {number} is not a journal event ({raw[:80]!r}) and "
                    "more lines follow: the journal was damaged or edited; it cannot be "
                    "continued")
            text = raw[:120].decode("utf-8", "replace")
            return events, offset, TornLine(number, len(data) - offset, text)
        events.append(event)
        offset += len(raw) + 1
    return events, offset, None


def _event(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None


def manifest_digest(manifest: Mapping[str, Any]) -> str | None:
    """The digest a ``close`` event records of the manifest it precedes: the sha256 of the
    manifest's canonical JSON (sorted keys, no spaces) with its ``files`` entry for the
    journal left out (the journal holds the close event, so the manifest's record of the
    journal cannot be inside it; files-intact holds that entry to the journal). None for a
    manifest that is not JSON data."""
    data = dict(manifest)
    files = data.get("files")
    if isinstance(files, list):
        data["files"] = [f for f in files
                         if not (isinstance(f, Mapping) and f.get("path") == JOURNAL_FILE)]
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Gap:
    """What the journal records of a break: a step's interruption (its process ended at
    ``since``, it resumed at ``until``) or a reopening after the closure (``at``, why)."""

    kind: Literal["interrupted", "reopened"]
    what: str  # "step <id>" or "run(s) <ids>" interrupted, or the reopening's reason
    since: str | None = None
    until: str | None = None


def gaps(root: Path) -> tuple[Gap, ...]:
    """The interruptions and reopenings the campaign's journal records, in journal order (none
    without a journal), from their events' fields, never from a sentence; streamed, only the
    lines that name one are parsed."""
    found: list[Gap] = []
    try:
        with (Path(root) / JOURNAL_FILE).open("rb") as handle:
            for raw in handle:
                if b'"interrupted"' not in raw and b'"reopen"' not in raw:
                    continue
                event = _event(raw.rstrip(b"\n"))
                gap = None if event is None else gap_of(event)
                if gap is not None:
                    found.append(gap)
    except OSError:
        return ()
    return tuple(found)


def gap_of(event: Mapping[str, Any]) -> Gap | None:
    """The break one journal event records (an ``interrupted`` step or continuation, a
    reopening), or None: the one reading of those fields, for the reports and the checks."""
    kind = event.get("event")
    if kind == "reopen":
        reason, at = event.get("reason"), event.get("at")
        return Gap("reopened", reason if isinstance(reason, str) else "(no reason)",
                   at if isinstance(at, str) else None)
    gap = event.get("interrupted")
    if kind not in ("step", "resumed") or not isinstance(gap, dict):
        return None
    if kind == "step":  # a step's process died, the step resumed
        step = event.get("step")
        what = f"step {step}" if isinstance(step, str) else "a step"
    else:  # a continuation found runs open: no process ran them meanwhile
        runs = event.get("runs")
        named = [r for r in runs if isinstance(r, str)] if isinstance(runs, list) else []
        what = f"run{'s' if len(named) > 1 else ''} {', '.join(named)}" if named else "the runs"
    since, until = gap.get("since"), gap.get("until")
    return Gap("interrupted", what, since if isinstance(since, str) else None,
               until if isinstance(until, str) else None)


def is_played(event: Mapping[str, Any]) -> bool:
    """Whether a journal event says its campaign was recorded on a played clock."""
    return event.get("clock") == PLAYED_CLOCK


def played_clock_line(root: Path) -> int | None:
    """The first line of the campaign's journal that says it was recorded on a played clock
    (``"clock": "played"``), or None (a real clock, or no journal); streamed, only the lines
    that name a clock are parsed."""
    path = Path(root) / JOURNAL_FILE
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if b'"clock"' not in raw:
                    continue
                event = _event(raw.rstrip(b"\n"))
                if event is not None and is_played(event):
                    return number
    except OSError:
        return None
    return None
