"""Predictions as the tools write them (issue 28, item 4): gzip- and zstd-compressed JSON Lines
and CSV, and Parquet, read by ``read_ids`` exactly as the plain files, told apart by content,
and a corrupt or truncated stream or Parquet file refused naming the offset.

The files are written by the real writers: ``gzip``, ``zstandard``, ``pyarrow.parquet``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pytest_itera.files import packed
from pytest_itera.files.corpora import corpus_content
from pytest_itera.files.predictions import IdLine, UnreadableIds, read_ids

IDS = [f"ex-{i}" for i in range(1, 7)]
LABELS = ["pos", "neg", "pos", "neg", "pos", None]


def _jsonl() -> bytes:
    return "".join(json.dumps({"id": i, "label": lab} if lab is not None else {"id": i}) + "\n"
                   for i, lab in zip(IDS, LABELS, strict=True)).encode()


def _csv() -> bytes:
    return b"label,id\n" + b"".join(f"{lab or ''},{i}\n".encode()
                                    for i, lab in zip(IDS, LABELS, strict=True))


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def _parquet(path: Path, table: dict[str, Any] | None = None, **write: Any) -> Path:
    pq.write_table(pa.table(table or {"id": IDS, "label": LABELS}), path, **write)
    return path


def _lines(path: Path, fields: tuple[str, ...] = ("label",)) -> list[IdLine]:
    return list(read_ids(path, "id", fields=fields))


def _refusal(path: Path) -> str:
    with pytest.raises(UnreadableIds) as caught:
        list(read_ids(path, "id"))
    return str(caught.value)


@pytest.mark.parametrize("name", ["p.jsonl.gz", "p.jsonl.zst", "p.csv.gz", "p.csv.zst",
                                  "p.parquet"])
def test_each_packing_reads_as_the_plain_file(tmp_path: Path, name: str) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(_jsonl())
    path = tmp_path / name
    data = _csv() if ".csv" in name else _jsonl()
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    elif name.endswith(".zst"):
        path.write_bytes(_zstd(data))
    else:
        _parquet(path)
    got = _lines(path)
    assert [(r.id, r.problem) for r in got] == [(i, None) for i in IDS]
    if ".csv" in name:  # CSV text: the empty cell is an empty label, as plain CSV gives
        assert [r.values for r in got] == [(lab or "",) for lab in LABELS]
    else:
        assert got == _lines(plain)
    assert corpus_content(path, "id", None) == corpus_content(plain, "id", None)


def test_told_apart_by_content_not_by_the_name(tmp_path: Path) -> None:
    gz_named_jsonl = tmp_path / "predictions.jsonl"
    gz_named_jsonl.write_bytes(gzip.compress(_jsonl()))
    parquet_named_csv = _parquet(tmp_path / "predictions.csv")
    zst_named_parquet = tmp_path / "predictions.parquet"
    zst_named_parquet.write_bytes(_zstd(_jsonl()))
    plain_named_gz = tmp_path / "predictions.jsonl.gz"
    plain_named_gz.write_bytes(_jsonl())
    for path in (gz_named_jsonl, parquet_named_csv, zst_named_parquet, plain_named_gz):
        assert [r.id for r in _lines(path)] == IDS, path.name


def test_a_compressed_tsv_keeps_its_tab_separator_from_the_name(tmp_path: Path) -> None:
    path = tmp_path / "p.tsv.gz"
    path.write_bytes(gzip.compress(b"id\tlabel,with comma\nex-1\tpos\n"))
    assert _lines(path, ()) == [IdLine(2, "ex-1")]


def test_integer_ids_and_typed_values_in_parquet(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "p.parquet", {
        "id": [1, 2, None], "score": [0.5, None, 1.0],
        "tags": [["a"], [], None], "meta": [{"k": 1}, None, {"k": 2}]})
    assert _lines(path, ("score", "tags", "meta", "absent")) == [
        IdLine(1, "1", values=(0.5, ["a"], {"k": 1}, None)),
        IdLine(2, "2", values=(None, [], None, None)),
        IdLine(3, None, "no value in the 'id' column")]


def test_parquet_is_read_row_group_by_row_group(tmp_path: Path) -> None:
    """250,000 rows in 25 row groups: every row, numbered in order, one batch at a time."""
    n = 250_000
    path = _parquet(tmp_path / "p.parquet", {"id": list(range(n)), "pad": ["x" * 10] * n},
                    row_group_size=10_000)
    assert pq.ParquetFile(path).metadata.num_row_groups == 25
    numbers = [r.line for r in read_ids(path, "id")]
    assert numbers == list(range(1, n + 1))


def test_parquet_without_the_id_column(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "p.parquet", {"example": IDS})
    assert _refusal(path) == "has no 'id' column in its Parquet schema ['example']"


def test_concatenated_members_and_frames_are_one_stream(tmp_path: Path) -> None:
    first, second = _jsonl()[:40], _jsonl()[40:]  # cut inside a line
    gz = tmp_path / "p.gz"
    gz.write_bytes(gzip.compress(first) + gzip.compress(second) + b"\0" * 8)  # zero padding
    zst = tmp_path / "p.zst"
    zst.write_bytes(_zstd(first) + _zstd(second))
    assert [r.id for r in _lines(gz)] == [r.id for r in _lines(zst)] == IDS


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_truncated_stream_names_where_it_ends(tmp_path: Path, kind: str) -> None:
    data = (gzip.compress if kind == "gzip" else _zstd)(_jsonl() * 50)
    path = tmp_path / "p.jsonl.z"
    path.write_bytes(data[:-7])
    part = "member" if kind == "gzip" else "frame"
    assert _refusal(path) == (
        f"is a truncated {kind} stream: it ends at byte {len(data) - 7} inside the {part} "
        "that begins at offset 0 (an interrupted copy?)")


def test_a_corrupt_gzip_stream_names_the_bytes(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(_jsonl() * 50))
    data[12] ^= 0xFF  # inside the first deflate block
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(bytes(data))
    assert _refusal(path).startswith(
        f"is a corrupt gzip stream in its bytes 0-{len(data) - 1} of {len(data)} (")


def test_a_gzip_checksum_mismatch_is_corrupt(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(_jsonl()))
    data[-6] ^= 0x01  # the CRC-32 in the trailer
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(bytes(data))
    assert _refusal(path) == (f"is a corrupt gzip stream in its bytes 0-{len(data) - 1} of "
                              f"{len(data)} (incorrect data check)")


def test_a_zstd_checksum_mismatch_names_the_slice(tmp_path: Path) -> None:
    data = bytearray(_zstd(b"".join(json.dumps({"id": i}).encode() + b"\n"
                                    for i in range(20_000))))
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "p.jsonl.zst"
    path.write_bytes(bytes(data))
    message = _refusal(path)
    assert message.startswith("is a corrupt zstd stream in its bytes "), message
    assert f" of {len(data)} (" in message


def test_garbage_after_the_stream(tmp_path: Path) -> None:
    data = gzip.compress(_jsonl())
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(data + b"trailing")
    assert _refusal(path) == (f"has bytes that are not gzip after its gzip stream, at offset "
                              f"{len(data)} of {len(data) + 8}")


def test_packed_twice_or_binary_inside(tmp_path: Path) -> None:
    twice = tmp_path / "p.gz.gz"
    twice.write_bytes(gzip.compress(gzip.compress(_jsonl())))
    assert _refusal(twice) == "is gzip inside gzip; write the file packed once"
    arrow = tmp_path / "p.arrow.zst"
    arrow.write_bytes(_zstd(b"ARROW1\0\0" + b"\0" * 64))
    assert _refusal(arrow).startswith("is binary (Arrow, a spreadsheet?)")


def test_a_truncated_parquet_file_has_no_footer(tmp_path: Path) -> None:
    data = _parquet(tmp_path / "p.parquet").read_bytes()
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[:-30])
    assert _refusal(path) == (f"has no Parquet footer: the bytes at offset {len(data) - 34} "
                              "are not 'PAR1' (a truncated file?)")


def test_a_parquet_footer_length_past_the_start(tmp_path: Path) -> None:
    data = bytearray(_parquet(tmp_path / "p.parquet").read_bytes())
    data[-8:-4] = (len(data) * 2).to_bytes(4, "little")
    path = tmp_path / "bad.parquet"
    path.write_bytes(bytes(data))
    assert _refusal(path) == (f"has a corrupt Parquet footer: the length at offset "
                              f"{len(data) - 8} says {len(data) * 2} bytes, the file has "
                              f"{len(data) - 12} before it")


def test_a_corrupt_parquet_footer(tmp_path: Path) -> None:
    data = bytearray(_parquet(tmp_path / "p.parquet").read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    data[start + 4:start + 24] = b"\x07" * 20
    path = tmp_path / "bad.parquet"
    path.write_bytes(bytes(data))
    assert _refusal(path).startswith(
        f"has a corrupt Parquet footer before offset {len(data) - 8} (")


def test_a_corrupt_parquet_page_names_its_row_group_and_offset(tmp_path: Path) -> None:
    source = _parquet(tmp_path / "p.parquet", row_group_size=3)
    group = pq.ParquetFile(source).metadata.row_group(1)
    offsets = [group.column(i).dictionary_page_offset or group.column(i).data_page_offset
               for i in range(group.num_columns)]
    data = bytearray(source.read_bytes())
    data[min(offsets):min(offsets) + 16] = b"\xff" * 16  # the page header of row group 1
    path = tmp_path / "bad.parquet"
    path.write_bytes(bytes(data))
    lines: list[IdLine] = []
    with pytest.raises(UnreadableIds) as caught:
        lines.extend(read_ids(path, "id"))
    assert [r.id for r in lines] == IDS[:3]  # row group 0 was read, then the refusal
    assert str(caught.value).startswith(
        f"has a corrupt Parquet row group 1 (rows from 4, at offset {min(offsets)}): ")


@pytest.mark.parametrize(("module", "name", "data"), [
    ("pyarrow", "p.parquet", None), ("zstandard", "p.jsonl.zst", _zstd(_jsonl()))])
def test_without_the_formats_extra_the_file_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, name: str,
        data: bytes | None) -> None:
    path = tmp_path / name
    if data is None:
        _parquet(path)
    else:
        path.write_bytes(data)
    for loaded in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.setitem(sys.modules, loaded, None)  # an import of it raises ImportError
    monkeypatch.setitem(sys.modules, module, None)
    kind = "Parquet" if module == "pyarrow" else "zstd-compressed"
    assert _refusal(path) == (f"is {kind}; reading it needs {module}: "
                              "pip install 'pytest-itera[formats]'")


def test_decompressed_output_is_bounded_per_step(tmp_path: Path) -> None:
    """A small gzip of 64 MiB of newlines is read a bounded slice at a time, never whole."""
    path = tmp_path / "bomb.gz"
    path.write_bytes(gzip.compress(b"\n" * (64 << 20), compresslevel=1))
    with path.open("rb") as raw:
        stream = packed.Decompressed(raw, "gzip", path.stat().st_size)
        assert len(stream.read(100)) == 100
        assert len(stream._buffer) <= 2 << 20  # one decoder step, not the 64 MiB
