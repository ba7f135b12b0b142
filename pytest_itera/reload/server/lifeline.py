"""The server dies with its client, and each loading child with the server.

Standard library only: :func:`die_with_client` runs before torch is imported.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys


def die_with(parent: int) -> None:
    """Linux: SIGKILL for this process when ``parent`` dies (PR_SET_PDEATHSIG); if it is
    already gone, exit now."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl
        os._exit(0)


def die_with_client() -> None:
    """The server dies with its client (pytest killed by SIGTERM or SIGKILL closes no pipe
    politely), also while torch imports, before it reads its stdin. Only when the client
    asks (ITERA_CLIENT_PID, set when it starts the server from its main thread: the signal
    follows the thread that started the process). Each loading child, in turn, dies with
    the server: a killed server leaves no loader behind (a hung one would live on)."""
    client = os.environ.get("ITERA_CLIENT_PID", "")
    if client.isdigit():
        die_with(int(client))
