"""Reload server: loads checkpoints in a fresh interpreter, one forked child per checkpoint.

Self-contained on purpose: it runs under ``--itera-python`` (the training interpreter), which
may not have pytest-itera installed.  Only the standard library, torch and, when present,
numpy and safetensors are imported.  Never ``weights_only=False``, in any code path.

Protocol (JSON lines): the server first writes a ``hello`` line (interpreter and library
versions); then for each request line ``{"id", "path", "timeout", "memory_limit"}`` on stdin
it gives the checkpoint to a forked child that loads it and writes one JSON verdict to a pipe,
and the server answers one JSON line, with the request's id, on stdout.  Up to ``JOBS``
(the first argument, default 1) children run at a time, so a client may send many requests
before reading: replies then come in the order the children finish.  A request may carry
``"debug": "hang" | "crash" | "spin" | "escape"``: test-only, it makes the child sleep,
abort or burn CPU before loading, to prove that a hang, crash or CPU hog yields one clear
verdict and the server keeps serving, or try what a hostile payload would (sockets, a write,
a fork: :func:`escape_attempts`) to prove the sandbox (``sandbox.py``) denies it; the
test-only ``"layers"`` and ``"cpu_seconds"`` pick the sandbox layers and its CPU limit.
Every verdict carries ``"sandbox"``: the layers active in its child and why any is missing.  EOF on
stdin ends the server.
"""

from __future__ import annotations

import _compat_pickle
import contextlib
import ctypes
import ctypes.util
import io
import json
import math
import os
import pickle
import pickletools
import re
import resource
import select
import signal
import struct
import sys
import time
import warnings
import zipfile
from collections.abc import Iterator
from typing import IO, Any


def _die_with(parent: int) -> None:
    """Linux: SIGKILL for this process when ``parent`` dies (PR_SET_PDEATHSIG); if it is
    already gone, exit now."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl
        os._exit(0)


def _die_with_client() -> None:
    """The server dies with its client (pytest killed by SIGTERM or SIGKILL closes no pipe
    politely), also while torch imports, before it reads its stdin. Only when the client
    asks (ITERA_CLIENT_PID, set when it starts the server from its main thread: the signal
    follows the thread that started the process). Each loading child, in turn, dies with
    the server: a killed server leaves no loader behind (a hung one would live on)."""
    client = os.environ.get("ITERA_CLIENT_PID", "")
    if client.isdigit():
        _die_with(int(client))


if __name__ == "__main__":
    _die_with_client()

import torch  # noqa: E402 -- after _die_with_client: the import takes ~1 s


def _load_sibling(name: str) -> Any:
    """A sibling module (probe.py, sandbox.py), by file: ``-I`` keeps this folder off
    sys.path, and the torch version rule must be one piece of code for the probe, this
    server and the client."""
    import importlib.util

    where = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_itera_reload_{name}", where)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# None, or why this torch must not load anything (too old: weights_only=True is bypassable).
REFUSED: str | None = _load_sibling("probe").too_old(torch.__version__)
SANDBOX: Any = _load_sibling("sandbox")

PARTS = ("model", "optimizer", "progress", "scheduler", "scaler", "rng", "data")

# Top-level keys of a "general checkpoint" dict -> resume part (see PARTS.md).
KEY_PARTS: dict[str, str] = {
    **dict.fromkeys(("model", "model_state_dict", "model_state", "state_dict", "net", "network",
                     "module", "weights"), "model"),
    **dict.fromkeys(("optimizer", "optimizer_state_dict", "optimizer_state", "optim",
                     "optimizers", "optimizer_states"), "optimizer"),
    # "progress" is what pytest_itera.record.save_resume_checkpoint writes.
    **dict.fromkeys(("progress", "epoch", "step", "global_step", "iteration", "iter",
                     "steps_done"), "progress"),
    **dict.fromkeys(("scheduler", "lr_scheduler", "scheduler_state_dict", "lr_schedulers",
                     "schedulers"), "scheduler"),
    **dict.fromkeys(("scaler", "grad_scaler", "amp", "scaler_state_dict", "amp_state"),
                    "scaler"),
    **dict.fromkeys(("rng", "rng_state", "rng_states", "random_state", "random_states",
                     "torch_rng_state", "cuda_rng_state", "numpy_rng_state",
                     "python_rng_state"), "rng"),
    **dict.fromkeys(("data", "sampler", "sampler_state", "dataloader", "dataloader_state",
                     "data_position", "data_state"), "data"),
}

LIGHTNING_SCALER_KEYS = ("MixedPrecision", "MixedPrecisionPlugin", "native_amp_scaling_state",
                         "amp_scaling_state")
TORCH_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
CHUNK_ELEMENTS = 1 << 24  # finite check in 16 Mi-element chunks: bounded temporaries
WEIGHTS_ONLY_WHY = "(loading it would import and call arbitrary code)"


class Refused(Exception):
    """A checkpoint (or one file of a folder) failed: ``reason`` is one sentence; ``code``
    the pickled globals outside the allowlist when the file holds code."""

    def __init__(self, reason: str, file: str | None = None,
                 code: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.file = file
        self.code = code


class Findings:
    """What the child learns about one checkpoint; serialised as the verdict."""

    def __init__(self, fmt: str | None) -> None:
        self.format = fmt
        self.parts: set[str] = set()
        self.missing_reasons: dict[str, str] = {}
        # part -> why the key that should hold it holds no restorable state (typed: the
        # client never parses English): {"kind": "empty" | "not_state", "key", "detail"}.
        self.faults: dict[str, dict[str, str]] = {}
        self.nonfinite: list[str] = []
        self.nan_values = 0
        self.inf_values = 0
        self.tensors = 0
        self.notes: list[str] = []
        self.unchecked: list[str] = []  # weights whose finiteness no kernel could check

    def fault(self, part: str, kind: str, key: str, detail: str) -> None:
        """The first key of ``part`` found wanting (a valid key elsewhere still wins)."""
        self.faults.setdefault(part, {"part": part, "kind": kind, "key": key, "detail": detail})

    def verdict(self, error: Refused | None) -> dict[str, Any]:
        if self.unchecked:
            self.notes.append(f"{len(self.unchecked)} model tensor(s) not checked for "
                              f"non-finite values (no kernel for their dtype or layout): "
                              + ", ".join(self.unchecked[:3]))
        ok = error is None and not self.nonfinite
        if error is None and self.nonfinite:
            error = Refused(f"non-finite model weights in {len(self.nonfinite)} tensor(s) "
                            f"({nonfinite_values(self.nan_values, self.inf_values)}): "
                            + ", ".join(self.nonfinite[:5]))
        return {"format": self.format, "ok": ok,
                "reason": None if error is None else error.reason,
                "file": None if error is None else error.file,
                "holds_code": [] if error is None else list(error.code),
                "parts": [p for p in PARTS if p in self.parts],
                "missing_reasons": self.missing_reasons,
                "part_faults": [f for p, f in sorted(self.faults.items()) if p not in self.parts],
                "nonfinite": self.nonfinite[:20], "nonfinite_tensors": len(self.nonfinite),
                "nan_values": self.nan_values, "inf_values": self.inf_values,
                "tensors": self.tensors, "notes": self.notes}


def nonfinite_values(nan: int, inf: int) -> str:
    """``3 NaN and 1 inf values``."""
    counted = [f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "inf")) if n]
    total = nan + inf
    return f"{' and '.join(counted) or 'non-finite'} value{'s' if total != 1 else ''}"


# ----------------------------------------------------------------------------- loading safely

def _numpy_allowlist() -> list[Any]:
    """Exactly the numpy globals of a pickled RNG state (transformers/accelerate allow these)."""
    try:
        import numpy as np
    except ImportError:
        return []
    core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1 spelling
    allowed: list[Any] = [core.multiarray._reconstruct, np.ndarray, np.dtype]
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None and hasattr(dtypes, "UInt32DType"):
        allowed.append(dtypes.UInt32DType)
    return allowed


def py3_name(dotted: str) -> str:
    """The callable a pickled global resolves to: protocol-2 pickles spell subprocess as
    ``commands`` and torch drops ``builtins.``; ``posix.system`` is shown as os.system too."""
    module, _, name = dotted.rpartition(".")
    module = module or "builtins"
    module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    shown = f"{module}.{name}"
    if module in ("posix", "nt"):
        shown += f" (os.{name})"
    return shown


# Opcodes added by pickle protocols 4 and 5, by number (torch.save writes protocol 2).
PROTOCOL_4_OPCODES = {0x95: "FRAME", 0x8C: "SHORT_BINUNICODE", 0x8D: "BINUNICODE8",
                      0x8E: "BINBYTES8", 0x8F: "EMPTY_SET", 0x90: "ADDITEMS",
                      0x91: "FROZENSET", 0x92: "NEWOBJ_EX", 0x93: "STACK_GLOBAL",
                      0x94: "MEMOIZE", 0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER",
                      0x98: "READONLY_BUFFER"}


def explain(exc: BaseException) -> str:
    """One sentence for a load failure; names the offending global of a refused pickle."""
    text = str(exc)
    bad = re.search(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)", text)
    if bad:
        return (f"refused by weights_only=True: unsupported global {py3_name(bad.group(1))} "
                f"{WEIGHTS_ONLY_WHY}")
    if "WeightsUnpickler error" in text:
        detail = text.split("WeightsUnpickler error:", 1)[1].strip().split("\n")[0]
        opcode = re.search(r"Unsupported operand (\d+)", detail)
        if opcode and int(opcode.group(1)) in PROTOCOL_4_OPCODES:
            return (f"refused by weights_only=True: the pickle uses protocol 4/5 opcodes "
                    f"({PROTOCOL_4_OPCODES[int(opcode.group(1))]}), which torch.load("
                    "weights_only=True) cannot read: save with torch.save's default "
                    "pickle_protocol")
        return f"refused by weights_only=True: {detail.rstrip('.')}"
    if isinstance(exc, MemoryError) or "can't allocate memory" in text:
        return "ran out of memory under the reload memory limit"
    if isinstance(exc, OSError) and exc.errno == 22:
        return "unreadable torch archive (truncated or corrupt: invalid argument reading it)"
    zip_error = re.search(r"PytorchStreamReader failed ([^.\n]*)", text)
    if zip_error:
        return f"corrupt or truncated torch archive ({zip_error.group(1)})"
    first = text.strip().splitlines()[0][:200] if text.strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def sniff(path: str) -> str:
    """Content kind of a file: zip | legacy | safetensors | empty | unknown."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    if not head:
        return "empty"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    # Before the pickle test: a safetensors header of 128..255 bytes starts with 0x80 too.
    if len(head) >= 9 and head[8:9] == b"{":
        return "safetensors"
    if head.startswith(b"\x80"):
        return "legacy"
    return "unknown"


def describe_unknown(path: str) -> str:
    with open(path, "rb") as fh:
        head = fh.read(64)
    stripped = head.lstrip()
    kind = "JSON/text" if stripped[:1] in (b"{", b"[") else (
        "text" if all(32 <= b < 127 or b in (9, 10, 13) for b in head) else "unrecognised bytes")
    return (f"not a checkpoint: content is {kind}, neither a torch.save archive, a legacy "
            f"torch pickle nor safetensors (starts with {head[:24]!r})")


def torch_load(path: str, kind: str) -> Any:
    """torch.load with weights_only=True, mmap where the format allows, on CPU; first, the
    globals its pickles would call (a file that holds code is said to, before all else)."""
    refuse_code(path, kind)
    if kind == "zip":
        check_torch_zip(path)
    elif kind == "legacy":
        check_legacy_storages(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.serialization.safe_globals(_numpy_allowlist()):
            try:
                return torch.load(path, weights_only=True, mmap=(kind == "zip"),
                                  map_location="cpu")
            except Exception as exc:  # every load failure becomes a verdict
                raise Refused(explain(exc)) from exc


# ----------------------------------------------------------------------------- code in pickles

CODE_SCAN_OPS = 5_000_000  # opcodes walked per pickle (a large model's data.pkl: ~100,000)
LEGACY_PICKLES = 5  # magic number, protocol, sys info, the object, the storage keys
COMPUTED_GLOBAL = "a global whose name is computed while unpickling"
_ALLOWED: set[str] | None = None


def allowed_globals() -> set[str]:
    """Dotted names torch.load(weights_only=True) resolves here: torch's own allowlist and
    the numpy RNG-state globals this server adds (the same lists, not a copy of them)."""
    global _ALLOWED
    if _ALLOWED is None:
        from torch import _weights_only_unpickler as wou

        with torch.serialization.safe_globals(_numpy_allowlist()):
            _ALLOWED = set(wou._get_allowed_globals()) | set(
                wou._get_user_allowed_globals())  # type: ignore[no-untyped-call]
    return _ALLOWED


def torch_spelling(module: str, name: str) -> str:
    """The dotted name torch's unpickler checks (protocol-2 names mapped to Python 3's)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    else:
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return f"{module}.{name}"


def pickle_globals(stream: IO[bytes]) -> tuple[list[str], bool]:
    """The globals one pickle would import and call (GLOBAL, INST, STACK_GLOBAL, EXT*), by a
    symbolic walk over its opcodes (nothing imported), at most CODE_SCAN_OPS of them; and
    whether the walk reached its STOP (a well-formed pickle)."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    found: list[str] = []
    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(stream)):
            if count >= CODE_SCAN_OPS:
                return found, False
            name = op.name
            if name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                found.append(torch_spelling(module, attr))
            elif name == "STACK_GLOBAL":
                attr, module = stack[-1], stack[-2]
                found.append(f"{module}.{attr}" if isinstance(module, str) and
                             isinstance(attr, str) else COMPUTED_GLOBAL)
            elif name.startswith("EXT"):
                found.append(f"copyreg extension code {arg}")
            elif name == "STOP":
                return found, True
            if name in _STR_OPS:
                stack.append(arg if isinstance(arg, str) else _OPAQUE)
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(str(arg))] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(int(str(arg)), _OPAQUE))
            elif name == "MARK":
                stack.append(_MARK)
            else:
                generic_stack_effect(stack, op)
    except (ValueError, IndexError, KeyError, EOFError, OSError, UnicodeDecodeError):
        return found, False
    return found, False


def code_globals(path: str, kind: str) -> list[str]:
    """Globals outside the allowlist in the pickles of a torch zip (data.pkl), a legacy
    torch file or a raw pickle (each of its leading pickles), in file order, once each."""
    found: list[str] = []
    if kind == "zip":
        try:
            with zipfile.ZipFile(path) as zf:
                pkl = next((i for i in zf.infolist()
                            if i.filename.rpartition("/")[2] == "data.pkl"), None)
                if pkl is not None and pkl.file_size <= PICKLE_CAP:
                    with zf.open(pkl) as member:
                        found = pickle_globals(member)[0]
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError):
            return []
    else:
        with open(path, "rb") as fh:
            for index in range(LEGACY_PICKLES):
                names, complete = pickle_globals(fh)
                # Text that merely parses as opcodes for a while holds no code: only a
                # well-formed pickle is judged, except in a file that began as one.
                if complete or index or kind == "legacy":
                    found += names
                if not complete or fh.tell() > PICKLE_CAP:
                    break
    allowed = allowed_globals()
    return [g for g in dict.fromkeys(found) if g not in allowed]


def refuse_code(path: str, kind: str) -> None:
    code = tuple(code_globals(path, kind))
    if code:
        shown = ", ".join(py3_name(g) if g.count(".") and " " not in g else g
                          for g in code[:5])
        more = f" and {len(code) - 5} more" if len(code) > 5 else ""
        raise Refused(f"holds code: unpickling it would call {shown}{more}, outside the "
                      f"weights-only allowlist {WEIGHTS_ONLY_WHY}; refused before any load",
                      code=code)


# ----------------------------------------------------------------------------- torch zip structure

PICKLE_CAP = 256 << 20  # a checkpoint's data.pkl is KiB..MiB; tensors live in data/<key>
ZIP_HOSTILE = "hostile or corrupt torch archive"
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length


def check_torch_zip(path: str) -> None:
    """Refuse a torch.save zip whose structure or declared storages lie, before torch.load.

    Only the zip directory (stdlib zipfile) and a symbolic walk over data.pkl's opcodes are
    read: nothing is unpickled.  torch.save writes stored, non-overlapping, uniquely named
    records whose sizes match the storages its pickle declares; anything else is refused
    here, because torch (mmap=True) either misreads it or fails with an unclear error.  A zip
    the stdlib cannot parse at all is left to torch, whose message names the damage.
    """
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    with zf:
        infos = zf.infolist()
        end = getattr(zf, "start_dir", None) or os.path.getsize(path)
        with open(path, "rb") as fh:
            spans = [entry_span(fh, info, end) for info in infos]
        check_spans(spans)
        records = {info.filename: info for info in infos}
        pkl = next((i for i in infos if i.filename.rpartition("/")[2] == "data.pkl"), None)
        if pkl is None:
            return  # torch says which record it misses
        if pkl.file_size > PICKLE_CAP:
            raise Refused(f"{ZIP_HOSTILE}: {pkl.filename} is {human_bytes(pkl.file_size)}, over "
                          f"the {human_bytes(PICKLE_CAP)} cap for a checkpoint's pickle")
        prefix = pkl.filename[: -len("data.pkl")]
        check_storages(pkl.filename, zf.read(pkl), prefix, records)


def entry_span(fh: IO[bytes], info: zipfile.ZipInfo, end: int) -> tuple[int, int, str]:
    """[local header, end of data) of one entry, checked to lie inside the file."""
    name = info.filename
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        how = ("encrypted" if info.flag_bits & 0x1
               else f"compressed (zip method {info.compress_type})")
        raise Refused(f"{ZIP_HOSTILE}: entry {name!r} is {how}; torch.save writes stored entries "
                      "only, and a memory-mapped reload would read the compressed bytes as data")
    if info.compress_size != info.file_size:
        raise Refused(f"{ZIP_HOSTILE}: stored entry {name!r} declares {info.compress_size} bytes "
                      f"in the archive for {info.file_size} bytes of data")
    start = info.header_offset
    header = b""
    if 0 <= start <= end:
        fh.seek(start)
        header = fh.read(_LOCAL_HEADER.size)
    if start + _LOCAL_HEADER.size > end or len(header) < _LOCAL_HEADER.size:
        raise Refused(f"{ZIP_HOSTILE}: entry {name!r} points outside the file (local header at "
                      f"byte {start}, the zip directory starts at byte {end})")
    magic, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    if magic != b"PK\x03\x04":
        raise Refused(f"{ZIP_HOSTILE}: entry {name!r} points at byte {start}, where no zip "
                      "entry begins")
    stop = start + _LOCAL_HEADER.size + name_len + extra_len + info.file_size
    if stop > end:
        raise Refused(f"{ZIP_HOSTILE}: entry {name!r} ({human_bytes(info.file_size)}) runs past "
                      f"the end of the data (byte {stop} > {end}): truncated or lying sizes")
    return start, stop, name


def check_spans(spans: list[tuple[int, int, str]]) -> None:
    """No two entries with one name, no two entries sharing bytes (zip-bomb/ambiguity tricks)."""
    seen: set[str] = set()
    for _, _, name in spans:
        if name in seen:
            raise Refused(f"{ZIP_HOSTILE}: entry {name!r} appears twice in the zip directory "
                          "(readers disagree on which copy counts)")
        seen.add(name)
    ordered = sorted(spans)
    # zip, not itertools.pairwise: the server must run on the user's older Python.
    for (a_start, a_stop, a_name), (b_start, b_stop, b_name) in zip(  # noqa: B905, RUF007
            ordered, ordered[1:]):
        if b_start < a_stop:
            raise Refused(f"{ZIP_HOSTILE}: entries {a_name!r} (bytes {a_start}-{a_stop}) and "
                          f"{b_name!r} (bytes {b_start}-{b_stop}) overlap; torch.save never "
                          "writes overlapping entries")


def check_storages(pkl_name: str, pkl: bytes, prefix: str,
                   records: dict[str, zipfile.ZipInfo]) -> None:
    """Each storage the pickle declares must have a record holding its bytes, and each tensor
    must fit in its storage: torch would try to resize the memory-mapped storage (an unclear
    error) or, without mmap, allocate what the lie declares."""
    try:
        storages, views = storage_claims(pkl)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise Refused(f"{ZIP_HOSTILE}: {pkl_name} is not a well-formed pickle ({exc})") from exc
    for storage in storages:
        record = f"{prefix}data/{storage.key}"
        itemsize, dtype = storage_itemsize(storage.type)
        if record not in records:
            raise Refused(f"{ZIP_HOSTILE}: {pkl_name} declares storage {storage.key!r}, but the "
                          f"archive has no record {record}")
        held = records[record].file_size
        if storage.numel * itemsize > held:
            raise Refused(f"{ZIP_HOSTILE}: {pkl_name} declares a storage of "
                          f"{human_bytes(storage.numel * itemsize)} ({storage.numel} {dtype} "
                          f"elements) for {record}, but the archive holds {held} bytes for it "
                          "(a lying size)")
    check_views(views, pkl_name, f"{prefix}data/")


def check_views(views: list[View], pkl_name: str, record_prefix: str) -> None:
    """Each tensor must fit in its storage (torch would resize, i.e. allocate, it)."""
    hostile = ZIP_HOSTILE if record_prefix else LEGACY_HOSTILE
    for storage, dtype_name, offset, size, stride in views:
        needed = offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))  # noqa: B905
        # v3 views an untyped (byte) storage as dtype_name; v2's dtype is the storage's own.
        width = storage_itemsize(dtype_name or storage.type)[0]
        held = storage.numel * storage_itemsize(storage.type)[0] // width
        if all(n > 0 for n in size) and needed > held:
            where = f"{record_prefix}{storage.key}" if record_prefix else repr(storage.key)
            raise Refused(f"{hostile}: {pkl_name} declares a tensor of shape {list(size)} "
                          f"(offset {offset}, strides {list(stride)}) needing {needed} elements "
                          f"of storage {where}, which holds {held} (a lying shape)")


LEGACY_HOSTILE = "hostile or corrupt legacy torch file"


def check_legacy_storages(path: str) -> None:
    """Refuse a legacy (pre-zip) torch file whose storages lie, before torch.load: torch
    allocates each storage at the size its pickle declares, then fails on the size the file
    records ("storage has wrong byte size") or on a short read.  The file is its pickles
    (magic number, protocol, sys info, the object, the storage keys), then per key an
    8-byte element count and the bytes; nothing is unpickled, a malformed file is left to
    torch."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        for _ in range(3):
            if not pickle_globals(fh)[1]:
                return
        try:
            storages, views = storage_claims(fh)
            keys = [arg for op, arg, _ in pickletools.genops(fh) if op.name in _STR_OPS]
        except (ValueError, IndexError, KeyError, TypeError, EOFError):
            return
        declared = {s.key: s for s in storages}
        for key in keys:
            storage = declared.get(str(key))
            if storage is None:
                return  # torch names the missing storage
            check_legacy_storage(fh, storage, size)
    check_views(views, "the pickle", "")


def check_legacy_storage(fh: IO[bytes], storage: _Storage, size: int) -> None:
    itemsize, dtype = storage_itemsize(storage.type)
    start = fh.tell()
    raw = fh.read(8)
    if len(raw) < 8:
        raise Refused(f"{LEGACY_HOSTILE}: storage {storage.key!r} is missing (the file ends at "
                      f"byte {start}): truncated")
    (held,) = struct.unpack("<q", raw)
    if held != storage.numel:
        raise Refused(f"{LEGACY_HOSTILE}: the pickle declares storage {storage.key!r} of "
                      f"{human_bytes(storage.numel * itemsize)} ({storage.numel} {dtype} "
                      f"elements), but the file records {held} elements for it (a lying size)")
    stop = start + 8 + held * itemsize
    if stop > size:
        raise Refused(f"{LEGACY_HOSTILE}: storage {storage.key!r} "
                      f"({human_bytes(held * itemsize)}) runs past the end of the file (byte "
                      f"{stop} > {size}): truncated or lying sizes")
    fh.seek(stop)


class _Global(str):
    """A pickled global's name, as a value on the symbolic stack (never imported)."""


class _Storage:
    """A ``('storage', type, key, location, numel)`` persistent id on the symbolic stack."""

    def __init__(self, storage_type: str, key: str, numel: int) -> None:
        self.type = storage_type
        self.key = key
        self.numel = numel


_MARK = object()
_OPAQUE = object()
_INT_OPS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"}
_STR_OPS = {"BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
            "SHORT_BINSTRING"}
_REBUILD_TENSOR = ("torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_tensor_v3")
View = tuple[_Storage, str, int, tuple[int, ...], tuple[int, ...]]  # storage, dtype, offset, ...


def _ints(value: Any) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)


def storage_claims(pkl: bytes | IO[bytes]) -> tuple[list[_Storage], list[View]]:
    """The storages a pickle's persistent ids declare and the tensor views
    (``_rebuild_tensor_v2(storage, offset, size, stride, ...)``) built on them, found by a
    symbolic walk over its opcodes (pickletools): strings, ints, globals' names, tuples and
    storages are tracked, every other value is opaque, and nothing is imported or called."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    storages: list[_Storage] = []
    views: list[View] = []
    for op, arg, _ in pickletools.genops(pkl):
        name = op.name
        if name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(str(arg))] = stack[-1]
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[int(str(arg))])
        elif name == "MARK":
            stack.append(_MARK)
        elif name in _INT_OPS or name in _STR_OPS:
            stack.append(arg)
        elif name == "GLOBAL":
            stack.append(_Global(str(arg)))
        elif name == "STACK_GLOBAL":
            qualname, module = stack.pop(), stack.pop()
            stack.append(_Global(f"{module} {qualname}"))
        elif name == "TUPLE":
            mark = len(stack) - 1 - stack[::-1].index(_MARK)
            items = tuple(stack[mark + 1:])
            del stack[mark:]
            stack.append(items)
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE"):
            n = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3, "EMPTY_TUPLE": 0}[name]
            items = tuple(stack[len(stack) - n:])
            del stack[len(stack) - n:]
            stack.append(items)
        elif name == "BINPERSID":
            pid = stack.pop()
            # torch.save's ('storage', type, key, location, numel); the legacy format adds
            # a sixth item (view metadata)
            if isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage" and \
                    _ints(pid[4:5]):
                storages.append(_Storage(str(pid[1]), str(pid[2]), pid[4]))
                stack.append(storages[-1])
            else:
                stack.append(_OPAQUE)
        elif name == "REDUCE":
            args, func = stack.pop(), stack.pop()
            if func in _REBUILD_TENSOR and isinstance(args, tuple) and len(args) >= 4 and \
                    isinstance(args[0], _Storage) and _ints(args[1:2]) and _ints(args[2]) and \
                    _ints(args[3]) and len(args[2]) == len(args[3]):
                # _rebuild_tensor_v3(storage, offset, size, stride, grad, hooks, dtype)
                dtype = args[6] if func.endswith("v3") and len(args) > 6 and \
                    isinstance(args[6], _Global) else ""
                views.append((args[0], str(dtype), args[1], args[2], args[3]))
            stack.append(_OPAQUE)
        else:
            generic_stack_effect(stack, op)
    return storages, views


def generic_stack_effect(stack: list[Any], op: Any) -> None:
    """Pop what ``op`` consumes (to the mark when it takes one), push opaque results."""
    before = list(op.stack_before)
    if pickletools.markobject in before:
        mark = len(stack) - 1 - stack[::-1].index(_MARK)
        del stack[mark:]
        count = before.index(pickletools.markobject)
    else:
        count = len(before)
    if count > len(stack):
        raise ValueError(f"stack underflow at {op.name}")
    del stack[len(stack) - count:]
    stack.extend(_OPAQUE for _ in op.stack_after)


def storage_itemsize(storage_type: str) -> tuple[int, str]:
    """Bytes per element of a pickled storage type (``torch FloatStorage``) or dtype
    (``torch float8_e4m3fn``), and the dtype's name; 1 (a lower bound) for an untyped storage
    or an unknown name, so no real archive is refused."""
    module, _, name = storage_type.partition(" ")
    dtype: Any = None
    if module == "torch" and re.fullmatch(r"[A-Za-z0-9_]+Storage", name):
        with warnings.catch_warnings():  # typed storages are deprecated, still pickled
            warnings.simplefilter("ignore")
            dtype = getattr(getattr(torch, name, None), "dtype", None)
    elif module == "torch" and re.fullmatch(r"[A-Za-z0-9_]+", name):  # a dtype (v3 views)
        dtype = getattr(torch, name, None)
    if isinstance(dtype, torch.dtype):
        return dtype.itemsize, str(dtype).replace("torch.", "")
    return 1, "byte"


def human_bytes(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} bytes"


# ----------------------------------------------------------------------------- finite checks

_LIBC: Any = None
try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
except OSError:
    _LIBC = None
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def release_pages(t: torch.Tensor) -> None:
    """Drop the checked pages of an mmap'ed, read-only tensor: they refault from the file.

    Keeps peak RSS near a bare mmap load's instead of growing by the whole checkpoint.
    Only called for tensors of a torch.load(mmap=True) mapping, never on anonymous memory.
    """
    if _LIBC is None:
        return
    start = t.data_ptr()
    end = start + t.numel() * t.element_size()
    lo = -(-start // _PAGE) * _PAGE
    hi = end // _PAGE * _PAGE
    if hi > lo:
        _LIBC.madvise(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), 4)  # MADV_DONTNEED


def chunk_finite(chunk: torch.Tensor) -> bool:
    try:
        total = chunk.sum()
    except (RuntimeError, TypeError):  # e.g. float8: no sum kernel
        chunk = chunk.to(torch.float32)
        total = chunk.sum()
    # A finite sum proves every element finite (inf/nan propagate); overflow only costs time.
    return bool(torch.isfinite(total)) or bool(torch.isfinite(chunk).all())


SPARSE_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def stored_values(t: torch.Tensor) -> torch.Tensor:
    """The elements a tensor stores: a sparse tensor's values, a nested tensor's
    components, flattened; a dense tensor as it is."""
    if t.layout == torch.sparse_coo:
        return t._values()
    if t.layout in SPARSE_COMPRESSED:
        return t.values()
    if t.is_nested:
        parts = [x.reshape(-1) for x in t.unbind()]
        return torch.cat(parts) if parts else torch.empty(0, dtype=t.dtype)
    return t


def tensor_finite(t: torch.Tensor, mapped: bool) -> bool:
    if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return True
    t = stored_values(t)
    if t.numel() == 0:
        return True
    flat = t.reshape(-1) if t.is_contiguous() else t
    if flat.dim() != 1:
        return chunk_finite(flat)
    for start in range(0, flat.numel(), CHUNK_ELEMENTS):
        chunk = flat[start:start + CHUNK_ELEMENTS]
        if not chunk_finite(chunk):
            return False
        if mapped:
            release_pages(chunk)
    return True


def walk_tensors(obj: Any, prefix: str) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from walk_tensors(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from walk_tensors(value, f"{prefix}.{i}" if prefix else str(i))


def check(found: Findings, obj: Any, prefix: str, weights: bool, mapped: bool) -> None:
    """Count tensors; for model weights, record the non-finite ones by name."""
    for name, t in walk_tensors(obj, prefix):
        found.tensors += 1
        if weights:
            check_weight(found, name, t, mapped)


def check_weight(found: Findings, name: str, t: torch.Tensor, mapped: bool) -> None:
    if t.is_meta:
        raise Refused(f"model weight {name} is a meta tensor: it holds no data (saved before "
                      "the weights were materialised)")
    try:
        finite = tensor_finite(t, mapped)
    except (RuntimeError, TypeError, NotImplementedError):
        # A dtype or layout without the kernels (e.g. float4): it loaded, it is not judged.
        found.unchecked.append(f"{name} ({str(t.dtype).removeprefix('torch.')}, "
                               f"{str(t.layout).removeprefix('torch.')})")
        return
    if not finite:
        found.nonfinite.append(name)
        nan, inf = count_nonfinite(t)
        found.nan_values += nan
        found.inf_values += inf


def count_nonfinite(t: torch.Tensor) -> tuple[int, int]:
    """NaN and ±inf elements of a tensor known to hold some, counted chunk by chunk."""
    flat = stored_values(t)
    flat = flat.reshape(-1) if flat.is_contiguous() else flat.flatten()
    nan = inf = 0
    for start in range(0, flat.numel(), CHUNK_ELEMENTS):
        chunk = flat[start:start + CHUNK_ELEMENTS]
        try:
            nan += int(torch.isnan(chunk).sum())
            inf += int(torch.isinf(chunk).sum())
        except (RuntimeError, TypeError):  # e.g. float8: count on a float32 copy
            wide = chunk.to(torch.float32)
            nan += int(torch.isnan(wide).sum())
            inf += int(torch.isinf(wide).sum())
    return nan, inf


# ----------------------------------------------------------------------------- single files

def present(value: Any) -> bool:
    return value is not None and not (isinstance(value, (dict, list, tuple, str)) and not value)


# Keys under which real training code nests the parts (torchtitan's ``train_state``, a saved
# TrainerState, ``state["progress"]``, ...): their own keys are read like top-level ones.
CONTAINER_KEYS = frozenset({
    "train_state", "trainer_state", "training_state", "state", "states", "checkpoint", "ckpt",
    "resume", "resume_state", "meta", "metadata", "extra", "extra_state", "loop_state",
    "run_state", "app",
})
CONTAINER_DEPTH = 2
# Keys of a progress record: a number under one of them is the progress.
PROGRESS_KEYS = frozenset({"step", "steps", "epoch", "global_step", "iteration", "iter",
                           "steps_done", "batch", "batches_seen", "samples_seen",
                           "tokens_seen", "consumed_samples", "current_step"})
SCHEDULER_KEYS = ("last_epoch", "_step_count", "last_step")
SCALER_KEYS = ("scale", "loss_scale", "cur_scale")
MT19937_WORDS = 624  # numpy's legacy state: 624 uint32 words
PYTHON_RNG_WORDS = 625  # random.getstate()[1]: 624 words + the position
MIN_TORCH_RNG_BYTES = 16  # CUDA's philox state (seed + offset); the CPU's mt19937 is 5056


def describe(value: Any, limit: int = 80) -> str:
    """A short, exact description of a value for a message: ``{'seed': 7}``, ``[]``,
    ``a float32 tensor of shape [2, 2]``, ``a dict with keys 'a', 'b', ...``."""
    if isinstance(value, torch.Tensor):
        return (f"a {str(value.dtype).removeprefix('torch.')} tensor of shape "
                f"{list(value.shape)}")
    if isinstance(value, (bool, int, float, str)) or value is None:
        text = repr(value)
        return text if len(text) <= limit else text[:limit - 1] + "…"
    try:
        text = repr(value)
    except Exception:  # a hostile or odd object: its type is enough
        text = ""
    if text and len(text) <= limit and "tensor(" not in text:
        return text
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:4])
        return f"a dict with keys {keys}{', ...' if len(value) > 4 else ''}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def number(value: Any) -> bool:
    """A progress counter: a finite, non-negative int or float (not a bool), or a
    one-element numeric tensor holding one."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.is_complex() or value.dtype == torch.bool:
            return False
        try:
            value = value.item()
        except (RuntimeError, TypeError, NotImplementedError):  # a meta tensor holds no value
            return False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0


def sequence_of(value: Any, size: int) -> bool:
    """A list/tuple/array/tensor of ``size`` integers (a generator's state words)."""
    try:
        if len(value) != size:
            return False
    except TypeError:
        return False
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() and not value.is_complex()
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is not None:  # a numpy array
        return kind in "iu"
    return isinstance(value, (list, tuple)) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in value)


def generator_state(value: Any, depth: int = 0) -> str | None:
    """The kind of the first real random generator state inside ``value`` (torch, numpy,
    python), or None: a seed is not a generator state."""
    if isinstance(value, torch.Tensor):
        return "torch" if (value.dtype == torch.uint8 and value.dim() == 1
                           and value.numel() >= MIN_TORCH_RNG_BYTES) else None
    if isinstance(value, (list, tuple)) and len(value) >= 3:
        # np.random.get_state(): ('MT19937', keys[624], pos, has_gauss, cached_gaussian)
        if isinstance(value[0], str) and sequence_of(value[1], MT19937_WORDS):
            return "numpy"
        # random.getstate(): (version, 625 ints, gauss)
        if isinstance(value[0], int) and sequence_of(value[1], PYTHON_RNG_WORDS):
            return "python"
    if isinstance(value, dict):
        name = value.get("bit_generator")
        if isinstance(name, str) and (
                (isinstance(value.get("state"), dict) and value["state"])
                or sequence_of(value.get("keys"), MT19937_WORDS)
                or sequence_of(value.get("key"), MT19937_WORDS)):
            return "numpy"  # get_state(legacy=False), a Generator's bit_generator.state
        if isinstance(value.get("version"), int) and sequence_of(value.get("state"),
                                                                 PYTHON_RNG_WORDS):
            return "python"  # what pytest_itera.record writes for random.getstate()
    if depth >= 4:
        return None
    children = value.values() if isinstance(value, dict) else (
        value if isinstance(value, (list, tuple)) else ())
    for child in children:
        kind = generator_state(child, depth + 1)
        if kind is not None:
            return kind
    return None


def optimizer_problem(value: Any) -> str | None:
    """None when ``value`` restores an optimizer (Optimizer.state_dict(): ``state`` and
    ``param_groups``; a stateless SGD's ``state`` is ``{}``), a list of those, or a dict
    of named ones; else what is wrong."""
    if isinstance(value, dict) and ("state" in value or "param_groups" in value):
        if not isinstance(value.get("state"), dict):
            return "has no 'state' dict (Optimizer.state_dict() holds 'state' and " \
                   "'param_groups')"
        groups = value.get("param_groups")
        if not isinstance(groups, (list, tuple)) or not groups or not all(
                isinstance(g, dict) and "params" in g for g in groups):
            return ("has no parameter groups ('param_groups' must list the groups, each with "
                    "its 'params')")
        return None
    items = value if isinstance(value, (list, tuple)) else (
        list(value.values()) if isinstance(value, dict) and value and all(
            isinstance(v, dict) for v in value.values()) else None)
    if items:
        problems = [optimizer_problem(item) for item in items]
        return next((p for p in problems if p is not None), None)
    return (f"holds {describe(value)}, not an optimizer's state_dict() ('state' and "
            "'param_groups')")


def scheduler_problem(value: Any) -> str | None:
    if isinstance(value, dict) and any(isinstance(value.get(k), int) for k in SCHEDULER_KEYS):
        return None
    items = value if isinstance(value, (list, tuple)) else (
        list(value.values()) if isinstance(value, dict) and value and all(
            isinstance(v, dict) for v in value.values()) else None)
    if items:
        problems = [scheduler_problem(item) for item in items]
        return next((p for p in problems if p is not None), None)
    return (f"holds {describe(value)}, not an LR scheduler's state_dict() (no integer "
            "'last_epoch')")


def scaler_problem(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, dict):
        if any(number(value.get(k)) for k in SCALER_KEYS):
            return None
        # apex amp: {"loss_scaler0": {"loss_scale": ...}}; a plugin's nested scaler state
        if depth < 2 and any(isinstance(v, dict) and scaler_problem(v, depth + 1) is None
                             for v in value.values()):
            return None
    return f"holds {describe(value)}, not a grad scaler's state_dict() (no 'scale')"


def progress_problem(value: Any) -> str | None:
    if number(value):
        return None
    if isinstance(value, dict) and any(number(value.get(k)) for k in PROGRESS_KEYS):
        return None
    return (f"holds {describe(value)}, not a step or epoch count (a number, or a dict with "
            "'step' / 'epoch' / 'global_step')")


def rng_problem(value: Any) -> str | None:
    if generator_state(value) is not None:
        return None
    return (f"holds {describe(value)}, which is no random generator state (a seed is not an "
            "RNG state: torch.get_rng_state(), numpy.random.get_state(), random.getstate())")


def model_problem(value: Any) -> str | None:
    if any(True for _ in walk_tensors(value, "")):
        return None
    return f"holds {describe(value)}: no tensors, no weights"


def data_problem(value: Any) -> str | None:
    return None  # any non-empty record of the data position restores it


PART_PROBLEMS = {"model": model_problem, "optimizer": optimizer_problem,
                 "progress": progress_problem, "scheduler": scheduler_problem,
                 "scaler": scaler_problem, "rng": rng_problem, "data": data_problem}


def judge_part(found: Findings, part: str, value: Any, key: str) -> bool:
    """Count ``part`` when ``value`` (found under ``key``) is a restorable state of it;
    else record why not (empty, or not such a state)."""
    if not present(value):
        found.fault(part, "empty", key, describe(value))
        return False
    problem = PART_PROBLEMS[part](value)
    if problem is not None:
        found.fault(part, "not_state", key, problem)
        return False
    found.parts.add(part)
    return True


def has_part_keys(obj: dict[Any, Any], depth: int = 0) -> bool:
    for key, value in obj.items():
        if not isinstance(key, str):
            continue
        if key in KEY_PARTS:
            return True
        if key in CONTAINER_KEYS and isinstance(value, dict) and depth < CONTAINER_DEPTH \
                and has_part_keys(value, depth + 1):
            return True
    return False


def inspect_dict(found: Findings, obj: dict[Any, Any], prefix: str, mapped: bool | None,
                 depth: int = 0, skip: frozenset[str] = frozenset()) -> None:
    """Judge each part key of a checkpoint dict (and of the containers real code nests
    them in), counting tensors and checking the model's weights for non-finite values
    (``mapped`` None: the tensors were counted already)."""
    for key, value in obj.items():
        name = f"{prefix}{key}"
        part = KEY_PARTS.get(key) if isinstance(key, str) else None
        if part is None and isinstance(key, str) and key in CONTAINER_KEYS and \
                isinstance(value, dict) and depth < CONTAINER_DEPTH and \
                has_part_keys(value, depth + 1):
            inspect_dict(found, value, f"{name}.", mapped, depth + 1, skip)
            continue
        if mapped is not None:
            check(found, value, name, part == "model", mapped)
        if part is not None and part not in skip:
            judge_part(found, part, value, name)


def state_value(value: Any) -> bool:
    """A value a module's state_dict holds: a tensor, a nested state, or what quantized
    modules keep (a dtype; packed params as a tuple of tensors)."""
    if isinstance(value, (torch.Tensor, dict, torch.dtype)):
        return True
    return isinstance(value, (tuple, list)) and all(
        isinstance(x, (torch.Tensor, torch.dtype)) or x is None for x in value)


def is_state_dict(obj: Any) -> bool:
    leaves = list(walk_tensors(obj, ""))
    return isinstance(obj, dict) and bool(obj) and len(leaves) > 0 and all(
        state_value(v) for v in obj.values())


def is_flat_state_dict(obj: dict[Any, Any]) -> bool:
    """Tensors by parameter name, some name not a checkpoint key: a model's state_dict even
    when a buffer is called "step" or "epoch"."""
    return is_state_dict(obj) and not any(isinstance(v, dict) for v in obj.values()) and any(
        not (isinstance(k, str) and k in KEY_PARTS) for k in obj)


def inspect_torch_object(found: Findings, obj: Any, mapped: bool) -> None:
    if isinstance(obj, dict) and "pytorch-lightning_version" in obj:
        found.format = "lightning"
        inspect_lightning(found, obj, mapped)
        return
    if not isinstance(obj, dict):
        check(found, obj, "", True, mapped)
        found.notes.append(f"top-level object is a {type(obj).__name__}, not a dict")
        if found.tensors:
            found.parts.add("model")
        return
    if is_flat_state_dict(obj):
        check(found, obj, "", True, mapped)
        found.parts.add("model")
        return
    if "state" in obj and "param_groups" in obj and not has_part_keys(obj):
        check(found, obj, "", False, mapped)
        judge_part(found, "optimizer", obj, "(the whole file)")
        return
    if not has_part_keys(obj) and is_state_dict(obj):
        check(found, obj, "", True, mapped)
        found.parts.add("model")
        return
    inspect_dict(found, obj, "", mapped)


def inspect_lightning(found: Findings, ckpt: dict[str, Any], mapped: bool) -> None:
    for key, value in ckpt.items():
        # Only model weights: callbacks legitimately hold tensor(inf) (ModelCheckpoint).
        check(found, value, str(key), key == "state_dict", mapped)
    # Lightning writes these keys itself: an empty one means the run had none (absent).
    wanted = (("model", "state_dict"), ("optimizer", "optimizer_states"),
              ("scheduler", "lr_schedulers"), ("progress", "global_step"), ("progress", "epoch"),
              *(("scaler", key) for key in LIGHTNING_SCALER_KEYS))
    for part, key in wanted:
        if present(ckpt.get(key)):
            judge_part(found, part, ckpt[key], key)
    fit = ckpt.get("loops", {}).get("fit_loop", {}) if isinstance(ckpt.get("loops"), dict) else {}
    loader = fit.get("state_dict", {}) if isinstance(fit, dict) else {}
    if isinstance(loader, dict) and present(loader.get("combined_loader")):
        judge_part(found, "data", loader["combined_loader"],
                   "loops.fit_loop.state_dict.combined_loader")
    found.missing_reasons["rng"] = "Lightning checkpoints store no RNG state by design"


def inspect_torch_file(found: Findings, path: str, kind: str) -> Any:
    obj = torch_load(path, kind)
    inspect_torch_object(found, obj, mapped=(kind == "zip"))
    return obj


ST_HEADER_CAP = 16 << 20  # a real header is KiB (a 70B shard's: ~100 KiB); the format allows 100 MB


def safetensors_header(path: str) -> None:
    """Check a safetensors header's declared length before its parser reads it: within the
    file, and under ST_HEADER_CAP (1.6 M empty tensors fit in 100 MB: 27 s and 1.5 GiB)."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        raw_len = fh.read(8)
    if len(raw_len) < 8:
        raise Refused("truncated safetensors file (no 8-byte header length)")
    (n,) = struct.unpack("<Q", raw_len)
    if n > size - 8:
        raise Refused(f"safetensors header length {n} exceeds the file size ({size} bytes)")
    if n > ST_HEADER_CAP:
        raise Refused(f"safetensors header is {human_bytes(n)}, over the "
                      f"{human_bytes(ST_HEADER_CAP)} cap (a real model's header is KiB to a few "
                      "MiB): refused unparsed")


def safetensors_refusal(exc: Exception) -> str:
    """The safetensors parser's own verdict on a header, as one sentence."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    detail = text.split("Error while deserializing header:", 1)
    if len(detail) == 2:
        return (f"safetensors header refused by the safetensors parser: {detail[1].strip()} "
                "(truncated or lying header)")
    return f"safetensors could not load it: {explain(exc)}"


def inspect_safetensors(found: Findings, path: str, weights: bool) -> None:
    safetensors_header(path)
    try:
        from safetensors import safe_open
    except ImportError as exc:
        raise Refused("the safetensors package is not installed in the reload interpreter: "
                      "pip install safetensors there") from exc
    try:
        with safe_open(path, framework="pt", device="cpu") as fh:
            for name in fh.keys():  # noqa: SIM118 -- safe_open is not a dict
                t = fh.get_tensor(name)  # one tensor at a time: bounded memory
                found.tensors += 1
                if weights:
                    check_weight(found, name, t, mapped=False)
                del t
    except Refused:
        raise
    except Exception as exc:
        raise Refused(safetensors_refusal(exc)) from exc


def inspect_file(found: Findings, path: str) -> None:
    kind = sniff(path)
    if kind == "empty":
        raise Refused("empty file (0 bytes)")
    if kind == "unknown":
        refuse_code(path, kind)  # a protocol 0/1 pickle starts with no magic byte
        raise Refused(describe_unknown(path))
    if kind == "safetensors":
        found.format = "safetensors"
        inspect_safetensors(found, path, weights=True)
        if found.tensors:  # a file of no tensors restores nothing
            found.parts.add("model")
        for part in PARTS[1:]:
            found.missing_reasons[part] = "a safetensors file holds a flat map of tensors only"
        return
    found.format = "torch"
    if kind == "legacy":
        found.notes.append("legacy (non-zip) torch format: loaded without mmap")
    inspect_torch_file(found, path, kind)


# ----------------------------------------------------------------------------- folders

# transformers' save_pretrained(variant="fp16") writes model.fp16.safetensors, its shards
# model.fp16-00001-of-00002.safetensors and the index model.safetensors.index.fp16.json.
VARIANT = r"(\.[A-Za-z0-9_]+)?"
HF_FILES = (  # (pattern, part, is model weights)
    (rf"(model|pytorch_model|adapter_model){VARIANT}(-\d+-of-\d+)?\.(safetensors|bin)", "model",
     True),
    (r"optimizer\.pt", "optimizer", False),
    (r"scheduler\.pt", "scheduler", False),
    (r"scaler\.pt", "scaler", False),
    (r"rng_state(_\d+)?\.pth", "rng", False),
)
ACCELERATE_FILES = (
    (r"(model|pytorch_model)(_\d+)?(-\d+-of-\d+)?\.(safetensors|bin)", "model", True),
    (r"optimizer(_\d+)?\.bin", "optimizer", False),
    (r"scheduler(_\d+)?\.bin", "scheduler", False),
    (r"scaler\.pt", "scaler", False),
    (r"random_states_\d+\.pkl", "rng", False),
    (r"(sampler|dl_state_dict)(_\d+)?\.bin", "data", False),
    (r"custom_checkpoint_\d+\.pkl", "", False),
)
OPAQUE = {"training_args.bin": "training_args.bin kept as opaque metadata (never unpickled)"}


MODEL_WEIGHTS = rf"(model|pytorch_model){VARIANT}(-\d+-of-\d+)?\.(safetensors|bin)"
HF_MODEL_FILES = ((MODEL_WEIGHTS, "model", True),)


def folder_format(path: str, names: set[str]) -> str:
    if ".metadata" in names and any(n.endswith(".distcp") for n in names):
        return "dcp"
    if "trainer_state.json" in names:
        # Before PEFT: a Trainer checkpoint of a LoRA run holds adapter_model.* and
        # adapter_config.json beside the optimizer, scheduler and RNG states.
        return "hf-trainer"
    if "adapter_config.json" in names:
        return "peft"
    if any(re.fullmatch(r"random_states_\d+\.pkl", n) for n in names) or \
            any(re.fullmatch(r"optimizer(_\d+)?\.bin", n) for n in names):
        return "accelerate"
    if any(re.fullmatch(MODEL_WEIGHTS, n) for n in names):
        # A saved model (transformers' save_pretrained): weights, their shards and config.
        return "hf-model"
    raise Refused("not a recognised checkpoint folder (no .metadata + .distcp, "
                  "adapter_config.json, trainer_state.json, accelerate random_states_*.pkl, "
                  "or model weights)")


def load_member(found: Findings, folder: str, name: str, weights: bool) -> Any:
    """Load one tensor file of a folder; failures name the file."""
    path = os.path.join(folder, name)
    try:
        kind = sniff(path)
        if kind == "empty":
            raise Refused("empty file (0 bytes)")
        if kind == "unknown":
            refuse_code(path, kind)
            raise Refused(describe_unknown(path))
        if kind == "safetensors":
            inspect_safetensors(found, path, weights)
            return None
        obj = torch_load(path, kind)
        check(found, obj, name, weights, mapped=(kind == "zip"))
        return obj
    except Refused as exc:
        raise Refused(exc.reason, exc.file or name, exc.code) from exc


def inspect_members(found: Findings, folder: str, names: set[str],
                    table: tuple[tuple[str, str, bool], ...]) -> dict[str, Any]:
    loaded: dict[str, Any] = {}
    for name in sorted(names):
        if name in OPAQUE:
            if os.path.getsize(os.path.join(folder, name)) == 0:
                raise Refused("empty file (0 bytes)", name)
            found.notes.append(OPAQUE[name])
            continue
        for pattern, part, weights in table:
            if re.fullmatch(pattern, name):
                before = found.tensors
                loaded[name] = load_member(found, folder, name, weights)
                if part == "model" and found.tensors > before:
                    found.parts.add(part)  # weights files of no tensors restore nothing
                elif part and part != "model":
                    judge_part(found, part, loaded[name], name)  # by content, not by name
                break
    return loaded


SHARD = re.compile(r"(.+)-(\d+)-of-(\d+)\.(safetensors|bin)")
SHARD_INDEX = re.compile(rf".+\.(safetensors|bin)\.index{VARIANT}\.json")
MAX_SHARDS = 100_000
MAX_INDEX_BYTES = 64 << 20


def check_shards(folder: str, names: set[str]) -> None:
    """A sharded model is complete: every shard its numbering or its index names is there.

    Loading the shards that are present would otherwise accept a model with a
    missing piece (a subtly broken campaign: a shard lost before the manifest).
    """
    for name in sorted(names):
        numbered = SHARD.fullmatch(name)
        if numbered:
            check_numbered_shards(numbered, name, names)
        if SHARD_INDEX.fullmatch(name):
            check_shard_index(folder, name, names)


def check_numbered_shards(match: re.Match[str], name: str, names: set[str]) -> None:
    prefix, number, total, ext = match.groups()
    count = int(total)
    if not 1 <= int(number) <= count <= MAX_SHARDS:
        raise Refused(f"shard number {number} of {total} is impossible", name)
    for k in range(1, count + 1):
        expected = f"{prefix}-{k:0{len(number)}d}-of-{total}.{ext}"
        if expected not in names:
            raise Refused(f"shard {expected} of this {total}-shard model is missing", name)


def check_shard_index(folder: str, name: str, names: set[str]) -> None:
    path = os.path.join(folder, name)
    if os.path.getsize(path) > MAX_INDEX_BYTES:
        raise Refused(f"shard index over {MAX_INDEX_BYTES >> 20} MiB", name)
    try:
        with open(path, encoding="utf-8") as fh:
            index = json.load(fh)
    except (OSError, ValueError) as exc:
        raise Refused(f"not valid JSON ({exc})", name) from exc
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise Refused("no weight_map: not a shard index", name)
    for shard in sorted({v for v in weight_map.values() if isinstance(v, str)}):
        if "/" in shard or "\\" in shard or shard in (".", ".."):
            raise Refused(f"the index names {shard!r}, which is not a file of this folder", name)
        if shard not in names:
            raise Refused(f"the index lists shard {shard}, which is missing", name)


def inspect_hf_trainer(found: Findings, folder: str, names: set[str]) -> None:
    check_shards(folder, names)
    inspect_members(found, folder, names, HF_FILES)
    try:
        with open(os.path.join(folder, "trainer_state.json"), encoding="utf-8") as fh:
            state = json.load(fh)
    except (OSError, ValueError) as exc:
        raise Refused(f"not valid JSON ({exc})", "trainer_state.json") from exc
    if isinstance(state, dict) and isinstance(state.get("global_step"), int):
        # The Trainer resumes the data position by replaying the sampler to global_step.
        found.parts |= {"progress", "data"}


def inspect_accelerate(found: Findings, folder: str, names: set[str]) -> None:
    check_shards(folder, names)
    loaded = inspect_members(found, folder, names, ACCELERATE_FILES)
    for name, obj in loaded.items():
        if name.startswith("custom_checkpoint_") and isinstance(obj, dict):
            inspect_dict(found, obj, f"{name}:", None, skip=frozenset({"model"}))
    if "progress" not in found.parts:
        found.notes.append("accelerate saves no training progress by itself: register an "
                           "object whose state_dict holds step/epoch (register_for_checkpointing)")


def inspect_hf_model(found: Findings, folder: str, names: set[str]) -> None:
    """A saved model folder: its weights files (every shard) load; it is declared by the
    format of those files, safetensors or torch."""
    safetensors = any(n.endswith(".safetensors") for n in names if re.fullmatch(MODEL_WEIGHTS, n))
    found.format = "safetensors" if safetensors else "torch"  # also when a shard is missing
    check_shards(folder, names)
    inspect_members(found, folder, names, HF_MODEL_FILES)
    for part in PARTS[1:]:
        found.missing_reasons[part] = "a saved model folder holds model weights only"


def inspect_peft(found: Findings, folder: str, names: set[str]) -> None:
    try:
        with open(os.path.join(folder, "adapter_config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as exc:
        raise Refused(f"not valid JSON ({exc})", "adapter_config.json") from exc
    if not isinstance(config, dict) or "peft_type" not in config:
        raise Refused("no peft_type: not a PEFT adapter config", "adapter_config.json")
    weights = [n for n in ("adapter_model.safetensors", "adapter_model.bin") if n in names]
    if not weights:
        raise Refused("PEFT folder without adapter_model.safetensors or adapter_model.bin")
    for name in weights:
        load_member(found, folder, name, weights=True)
        if not found.tensors:
            raise Refused("holds no tensors: an adapter of no weights changes nothing", name)
    found.parts.add("model")
    for part in PARTS[1:]:
        found.missing_reasons[part] = "a PEFT adapter folder holds adapter weights only"


# ----------------------------------------------------------------------------- DCP

DCP_TYPES = {
    "torch.distributed.checkpoint.metadata": {
        "Metadata", "TensorStorageMetadata", "TensorProperties", "ChunkStorageMetadata",
        "BytesStorageMetadata", "MetadataIndex", "StorageMeta", "_MEM_FORMAT_ENCODING"},
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch.serialization": {"_get_layout"},
    "torch": {"Size"},
    "pathlib": {"PosixPath", "PurePosixPath", "PureWindowsPath"},
}


class DcpMetadataUnpickler(pickle.Unpickler):
    """Admits only the types torch 2.13's DCP writes into .metadata (found from real saves)."""

    def find_class(self, module: str, name: str) -> Any:
        if name in DCP_TYPES.get(module, ()):
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise Refused(f"refers to {py3_name(f'{module}.{name}')}, which is not a DCP metadata type "
                      f"{WEIGHTS_ONLY_WHY}", ".metadata", code=(f"{module}.{name}",))


def read_dcp_metadata(folder: str) -> Any:
    import torch.distributed.checkpoint.metadata as md
    try:
        with open(os.path.join(folder, ".metadata"), "rb") as fh:
            meta = DcpMetadataUnpickler(fh).load()
    except Refused:
        raise
    except Exception as exc:
        raise Refused(f"unreadable DCP metadata ({explain(exc)})", ".metadata") from exc
    if not isinstance(meta, md.Metadata):
        raise Refused("does not hold a DCP Metadata object", ".metadata")
    for info in (meta.storage_data or {}).values():
        rel = getattr(info, "relative_path", "")
        if os.path.basename(rel) != rel or rel in ("", ".", ".."):
            raise Refused(f"storage path {rel!r} leaves the checkpoint folder", ".metadata")
    return meta


def dcp_bytes_entry(folder: str, info: Any) -> Any:
    """A BytesStorageMetadata value, read from its slice with weights_only=True ourselves
    (DCP's own planner would torch.load it with weights_only=False)."""
    path = os.path.join(folder, info.relative_path)
    if info.offset < 0 or info.offset + info.length > os.path.getsize(path):
        raise Refused("a byte entry lies outside the file (truncated?)", info.relative_path)
    with open(path, "rb") as fh:
        fh.seek(info.offset)
        data = io.BytesIO(fh.read(info.length))
    with torch.serialization.safe_globals(_numpy_allowlist()):
        try:
            return torch.load(data, weights_only=True, map_location="cpu")
        except Exception as exc:
            raise Refused(explain(exc), info.relative_path) from exc


def inspect_dcp(found: Findings, folder: str, names: set[str]) -> None:
    """Load every entry (tensors through DCP into a template, byte entries ourselves), put
    them back into the nested state the training code saved (DCP's planner_data paths),
    and judge that state like a torch.save dict."""
    import torch.distributed.checkpoint as dcp
    import torch.distributed.checkpoint.metadata as md

    meta = read_dcp_metadata(folder)
    template: dict[str, torch.Tensor] = {}
    paths: dict[str, tuple[Any, ...]] = {}
    for fqn, entry in meta.state_dict_metadata.items():
        path = (meta.planner_data or {}).get(fqn) or tuple(fqn.split("."))
        paths[fqn] = tuple(path)
        if isinstance(entry, md.TensorStorageMetadata):
            template[fqn] = torch.empty(entry.size, dtype=entry.properties.dtype)
    byte_infos = {idx.fqn: info for idx, info in meta.storage_data.items()
                  if idx.fqn not in template}
    values: dict[str, Any] = {fqn: dcp_bytes_entry(folder, info)
                              for fqn, info in sorted(byte_infos.items())}
    load_dcp_tensors(dcp, folder, template)
    values.update(template)
    state = nest_dcp({paths.get(fqn, (fqn,)): value for fqn, value in values.items()})
    inspect_torch_object(found, state, mapped=False)


class _DcpNode(dict):  # type: ignore[type-arg]
    """A container rebuilt from DCP's flattened paths (not a value the checkpoint holds)."""


def nest_dcp(entries: dict[tuple[Any, ...], Any]) -> Any:
    """DCP's flat ``{path: value}`` back into nested dicts and lists (an int path element
    is a list index); a dict with ``param_groups`` gets back the empty ``state`` DCP drops
    (a stateless optimizer's)."""
    root = _DcpNode()
    for path, value in entries.items():
        node = root
        for key in path[:-1]:
            child = node.setdefault(key, _DcpNode())
            if not isinstance(child, _DcpNode):
                raise Refused(f"DCP entries {'.'.join(map(str, path))} and {key} overlap",
                              ".metadata")
            node = child
        node[path[-1]] = value

    def rebuilt(node: Any) -> Any:
        if not isinstance(node, _DcpNode):
            return node
        out = {key: rebuilt(value) for key, value in node.items()}
        if out and all(isinstance(k, int) for k in out) and sorted(out) == list(range(len(out))):
            return [out[i] for i in range(len(out))]
        if "param_groups" in out and "state" not in out:
            out["state"] = {}
        return out

    return rebuilt(root)


def load_dcp_tensors(dcp: Any, folder: str, template: dict[str, torch.Tensor]) -> None:
    from torch.distributed.checkpoint.planner import LoadItemType

    class SafeReader(dcp.FileSystemReader):  # type: ignore[misc]
        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
            meta = read_dcp_metadata(folder)
            meta.storage_meta = meta.storage_meta or __import__(
                "torch.distributed.checkpoint.metadata", fromlist=["StorageMeta"]).StorageMeta()
            meta.storage_meta.load_id = self.load_id
            return meta

        def read_data(self, plan: Any, planner: Any) -> Any:
            if any(item.type == LoadItemType.BYTE_IO for item in plan.items):
                raise Refused("DCP tried to read a byte entry (never unpickled unsafely)")
            return super().read_data(plan, planner)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dcp.load(template, storage_reader=SafeReader(folder), no_dist=True)
        except Refused:
            raise
        except Exception as exc:
            raise Refused(f"DCP could not load the tensors ({explain(exc)})") from exc


def inspect_folder(found: Findings, path: str) -> None:
    names = {n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n))}
    found.format = folder_format(path, names)
    handler = {"dcp": inspect_dcp, "peft": inspect_peft, "hf-trainer": inspect_hf_trainer,
               "accelerate": inspect_accelerate, "hf-model": inspect_hf_model}[found.format]
    subfolders = any(os.path.isdir(os.path.join(path, n)) for n in os.listdir(path))
    if subfolders:
        found.notes.append("subfolders are not inspected")
    handler(found, path, names)
    if found.format in ("hf-trainer", "accelerate") and "model" not in found.parts:
        if not subfolders:  # DeepSpeed/FSDP keep the weights in sub-folders we do not inspect
            raise Refused("holds no model weights (model.safetensors, pytorch_model.bin or "
                          "their shards): it cannot restore the model")
        found.notes.append("no model weights at the top of the folder")


# ----------------------------------------------------------------------------- child and server

def child_verdict(path: str) -> dict[str, Any]:
    found = Findings(None)
    try:
        if os.path.isdir(path):
            inspect_folder(found, path)
        else:
            inspect_file(found, path)
        return found.verdict(None)
    except Refused as exc:
        return found.verdict(exc)
    except MemoryError:
        return found.verdict(Refused("ran out of memory under the reload memory limit"))
    except Exception as exc:  # a loader bug still yields one verdict with its cause
        return found.verdict(Refused(explain(exc)))


def vm_size() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def mapped_bytes(path: str) -> int:
    """Bytes the child maps from files (torch zips with mmap=True, safetensors): the address
    space they take is not memory the limit should count."""
    try:
        paths = [e.path for e in os.scandir(path) if e.is_file()] if os.path.isdir(path) \
            else [path]
        return sum(os.path.getsize(p) for p in paths if sniff(p) in ("zip", "safetensors"))
    except OSError:
        return 0


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
        # Test seams: "layers" picks a subset of the sandbox, "cpu_seconds" its CPU limit.
        layers = request.get("layers")
        sandbox = SANDBOX.apply(float(request.get("cpu_seconds") or request.get("timeout", 120)),
                                layers if isinstance(layers, list) else None)
        debug = request.get("debug")
        if debug == "hang":
            time.sleep(3600)
        if debug == "crash":
            os.abort()
        if debug == "spin":
            while True:
                pass
        verdict = escape_attempts(request) if debug == "escape" else \
            child_verdict(request["path"])
        verdict["sandbox"] = sandbox
        data = json.dumps(verdict).encode()
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
    except BaseException:
        code = 1
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
            _die_with(server)
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
        self.deadline = started + float(request.get("timeout", 120.0))
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
        """End a spare that will get no request."""
        os.close(self.request_w)
        os.close(self.verdict_r)
        os.waitpid(self.pid, 0)

    def abandon(self) -> None:
        """End a child whose verdict nobody will read."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.verdict_r)


class Server:
    """Reads requests as they come, runs up to ``jobs`` children at a time, answers each
    request when its child is done (so replies may come out of order: they carry the id).
    A hung child is killed at its own deadline, counted from its start; the others go on."""

    def __init__(self, warm: str | None, proto: IO[str], jobs: int) -> None:
        self.warm = warm
        self.proto = proto
        self.jobs = max(1, jobs)
        self.inherited = (0, proto.fileno())
        self.queue: list[dict[str, Any]] = []
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
            self.queue.append(request)
        return True

    def start_queued(self) -> None:
        while self.queue and len(self.running) < self.jobs:
            request = self.queue.pop(0)
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


def decode_child(raw: bytes, status: int | None, timeout: float) -> dict[str, Any]:
    if status is None:
        return failed(f"timed out after {timeout:g} s (the loading process was killed)")
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
        return failed(f"the loading process died from {sig}{hint} before giving a verdict")
    return failed(f"the loading process exited with status {os.WEXITSTATUS(status)} "
                  "without a verdict (out of memory under the reload memory limit?)")


def failed(reason: str) -> dict[str, Any]:
    return Findings(None).verdict(Refused(reason))


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
        optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
        torch.save({"model": layer.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": 1, "rng_state": torch.get_rng_state()}, path)
    except OSError:
        return None
    child_verdict(path)
    return path


def main() -> None:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    # The protocol gets its own fd; fd 1 goes to stderr so stray prints cannot corrupt it.
    proto: IO[str] = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    warm = warm_up(os.getcwd()) if REFUSED is None else None
    SANDBOX.prepare()
    proto.write(json.dumps(hello()) + "\n")
    Server(warm, proto, jobs).run()
    proto.flush()
    # Skip the interpreter's teardown of torch (~0.4 s): nothing is left to flush or close.
    os._exit(0)


if __name__ == "__main__":
    main()
