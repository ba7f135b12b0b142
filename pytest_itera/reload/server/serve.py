"""The server process: the request loop, its line protocol, the hello and the warm-up."""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import time
from typing import IO, Any

import torch

from .child import Child, child_verdict, weight
from .loading import explain
from .siblings import probe, sandbox
from .verdict import failed

# None, or why this torch must not load anything (too old: weights_only=True is bypassable).
REFUSED: str | None = probe.too_old(torch.__version__)


class Server:
    """Reads requests as they come, runs up to ``jobs`` children at a time, answers each
    request when its child is done (so replies may come out of order: they carry the id).
    A hung child is killed at its own deadline, counted from its start; the others go on."""

    def __init__(self, warm: str | None, proto: IO[str], jobs: int) -> None:
        self.warm = warm
        self.proto = proto
        self.jobs = max(1, jobs)
        self.inherited = (0, proto.fileno())
        # Waiting requests with their size: the largest starts first (a big checkpoint
        # loading alone at the end would leave the other cores idle).
        self.queue: list[tuple[int, dict[str, Any]]] = []
        self.running: dict[int, Child] = {}
        self.spare: Child | None = None
        self.pending = b""

    def run(self) -> None:
        """Serve until stdin ends (or the client stops reading): then the requests still
        queued are dropped and the children still loading are killed."""
        try:
            while not (self.step() and not self.take_input()):
                pass
        except BrokenPipeError:
            pass  # the client is gone
        finally:
            self.queue.clear()
            for child in self.running.values():
                child.abandon()
            self.running.clear()
            self.dismiss_spare()

    def step(self) -> bool:
        """Start what may start, wait for input or a child; True when stdin has data."""
        self.start_queued()
        if not self.queue and not self.running and self.spare is None and REFUSED is None:
            self.spare = Child(self.warm, self.inherited)  # idle: prepare the next one
        now = time.monotonic()
        wait = min((c.deadline for c in self.running.values()), default=now + 3600) - now
        ready, _, _ = select.select([0, *self.running], [], [], max(wait, 0.0))
        for fd in ready:
            if fd != 0 and self.running[fd].read():
                self.answer(self.running.pop(fd).reply(timed_out=False))
        now = time.monotonic()
        for fd, child in list(self.running.items()):
            if child.deadline <= now:
                del self.running[fd]
                self.answer(child.reply(timed_out=True))
        return 0 in ready

    def take_input(self) -> bool:
        """Queue the complete request lines read from stdin; False at EOF."""
        data = os.read(0, 1 << 16)
        if not data:
            return False
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                if not isinstance(request, dict) or not isinstance(request.get("path"), str):
                    raise ValueError("a request is an object with a path")
            except ValueError as exc:  # a bad request still gets an answer
                reply = failed(f"reload server error: {explain(exc)}")
                reply["id"] = None
                self.answer(reply)
                continue
            if REFUSED is not None:  # never load with a bypassable weights_only
                self.answer({**failed(REFUSED), "id": request.get("id")})
                continue
            self.queue.append((weight(request["path"]), request))
        return True

    def start_queued(self) -> None:
        while self.queue and len(self.running) < self.jobs:
            largest = max(range(len(self.queue)), key=lambda i: self.queue[i][0])
            _, request = self.queue.pop(largest)  # the first of equals: arrival order
            started = time.monotonic()
            path = request["path"]
            if os.path.isdir(path) and os.path.exists(os.path.join(path, ".metadata")) \
                    and "torch.distributed.checkpoint" not in sys.modules:
                # Imported once, in the server, so that later children inherit it.
                self.dismiss_spare()
                import torch.distributed.checkpoint  # noqa: F401
            child, self.spare = self.spare or Child(None, self.inherited), None
            child.give(request, started)
            self.running[child.verdict_r] = child

    def dismiss_spare(self) -> None:
        if self.spare is not None:
            self.spare.dismiss()
            self.spare = None

    def answer(self, reply: dict[str, Any]) -> None:
        self.proto.write(json.dumps(reply) + "\n")


def hello() -> dict[str, Any]:
    try:
        import numpy
        numpy_version: str | None = numpy.__version__
    except ImportError:
        numpy_version = None
    try:
        import safetensors
        st_version: str | None = safetensors.__version__
    except ImportError:
        st_version = None
    return {"hello": 1, "python": sys.version.split()[0], "torch": torch.__version__,
            "numpy": numpy_version, "safetensors": st_version, "refused": REFUSED}


def warm_up(folder: str) -> str | None:
    """Judge one tiny checkpoint in the server itself, so that every child inherits
    torch.load's lazy imports and caches instead of paying for them per checkpoint; return
    its path (in the server's private folder), with which each spare warms itself. Serial
    code only: no thread pool exists before fork."""
    with contextlib.suppress(ImportError):
        import safetensors.torch  # noqa: F401
    path = os.path.join(folder, "warm.pt")
    try:
        layer = torch.nn.Linear(4, 2)
        # An optimizer's state_dict, written out: building a torch.optim optimizer imports
        # torch._dynamo (~1.5 s, as long as torch itself) for nothing a load needs.
        optimizer = {"state": {0: {"momentum_buffer": torch.zeros(2, 4)}},
                     "param_groups": [{"lr": 0.1, "momentum": 0.9, "params": [0, 1]}]}
        torch.save({"model": layer.state_dict(), "optimizer": optimizer,
                    "epoch": 1, "rng_state": torch.get_rng_state()}, path)
    except (OSError, RuntimeError):  # torch.save tells an unwritable folder by RuntimeError
        return None
    child_verdict(path)
    return path


def main() -> None:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    # The protocol gets its own fd; fd 1 goes to stderr so stray prints cannot corrupt it.
    proto: IO[str] = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    warm = warm_up(os.getcwd()) if REFUSED is None else None
    sandbox.prepare()
    proto.write(json.dumps(hello()) + "\n")
    Server(warm, proto, jobs).run()
    proto.flush()
    # Skip the interpreter's teardown of torch (~0.4 s): nothing is left to flush or close.
    os._exit(0)
