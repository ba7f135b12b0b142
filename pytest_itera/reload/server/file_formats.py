"""A single checkpoint file: a plain torch.save object, a Lightning checkpoint, safetensors."""

from __future__ import annotations

import os
import struct
from typing import Any

import torch

from .finite import check, check_weight, walk_tensors
from .loading import describe_unknown, explain, sniff, torch_load
from .parts import KEY_PARTS, has_part_keys, inspect_dict, judge_part, present
from .pickles import refuse_code
from .siblings import formats
from .verdict import Findings, Refused, human_bytes


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


# (part, key) of a Lightning checkpoint, a nested key dotted (reload/formats.py).
LIGHTNING_KEYS = formats.keys("lightning")
LIGHTNING_WEIGHTS = frozenset(key for part, key in LIGHTNING_KEYS if part == "model")


def inspect_lightning(found: Findings, ckpt: dict[str, Any], mapped: bool) -> None:
    for key, value in ckpt.items():
        # Only model weights: callbacks legitimately hold tensor(inf) (ModelCheckpoint).
        check(found, value, str(key), key in LIGHTNING_WEIGHTS, mapped)
    # Lightning writes these keys itself: an empty one means the run had none (absent).
    for part, key in LIGHTNING_KEYS:
        value = nested(ckpt, key)
        if present(value):
            judge_part(found, part, value, key)
    found.missing_reasons.update(formats.absent("lightning"))


def nested(obj: dict[str, Any], dotted: str) -> Any:
    """The value under a dotted key (``loops.fit_loop.state_dict.combined_loader``), None
    where a level is missing or not a dict."""
    value: Any = obj
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


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


def inspect_safetensors(found: Findings, path: str, weights: bool,
                        namespace: str = "") -> list[str]:
    """Check each tensor of a safetensors file (recorded as ``namespace`` + its name); its
    tensor names."""
    safetensors_header(path)
    try:
        from safetensors import safe_open
    except ImportError as exc:
        raise Refused("the safetensors package is not installed in the reload interpreter: "
                      "pip install safetensors there", kind="missing-package") from exc
    try:
        with safe_open(path, framework="pt", device="cpu") as fh:
            names = list(fh.keys())
            for name in names:
                t = fh.get_tensor(name)  # one tensor at a time: bounded memory
                found.tensors += 1
                if weights:
                    check_weight(found, name, t, mapped=False, rel=namespace + name)
                del t
    except Refused:
        raise
    except Exception as exc:
        raise Refused(safetensors_refusal(exc)) from exc
    return names


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
        found.missing_reasons.update(formats.absent("safetensors"))
        return
    found.format = "torch"
    if kind == "legacy":
        found.notes.append("legacy (non-zip) torch format: loaded without mmap")
    inspect_torch_file(found, path, kind)
