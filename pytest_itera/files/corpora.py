"""A corpus's content as the set of its (example ID, label) pairs, whatever its bytes.

Two corpora with the same example IDs and the same label per ID are one corpus: a corpus
re-serialised (keys reordered, other whitespace, CSV instead of JSON Lines) keeps its
content. :func:`corpus_content` streams a corpus through :func:`read_ids` (bounded memory:
one record at a time) into two order-free digests: a sum modulo 2**128 of a 128-bit BLAKE2b
hash per ID, and per (ID, label) pair. A sum does not depend on the order of the records
and keeps a repeated record (a multiset), so no sort and no set of IDs is held.

Labels compare as text: a number as its shortest decimal form (``1``, ``1.0`` and ``"1"``
are one label, as a CSV cell and a JSON number of the same corpus must be), a boolean as
``true``/``false``, a list or object as compact JSON with sorted keys. Where the labels
cannot be read (no label field declared, a record without one), the content is the IDs
alone and :attr:`CorpusContent.unlabelled` says why.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_itera.files.predictions import read_ids

_MOD = 1 << 128
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


@dataclass(frozen=True)
class CorpusContent:
    """What a corpus holds, by content: its example count and order-free digests."""

    examples: int  # records with an ID
    ids: int  # order-free digest of the IDs
    pairs: int | None  # order-free digest of the (ID, label) pairs; None: labels not read
    unlabelled: str | None = None  # why the labels were not read
    broken: int = 0  # records without a usable ID (the content is then not comparable)

    def same_as(self, other: CorpusContent) -> bool | None:
        """True/False when both are comparable; by the pairs where both have labels, else
        by the IDs alone. None when either has records without an ID."""
        if self.broken or other.broken:
            return None
        if self.examples != other.examples:
            return False
        if self.pairs is not None and other.pairs is not None:
            return self.pairs == other.pairs
        return self.ids == other.ids


def corpus_content(path: Path, id_field: str, label_field: str | None) -> CorpusContent:
    """Stream the corpus at ``path`` (see the module). Raises OSError or UnreadableIds."""
    ids = pairs = examples = broken = 0
    unlabelled = None if label_field is not None else "the plan declares no label field"
    fields = (label_field,) if label_field is not None else ()
    for rec in read_ids(path, id_field, fields=fields):
        if rec.id is None:
            broken += 1
            continue
        examples += 1
        key = rec.id.encode("utf-8", "surrogatepass")
        ids = (ids + _h(b"%d:" % len(key) + key)) % _MOD
        if unlabelled is not None:
            continue
        label = rec.values[0] if rec.values else None
        if label is None:
            unlabelled = f"line {rec.line} has no {label_field!r} label"
            continue
        text = label_text(label).encode("utf-8", "surrogatepass")
        pairs = (pairs + _h(b"%d:" % len(key) + key + text)) % _MOD
    return CorpusContent(examples, ids, None if unlabelled else pairs, unlabelled, broken)


def label_text(value: object) -> str:
    """A label as text, the same for a CSV cell and the JSON value it was written from."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        value = value.strip()
        if not _NUMBER.fullmatch(value):
            return value
        number = float(value)
        return _number(number) if math.isfinite(number) else value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value) if math.isfinite(value) else str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _h(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "big")
