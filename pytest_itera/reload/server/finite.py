"""Non-finite model weights: counted tensors, named non-finite ones, bounded memory."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from typing import Any

import torch

from .verdict import Findings, Refused

CHUNK_ELEMENTS = 1 << 24  # finite check in 16 Mi-element chunks: bounded temporaries
_LIBC: Any = None
try:
    # The C library already loaded in this process (dlopen(NULL)): find_library would run
    # `ldconfig -p` on the server's start-up path.
    _LIBC = ctypes.CDLL(None, use_errno=True)
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


def tensor_finite(t: torch.Tensor, mapped: bool, words: list[int] | None = None) -> bool:
    """Whether every element is finite; ``words`` (when given) gets each checked chunk's
    :func:`word_sum`, taken while its pages are in memory (no second read)."""
    if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return True
    t = stored_values(t)
    if t.numel() == 0:
        return True
    flat = t.reshape(-1) if t.is_contiguous() else t
    if flat.dim() != 1:
        if words is not None:
            words.append(word_sum(flat))
        return chunk_finite(flat)
    for start in range(0, flat.numel(), CHUNK_ELEMENTS):
        chunk = flat[start:start + CHUNK_ELEMENTS]
        if not chunk_finite(chunk):
            return False
        if words is not None:
            words.append(word_sum(chunk))
        if mapped:
            release_pages(chunk)
    return True


WORD_MOD = 1 << 64


def word_sum(t: torch.Tensor) -> int:
    """A tensor's bytes read as 64-bit words and summed modulo 2**64 (a tail of under 8
    bytes byte by byte): a checksum at memory speed (sha256 is 15x slower), independent of
    how the sum is split, so equal bytes give equal sums in every format."""
    raw = t.reshape(-1)
    try:
        raw = raw.view(torch.uint8)
    except RuntimeError:  # a dtype whose bytes cannot be viewed in place
        raw = raw.contiguous().clone().view(torch.uint8)
    whole = raw.numel() // 8 * 8
    total = int(raw[whole:].to(torch.int64).sum()) if whole < raw.numel() else 0
    if whole:
        try:
            words = raw[:whole].view(torch.int64)
        except RuntimeError:  # not 8-byte aligned in its storage
            words = raw[:whole].clone().view(torch.int64)
        total += int(words.sum())
    return total % WORD_MOD


def walk_tensors(obj: Any, prefix: str) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from walk_tensors(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from walk_tensors(value, f"{prefix}.{i}" if prefix else str(i))


def check(found: Findings, obj: Any, prefix: str, weights: bool, mapped: bool,
          namespace: str = "") -> None:
    """Count tensors; for model weights, record the non-finite ones by name, and the tied
    ones (the same view of one storage under two names: ``obj`` is alive throughout, so an
    address is never reused within it). ``namespace`` prefixes the model's tensor names (a
    folder's second model: its names are not the first one's)."""
    views: dict[tuple[Any, ...], str] = {}
    for rel, t in walk_tensors(obj, ""):
        found.tensors += 1
        if weights:
            name = f"{prefix}.{rel}" if prefix and rel else prefix or rel
            check_weight(found, name, t, mapped, namespace + rel)
            first = views.setdefault(view_of(t), namespace + rel)
            if first != namespace + rel and t.numel():
                found.tied[namespace + rel] = first


def view_of(t: torch.Tensor) -> tuple[Any, ...]:
    """What makes two tensors one: the same storage, offset, shape, stride and dtype."""
    try:
        return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
                t.stride(), t.dtype)
    except (RuntimeError, TypeError, NotImplementedError):  # sparse, nested: never tied
        return (id(t),)


def check_weight(found: Findings, name: str, t: torch.Tensor, mapped: bool,
                 rel: str | None = None) -> None:
    """``rel``: the tensor's name in the model's state dict (``name`` without the key or
    file that holds the model), under which its shape and checksum are recorded."""
    if t.is_meta:
        raise Refused(f"model weight {name} is a meta tensor: it holds no data (saved before "
                      "the weights were materialised)")
    words: list[int] = []
    try:
        finite = tensor_finite(t, mapped, words)
    except (RuntimeError, TypeError, NotImplementedError):
        # A dtype or layout without the kernels (e.g. float4): it loaded, it is not judged.
        found.unchecked.append(f"{name} ({str(t.dtype).removeprefix('torch.')}, "
                               f"{str(t.layout).removeprefix('torch.')})")
        finite, words = True, []  # not judged (the note says so); its shape still counts
    if not finite:
        found.nonfinite.append(name)
        nan, inf = count_nonfinite(t)
        found.nan_values += nan
        found.inf_values += inf
        words = []  # the sum stopped at the first non-finite chunk
    record_weight(found, name if rel is None else rel, t, words)


def record_weight(found: Findings, rel: str, t: torch.Tensor, words: list[int]) -> None:
    """The shape, dtype and checksum of a model tensor (the facts that tell whose it is)."""
    if not words:  # an integer tensor, or an empty one: not summed by the finite check
        try:
            values = t.int_repr() if t.is_quantized else stored_values(t)
            words = [word_sum(values)] if values.numel() else []
        except (RuntimeError, TypeError, NotImplementedError):
            words = [-1]  # no checksum: the digest then never equals another's by accident
    try:
        shape = list(t.shape)
    except (RuntimeError, TypeError, NotImplementedError):  # a nested tensor has no one shape
        shape = [-1]
    found.model[rel] = (shape, str(t.dtype).removeprefix("torch."), sum(words) % WORD_MOD)


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
