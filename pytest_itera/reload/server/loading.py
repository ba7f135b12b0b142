"""Loading one file safely: its kind by content, torch.load(weights_only=True), and what a
failure means, in one sentence."""

from __future__ import annotations

import re
import warnings
from typing import Any

import torch

from .archives import check_legacy_storages, check_torch_zip
from .pickles import numpy_allowlist, py3_name, refuse_code
from .verdict import OUT_OF_MEMORY, WEIGHTS_ONLY_WHY, Refused

# Opcodes added by pickle protocols 4 and 5, by number (torch.save writes protocol 2).
PROTOCOL_4_OPCODES = {0x95: "FRAME", 0x8C: "SHORT_BINUNICODE", 0x8D: "BINUNICODE8",
                      0x8E: "BINBYTES8", 0x8F: "EMPTY_SET", 0x90: "ADDITEMS",
                      0x91: "FROZENSET", 0x92: "NEWOBJ_EX", 0x93: "STACK_GLOBAL",
                      0x94: "MEMOIZE", 0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER",
                      0x98: "READONLY_BUFFER"}


def explain(exc: BaseException) -> str:
    """One sentence for a load failure; names the offending global of a refused pickle."""
    return explained(exc)[1]


def refused(exc: BaseException) -> Refused:
    """The refusal of a load that raised ``exc``: its sentence and its typed kind."""
    kind, sentence = explained(exc)
    return Refused(sentence, kind=kind)


def explained(exc: BaseException) -> tuple[str, str]:
    """(kind, sentence) of a load failure: torch's words are read here, at the boundary
    with torch, and travel on as a kind (verdict.FAILURES) the client never has to parse."""
    text = str(exc)
    bad = re.search(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)", text)
    if bad:
        return "weights-only", (f"refused by weights_only=True: unsupported global "
                                f"{py3_name(bad.group(1))} {WEIGHTS_ONLY_WHY}")
    if "WeightsUnpickler error" in text:
        detail = text.split("WeightsUnpickler error:", 1)[1].strip().split("\n")[0]
        opcode = re.search(r"Unsupported operand (\d+)", detail)
        if opcode and int(opcode.group(1)) in PROTOCOL_4_OPCODES:
            return "weights-only", (
                f"refused by weights_only=True: the pickle uses protocol 4/5 opcodes "
                f"({PROTOCOL_4_OPCODES[int(opcode.group(1))]}), which torch.load("
                "weights_only=True) cannot read: save with torch.save's default "
                "pickle_protocol")
        return "weights-only", f"refused by weights_only=True: {detail.rstrip('.')}"
    if isinstance(exc, MemoryError) or "can't allocate memory" in text:
        return "memory", OUT_OF_MEMORY
    if isinstance(exc, OSError) and exc.errno == 22:
        return "unreadable", ("unreadable torch archive (truncated or corrupt: invalid "
                              "argument reading it)")
    if isinstance(exc, OSError) and exc.strerror:
        return "unreadable", f"cannot be read: {exc.strerror[:1].lower()}{exc.strerror[1:]}"
    zip_error = re.search(r"PytorchStreamReader failed ([^.\n]*)", text)
    if zip_error:
        return "unreadable", f"corrupt or truncated torch archive ({zip_error.group(1)})"
    first = text.strip().splitlines()[0][:200].rstrip(".") if text.strip() else ""
    # A sentence naming the fault, not a bare exception class (the class in brackets, for a
    # bug report).
    return "unreadable", (f"torch.load could not read it: {first} ({type(exc).__name__})"
                          if first else f"torch.load could not read it ({type(exc).__name__} "
                          "without a message)")


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


# A format's own pickled classes, admitted by name as plain-data stand-ins (never the
# library's code): (stand-in, the dotted name the pickle spells).
StandIns = tuple[tuple[Any, str], ...]


def torch_load(path: str, kind: str, stand_ins: StandIns = ()) -> Any:
    """torch.load with weights_only=True, mmap where the format allows, on CPU; first, the
    globals its pickles would call (a file that holds code is said to, before all else)."""
    refuse_code(path, kind, frozenset(name for _, name in stand_ins))
    if kind == "zip":
        check_torch_zip(path)
    elif kind == "legacy":
        check_legacy_storages(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.serialization.safe_globals([*numpy_allowlist(), *stand_ins]):
            try:
                return torch.load(path, weights_only=True, mmap=(kind == "zip"),
                                  map_location="cpu")
            except Exception as exc:  # every load failure becomes a verdict
                raise refused(exc) from exc
