"""The campaign's journal as the plan gate reads it: the measured hours of finished steps.

The journal is the recorder's (:mod:`pytest_itera.core.journal`, ``itera-journal.jsonl``).
:func:`read_journal` reads it without touching it (the recorder cuts a torn tail off when it
continues; the gate only reports it): a finished step is
``{"event": "step", "step": "<step id>", "hours": <measured hours>}``; other events are
skipped. plan-journal judges its lines, plan-forecast and the summary use its hours.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from pytest_itera.checks.context import Context
from pytest_itera.checks.plan.gate import journal_path
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.schedule import as_hours
from pytest_itera.core.text import is_blank

MAX_JOURNAL_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Journal:
    """What the journal says about finished steps, from its complete lines only."""

    hours: dict[str, Decimal] = field(default_factory=dict)  # step id -> measured hours
    lines: int = 0  # complete lines read
    torn: int | None = None  # the line number of a torn last line (not used)
    unreadable: tuple[tuple[int, str], ...] = ()  # (line number, why) of lines not used
    steps_at: dict[str, int] = field(default_factory=dict)  # step id -> its last line


def read_journal(path: Path) -> Journal | str:
    """Read the journal's complete lines (or say why it cannot be read).

    A last line without its newline is torn (a power cut in the middle of a write): it is
    reported and not used, even if it happens to parse.
    """
    if path.is_symlink() or not path.is_file():
        return f"{path.name} is not a regular file"
    try:
        size = path.stat().st_size
        if size > MAX_JOURNAL_BYTES:
            return f"{path.name} is {size} bytes, over the {MAX_JOURNAL_BYTES}-byte limit"
        data = path.read_bytes()
    except OSError as exc:
        return f"{path.name} cannot be read: {exc.strerror or exc}"
    *complete, last = data.split(b"\n")
    hours: dict[str, Decimal] = {}
    steps_at: dict[str, int] = {}
    unreadable: list[tuple[int, str]] = []
    for number, raw in enumerate(complete, 1):
        if not raw.strip():
            continue
        entry = _entry(raw)
        if isinstance(entry, str):
            unreadable.append((number, entry))
        elif entry is not None:
            step, measured = entry
            hours[step] = hours.get(step, Decimal(0)) + measured
            steps_at[step] = number
    torn = len(complete) + 1 if last.strip() else None
    return Journal(hours, len(complete), torn, tuple(unreadable), steps_at)


def _entry(raw: bytes) -> tuple[str, Decimal] | str | None:
    """(step, hours) of a finished step's line, None for another event, or why not usable."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("event") != "step" or "hours" not in data:
        return None  # another event, or a step that started and has not ended
    step, hours = data.get("step"), data.get("hours")
    if not isinstance(step, str) or is_blank(step):
        return "a step line without its step id"
    if not isinstance(hours, int | float) or isinstance(hours, bool):
        return f"step {step!r}: hours {hours!r} is not a number"
    try:
        return step, as_hours(hours)
    except (TypeError, ValueError) as exc:
        return f"step {step!r}: {exc}"


def journal_beside(plan_file: Path) -> Path | None:
    """The journal of the campaign a ``plan.json`` opens, when its folder has one."""
    if plan_file.name != PLAN_FILE:
        return None  # a plan file of another name is a draft, not a campaign's
    if os.path.lexists(plan_file.parent / MANIFEST_FILE):
        return None  # a closed campaign: its manifest has the actual schedule
    journal = plan_file.parent / JOURNAL_FILE
    return journal if os.path.lexists(journal) else None


def journal_of(ctx: Context) -> Journal | str | None:
    """The campaign's journal, read once; None when there is none."""
    path = journal_path(ctx)
    if path is None:
        return None
    return ctx.memo("itera.journal", lambda: read_journal(path))


def journal_targets(ctx: Context) -> list[str]:
    """One item for the journal, only when the folder has one."""
    return [JOURNAL_FILE] if journal_path(ctx) is not None else []
