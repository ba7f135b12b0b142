"""The loading child's sandbox: what a ``weights_only`` bypass would find if it ran.

Standard library only (plus, when importable, a libseccomp binding): like the server
(``server/``) it runs under ``--itera-python``, loaded by file.  The server calls
:func:`prepare` once (the seccomp filter is built there) and each forked child calls
:func:`apply` before it reads a single byte of the checkpoint.  Layers, each tried, each
reported (active, or missing with the reason; never silently absent):

* ``no_new_privs``: PR_SET_NO_NEW_PRIVS, no set-uid gain through exec;
* ``user_namespace``, ``network_namespace``: an unprivileged user + network namespace
  (loopback only, down: no route anywhere);
* ``read_only_mounts``: in a private mount namespace every mount is remounted read-only,
  the campaign included;
* ``seccomp``: socket/socketpair, fork/vfork/clone of a process, execve are denied with
  EPERM (threads are still allowed: clone with CLONE_THREAD);
* ``rlimit_fsize`` (0: no byte written to any file), ``rlimit_nproc`` (a few tasks in the
  loader's own user namespace), ``rlimit_cpu`` (the reload timeout, in CPU seconds, beside
  the server's wall-clock deadline).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import importlib.util
import math
import os
import re
import resource
import signal
import sys
from typing import Any

LAYERS = ("no_new_privs", "user_namespace", "network_namespace", "read_only_mounts", "seccomp",
          "rlimit_fsize", "rlimit_nproc", "rlimit_cpu")

_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_THREAD = 0x00010000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
# Per-mount flags a remount must repeat: a namespace may not clear the locked ones.
_MOUNT_FLAGS = {"nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048,
                "relatime": 1 << 21, "strictatime": 1 << 24}
NPROC_TASKS = 16  # threads count too (torch may start a few); a fork bomb cannot
# Environment variable naming a libseccomp binding module file (pyseccomp.py) that the
# client's environment has, for a reload interpreter that lacks one.
SECCOMP_MODULE_ENV = "ITERA_SECCOMP_MODULE"

_LIBC: Any = None
with contextlib.suppress(OSError):
    # The C library already loaded in this process (dlopen(NULL)): find_library would run
    # `ldconfig -p` on the server's start-up path.
    _LIBC = ctypes.CDLL(None, use_errno=True)

_FILTER: Any = None  # the seccomp filter built by prepare(), loaded by each child
_FILTER_MISSING = "not prepared"


def _seccomp_binding() -> Any:
    """The libseccomp Python binding: the official ``seccomp``, ``pyseccomp`` (same API), or
    the file the client names; None when none is importable."""
    for name in ("seccomp", "pyseccomp"):
        with contextlib.suppress(Exception):
            if importlib.util.find_spec(name) is not None:
                return __import__(name)
    where = os.environ.get(SECCOMP_MODULE_ENV, "")
    if where and os.path.isfile(where):
        with contextlib.suppress(Exception):
            spec = importlib.util.spec_from_file_location("_itera_seccomp", where)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    return None


def prepare() -> None:
    """Build the seccomp filter once, in the server (each child only loads it)."""
    global _FILTER, _FILTER_MISSING
    if not sys.platform.startswith("linux"):
        _FILTER_MISSING = f"not Linux ({sys.platform})"
        return
    binding = _seccomp_binding()
    if binding is None:
        _FILTER_MISSING = ("no libseccomp binding in the reload interpreter "
                           "(pip install pyseccomp there)")
        return
    try:
        deny = binding.ERRNO(errno.EPERM)
        filt = binding.SyscallFilter(binding.ALLOW)
        for call in ("socket", "socketpair", "fork", "vfork", "execve", "execveat"):
            filt.add_rule(deny, call)
        # A process (not a thread) is a clone without CLONE_THREAD; clone3 hides its flags
        # in memory a filter cannot read, so it answers ENOSYS and glibc falls back to clone.
        filt.add_rule(deny, "clone", binding.Arg(0, binding.MASKED_EQ, _CLONE_THREAD, 0))
        filt.add_rule(binding.ERRNO(errno.ENOSYS), "clone3")
    except Exception as exc:  # libseccomp.so missing, an unknown syscall name, ...
        _FILTER_MISSING = f"libseccomp could not build the filter ({exc})"
        return
    _FILTER = filt


class _Report:
    def __init__(self) -> None:
        self.active: list[str] = []
        self.missing: dict[str, str] = {}

    def layer(self, name: str, why_not: str | None) -> None:
        if why_not is None:
            self.active.append(name)
        else:
            self.missing[name] = why_not

    def as_dict(self) -> dict[str, Any]:
        order = {name: i for i, name in enumerate(LAYERS)}
        return {"active": sorted(self.active, key=order.__getitem__),
                "missing": dict(sorted(self.missing.items(), key=lambda kv: order[kv[0]]))}


def _errno_text(err: int) -> str:
    return f"{errno.errorcode.get(err, str(err))}: {os.strerror(err)}"


def _libc_call(name: str, *args: Any) -> str | None:
    """None on success, else the errno in words."""
    if _LIBC is None:
        return "no C library"
    if getattr(_LIBC, name)(*args) == 0:
        return None
    return _errno_text(ctypes.get_errno())


def _no_new_privs() -> str | None:
    return _libc_call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _namespaces(report: _Report, want: set[str]) -> bool:
    """Unshare a user, network and mount namespace (as many as the kernel allows); True when
    a private mount namespace was made."""
    wanted = [("user_namespace", _CLONE_NEWUSER), ("network_namespace", _CLONE_NEWNET),
              ("read_only_mounts", _CLONE_NEWNS)]
    flags = sum(flag for name, flag in wanted if name in want)
    if not flags:
        return False
    why = _libc_call("unshare", flags)
    if why is not None and flags & _CLONE_NEWNS:  # no mount namespace: the others alone
        flags &= ~_CLONE_NEWNS
        report.missing["read_only_mounts"] = f"unshare(CLONE_NEWNS) refused ({why})"
        why = _libc_call("unshare", flags) if flags else why
    for name, _ in wanted[:2]:
        if name in want:
            report.layer(name, None if why is None else
                         f"unshare({name.split('_')[0]}) refused by the kernel ({why})")
    return why is None and bool(flags & _CLONE_NEWNS)


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (' ' is \\040). Not the unicode_escape codec: it is imported
    on first use, and inside the namespace the interpreter's files may be out of reach."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _read_only_mounts() -> str | None:
    """Remount every mount read-only inside the child's private mount namespace."""
    why = _libc_call("mount", None, b"/", None, _MS_REC | _MS_PRIVATE, None)
    if why is not None:
        return f"could not make the mounts private ({why})"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        return f"cannot read /proc/self/mountinfo ({exc.strerror})"
    failed: list[str] = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6:
            continue
        point, options = _unescape(fields[4]), fields[5].split(",")
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | sum(
            _MOUNT_FLAGS.get(o, 0) for o in options)
        why = _libc_call("mount", None, point.encode(), None, flags, None)
        if why is not None:
            failed.append(f"{point} ({why})")
    if failed:
        return f"{len(failed)} of {len(lines)} mounts stay writable: " + ", ".join(failed[:3])
    return None


def _seccomp() -> str | None:
    if _FILTER is None:
        return _FILTER_MISSING
    try:
        _FILTER.load()
    except Exception as exc:
        return f"the kernel refused the filter ({exc})"
    return None


def _rlimit(kind: int, value: int, hard: int | None = None) -> str | None:
    try:
        resource.setrlimit(kind, (value, value if hard is None else hard))
    except (OSError, ValueError) as exc:
        return f"setrlimit refused ({exc})"
    return None


def _nproc(report: _Report) -> str | None:
    if "user_namespace" not in report.active:
        # Outside its own user namespace the limit counts every process of the user.
        return "needs the user namespace (it would count all of the user's processes)"
    return _rlimit(resource.RLIMIT_NPROC, NPROC_TASKS)


def _real_root() -> bool:
    """Whether the process is root in the initial user namespace (the kernel then exempts
    it from RLIMIT_NPROC), read from /proc since getuid() shows the namespace's view."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return line.split()[1] == "0"
    except OSError:
        pass
    return os.getuid() == 0


def apply(timeout: float, layers: list[str] | None = None) -> dict[str, Any]:
    """Sandbox the calling (forked, single-threaded) process; ``layers`` (tests only) picks
    a subset.  Returns ``{"active": [...], "missing": {layer: why}}``."""
    want = set(LAYERS if layers is None else layers)
    report = _Report()
    real_root = _real_root()  # before the user namespace hides the real uid
    if not sys.platform.startswith("linux"):
        for name in sorted(want):
            report.missing[name] = f"not Linux ({sys.platform})"
        return report.as_dict()
    if "no_new_privs" in want:
        report.layer("no_new_privs", _no_new_privs())
    private_mounts = _namespaces(report, want)
    if "read_only_mounts" in want and "read_only_mounts" not in report.missing:
        report.layer("read_only_mounts", _read_only_mounts() if private_mounts else
                     "no private mount namespace")
    if "rlimit_fsize" in want:
        # EFBIG instead of a SIGXFSZ death: a write attempt reads as a denied write.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        report.layer("rlimit_fsize", _rlimit(resource.RLIMIT_FSIZE, 0))
    if "rlimit_nproc" in want:
        report.layer("rlimit_nproc", "not enforced for the root user (run pytest as an "
                     "ordinary user)" if real_root else _nproc(report))
    if "rlimit_cpu" in want:
        cpu = max(1, math.ceil(timeout))  # SIGXCPU at the soft limit, SIGKILL a second later
        report.layer("rlimit_cpu", _rlimit(resource.RLIMIT_CPU, cpu, cpu + 1))
    if "seccomp" in want:  # last: the calls above (unshare, mount) are not filtered, but
        report.layer("seccomp", _seccomp())  # the filter is best loaded once all is set
    return report.as_dict()
