"""Reading a line-oriented evidence file (JSON Lines, CSV) safely: one home for the measurements
and predictions readers. A file is opened without following a link and without blocking on a
FIFO, and read in fixed-size blocks split into bounded lines, so no line, however long, is
ever held."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

__all__ = ["BLOCK", "READ_FLAGS", "NotRegular", "Readable", "lines", "open_regular"]

READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
BLOCK = 1 << 20


class Readable(Protocol):
    """What :func:`lines` reads: a file, or a decompressing stream over one."""

    def read(self, size: int, /) -> bytes: ...


class NotRegular(Exception):
    """The path is not a regular file (a folder, a FIFO, a device)."""


def open_regular(path: Path) -> tuple[BinaryIO, int]:
    """The open file and its size; NotRegular for anything but a regular file, OSError for a
    link (O_NOFOLLOW) or a file that cannot be opened."""
    fd = os.open(path, READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular("is not a regular file")
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def lines(handle: Readable, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; None for a line over ``limit``, which is skipped unread.

    Reads fixed-size blocks and splits them itself: iterating a file object would hold a
    whole line, however long, and readline() is slower.
    """
    number, tail, skipping = 0, b"", False
    while block := handle.read(BLOCK):
        parts = (tail + block).split(b"\n")
        tail = parts.pop()
        for part in parts:
            number += 1
            if skipping or len(part) > limit:
                skipping = False  # this was the end of an over-long line
                yield number, None
            else:
                yield number, part
        if len(tail) > limit:
            tail, skipping = b"", True
    if skipping or tail:
        yield number + 1, None if skipping else tail
