"""The reload server's head start: started while pytest is still loading its plugins.

torch's import in the reload server (about a second) is the longest single step of a run, and
the run waits for it: every moment before the server starts is added to the wall (issue 29).
The earliest point the plugin sees is its own import, before pytest has read its options. So
:func:`begin` reads the command line pytest was given (with ``PYTEST_ADDOPTS``) for the common
case alone: ``--itera-campaign`` on it, the default reload interpreter, and nothing that rules
a whole run with reloads out. At ``pytest_cmdline_main`` pytest's own reading of the options
decides: the session takes the server (:func:`take`) when it starts the same one, and
:func:`settle` stops it otherwise. A wrong guess costs CPU, never a verdict: the server is the
one the session would start, or it is stopped before it loads anything.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_itera.reload import Reloader

CAMPAIGN = "--itera-campaign"

# On the command line, any of these leaves the start to pytest_cmdline_main: another reload
# interpreter, a run without reloads, or not a whole run (a selection of pytest's).
_LONG = frozenset({
    "--itera-python", "--itera-fast", "--itera-verify-seal", "--collect-only", "--co",
    "--help", "--version", "--fixtures", "--markers", "--lf", "--last-failed", "--deselect",
    "--keyword", "--tx",
})
_SHORT = frozenset("hVkmd")  # -h -V, -k -m (a selection), -d (xdist's --distload)
# xdist's: the controller reloads nothing, unless it distributes to no worker ("0", "no").
_DIST = {"-n": "0", "--numprocesses": "0", "--dist": "no"}

_started: Reloader | None = None


def worth_it(args: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether these arguments ask for a whole run that reloads with the default interpreter,
    as far as the command line alone tells (ini files are read later, by pytest). An xdist
    worker's command line is execnet's: it never names a campaign."""
    try:
        tokens = [*shlex.split(environ.get("PYTEST_ADDOPTS", "")), *args]
    except ValueError:
        return False
    if CAMPAIGN not in (t.split("=", 1)[0] for t in tokens):
        return False
    for i, token in enumerate(tokens):
        name, eq, value = token.partition("=")
        if token.startswith("--") and name in _LONG:
            return False
        if not token.startswith("--") and token[:1] == "-" and token[1:2] in _SHORT:
            return False
        dist = name if name in _DIST else token[:2] if token[:2] == "-n" else None
        if dist is not None:
            if not eq:  # "-n 0", "-n0", "--dist no"
                value = token[2:] if dist == "-n" and len(token) > 2 else \
                    (tokens[i + 1] if i + 1 < len(tokens) else "")
            if value != _DIST[dist]:
                return False
        if "::" in token and not token.startswith("-"):
            return False  # a node id: a selection
    return True


def begin(args: Sequence[str] | None = None) -> None:
    """At the plugin's import: start the reload server now if the command line asks for it.
    Once per process (the plugin is imported once)."""
    global _started
    if _started is not None or not worth_it(sys.argv[1:] if args is None else args,
                                            os.environ):
        return
    from pytest_itera.reload import Reloader

    reloader = Reloader(jobs=jobs())
    reloader.start()
    _started = reloader


def cpus() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def jobs() -> int:
    """Checkpoints loading, or large files read, at a time in a whole run: one per core, at
    most four."""
    return min(4, cpus())


def take(python: str | None, jobs: int) -> Reloader | None:
    """The server started at import, when it is the one the session starts now (the same
    interpreter, the same number of children); else None, and it is stopped."""
    global _started
    reloader, _started = _started, None
    if reloader is None:
        return None
    if reloader.python != (python or sys.executable) or reloader.jobs != jobs:
        reloader.close()
        return None
    return reloader


def settle() -> None:
    """At the end of pytest_cmdline_main: a server the session did not take is stopped."""
    global _started
    reloader, _started = _started, None
    if reloader is not None:
        reloader.close()
