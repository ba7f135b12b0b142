"""What the recorder's journal (``itera-journal.jsonl``) says, read once for journal-agrees.

The journal is streamed line by line into :class:`JournalFacts`, the last word of each kind
of event with its line (memory grows with the runs, files and saves, not with the logged
points). The chain is followed as it is read and the pinned lines' digests kept; a line that
cannot be read is kept with why, never skipped: the check says it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pytest_itera.core.journal import JOURNAL_FILE, is_played, line_digest

_MAX_LINE = 1024 * 1024  # an event is a few hundred bytes; a log line a few more


_OUTCOMES = {"accepted": "accepted", "stopped": "stopped", "rejected": "rejected"}


@dataclass
class Event:
    """One journaled fact and the line that holds it."""

    line: int
    facts: dict[str, Any]


@dataclass
class JournalFacts:
    """What a streamed journal says, the last word of each kind (with its line)."""

    unreadable: list[tuple[int, str]] = field(default_factory=list)
    started: dict[str, Event] = field(default_factory=dict)  # the first run-start
    outcome: dict[str, Event] = field(default_factory=dict)
    metrics: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    predictions: dict[str, Event] = field(default_factory=dict)
    saves: dict[str, Event] = field(default_factory=dict)  # path -> its last save
    by_content: dict[str, list[Event]] = field(default_factory=dict)  # sha256 -> saves
    resumed: dict[str, Event] = field(default_factory=dict)
    hours: dict[str, tuple[int, Decimal]] = field(default_factory=dict)  # step -> last line
    decisions: list[Event] = field(default_factory=list)
    bases: list[Event] = field(default_factory=list)
    rehearsal: Event | None = None  # the plan event of a rehearsal (its first line)
    played: Event | None = None  # the first event that says "clock": "played"
    closure: Event | None = None  # the last close or reopen event
    lines: int = 0
    chained: bool = False  # the first line carries its prev: the recorder chained it
    first_prev: str | None = None
    broken: tuple[int, str] | None = None  # the first line that does not chain, and why
    pinned: dict[int, str] = field(default_factory=dict)  # line -> its digest, for the pins


def read_journal_facts(path: Any, pins: Iterable[int] = ()) -> JournalFacts:
    """Stream the journal once; lines that cannot be read are kept as (line, why); the chain
    is followed, and the digests of the ``pins``' lines kept."""
    facts = JournalFacts()
    wanted, previous = set(pins), None
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                facts.lines = number
                digest = line_digest(raw)
                if number in wanted:
                    facts.pinned[number] = digest
                why = _unreadable(raw)
                event = None if why else _decode(raw)
                _chain(facts, number, event, previous)
                previous = digest
                if event is None:
                    facts.unreadable.append((number, why or "not a journal event (one JSON "
                                             "object with its 'event' per line)"))
                    continue
                _take(facts, Event(number, event))
    except OSError as exc:
        facts.unreadable.append((0, f"cannot be read: {exc.strerror or exc}"))
    return facts


def _chain(facts: JournalFacts, number: int, event: dict[str, Any] | None,
           previous: str | None) -> None:
    """Follow the chain: a line's prev is the digest of the line before it."""
    prev = event.get("prev") if event is not None else None
    if number == 1:
        facts.chained = isinstance(prev, str)
        facts.first_prev = prev if isinstance(prev, str) else None
        return
    if facts.broken is not None or not facts.chained:
        return
    if prev != previous:
        facts.broken = (number, "it carries no prev" if prev is None else
                        f"its prev {str(prev)[:16]}… is not the digest of line {number - 1} "
                        f"({str(previous)[:16]}…)")


def _unreadable(raw: bytes) -> str | None:
    if len(raw) > _MAX_LINE:
        return f"is {len(raw)} bytes, over the {_MAX_LINE}-byte limit of a journal line"
    if not raw.endswith(b"\n"):
        return "is torn (no newline: an interrupted write)"
    return None


def _decode(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None


def _take(facts: JournalFacts, event: Event) -> None:
    kind, f = event.facts["event"], event.facts
    run = f.get("run")
    if is_played(f) and facts.played is None:
        facts.played = event
    if kind == "plan" and f.get("rehearsal") is True:
        facts.rehearsal = event
    elif kind == "run-start" and isinstance(run, str):
        facts.started.setdefault(run, event)
    elif kind in _OUTCOMES and isinstance(run, str):
        facts.outcome[run] = event
    elif kind == "metrics" and isinstance(run, str) and isinstance(f.get("values"), dict):
        for name, value in f["values"].items():
            facts.metrics[(run, name)] = (event.line, value)
    elif kind == "predictions" and isinstance(run, str):
        facts.predictions[run] = event
    elif kind == "checkpoint" and isinstance(f.get("path"), str) and isinstance(run, str):
        facts.saves[f["path"]] = event
        if isinstance(f.get("sha256"), str):
            facts.by_content.setdefault(f["sha256"], []).append(event)
    elif kind == "resumed-from" and isinstance(run, str):
        facts.resumed[run] = event
    elif kind == "step" and isinstance(f.get("step"), str) and is_number(f.get("hours")):
        _, before = facts.hours.get(f["step"], (0, Decimal(0)))
        facts.hours[f["step"]] = (event.line, before + Decimal(str(f["hours"])))
    elif kind == "decide" and isinstance(f.get("id"), str):
        facts.decisions.append(event)
        for dropped in f.get("drops") or ():
            if isinstance(dropped, str):
                facts.outcome[dropped] = Event(event.line, {"event": "dropped"})
    elif kind in ("base", "training-base") and isinstance(f.get("folder"), str):
        facts.bases.append(event)
    elif kind in ("close", "reopen"):
        facts.closure = event


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def at(line: int) -> str:
    return f"{JOURNAL_FILE}:{line}"
