"""Client of the reload server: fresh-process checkpoint reloads, one verdict per checkpoint.

Imported by the pytest process, so it never imports torch.  The server (the ``server/``
folder, run by path under the training interpreter) imports torch once and forks a child per
checkpoint; this module starts it with a minimal environment (early with
:meth:`Reloader.start`, else at the first reload), sends one request per checkpoint (or many
at once with :meth:`Reloader.prefetch`, which the server runs ``jobs`` at a time) and turns
each reply into a :class:`ReloadResult`.  ``probe.py`` tells in milliseconds whether an
interpreter can serve; ``formats.py`` is the table of which resume part each format keeps
where, shared with the server.
"""

from __future__ import annotations

import contextlib
import importlib.util
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
from typing import IO, Any, Literal

from pytest_itera.reload.formats import DEFAULT_TIMEOUT, FAILURES, PARTS
from pytest_itera.reload.probe import MIN_TORCH, too_old

__all__ = ["MIN_TORCH", "PARTS", "NonFiniteBuffer", "OptimizerFit", "OptimizerProblem",
           "OptimizerRates", "PartFault", "Rate", "ReloadResult", "Reloader", "Repredicted",
           "Sandbox", "SchedulerRates"]

SERVER = Path(__file__).with_name("server") / "__main__.py"  # a folder, run by path
PROBE = Path(__file__).with_name("probe.py")
_START_TIMEOUT = 120.0  # import torch on a cold, busy machine
_REPLY_MARGIN = 30.0  # the server itself enforces the per-file timeout; this catches a dead server
_ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH")


FaultKind = Literal["empty", "not_state"]


@dataclass(frozen=True)
class PartFault:
    """A resume part whose key is there but holds no restorable state.

    ``kind`` is ``"empty"`` (``{}``, ``[]``, ``None``, ``""``: present but empty) or
    ``"not_state"`` (e.g. ``{"seed": 7}`` under ``rng``: a seed is not a generator state);
    ``key`` is where it was found (``"optimizer"``, ``"train_state.step"``,
    ``"rng_state.pth"``); ``detail`` says what it holds, in words.
    """

    part: str
    kind: FaultKind
    key: str
    detail: str


@dataclass(frozen=True)
class OptimizerProblem:
    """Why an optimizer state does not fit the model beside it (``"mismatch"``), or why
    the fit cannot be proven (``"unproven"``); ``key`` is where (``"optimizer.state.0"``)."""

    kind: Literal["mismatch", "unproven"]
    key: str
    detail: str


@dataclass(frozen=True)
class NonFiniteBuffer:
    """An optimizer buffer holding NaN or inf values (``optimizer.state.3.exp_avg``)."""

    name: str
    nan: int
    inf: int


@dataclass(frozen=True)
class OptimizerFit:
    """The optimizer states of a checkpoint judged against its model, by content."""

    params: int  # parameters the param groups list, all optimizers together
    problems: tuple[OptimizerProblem, ...] = ()
    nonfinite: tuple[NonFiniteBuffer, ...] = ()  # the first 20
    nonfinite_buffers: int = 0  # all of them
    nan_values: int = 0
    inf_values: int = 0


@dataclass(frozen=True)
class Rate:
    """A learning rate as the checkpoint stores it: a Python number (``dtype`` None) or a
    one-element floating tensor (``dtype`` ``"float32"``, ...) whose value is ``value``."""

    value: float
    dtype: str | None = None


@dataclass(frozen=True)
class OptimizerRates:
    """The learning rates of one optimizer state, per parameter group, in group order:
    ``lr`` and ``initial_lr`` (None where a group holds no number there, e.g. no scheduler
    ever set its ``initial_lr``). ``key`` is where (``"optimizer"``, ``"optimizer.pt"``,
    ``"optimizer_states.0"``)."""

    key: str
    lr: tuple[Rate | None, ...] = ()
    initial_lr: tuple[Rate | None, ...] = ()


@dataclass(frozen=True)
class SchedulerRates:
    """The learning rates one LR scheduler state stores: its ``_last_lr`` and ``base_lrs``,
    one per parameter group (None: the state has no such list, e.g. ReduceLROnPlateau's
    ``base_lrs``, DeepSpeed's own schedules). ``key`` is where (``"scheduler"``,
    ``"scheduler.pt"``, ``"lr_schedulers.0"``)."""

    key: str
    last_lr: tuple[Rate | None, ...] | None = None
    base_lrs: tuple[Rate | None, ...] | None = None


@dataclass(frozen=True)
class Sandbox:
    """The sandbox of the process that loaded a checkpoint (see ``sandbox.py``).

    ``active`` names the layers in force (``no_new_privs``, ``user_namespace``,
    ``network_namespace``, ``read_only_mounts``, ``seccomp``, ``rlimit_fsize``,
    ``rlimit_nproc``, ``rlimit_cpu``); ``missing`` maps each other layer to why it is not.
    """

    active: tuple[str, ...] = ()
    missing: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


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
    nonfinite: tuple[str, ...] = ()  # names of non-finite model tensors (at most 20)
    tensors: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    peak_rss: int | None = field(default=None, compare=False)
    # Parts present under their key but not restorable (typed, never parsed from English).
    part_faults: tuple[PartFault, ...] = ()
    nonfinite_tensors: int = 0  # all of them (``nonfinite`` names the first 20); 0: unknown
    nan_values: int = 0
    inf_values: int = 0
    # The loader child's sandbox (None: no child ran, e.g. the interpreter was refused).
    sandbox: Sandbox | None = field(default=None, compare=False)
    # Pickled globals outside the weights_only allowlist ("os.system"): the file holds code.
    # Typed so that no fix line ever suggests loading or re-saving such a file.
    holds_code: tuple[str, ...] = ()
    # Whose checkpoint it is, by content: the training step its progress stores (None: none,
    # or two that disagree), each model tensor's shape by its state-dict name, a digest of
    # the model tensors (names, shapes, dtypes, checksums: equal for the same tensors in any
    # format), and the optimizer states judged against the model (None: no optimizer).
    step: int | None = None
    # Why it did not load, as a kind (formats.FAILURES), None when it loaded: the checks pick
    # their fix line from it, never from the words of ``cause``.
    failure: str | None = None
    stored_steps: tuple[tuple[str, int], ...] = ()  # (key, step) of each step found
    model_shapes: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({}), compare=False)
    model_digest: str | None = None
    optimizer: OptimizerFit | None = None
    # The learning rates each optimizer state and each LR scheduler state stores, as stored
    # (whether they agree is resume-complete's rule).
    optimizer_rates: tuple[OptimizerRates, ...] = ()
    scheduler_rates: tuple[SchedulerRates, ...] = ()

    def fault(self, part: str) -> PartFault | None:
        """Why ``part`` is not counted although its key is there, or None."""
        return next((f for f in self.part_faults if f.part == part), None)


@dataclass(frozen=True)
class Repredicted:
    """A re-prediction with a run's delivered weights (:meth:`Reloader.repredict`): the
    predictions in the rows' order, or why there are none (``cause``)."""

    ok: bool
    predictions: tuple[Any, ...] = ()
    cause: str | None = None
    holds_code: tuple[str, ...] = ()
    sandbox: Sandbox | None = field(default=None, compare=False)


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
        # Transparent huge pages for the server's malloc heap (torch's ~150 MiB): a fork
        # then copies a few hundred page-table entries instead of ~40,000, and a child's exit
        # frees as few. About 3 ms less per checkpoint; ignored where glibc is not used.
        "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
    })
    seccomp = _seccomp_module()
    if seccomp is not None:
        env[_SECCOMP_MODULE_ENV] = seccomp
    return env


_SECCOMP_MODULE_ENV = "ITERA_SECCOMP_MODULE"  # sandbox.SECCOMP_MODULE_ENV


def _seccomp_module() -> str | None:
    """This environment's pyseccomp (a single pure-ctypes module), found without importing
    it: the server's sandbox loads it by file when the reload interpreter has none."""
    try:
        spec = importlib.util.find_spec("pyseccomp")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None


class _Server:
    """One running server (or probe) process and its line protocol.

    The first line it prints is the probe's (``probe.hello``: versions read without importing
    torch); the server then imports torch and prints its ``hello``; then one reply per
    request, each with the request's id, in the order the server finishes them. The probe
    script prints the first line alone.
    """

    def __init__(self, python: str, home: str, script: Path = SERVER, jobs: int = 1) -> None:
        # Closed in stop(): it lives as long as the server process.
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        env = _minimal_env(home)
        if threading.current_thread() is threading.main_thread():
            # The server then dies with this process (see server/lifeline.py).
            env["ITERA_CLIENT_PID"] = str(os.getpid())
        # The bytecode cache this process reads, if it has one outside the sources (-I
        # ignores PYTHONPYCACHEPREFIX): the server's modules are not compiled at each start.
        cache = ["-X", f"pycache_prefix={sys.pycache_prefix}"] if sys.pycache_prefix else []
        self.proc = subprocess.Popen(
            [python, "-I", "-B", *cache, "-u", str(script), str(jobs)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, cwd=home, env=env)
        self.buffer = b""
        self._first: dict[str, Any] | None = None
        self._hello: dict[str, Any] | None = None
        self._start_lock = threading.Lock()  # the probe's thread and the main one both read
        self.replies: dict[int, dict[str, Any]] = {}

    def first(self) -> dict[str, Any]:
        """The first line: the probe's facts, for the server before it imports torch."""
        with self._start_lock:
            if self._first is None:
                self._first = self.read(_START_TIMEOUT)
            return self._first

    def hello(self) -> dict[str, Any]:
        """The server's hello, once torch is imported (after :meth:`first`)."""
        self.first()
        with self._start_lock:
            if self._hello is None:
                self._hello = self.read(_START_TIMEOUT)
            return self._hello

    def has_reply(self, request_id: int) -> bool:
        """Whether the reply to ``request_id`` is in, taking what the server has written
        without waiting (the lines before it filed as :meth:`first`, :meth:`hello` and
        replies would be). A server that died or is being read by another thread: False,
        and :meth:`wait` then says what happened."""
        if not self._start_lock.acquire(blocking=False):
            return False
        try:
            assert self.proc.stdout is not None
            fd = self.proc.stdout.fileno()
            while select.select([fd], [], [], 0)[0]:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                self.buffer += data
            while b"\n" in self.buffer:
                self._file(self._line())
        except (_ServerError, OSError):
            return False
        finally:
            self._start_lock.release()
        return request_id in self.replies

    def _file(self, line: dict[str, Any]) -> None:
        """A line read in its place: the probe's, the hello, else a reply by its id."""
        if self._first is None:
            self._first = line
        elif self._hello is None:
            self._hello = line
        elif isinstance(line.get("id"), int):
            self.replies[line["id"]] = line

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
        return self._line()

    def _line(self) -> dict[str, Any]:
        """The buffer's first line, as the protocol's JSON object."""
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError:
            raise _ServerError(f"printed {line[:80]!r} instead of the protocol") from None
        if not isinstance(reply, dict):
            raise _ServerError(f"printed {line[:80]!r} instead of the protocol")
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

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise _ServerError(f"stopped ({exc})") from exc

    def wait(self, request_id: int, timeout: float) -> dict[str, Any]:
        """The reply to one request; other replies read on the way are kept.  The server
        ends every child by its own deadline, so a silence longer than ``timeout`` means the
        server itself is stuck."""
        self.hello()
        while request_id not in self.replies:
            self._file(self.read(timeout))
        return self.replies.pop(request_id)

    def stop(self) -> None:
        if self.proc.poll() is None and self._hello is None and b"\n" not in self.buffer:
            # Still importing torch (nothing forked, nothing to finish): do not wait for it.
            self.proc.kill()
            self.proc.wait()
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


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _judge_hello(hello: dict[str, Any], where: str) -> str | None:
    """None when the interpreter's hello shows a usable torch, else the reason."""
    if hello.get("hello") != 1 or not isinstance(hello.get("torch"), str):
        return f"--itera-python {where}: not a Python interpreter with torch"
    old = hello.get("refused") or too_old(hello["torch"])
    return None if old is None else f"--itera-python {where}: {old}"


def _shutdown(holder: list[_Server], home: str) -> None:
    _stop_all(holder)
    shutil.rmtree(home, ignore_errors=True)


class Reloader:
    """Reloads checkpoints in a fresh interpreter (``python``, default the current one).

    ``jobs`` children load at a time when many checkpoints are handed over at once
    (:meth:`prefetch`); each checkpoint still loads in a process of its own.
    """

    def __init__(self, python: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 memory_limit: int | None = 8 << 30, jobs: int = 1) -> None:
        self.python = python or sys.executable
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.jobs = max(1, jobs)
        self._home = tempfile.mkdtemp(prefix="itera-reload-")
        self._holder: list[_Server] = []
        self._lock = threading.Lock()
        self._unusable: str | None = None
        self._checked = False
        self._next_id = 0
        self._ahead: dict[str, int] = {}  # resolved path -> id of its prefetched request
        # No orphan server, even when the caller forgets close().
        self._finalizer = weakref.finalize(self, _shutdown, self._holder, self._home)

    def quick_check(self) -> str | None:
        """What :meth:`check_interpreter` would say, in milliseconds: ``probe.py`` reads the
        interpreter's torch version without importing torch.  None when it looks usable."""
        return self.probe()[0]

    def probe(self) -> tuple[str | None, dict[str, Any] | None]:
        """:meth:`quick_check`'s verdict and the probe's hello (the interpreter's Python,
        torch and optional packages' versions; None when it gave none), from one process."""
        where = self.python
        if not _executable(where):
            return f"--itera-python {where}: not an executable file", None
        with self._lock:
            running = self._holder[0] if self._holder else None
        probe = None
        try:
            if running is not None:  # its first line is the probe's: no second process
                hello = running.first()
            else:
                probe = _Server(where, self._home, PROBE)
                hello = probe.first()
            return _judge_hello(hello, where), hello
        except (_ServerError, OSError) as exc:
            return f"--itera-python {where}: not a usable Python with torch (probe {exc})", None
        finally:
            if probe is not None:
                probe.stop()

    def start(self) -> None:
        """Start the server now, without waiting for it: torch imports in the background."""
        with self._lock:
            if not self._checked and _executable(self.python):
                with contextlib.suppress(_ServerError, OSError):
                    self._start()

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
        if not _executable(where):
            return f"--itera-python {where}: not an executable file"
        try:
            hello = self._start().hello()
        except (_ServerError, OSError) as exc:
            _stop_all(self._holder)
            return f"--itera-python {where}: not a usable Python with torch (server {exc})"
        return _judge_hello(hello, where)

    def _start(self) -> _Server:
        if self._holder and self._holder[0].proc.poll() is None:
            return self._holder[0]
        _stop_all(self._holder)
        self._ahead.clear()  # requests sent to a server that is gone
        server = _Server(self.python, self._home, jobs=self.jobs)
        self._holder.append(server)
        return server

    def prefetch(self, paths: list[Path]) -> None:
        """Hand these checkpoints to the server now; it loads them ``jobs`` at a time while
        the caller goes on, and :meth:`reload` then collects their verdicts.  Paths already
        handed over are skipped.  It does not wait for the server's hello: a server whose
        torch is too old answers each request with a refusal and loads nothing."""
        with self._lock:
            if self._checked and self._unusable is not None:
                return
            for path in paths:
                resolved = str(Path(path).resolve())
                if resolved in self._ahead:
                    continue
                request = self._request({"path": resolved})
                try:
                    self._start().send(request)
                except (_ServerError, OSError):
                    _stop_all(self._holder)
                    self._ahead.clear()
                    return  # each reload() then asks again and reports what went wrong
                self._ahead[resolved] = request["id"]

    def ready(self, path: Path) -> bool:
        """Whether :meth:`reload` of ``path`` would answer without waiting: its verdict is
        in, or it was not handed over ahead (asking is what starts it)."""
        with self._lock:
            request_id = self._ahead.get(str(Path(path).resolve()))
            server = self._holder[0] if self._holder else None
        return request_id is None or server is None or server.has_reply(request_id)

    def reload(self, path: Path, display: str) -> ReloadResult:
        """Load ``path`` (file or folder) in the fresh interpreter: what it holds, and why it
        does not load. Whether that is what the manifest claims is the checks' judgement."""
        request = {"path": str(Path(path).resolve())}
        return self._run(request, display)

    def repredict(self, path: Path, display: str, recipe: Mapping[str, Any]) -> Repredicted:
        """Load ``path``'s model state into the model the judge's recipe builds and predict
        its rows, in a sandboxed child of the server (``server/repredict.py``). ``recipe``:
        the ``module`` file, the ``build`` and ``predict`` names in it, the ``config`` given
        to build, the ``rows`` to predict, and the model state's ``key`` (None: found)."""
        reply = self._exchange({"path": str(Path(path).resolve()), "repredict": dict(recipe)})
        if isinstance(reply, tuple):
            return Repredicted(ok=False, cause=f"{display}: {reply[0]}")
        found = reply.get("predictions")
        if not reply.get("ok") or not isinstance(found, list):
            return Repredicted(ok=False, cause=f"{display}: {reply.get('reason', 'no reply')}",
                               holds_code=tuple(str(g) for g in reply.get("holds_code") or ()))
        return Repredicted(ok=True, predictions=tuple(found), sandbox=_sandbox(
            reply.get("sandbox")))

    def _run(self, request: dict[str, Any], display: str) -> ReloadResult:
        started = time.monotonic()
        reply = self._exchange(request)
        if isinstance(reply, tuple):
            return _failure(display, reply[0], time.monotonic() - started, reply[1])
        return _result(display, reply)

    def _exchange(self, request: dict[str, Any]) -> dict[str, Any] | tuple[str, str]:
        """The server's reply to ``request``, or why there is none and whose fault that is
        (``"interpreter"``: it cannot reload; ``"server"``: it failed answering)."""
        with self._lock:
            unusable = self._check_locked()
            if unusable is not None:
                return unusable, "interpreter"
            reply = self._ask(request)
        if "error" in reply:
            return str(reply["error"]), "server"
        return reply

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        return {**request, "id": self._next_id, "timeout": self.timeout,
                "memory_limit": self.memory_limit}

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            server = self._start()  # first: a restarted server forgets what was sent ahead
            # A prefetched reload of the same path is not the answer to another request.
            request_id = None if "debug" in request or "repredict" in request else \
                self._ahead.pop(request["path"], None)
            if request_id is None:
                request = self._request(request)
                request_id = request["id"]
                server.send(request)
            return server.wait(request_id, self.timeout + _REPLY_MARGIN)
        except (_ServerError, OSError) as exc:
            _stop_all(self._holder)  # the next request starts a fresh server
            self._ahead.clear()
            return {"error": f"the reload server failed ({exc})"}

    def stop_server(self) -> None:
        """Stop the server, if one runs, and keep the Reloader usable: a later request
        starts a fresh one (a server started ahead that the run turned out not to need)."""
        with self._lock:
            _stop_all(self._holder)
            self._ahead.clear()

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


def _failure(display: str, reason: str, seconds: float, failure: str) -> ReloadResult:
    return ReloadResult(path=display, ok=False, format=None, cause=f"{display}: {reason}",
                        parts=(), missing_reasons=MappingProxyType({}), nonfinite=(),
                        tensors=0, seconds=seconds, failure=failure)


def _result(display: str, reply: dict[str, Any]) -> ReloadResult:
    ok = bool(reply["ok"])
    cause: str | None = None
    if not ok:
        where = f"{display}/{reply['file']}" if reply.get("file") else display
        cause = f"{where}: {reply['reason']}"
    return ReloadResult(
        path=display, ok=ok, format=reply.get("format"), cause=cause,
        parts=tuple(p for p in PARTS if p in reply.get("parts", ())),
        missing_reasons=MappingProxyType(dict(reply.get("missing_reasons", {}))),
        nonfinite=tuple(reply.get("nonfinite", ())), tensors=int(reply.get("tensors", 0)),
        seconds=float(reply.get("seconds", 0.0)), notes=tuple(reply.get("notes", ())),
        peak_rss=reply.get("peak_rss"),
        part_faults=tuple(_faults(reply.get("part_faults"))),
        nonfinite_tensors=int(reply.get("nonfinite_tensors", 0)),
        nan_values=int(reply.get("nan_values", 0)), inf_values=int(reply.get("inf_values", 0)),
        sandbox=_sandbox(reply.get("sandbox")),
        holds_code=tuple(str(g) for g in reply.get("holds_code") or ()),
        failure=_failure_kind(reply.get("failure"), ok),
        **_content(reply))


def _failure_kind(kind: object, ok: bool) -> str | None:
    """The server's kind of failure (our own protocol: an unknown one is 'unreadable')."""
    if ok:
        return None
    return kind if isinstance(kind, str) and kind in FAILURES else "unreadable"


def _content(reply: dict[str, Any]) -> dict[str, Any]:
    """The typed facts of what a checkpoint holds (our own protocol: malformed parts are
    dropped, never guessed)."""
    step = reply.get("step")
    steps = reply.get("steps")
    shapes = reply.get("model_shapes")
    digest = reply.get("model_digest")
    return {
        "step": step if isinstance(step, int) and not isinstance(step, bool) else None,
        "stored_steps": tuple((str(k), int(v)) for k, v in steps if isinstance(v, int))
        if isinstance(steps, list) and all(isinstance(s, list) and len(s) == 2 for s in steps)
        else (),
        "model_shapes": MappingProxyType({
            str(k): tuple(int(d) for d in v) for k, v in shapes.items()
            if isinstance(v, list)} if isinstance(shapes, dict) else {}),
        "model_digest": digest if isinstance(digest, str) else None,
        "optimizer": _optimizer(reply.get("optimizer")),
        "optimizer_rates": tuple(
            OptimizerRates(key=str(o.get("key", "")), lr=_rates(o.get("lr")) or (),
                           initial_lr=_rates(o.get("initial_lr")) or ())
            for o in _dicts(reply.get("optimizer_rates"))),
        "scheduler_rates": tuple(
            SchedulerRates(key=str(o.get("key", "")), last_lr=_rates(o.get("last_lr")),
                           base_lrs=_rates(o.get("base_lrs")))
            for o in _dicts(reply.get("scheduler_rates")))}


def _dicts(raw: Any) -> list[dict[str, Any]]:
    return [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []


def _rates(raw: Any) -> tuple[Rate | None, ...] | None:
    """A list of rates (our own protocol: an item that is not one is None, no list None)."""
    if not isinstance(raw, list):
        return None
    return tuple(_rate(item) for item in raw)


def _rate(raw: Any) -> Rate | None:
    if not isinstance(raw, dict):
        return None
    value, dtype = raw.get("value"), raw.get("dtype")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return Rate(value=float(value), dtype=dtype if isinstance(dtype, str) else None)


def _optimizer(raw: Any) -> OptimizerFit | None:
    if not isinstance(raw, dict):
        return None
    problems = tuple(
        OptimizerProblem(kind=p["kind"], key=str(p.get("key", "")), detail=str(p.get("detail")))
        for p in raw.get("problems") or () if isinstance(p, dict)
        and p.get("kind") in ("mismatch", "unproven"))
    nonfinite = tuple(
        NonFiniteBuffer(name=str(b.get("name")), nan=int(b.get("nan", 0)),
                        inf=int(b.get("inf", 0)))
        for b in raw.get("nonfinite") or () if isinstance(b, dict))
    return OptimizerFit(params=int(raw.get("params", 0)), problems=problems,
                        nonfinite=nonfinite,
                        nonfinite_buffers=int(raw.get("nonfinite_buffers", 0)),
                        nan_values=int(raw.get("nan_values", 0)),
                        inf_values=int(raw.get("inf_values", 0)))


def _sandbox(raw: Any) -> Sandbox | None:
    """The server's sandbox report, None when absent or malformed (our own protocol)."""
    if not isinstance(raw, dict):
        return None
    active, missing = raw.get("active"), raw.get("missing")
    if not isinstance(active, list) or not isinstance(missing, dict):
        return None
    return Sandbox(active=tuple(str(a) for a in active),
                   missing=MappingProxyType({str(k): str(v) for k, v in missing.items()}))


def _faults(raw: Any) -> list[PartFault]:
    """The server's part faults, dropping anything malformed (it is our own protocol)."""
    faults = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict) and item.get("part") in PARTS and \
                item.get("kind") in ("empty", "not_state"):
            faults.append(PartFault(part=item["part"], kind=item["kind"],
                                    key=str(item.get("key", "")),
                                    detail=str(item.get("detail", ""))))
    return faults
