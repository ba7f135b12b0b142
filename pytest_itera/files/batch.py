"""Many small files read on the second core: a helper process scans them from the end of the
list while the caller judges them from its start (no pytest import).

A small file's read is mostly Python-level work (open, fstat, read, hash, fstat, close,
lstat: ~10 µs), which threads cannot share (the GIL); 100,000 of them cost ~1 s on one core
(issue 29). :class:`Helper` starts ``python -c`` running :func:`serve` on a list of regular
files of the campaign's walk; it runs :func:`~pytest_itera.files.scan.scan_file` on each, the
very function the caller runs, and sends the facts back in batches, in the reverse of the
list's order. The caller takes what has arrived (:meth:`Helper.arrived`) and reads any other
file itself, so the two meet somewhere in the list and nobody waits: a helper that gets no
CPU (or fails to start) only leaves all the reading to the caller, as without it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Final

from pytest_itera.files.scan import FileFacts, TempMatcher, scan_file

# Below this many small files a helper's start (~0.1 s of CPU) is not worth it.
HELPER_ABOVE: Final = 10_000
BATCH: Final = 500  # facts per message (one pickle each)
_SIZE: Final = struct.Struct("<I")  # each message's length, before it

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class Helper:
    """A helper process reading ``files`` (relative paths under ``root_slash``, a folder path
    ending in "/"), last first. A thread of this process sends the request and drains the
    pipe as the helper writes (a pipe holds ~64 KiB: unread, the helper would stop there);
    the facts are unpickled when asked for (:meth:`arrived`)."""

    def __init__(self, patterns: tuple[str, ...], *, fingerprint: bool) -> None:
        """Start the helper (its interpreter starts while the caller walks the folder)."""
        code = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
                "from pytest_itera.files.batch import serve; serve()")
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)
        self._patterns, self._fingerprint = patterns, fingerprint
        self._received: deque[bytes] = deque()  # what the drain thread read, not parsed yet
        self._unparsed = b""
        self._ended = threading.Event()
        self.asked = False

    def read(self, root_slash: str, files: Sequence[str]) -> None:
        """Hand it the files: it reads them from the last."""
        assert self._proc is not None
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None
        assert stdout is not None
        self.asked = True
        request = pickle.dumps((root_slash, list(files), self._patterns, self._fingerprint))
        # Written by the thread: the pipe takes the request only as fast as the helper, which
        # may still be starting, reads it (~2 MB for 100,000 paths).
        threading.Thread(target=self._talk, args=(request, stdin, stdout),
                         name="itera-helper-pipe", daemon=True).start()

    @property
    def running(self) -> bool:
        return self._proc is not None

    def _talk(self, request: bytes, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Send the request, then drain the answers to their end (a helper that died or was
        stopped: an early end), and close both pipes."""
        try:
            stdin.write(request)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()
        fd = stdout.fileno()
        try:
            while data := os.read(fd, 1 << 20):  # releases the GIL while it waits
                self._received.append(data)  # atomic: no lock
        except OSError:
            pass
        stdout.close()
        self._ended.set()

    def arrived(self) -> list[FileFacts]:
        """The facts received since the last call, without waiting; once it has sent all it
        will, it is reaped (:attr:`running` turns False)."""
        if self._proc is None or not self.asked:
            return []
        ended = self._ended.is_set()  # before the take: nothing is appended after it
        received, taken = self._received, [self._unparsed]
        while received:
            taken.append(received.popleft())
        data = b"".join(taken)
        found: list[FileFacts] = []
        at = 0
        while at + _SIZE.size <= len(data):
            (length,) = _SIZE.unpack_from(data, at)
            if at + _SIZE.size + length > len(data):
                break
            start = at + _SIZE.size
            found += map(FileFacts._make, pickle.loads(data[start:start + length]))
            at = start + length
        self._unparsed = data[at:]
        if ended:
            self.close()  # all sent (a part of a message left over: it broke off)
        return found

    def close(self) -> None:
        """Stop it (a run interrupted, or every file judged) and reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None and not self.asked:
                pipe.close()  # else the pipe thread closes stdin, and reads stdout to its end


def serve() -> None:
    """The helper's side: the request on stdin, the facts in batches on stdout, each a
    pickled list of plain tuples after its length."""
    root_slash, files, patterns, fingerprint = pickle.load(sys.stdin.buffer)
    matcher = TempMatcher(patterns)
    out = sys.stdout.buffer
    try:
        for batch in _batches(files[::-1]):
            facts = [tuple(scan_file(root_slash + relpath, relpath, matcher,
                                     fingerprint=fingerprint, walked=True)) for relpath in batch]
            message = pickle.dumps(facts, protocol=pickle.HIGHEST_PROTOCOL)
            out.write(_SIZE.pack(len(message)) + message)
            out.flush()
    except BrokenPipeError:  # the caller read the rest itself and closed
        os._exit(0)


def _batches(files: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(files), BATCH):
        yield files[start:start + BATCH]
