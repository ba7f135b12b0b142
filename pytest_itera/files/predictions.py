"""Reading example IDs from predictions and corpus files, streamed, and comparing them.

No pytest import, no check logic: ``predictions-cover-corpus`` and the data
check's evidence read files through :func:`read_ids` (JSON Lines or CSV, plain or
gzip/zstd-compressed, or Parquet; lines capped at 16 MiB, never a whole file held) and
compare with :func:`cover`.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple, TypeVar

from pytest_itera.files import jsonl, packed

FIRST = 5  # examples shown per kind of problem
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is reported, skipped, never held
_TOO_LONG = "\x00itera:line-too-long\x00"  # stands in for a skipped line in the CSV reader
T = TypeVar("T")


class UnreadableIds(Exception):
    """The file as a whole cannot be read as ID-bearing records (no ID column, a JSON array)."""


class IdLine(NamedTuple):  # a tuple, not a dataclass: millions are made per file
    """One record of an ID-bearing file: its line, its ID, or why it has none."""

    line: int
    id: str | None
    problem: str | None = None
    values: tuple[object, ...] = ()  # the ``fields`` asked for (None: absent), in order


def read_ids(
    path: Path, id_field: str, *, max_line: int = MAX_LINE_BYTES, fields: tuple[str, ...] = ()
) -> Iterator[IdLine]:
    """The IDs of a JSON Lines, CSV/TSV or Parquet file, streamed, one record at a time.

    The format is decided by content, never by the name: gzip (``1f 8b``) and zstd
    (``28 b5 2f fd``) files are decompressed as they are read and judged by their plain
    bytes; ``PAR1`` is Parquet, read a record batch at a time (the row number stands for
    the line). Of plain bytes, a first record starting with '{' is JSON
    Lines; '[' (a JSON array cannot be streamed) and other binary content (NUL bytes:
    Arrow, a spreadsheet) are refused; anything else is CSV with a header
    naming ``id_field`` (tab-separated when the name ends in .tsv, compressed or not, or the
    header has tabs and no commas). Integer IDs compare as their
    decimal text, so a CSV and a JSON file of the same corpus agree. A line
    over ``max_line`` bytes is reported and skipped without being held.
    Each record also carries the values of ``fields`` (the metric recomputation's labels
    and predictions: JSON or Parquet values, CSV text; None where absent).
    A corrupt or truncated compressed stream or Parquet file is :class:`UnreadableIds`
    naming the offset, raised when the reading reaches it.
    Raises OSError or :class:`UnreadableIds`.
    """
    try:
        with _open_regular(path) as handle:
            head = handle.read(1 << 16)
            handle.seek(0)
            kind = packed.packing(head)
            if kind == "parquet":
                yield from _parquet_ids(handle, _size(handle), id_field, fields)
            elif kind is not None:
                with packed.Decompressed(handle, kind, _size(handle)) as plain:
                    inner = plain.peek(1 << 16)
                    if packed.packing(inner) is not None:
                        raise UnreadableIds(f"is {packed.packing(inner)} inside {kind}; "
                                            "write the file packed once")
                    yield from _text_ids(plain, inner, _plain_name(path), id_field, max_line,
                                         fields)
            else:
                yield from _text_ids(handle, head, path.name, id_field, max_line, fields)
    except (packed.Corrupt, packed.MissingColumn) as exc:
        raise UnreadableIds(str(exc)) from None


def _text_ids(
    handle: jsonl.Readable, head: bytes, name: str, id_field: str,
    max_line: int, fields: tuple[str, ...],
) -> Iterator[IdLine]:
    """JSON Lines or CSV/TSV, decided by the first bytes (see :func:`read_ids`)."""
    head = head.lstrip(codecs.BOM_UTF8).lstrip()
    if not head or head.startswith(b"{"):
        yield from _jsonl_ids(jsonl.lines(handle, max_line), id_field, fields)
    elif head.startswith(b"["):
        raise UnreadableIds("is a JSON array; write one JSON object per line (JSON Lines)")
    elif b"\0" in head:
        raise UnreadableIds("is binary (Arrow, a spreadsheet?); write JSON Lines, CSV or "
                            "Parquet, plain or compressed with gzip or zstd")
    else:
        first = head.split(b"\n", 1)[0]
        tabbed = name.lower().endswith(".tsv") or (b"\t" in first and b"," not in first)
        yield from _csv_ids(jsonl.lines(handle, max_line), id_field, "\t" if tabbed else ",",
                            fields)


def _parquet_ids(
    handle: BinaryIO, size: int, id_field: str, fields: tuple[str, ...]
) -> Iterator[IdLine]:
    """Parquet rows as records: the row number (from 1) stands for the line."""
    for number, (value, *values) in packed.parquet_rows(handle, size, (id_field, *fields)):
        if value is None:
            yield IdLine(number, None, f"no value in the {id_field!r} column")
        elif fields:
            yield _id_line(number, value, id_field)._replace(values=tuple(values))
        else:
            yield _id_line(number, value, id_field)


def _size(handle: BinaryIO) -> int:
    return os.fstat(handle.fileno()).st_size


def _plain_name(path: Path) -> str:
    """The name without its compression suffix: ``p.tsv.gz`` is a TSV."""
    name = path.name
    for suffix in (".gz", ".gzip", ".zst", ".zstd"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _open_regular(path: Path) -> BinaryIO:
    """Open without following a link and without blocking on a FIFO; refuse non-files."""
    try:
        return jsonl.open_regular(path)[0]
    except jsonl.NotRegular as exc:
        raise UnreadableIds(str(exc)) from None


def _jsonl_ids(
    lines: Iterable[tuple[int, bytes | None]], id_field: str, fields: tuple[str, ...] = ()
) -> Iterator[IdLine]:
    for number, raw in lines:
        if raw is None:
            yield IdLine(number, None, "over the line length limit (skipped unread)")
            continue
        if number == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))  # str parses faster than bytes
        except UnicodeDecodeError as exc:
            yield IdLine(number, None, f"not UTF-8 (byte {exc.start + 1})")
            continue
        except ValueError as exc:
            yield IdLine(number, None, f"not JSON ({getattr(exc, 'msg', exc)})")
            continue
        if not isinstance(record, dict):
            yield IdLine(number, None, f"a JSON {type(record).__name__}, not an object")
        elif id_field not in record:
            yield IdLine(number, None, f"no {id_field!r} field")
        elif fields:
            found = _id_line(number, record[id_field], id_field)
            yield found._replace(values=tuple(record.get(name) for name in fields))
        else:
            yield _id_line(number, record[id_field], id_field)


def _id_line(number: int, value: object, id_field: str) -> IdLine:
    if isinstance(value, str) and value:
        return IdLine(number, value)
    if isinstance(value, int) and not isinstance(value, bool):
        return IdLine(number, str(value))
    return IdLine(number, None, f"{id_field!r} is {json.dumps(value)[:40]}, not an ID")


class _Numbered:
    """Decoded lines for the csv reader, remembering the physical line it is on."""

    def __init__(self, lines: Iterable[tuple[int, bytes | None]]) -> None:
        self.lines = lines
        self.line = 0

    def __iter__(self) -> Iterator[str]:
        for number, raw in self.lines:
            self.line = number
            yield _TOO_LONG + "\n" if raw is None else raw.decode("utf-8", "replace") + "\n"


def _csv_ids(
    lines: Iterable[tuple[int, bytes | None]], id_field: str, delimiter: str,
    fields: tuple[str, ...] = (),
) -> Iterator[IdLine]:
    source = _Numbered(lines)
    reader = csv.reader(source, delimiter=delimiter)
    try:
        header = next(reader, None)
    except csv.Error as exc:  # e.g. lines ended by a bare CR: the header is all of the file
        raise UnreadableIds(f"has no readable CSV header ({exc})") from None
    if header is None:
        return
    names = [name.strip().lstrip("\ufeff") for name in header]
    if id_field not in names:
        raise UnreadableIds(f"has no {id_field!r} column in its header {names[:10]}")
    column = names.index(id_field)
    wanted = [names.index(name) if name in names else None for name in fields]
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. a field over the csv module's size limit
            yield IdLine(source.line, None, f"not CSV ({exc})")
            continue
        if row and wanted:
            found = _csv_row(source.line, row, column, id_field)
            yield found._replace(values=tuple(
                row[i] if i is not None and i < len(row) else None for i in wanted))
        elif row:
            yield _csv_row(source.line, row, column, id_field)


def _csv_row(line: int, row: list[str], column: int, id_field: str) -> IdLine:
    if row == [_TOO_LONG]:
        return IdLine(line, None, "over the line length limit (skipped unread)")
    if len(row) <= column or not row[column].strip():
        return IdLine(line, None, f"no value in the {id_field!r} column")
    return IdLine(line, row[column].strip())


# ------------------------------------------------------ comparing IDs


@dataclass
class Coverage:
    """How one predictions file covers the corpus: counts and the first few of each problem."""

    records: int = 0
    missing: int = 0
    missing_first: list[str] = field(default_factory=list)
    duplicated: int = 0  # extra lines that repeat an ID already seen
    duplicated_first: list[tuple[str, int]] = field(default_factory=list)
    unknown: int = 0
    unknown_first: list[tuple[str, int]] = field(default_factory=list)
    malformed: int = 0
    malformed_first: list[tuple[int, str]] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.missing or self.duplicated or self.unknown or self.malformed)


def cover(corpus: Mapping[str, int], records: Iterable[IdLine], first: int = FIRST) -> Coverage:
    """Compare streamed records with the corpus IDs (ID -> position, in corpus order).

    Memory: one byte per corpus ID plus the first few examples; unknown IDs
    are counted, never collected.
    """
    seen = bytearray(len(corpus))
    out = Coverage()
    for rec in records:
        out.records += 1
        if rec.id is None:
            out.malformed += 1
            keep_first(out.malformed_first, (rec.line, rec.problem or "no ID"), first)
            continue
        position = corpus.get(rec.id)
        if position is None:
            out.unknown += 1
            keep_first(out.unknown_first, (rec.id, rec.line), first)
        elif seen[position]:
            out.duplicated += 1
            keep_first(out.duplicated_first, (rec.id, rec.line), first)
        else:
            seen[position] = 1
    for corpus_id, position in corpus.items():
        if not seen[position]:
            out.missing += 1
            keep_first(out.missing_first, corpus_id, first)
    return out


def keep_first(items: list[T], item: T, first: int) -> None:
    if len(items) < first:
        items.append(item)
