"""Client of the reload server: fresh-process checkpoint reloads, one verdict per checkpoint.

Imported by the pytest process, so it never imports torch.  The server (``server.py``, run
under the training interpreter) imports torch once and forks a child per checkpoint; this
module starts it lazily with a minimal environment, sends one request per checkpoint and
turns each reply into a :class:`ReloadResult`.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any

__all__ = ["MIN_TORCH", "PARTS", "ReloadResult", "Reloader"]

PARTS = ("model", "optimizer", "progress", "scheduler", "scaler", "rng", "data")
MIN_TORCH = (2, 10)
SERVER = Path(__file__).with_name("server.py")
_START_TIMEOUT = 120.0  # import torch on a cold, busy machine
_REPLY_MARGIN = 30.0  # the server itself enforces the per-file timeout; this catches a dead server
_ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class ReloadResult:
    """The verdict on one checkpoint (a file or a folder)."""

    path: str
    ok: bool
    format: str | None
    cause: str | None
    # Defaults let a pytest_itera_reload hook return just path/ok/format/cause (hookspecs sample).
    parts: tuple[str, ...] = ()
    missing_reasons: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    nonfinite: tuple[str, ...] = ()
    tensors: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    peak_rss: int | None = field(default=None, compare=False)


class _ServerError(Exception):
    """The server could not be started or stopped answering."""


def _minimal_env(home: str) -> dict[str, str]:
    """An allowlist, never the caller's tokens or cloud keys."""
    env = {k: os.environ[k] for k in _ENV_PASSTHROUGH if k in os.environ}
    env.update({
        "HOME": home, "TMPDIR": home, "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        # One thread: forked children never inherit a live OpenMP pool, and xdist workers
        # do not oversubscribe the cores.
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        # Reloads run on CPU and must not touch the GPUs of a machine still training.
        "CUDA_VISIBLE_DEVICES": "",
    })
    return env


def _torch_too_old(version: str) -> str | None:
    try:
        major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    except ValueError:
        return f"cannot parse the torch version {version!r}"
    if (major, minor) >= MIN_TORCH:
        return None
    return (f"torch {version} is older than 2.10: weights_only=True can be bypassed there "
            "(CVE-2025-32434, CVE-2026-24747); upgrade torch in the training interpreter")


class _Server:
    """One running server process and its line protocol."""

    def __init__(self, python: str, home: str) -> None:
        # Closed in stop(): it lives as long as the server process.
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            [python, "-I", "-B", "-u", str(SERVER)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, cwd=home, env=_minimal_env(home))
        self.buffer = b""
        try:
            self.hello = self.read(_START_TIMEOUT)
        except _ServerError:
            self.stop()
            raise

    def read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _ServerError(f"no answer within {timeout:g} s")
            data = os.read(fd, 1 << 16)
            if not data:
                raise _ServerError(self.died())
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError:
            raise _ServerError(f"printed {line[:80]!r} instead of the protocol") from None
        return reply

    def died(self) -> str:
        try:
            code: int | str = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = "unknown"
        self.stderr.seek(0)
        tail = self.stderr.read()[-2000:].decode(errors="replace").strip().splitlines()
        last = tail[-1] if tail else "no output"
        return f"exited with status {code} ({last})"

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise _ServerError(f"stopped ({exc})") from exc
        return self.read(timeout + _REPLY_MARGIN)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # EOF ends the server's loop
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            if stream is not None:
                stream.close()


def _shutdown(holder: list[_Server], home: str) -> None:
    _stop_all(holder)
    shutil.rmtree(home, ignore_errors=True)


class Reloader:
    """Reloads checkpoints in a fresh interpreter (``python``, default the current one)."""

    def __init__(self, python: str | None = None, *, timeout: float = 120.0,
                 memory_limit: int | None = 8 << 30) -> None:
        self.python = python or sys.executable
        self.timeout = timeout
        self.memory_limit = memory_limit
        self._home = tempfile.mkdtemp(prefix="itera-reload-")
        self._holder: list[_Server] = []
        self._lock = threading.Lock()
        self._unusable: str | None = None
        self._checked = False
        self._next_id = 0
        # No orphan server, even when the caller forgets close().
        self._finalizer = weakref.finalize(self, _shutdown, self._holder, self._home)

    def check_interpreter(self) -> str | None:
        """None when the interpreter can reload, else a one-line reason."""
        with self._lock:
            return self._check_locked()

    def _check_locked(self) -> str | None:
        if self._checked:
            return self._unusable
        self._checked = True
        self._unusable = self._probe()
        return self._unusable

    def _probe(self) -> str | None:
        where = self.python
        if not (os.path.isfile(where) and os.access(where, os.X_OK)):
            return f"--itera-python {where}: not an executable file"
        try:
            server = self._start()
        except (_ServerError, OSError) as exc:
            return f"--itera-python {where}: not a usable Python with torch (server {exc})"
        hello = server.hello
        if hello.get("hello") != 1 or not isinstance(hello.get("torch"), str):
            return f"--itera-python {where}: not a Python interpreter with torch"
        old = _torch_too_old(hello["torch"])
        return None if old is None else f"--itera-python {where}: {old}"

    def _start(self) -> _Server:
        if self._holder and self._holder[0].proc.poll() is None:
            return self._holder[0]
        _stop_all(self._holder)
        server = _Server(self.python, self._home)
        self._holder.append(server)
        return server

    def reload(self, path: Path, display: str,
               claimed_format: str | None = None) -> ReloadResult:
        """Load ``path`` (file or folder) in the fresh interpreter and judge it."""
        request = {"path": str(Path(path).resolve())}
        return self._run(request, display, claimed_format)

    def _run(self, request: dict[str, Any], display: str,
             claimed_format: str | None) -> ReloadResult:
        started = time.monotonic()
        with self._lock:
            unusable = self._check_locked()
            if unusable is not None:
                return _failure(display, unusable, time.monotonic() - started)
            reply = self._ask(request)
        if "error" in reply:
            return _failure(display, reply["error"], time.monotonic() - started)
        return _result(display, reply, claimed_format)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        request = {**request, "id": self._next_id, "timeout": self.timeout,
                   "memory_limit": self.memory_limit}
        try:
            reply = self._start().ask(request, self.timeout)
        except (_ServerError, OSError) as exc:
            _stop_all(self._holder)  # the next request starts a fresh server
            return {"error": f"the reload server failed ({exc})"}
        if reply.get("id") != request["id"]:
            _stop_all(self._holder)
            return {"error": "the reload server answered out of turn"}
        return reply

    def close(self) -> None:
        with self._lock:
            self._finalizer()

    def __enter__(self) -> Reloader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stop_all(holder: list[_Server]) -> None:
    for server in holder:
        server.stop()
    holder.clear()


def _failure(display: str, reason: str, seconds: float) -> ReloadResult:
    return ReloadResult(path=display, ok=False, format=None, cause=f"{display}: {reason}",
                        parts=(), missing_reasons=MappingProxyType({}), nonfinite=(),
                        tensors=0, seconds=seconds)


def _result(display: str, reply: dict[str, Any], claimed: str | None) -> ReloadResult:
    ok = bool(reply["ok"])
    fmt = reply.get("format")
    cause: str | None = None
    if not ok:
        where = f"{display}/{reply['file']}" if reply.get("file") else display
        cause = f"{where}: {reply['reason']}"
    elif claimed is not None and fmt != claimed:
        ok = False
        cause = (f"{display}: the manifest declares format {claimed!r} but the content is "
                 f"{fmt!r}")
    return ReloadResult(
        path=display, ok=ok, format=fmt, cause=cause,
        parts=tuple(p for p in PARTS if p in reply.get("parts", ())),
        missing_reasons=MappingProxyType(dict(reply.get("missing_reasons", {}))),
        nonfinite=tuple(reply.get("nonfinite", ())), tensors=int(reply.get("tensors", 0)),
        seconds=float(reply.get("seconds", 0.0)), notes=tuple(reply.get("notes", ())),
        peak_rss=reply.get("peak_rss"))
