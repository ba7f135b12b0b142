"""One forked loader per checkpoint: bounded, sandboxed, used once; its verdict, or why it
gave none."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import time
from typing import Any

from .deepspeed import inspect_deepspeed, is_deepspeed
from .file_formats import inspect_file
from .finite import PAGE
from .folder_formats import files_of, inspect_folder
from .lifeline import die_with
from .loading import refused, sniff
from .optimizer_fit import judge_optimizers
from .rates import report_rates
from .repredict import Prepared, prepare, repredicted
from .siblings import formats, sandbox
from .verdict import OUT_OF_MEMORY, Findings, Refused, failed


def child_verdict(path: str) -> dict[str, Any]:
    found = Findings(None)
    try:
        if os.path.isdir(path) and is_deepspeed(path, files_of(path)):
            found.format = "deepspeed"
            inspect_deepspeed(found, path, files_of(path))
        elif os.path.isdir(path):
            inspect_folder(found, path)
        else:
            inspect_file(found, path)
        judge_optimizers(found)
        report_rates(found)
        return found.verdict(None)
    except Refused as exc:
        return found.verdict(exc)
    except MemoryError:
        return found.verdict(Refused(OUT_OF_MEMORY, kind="memory"))
    except Exception as exc:  # a loader bug still yields one verdict with its cause
        return found.verdict(refused(exc))


def vm_size() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def mapped_bytes(path: str) -> int:
    """Bytes the child maps from files (torch zips with mmap=True, safetensors): the address
    space they take is not memory the limit should count."""
    try:
        return sum(os.path.getsize(p) for p in checkpoint_files(path)
                   if sniff(p) in ("zip", "safetensors"))
    except OSError:
        return 0


def weight(path: str) -> int:
    """The bytes a checkpoint (file or folder) holds, 0 when unreadable: the server starts
    the largest first."""
    try:
        return sum(os.path.getsize(p) for p in checkpoint_files(path))
    except OSError:
        return 0


def checkpoint_files(path: str) -> list[str]:
    """A checkpoint file itself, or a folder's files two levels down (:func:`folder_files`)."""
    return folder_files(path, 2) if os.path.isdir(path) else [path]


def folder_files(path: str, depth: int) -> list[str]:
    """A folder's files and those of its sub-folders ``depth`` levels down (DeepSpeed's tag
    folder, accelerate's FSDP sub-folders), without following links."""
    found: list[str] = []
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            found.append(entry.path)
        elif depth > 1 and entry.is_dir(follow_symlinks=False):
            found += folder_files(entry.path, depth - 1)
    return found


def run_child(request: dict[str, Any], write_fd: int) -> None:
    """In the forked child: bound memory, sandbox, load, write the verdict, _exit. Never
    returns."""
    code = 0
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        limit = request.get("memory_limit")
        if limit is not None:
            # Address space = inherited + the mmap'ed files + the allowed extra memory.
            cap = vm_size() + mapped_bytes(request["path"]) + int(limit)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        # The judge's model (a re-prediction) is built before the sandbox: it is their code.
        recipe = request.get("repredict")
        prepared = prepare(recipe) if isinstance(recipe, dict) else None
        # Test seams: "layers" picks a subset of the sandbox, "cpu_seconds" its CPU limit.
        layers = request.get("layers")
        seconds = request.get("cpu_seconds") or request.get("timeout", formats.DEFAULT_TIMEOUT)
        confined = sandbox.apply(float(seconds), layers if isinstance(layers, list) else None)
        debug = request.get("debug")
        if debug == "hang":
            time.sleep(3600)
        if debug == "crash":
            os.abort()
        if debug == "spin":
            while True:
                pass
        if isinstance(prepared, Prepared):
            verdict = repredicted(prepared, request["path"])
        elif prepared is not None:
            verdict = prepared  # the recipe failed: why, before any checkpoint byte was read
        elif debug == "escape":
            verdict = escape_attempts(request)
        else:
            verdict = child_verdict(request["path"])
        verdict["sandbox"] = confined
        data = json.dumps(verdict).encode()
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
    except BaseException as exc:
        # The checkpoint's own faults are verdicts (child_verdict): this is the process
        # itself failing (setting up its sandbox, say). Tell what, when it can still write.
        code = 1
        with contextlib.suppress(BaseException):
            what = f"{type(exc).__name__}: {exc}"[:300]
            os.write(write_fd, json.dumps(failed(
                f"the loading process failed before giving a verdict ({what})")).encode())
    finally:
        os._exit(code)


def escape_attempts(request: dict[str, Any]) -> dict[str, Any]:
    """Test-only (``"debug": "escape"``): what a payload that beat weights_only would try,
    from inside the sandbox: open sockets and reach the network, write a file beside the
    checkpoint, start processes (``"forks"`` of them at once, default 1).  ``"attempts"``
    picks some; each outcome is ``"allowed"`` or ``"denied: <errno>"``."""
    import socket

    path = request["path"]
    forks = int(request.get("forks", 1))

    outcomes: dict[str, str] = {}

    def attempt(name: str, action: Any) -> None:
        try:
            action()
            outcomes[name] = "allowed"
        except OSError as exc:
            outcomes[name] = f"denied: {errno_name(exc)}"

    def connect() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: needs a route, sends nothing
            sock.send(b"x")

    def write() -> None:
        target = os.path.join(os.path.dirname(os.path.abspath(path)), "itera-escape.txt")
        with open(target, "wb") as fh:
            fh.write(b"written by the loader")

    def fork() -> None:
        children = []
        try:
            for _ in range(forks):
                pid = os.fork()
                if pid == 0:
                    time.sleep(0.5)
                    os._exit(0)
                children.append(pid)
        finally:
            for pid in children:
                os.waitpid(pid, 0)

    actions = {"socket": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close(),
               "unix_socket": lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close(),
               "network": connect, "write": write, "fork": fork}
    for name in request.get("attempts") or list(actions):
        attempt(name, actions[name])
    return {**failed("escape attempts (test only)"), "escape": outcomes}


def errno_name(exc: OSError) -> str:
    import errno

    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


class Child:
    """A process forked from the torch-loaded server and given exactly one checkpoint.

    A *spare* is forked while the server is idle (the client is busy with the previous
    verdict), and warms itself by judging the server's own tiny checkpoint (``warm.pt`` in
    the server's private folder, never a campaign file): the fork and the copy-on-write
    faults of a first load are paid before the request arrives. Either way, every
    checkpoint gets a process of its own, used once.
    """

    def __init__(self, warm: str | None, inherited: tuple[int, ...]) -> None:
        request_r, self.request_w = os.pipe()
        self.verdict_r, verdict_w = os.pipe()
        server = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            die_with(server)
            # Not the server's protocol ends: a server that dies must be seen to die at once.
            for fd in (self.request_w, self.verdict_r, *inherited):
                os.close(fd)
            self._serve(request_r, verdict_w, warm)
        os.close(request_r)
        os.close(verdict_w)
        self.request: dict[str, Any] = {}
        self.started = self.deadline = 0.0
        self.chunks: list[bytes] = []

    @staticmethod
    def _serve(request_r: int, verdict_w: int, warm: str | None) -> None:
        try:
            if warm is not None:
                child_verdict(warm)
            with os.fdopen(request_r, "rb") as source:
                raw = source.read()
            if not raw:  # the server ended without giving it a checkpoint
                os._exit(0)
            request = json.loads(raw)
        except BaseException:
            os._exit(1)
        run_child(request, verdict_w)

    def give(self, request: dict[str, Any], started: float) -> None:
        self.request, self.started = request, started
        self.deadline = started + float(request.get("timeout", formats.DEFAULT_TIMEOUT))
        with contextlib.suppress(OSError):  # it died before its request: its status tells how
            os.write(self.request_w, json.dumps(request).encode())
        os.close(self.request_w)

    def read(self) -> bool:
        """Take what the verdict pipe holds; True at EOF (the child is done)."""
        data = os.read(self.verdict_r, 1 << 16)
        self.chunks.append(data)
        return not data

    def reply(self, timed_out: bool) -> dict[str, Any]:
        """Reap the child (killed first when it ran out of time) and turn it into a reply."""
        if timed_out:
            os.kill(self.pid, signal.SIGKILL)
        _, status, usage = os.wait4(self.pid, 0)
        os.close(self.verdict_r)
        timeout = self.deadline - self.started
        reply = decode_child(b"".join(self.chunks), None if timed_out else status, timeout)
        reply["id"] = self.request.get("id")
        reply["seconds"] = time.monotonic() - self.started
        reply["peak_rss"] = int(usage.ru_maxrss) * 1024
        return reply

    def dismiss(self) -> None:
        """End a spare that will get no request, at once: it holds nothing but its warm-up
        (the server's own tiny checkpoint), and a server that ends must not wait for it."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.request_w)
        os.close(self.verdict_r)

    def abandon(self) -> None:
        """End a child whose verdict nobody will read."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.verdict_r)


def decode_child(raw: bytes, status: int | None, timeout: float) -> dict[str, Any]:
    if status is None:
        return failed(f"timed out after {timeout:g} s (the loading process was killed)",
                      "timeout")
    if raw:
        try:
            reply: dict[str, Any] = json.loads(raw)
            return reply
        except ValueError:
            pass
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        hint = {"SIGKILL": " (out of memory?)",
                "SIGXCPU": " (over its CPU time limit, the reload timeout)"}.get(sig, "")
        return failed(f"the loading process died from {sig}{hint} before giving a verdict",
                      "memory" if sig == "SIGKILL" else "unreadable")
    return failed(f"the loading process exited with status {os.WEXITSTATUS(status)} "
                  "without a verdict (out of memory under the reload memory limit?)", "memory")
