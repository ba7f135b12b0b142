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

import os
import pickle
import select
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Final

from pytest_itera.files.scan import FileFacts, TempMatcher, scan_file

# Below this many small files a helper's start (~0.1 s of CPU) is not worth it.
HELPER_ABOVE: Final = 10_000
BATCH: Final = 500  # facts per message (one pickle each)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class Helper:
    """A helper process reading ``files`` (relative paths under ``root_slash``, a folder path
    ending in "/"), last first."""

    def __init__(self, root_slash: str, files: Sequence[str], patterns: tuple[str, ...],
                 *, fingerprint: bool) -> None:
        code = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
                "from pytest_itera.files.batch import serve; serve()")
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._out: IO[bytes] = self._proc.stdout
        try:
            pickle.dump((root_slash, list(files), patterns, fingerprint), self._proc.stdin)
            self._proc.stdin.close()
        except OSError:  # it died at once (no such interpreter, ...): the caller reads all
            self.close()

    @property
    def running(self) -> bool:
        return self._proc is not None

    def arrived(self) -> list[FileFacts]:
        """The facts sent since the last call, without waiting (none once it has ended)."""
        found: list[FileFacts] = []
        while self._proc is not None and select.select([self._out], [], [], 0)[0]:
            try:
                found += map(FileFacts._make, pickle.load(self._out))
            except (EOFError, OSError, pickle.UnpicklingError):
                self.close()  # done, or broken: what it did not send is the caller's to read
        return found

    def close(self) -> None:
        """Stop it (a run interrupted, or every file judged) and reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        self._out.close()
        proc.wait()


def serve() -> None:
    """The helper's side: the request on stdin, the facts in batches on stdout."""
    root_slash, files, patterns, fingerprint = pickle.load(sys.stdin.buffer)
    matcher = TempMatcher(patterns)
    out = sys.stdout.buffer
    try:
        for batch in _batches(files[::-1]):
            facts = [tuple(scan_file(root_slash + relpath, relpath, matcher,
                                     fingerprint=fingerprint, walked=True)) for relpath in batch]
            pickle.dump(facts, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
    except BrokenPipeError:  # the caller read the rest itself and closed
        os._exit(0)


def _batches(files: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(files), BATCH):
        yield files[start:start + BATCH]
