"""Non-finite model weights: counted tensors, named non-finite ones, bounded memory."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from typing import Any

import torch

from .verdict import Findings, Refused

CHUNK_ELEMENTS = 1 << 24  # finite check in 16 Mi-element chunks: bounded temporaries
_LIBC: Any = None
try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
except OSError:
    _LIBC = None
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def release_pages(t: torch.Tensor) -> None:
    """Drop the checked pages of an mmap'ed, read-only tensor: they refault from the file.

    Keeps peak RSS near a bare mmap load's instead of growing by the whole checkpoint.
    Only called for tensors of a torch.load(mmap=True) mapping, never on anonymous memory.
    """
    if _LIBC is None:
        return
    start = t.data_ptr()
    end = start + t.numel() * t.element_size()
    lo = -(-start // PAGE) * PAGE
    hi = end // PAGE * PAGE
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
