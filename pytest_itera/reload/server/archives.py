"""A torch archive's structure and the storages its pickle declares, checked before torch.load.

A torch.save zip (its directory, by the standard library) and a legacy (pre-zip) torch file
(its pickles, by a symbolic walk) are refused when their records overlap, lie about their
sizes or declare storages and tensors the bytes cannot hold; nothing is unpickled.
"""

from __future__ import annotations

import os
import pickletools
import re
import struct
import warnings
import zipfile
from typing import IO, Any

import torch

from .pickles import MARK, OPAQUE, PICKLE_CAP, STR_OPS, generic_stack_effect, pickle_globals
from .verdict import Refused, human_bytes

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
    fault = entry_fault(info)
    if fault is not None:
        raise Refused(f"{ZIP_HOSTILE}: entry {name!r} {fault}")
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


def entry_fault(info: zipfile.ZipInfo) -> str | None:
    """Why torch cannot read one zip entry as torch.save writes it (stored, not encrypted,
    no patch data), as the end of a sentence; None for an entry torch.save could write."""
    if info.flag_bits & 0x41:  # bit 0: encrypted; bit 6: strong encryption
        strong = " with strong encryption (flag bit 6)" if info.flag_bits & 0x40 else \
            " (flag bit 0)"
        return (f"is encrypted{strong}, which torch.load cannot read; torch.save never "
                "encrypts: save the checkpoint again with torch.save and ship that file")
    if info.flag_bits & 0x20:
        return ("uses patched data (flag bit 5), which torch.load cannot read; torch.save "
                "never writes it: save the checkpoint again with torch.save and ship that file")
    if info.compress_type != zipfile.ZIP_STORED:
        return (f"is compressed (zip method {info.compress_type}); torch.save writes stored "
                "entries only, and a memory-mapped reload would read the compressed bytes as "
                "data")
    return None


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
            keys = [arg for op, arg, _ in pickletools.genops(fh) if op.name in STR_OPS]
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


_INT_OPS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"}
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
            stack.append(MARK)
        elif name in _INT_OPS or name in STR_OPS:
            stack.append(arg)
        elif name == "GLOBAL":
            stack.append(_Global(str(arg)))
        elif name == "STACK_GLOBAL":
            qualname, module = stack.pop(), stack.pop()
            stack.append(_Global(f"{module} {qualname}"))
        elif name == "TUPLE":
            mark = len(stack) - 1 - stack[::-1].index(MARK)
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
                stack.append(OPAQUE)
        elif name == "REDUCE":
            args, func = stack.pop(), stack.pop()
            if func in _REBUILD_TENSOR and isinstance(args, tuple) and len(args) >= 4 and \
                    isinstance(args[0], _Storage) and _ints(args[1:2]) and _ints(args[2]) and \
                    _ints(args[3]) and len(args[2]) == len(args[3]):
                # _rebuild_tensor_v3(storage, offset, size, stride, grad, hooks, dtype)
                dtype = args[6] if func.endswith("v3") and len(args) > 6 and \
                    isinstance(args[6], _Global) else ""
                views.append((args[0], str(dtype), args[1], args[2], args[3]))
            stack.append(OPAQUE)
        else:
            generic_stack_effect(stack, op)
    return storages, views


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
