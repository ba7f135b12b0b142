"""Predictions and corpora as the tools write them: gzip- or zstd-compressed text, and Parquet.

Told apart by their first bytes, never by the file name: ``1f 8b`` is gzip, ``28 b5 2f fd``
zstd, ``PAR1`` Parquet. :class:`Decompressed` streams a compressed file as the plain bytes
the line reader splits (a bounded slice of compressed input at a time, so a small corrupt or
hostile stream never expands into memory), and :func:`parquet_rows` yields the rows of the
columns asked for, one record batch at a time, never the whole table.

A corrupt or truncated stream, or a broken Parquet footer or page, raises :class:`Corrupt`
naming the byte offset in the file. ``pyarrow`` and ``zstandard`` are optional
(``pytest-itera[formats]``) and imported only when such a file is read; without them the
file is :class:`Corrupt` with the install command.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, Literal

__all__ = ["INSTALL", "Corrupt", "Decompressed", "Packing", "packing", "parquet_rows"]

Packing = Literal["gzip", "zstd", "parquet"]
INSTALL = "pip install 'pytest-itera[formats]'"
_MAGIC: tuple[tuple[bytes, Packing], ...] = (
    (b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"PAR1", "parquet"))
_READ = 1 << 20  # compressed bytes read from the file at a time
_SLICE = {"gzip": 16 << 10, "zstd": 2 << 10}  # compressed bytes fed to the decoder at a time
_OUT = 1 << 20  # gzip: most plain bytes one decoder call may return
BATCH_ROWS = 65_536  # Parquet rows per record batch


class Corrupt(Exception):
    """The file's compressed stream or Parquet structure cannot be read (the message names the
    offset), or the library that reads it is not installed."""


def packing(head: bytes) -> Packing | None:
    """The packing of a file from its first bytes, or None for plain bytes."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


class Decompressed:
    """The plain bytes of a gzip or zstd file, streamed: ``read(n)`` and ``peek(n)``.

    Concatenated members (gzip) and frames (zstd) are read as one stream, as ``zcat`` does;
    zero padding between gzip members is skipped. The checksums the format carries are
    verified by the decoder. Raises :class:`Corrupt` on a corrupt, truncated or
    trailing-garbage stream, and OSError when the file cannot be read.
    """

    def __init__(self, raw: BinaryIO, kind: Literal["gzip", "zstd"], size: int) -> None:
        self.raw, self.kind, self.size = raw, kind, size
        self._offset = 0  # compressed bytes read from ``raw``
        self._pending = b""  # compressed bytes read, not yet given to the decoder
        self._member_start: int | None = None  # where the member being decoded began
        self._decoder: Any = None
        self._buffer = bytearray()
        self._eof = False

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._buffer) < size) and not self._eof:
            self._fill()
        if size < 0:
            size = len(self._buffer)
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out

    def peek(self, size: int) -> bytes:
        while len(self._buffer) < size and not self._eof:
            self._fill()
        return bytes(self._buffer[:size])

    def __enter__(self) -> Decompressed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()

    # -------------------------------------------------- decoding

    def _fill(self) -> None:
        if not self._pending:
            block = self.raw.read(_READ)
            if not block:
                self._end()
                return
            self._offset += len(block)
            self._pending = block
        if self._decoder is None and not self._start():
            return
        start = self._offset - len(self._pending)
        piece, rest = self._pending[:_SLICE[self.kind]], self._pending[_SLICE[self.kind]:]
        try:
            if self.kind == "gzip":
                out = self._decoder.decompress(piece, _OUT)
                rest = self._decoder.unconsumed_tail + rest
            else:
                out = self._decoder.decompress(piece)
        except Exception as exc:  # zlib.error, zstandard.ZstdError: the stream is corrupt here
            raise Corrupt(f"is a corrupt {self.kind} stream in its bytes {start}-"
                          f"{start + len(piece) - 1} of {self.size} ({_why(exc)})") from None
        self._buffer += out
        if self._decoder.eof:
            rest = self._decoder.unused_data + rest
            self._decoder = None
        self._pending = rest

    def _start(self) -> bool:
        """Begin a member at the pending bytes; False when only padding was skipped."""
        if self.kind == "gzip":
            stripped = self._pending.lstrip(b"\0")  # zero padding between members, as gzip
            if not stripped:
                self._pending = b""
                return False
            self._pending = stripped
        at = self._offset - len(self._pending)
        magic = _MAGIC[0][0] if self.kind == "gzip" else _MAGIC[1][0]
        if not magic.startswith(self._pending[:len(magic)]):
            raise Corrupt(f"has bytes that are not {self.kind} after its {self.kind} stream, "
                          f"at offset {at} of {self.size}")
        self._member_start = at
        if self.kind == "gzip":
            self._decoder = zlib.decompressobj(wbits=31)
        else:
            self._decoder = _zstandard().ZstdDecompressor().decompressobj()
        return True

    def _end(self) -> None:
        self._eof = True
        if self._decoder is not None:
            part = "member" if self.kind == "gzip" else "frame"
            raise Corrupt(f"is a truncated {self.kind} stream: it ends at byte {self.size} "
                          f"inside the {part} that begins at offset {self._member_start} "
                          "(an interrupted copy?)")


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:
        raise Corrupt(f"is zstd-compressed; reading it needs zstandard: {INSTALL}") from None
    return zstandard


def _why(exc: BaseException) -> str:
    return str(exc).removeprefix("Error -3 while decompressing data: ") or type(exc).__name__


# ------------------------------------------------------------------ Parquet


def parquet_rows(
    raw: BinaryIO, size: int, columns: tuple[str, ...]
) -> Iterator[tuple[int, tuple[object, ...]]]:
    """(row number from 1, values of ``columns``) per row, one record batch at a time.

    A column absent from the file gives None in every row; the first column (the ID) must
    exist. Values are what JSON would hold: str, int, float, bool, None, list, dict; other
    types (dates, decimals, bytes) as their text. Raises :class:`Corrupt` (a broken footer
    or page, naming the offset) and :class:`MissingColumn`.
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise Corrupt(f"is Parquet; reading it needs pyarrow: {INSTALL}") from None
    _footer(raw, size)
    try:
        raw.seek(0)
        file = pq.ParquetFile(raw, buffer_size=1 << 20)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise Corrupt(f"has a corrupt Parquet footer before offset {size - 8} "
                      f"({_arrow_why(exc)})") from None
    names = file.schema_arrow.names
    if columns[0] not in names:
        raise MissingColumn(f"has no {columns[0]!r} column in its Parquet schema {names[:10]}")
    present = [c for c in dict.fromkeys(columns) if c in names]
    plain = {c: _plain_type(pa, file.schema_arrow.field(c).type) for c in present}
    meta = file.metadata
    row = 0
    for group in range(meta.num_row_groups):
        try:
            for batch in file.iter_batches(BATCH_ROWS, row_groups=[group], columns=present,
                                           use_threads=False):
                values = {c: _values(batch.column(c).to_pylist(), plain[c]) for c in present}
                missing = [None] * batch.num_rows
                cells = [values.get(c, missing) for c in columns]
                yield from enumerate(zip(*cells, strict=True), start=row + 1)
                row += batch.num_rows
        except (pa.ArrowException, OSError, ValueError) as exc:
            at = _group_offset(meta.row_group(group))
            raise Corrupt(f"has a corrupt Parquet row group {group} (rows from {row + 1}, at "
                          f"offset {at}): {_arrow_why(exc)}") from None


class MissingColumn(Exception):
    """A Parquet file without the ID column."""


def _footer(raw: BinaryIO, size: int) -> None:
    """Check the 8-byte tail (footer length, PAR1) before pyarrow reads it, to name offsets."""
    if size < 12:
        raise Corrupt(f"is {size} bytes: too short for Parquet (a truncated file?)")
    raw.seek(size - 8)
    tail = raw.read(8)
    if tail[4:] != b"PAR1":
        raise Corrupt(f"has no Parquet footer: the bytes at offset {size - 4} are not 'PAR1' "
                      "(a truncated file?)")
    length = int.from_bytes(tail[:4], "little")
    if length > size - 12:
        raise Corrupt(f"has a corrupt Parquet footer: the length at offset {size - 8} says "
                      f"{length} bytes, the file has {size - 12} before it")


def _arrow_why(exc: BaseException) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def _plain_type(pa: Any, kind: Any) -> bool:
    types = pa.types
    return bool(types.is_integer(kind) or types.is_floating(kind) or types.is_boolean(kind)
                or types.is_string(kind) or types.is_large_string(kind)
                or types.is_null(kind))


def _values(values: list[Any], plain: bool) -> list[Any]:
    return values if plain else [_json_like(v) for v in values]


def _json_like(value: object) -> object:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json_like(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_like(v) for k, v in value.items()}
    return str(value)


def _group_offset(group: Any) -> int:
    offsets = []
    for i in range(group.num_columns):
        column = group.column(i)
        offsets.append(column.dictionary_page_offset if column.has_dictionary_page
                       else column.data_page_offset)
    return min(offsets) if offsets else 0
