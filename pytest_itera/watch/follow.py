"""``watch`` without ``--once``: follow the journal as it grows, judge at each new event.

Polling, not inotify: one stat of the journal per interval, portable and enough for events
minutes apart. The clock and the sleep are injected (tests play them, no sleeps). It ends on
Ctrl-C and on the campaign's closure; a clock that goes backwards is said, and the last
moment judged is kept."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import TextIO

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.lot_forecast import LotForecast
from pytest_itera.watch.judged import Judged
from pytest_itera.watch.status import Folder, judge, render

__all__ = ["Follow", "follow"]

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen: the live redraw on a terminal


@dataclass(frozen=True)
class Follow:
    """How to follow: the lead, the polling interval, the output's form."""

    lead: Decimal
    interval: float = 10.0
    as_json: bool = False
    live: bool = False  # a terminal: redraw the status in place
    upload_rate: Decimal | None = None  # bytes per second: the push counted in the retrieval


def _stamp(folder: Folder) -> tuple[int, int] | None:
    try:
        stat = os.stat(folder.root / JOURNAL_FILE)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def judgements(folder: Folder, how: Follow, clock: Callable[[], datetime],
               sleep: Callable[[float], None],
               judged: Judged | None = None) -> Iterator[LotForecast]:
    """Each new judgement: at the start, then whenever the journal changes (a live display
    also on each tick); ends after the closure. ``judged`` lasts across them: a checkpoint
    is reloaded once, not at each judgement."""
    last_stamp: tuple[int, int] | str | None = "never"
    last_now: datetime | None = None
    while True:
        now = clock()
        backwards = last_now is not None and now < last_now
        now = last_now if backwards and last_now is not None else now
        stamp = _stamp(folder)
        if stamp != last_stamp or how.live or backwards:
            fc = judge(folder, now, lead=how.lead, judged=judged, upload_rate=how.upload_rate)
            if backwards:
                fc = replace(fc, notes=(*fc.notes, "the system clock went backwards; the "
                                        f"last moment judged ({now:%Y-%m-%dT%H:%M:%SZ}) is kept"))
            yield fc
            if fc.closed:
                return
            last_stamp = stamp
        last_now = now
        sleep(how.interval)


def follow(folder: Folder, how: Follow, out: TextIO, *,
           clock: Callable[[], datetime] = lambda: datetime.now(UTC),
           sleep: Callable[[float], None] | None = None, judged: Judged | None = None) -> int:
    """Print each judgement until the closure or Ctrl-C (both end cleanly: 0)."""
    import time

    try:
        for fc in judgements(folder, how, clock, sleep or time.sleep, judged):
            out.write((CLEAR if how.live else "") + render(fc, as_json=how.as_json) + "\n")
            out.flush()
    except KeyboardInterrupt:
        out.write("watch: stopped (Ctrl-C)\n")
    return 0
