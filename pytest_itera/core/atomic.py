"""Atomic, durable writes: a reader sees the old file or the whole new one (no pytest import).

The one home of "write beside, fsync, rename, fsync the folder" for everything the package
writes: the recorder's documents and checkpoints, closure reports, seals.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries: a rename (or a new file) is durable only once they are."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def umask() -> int:
    """The process's umask (read by setting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_handle(path: Path) -> Iterator[BinaryIO]:
    """A binary handle on a temp file beside ``path``, moved over it only on success.

    The file gets the permissions of a file created the ordinary way (0666 less the umask),
    not mkstemp's 0600: campaigns and reports are for sharing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"atomic_write_bytes takes bytes, not {type(data).__name__}")
    with atomic_handle(path) as handle:
        handle.write(data)
