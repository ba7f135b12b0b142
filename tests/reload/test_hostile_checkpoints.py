"""Hostile checkpoint CONTAINERS: torch zips and safetensors headers that lie about their layout.

Each archive is crafted honestly from a real ``torch.save`` file: bytes of ``data.pkl`` or of the
zip directory are patched in place (same length, CRC-32 fixed in both the local header and the
central directory), so the zip stays well-formed and aligned and only the lie remains.  Every
hostile case must: fail, name the file and the cause, and leave the reload server alive (a good
checkpoint reloaded right after still passes).  Hostile *pickles* are in test_reload_safety.py.
"""

from __future__ import annotations

import fnmatch
import io
import json
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from pytest_itera.reload import Reloader
from tests import checkpoints
from tests.factory import CampaignBuilder, expect
from tests.runner import Itera

HOSTILE = "hostile or corrupt torch archive"
ELEMENTS = 70_000  # > 65535: numel and shape are pickled as 4-byte BININTs we can patch in place


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return checkpoints.general_checkpoint(tmp_path_factory.mktemp("good"))


def assert_refused_then_alive(reloader: Reloader, good: Path, path: Path, display: str,
                              expected: str) -> None:
    res = reloader.reload(path, display)
    assert (res.ok, res.cause) == (False, f"{display}: {expected}")
    after = reloader.reload(good, "resume.pt")
    assert after.ok, after.cause  # the server kept serving


# ----------------------------------------------------------------------------- crafting


def tensor_file(folder: Path, name: str, dtype: torch.dtype = torch.float32) -> Path:
    path = folder / name
    torch.save({"w": torch.ones(ELEMENTS, dtype=dtype)}, path)
    return path


def central_records(raw: bytes) -> dict[str, int]:
    """{entry name: offset of its central-directory record} (stdlib gives the directory start)."""
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        pos = zf.start_dir
    out = {}
    while raw[pos:pos + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", raw, pos + 28)
        out[raw[pos + 46:pos + 46 + name_len].decode()] = pos
        pos += 46 + name_len + extra_len + comment_len
    return out


def entry(path: Path, suffix: str) -> zipfile.ZipInfo:
    with zipfile.ZipFile(path) as zf:
        return next(i for i in zf.infolist() if i.filename.endswith(suffix))


def patch_pickle(path: Path, old: bytes, new: bytes, count: int = -1) -> None:
    """Replace bytes inside the stored data.pkl record (same length) and fix its CRC-32 in the
    local header and the central directory, so the zip stays valid."""
    assert len(old) == len(new)
    raw = bytearray(path.read_bytes())
    info = entry(path, "/data.pkl")
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    pkl = bytes(raw[start:start + info.file_size])
    assert pkl.count(old) >= 1
    patched = pkl.replace(old, new, count)
    raw[start:start + len(pkl)] = patched
    crc = zlib.crc32(patched)
    struct.pack_into("<I", raw, info.header_offset + 14, crc)
    struct.pack_into("<I", raw, central_records(bytes(raw))[info.filename] + 16, crc)
    path.write_bytes(bytes(raw))
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None  # well-formed: only the lie remains


def patch_central(path: Path, suffix: str, *, offset: int | None = None,
                  size: int | None = None) -> None:
    """Rewrite one central-directory record's local-header offset and/or stored size."""
    raw = bytearray(path.read_bytes())
    info = entry(path, suffix)
    at = central_records(bytes(raw))[info.filename]
    if size is not None:
        struct.pack_into("<II", raw, at + 20, size, size)  # compressed, uncompressed
    if offset is not None:
        struct.pack_into("<I", raw, at + 42, offset)
    path.write_bytes(bytes(raw))


def rezip(src: Path, dst: Path, compress: Callable[[str], int]) -> None:
    """The same records in a stdlib-written zip, each with the method ``compress`` picks."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info), compress_type=compress(info.filename))


# ----------------------------------------------------------------------------- lying storages


def bint(n: int) -> bytes:
    return b"J" + struct.pack("<i", n)


@pytest.mark.parametrize(("dtype", "which", "expected"), [
    # numel in the persistent id AND the shape: the storage itself is declared huge
    (torch.float32, -1, "huge/data.pkl declares a storage of 8 GiB (2147483647 float32 "
     "elements) for huge/data/0, but the archive holds 280000 bytes for it (a lying size)"),
    (torch.float64, -1, "huge/data.pkl declares a storage of 16 GiB (2147483647 float64 "
     "elements) for huge/data/0, but the archive holds 560000 bytes for it (a lying size)"),
    # only the persistent id's numel (the shape stays honest)
    (torch.float32, 1, "huge/data.pkl declares a storage of 8 GiB (2147483647 float32 "
     "elements) for huge/data/0, but the archive holds 280000 bytes for it (a lying size)"),
])
def test_enormous_declared_storage_is_refused(reloader: Reloader, good: Path, tmp_path: Path,
                                              dtype: torch.dtype, which: int,
                                              expected: str) -> None:
    path = tensor_file(tmp_path, "huge.pt", dtype)
    patch_pickle(path, bint(ELEMENTS), bint(2**31 - 1), which)
    assert_refused_then_alive(reloader, good, path, "runs/huge.pt", f"{HOSTILE}: {expected}")


def test_shape_beyond_honest_storage_is_refused(reloader: Reloader, good: Path,
                                                tmp_path: Path) -> None:
    """Storage honest, the tensor's shape lies: torch 2.13 (mmap) would only say "Trying to
    resize storage that is not resizable", and without mmap it would resize (allocate) it."""
    path = tensor_file(tmp_path, "shape.pt")
    patch_pickle(path, bint(ELEMENTS) + b"\x85", bint(2**31 - 1) + b"\x85")  # the shape tuple
    assert_refused_then_alive(reloader, good, path, "shape.pt", f"{HOSTILE}: shape/data.pkl "
                              "declares a tensor of shape [2147483647] (offset 0, strides [1]) "
                              "needing 2147483647 elements of storage shape/data/0, which holds "
                              "70000 (a lying shape)")


def test_storage_without_record_is_refused(reloader: Reloader, good: Path,
                                           tmp_path: Path) -> None:
    path = tensor_file(tmp_path, "norec.pt")
    patch_pickle(path, b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x007")  # storage key '0' -> '7'
    assert_refused_then_alive(reloader, good, path, "norec.pt", f"{HOSTILE}: norec/data.pkl "
                              "declares storage '7', but the archive has no record norec/data/7")


LEGACY = "hostile or corrupt legacy torch file"


def legacy_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(ELEMENTS, dtype=torch.float64)}, path,
               _use_new_zipfile_serialization=False)
    raw = path.read_bytes()
    assert raw.count(bint(ELEMENTS)) == 2  # the storage's numel, then the shape
    return path, raw


@pytest.mark.parametrize("which", [-1, 1])
def test_legacy_format_lying_size_gets_a_clean_message(
    reloader: Reloader, good: Path, tmp_path: Path, which: int,
) -> None:
    """The legacy (non-zip) format allocates each storage at its declared size before
    reading it, then fails with torch's "storage has wrong byte size": the declared size is
    checked against the size the file records first, nothing allocated."""
    path, raw = legacy_file(tmp_path)
    path.write_bytes(raw.replace(bint(ELEMENTS), bint(2**31 - 1), which))
    res = reloader.reload(path, "legacy.pt")
    assert res.cause is not None
    assert fnmatch.fnmatchcase(res.cause, f"legacy.pt: {LEGACY}: the pickle declares storage "
                               "'*' of 16 GiB (2147483647 float64 elements), but the file "
                               "records 70000 elements for it (a lying size)"), res.cause
    assert reloader.reload(good, "resume.pt").ok


def test_legacy_format_truncated_storage_gets_a_clean_message(
    reloader: Reloader, good: Path, tmp_path: Path,
) -> None:
    path, raw = legacy_file(tmp_path)
    path.write_bytes(raw[:-100])
    res = reloader.reload(path, "legacy.pt")
    assert res.cause is not None
    assert fnmatch.fnmatchcase(res.cause, f"legacy.pt: {LEGACY}: storage '*' (547 KiB) runs past "
                               "the end of the file (byte * > *): truncated or lying sizes")
    assert reloader.reload(good, "resume.pt").ok


# ----------------------------------------------------------------------------- zip structure


def overlap_by_size(path: Path) -> str:
    """data.pkl's directory record claims bytes that belong to the next entry."""
    patch_central(path, "/data.pkl", size=entry(path, "/data.pkl").file_size + 200)
    return ""


def overlap_by_offset(path: Path) -> str:
    """Two directory records point at the same local entry (the classic overlap trick)."""
    patch_central(path, "/version", offset=entry(path, "/data/0").header_offset)
    return ""


def outside_by_offset(path: Path) -> str:
    patch_central(path, "/data/0", offset=path.stat().st_size + 4096)
    return ""


def outside_by_size(path: Path) -> str:
    patch_central(path, "/data/0", size=2**31)
    return ""


def duplicate_name(path: Path) -> str:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as zf:
        warnings.simplefilter("ignore")  # "Duplicate name": exactly what we want
        zf.writestr(entry(path, "/data/0").filename, bytes(4 * ELEMENTS))
    return ""


def deflated(path: Path) -> str:
    src = path.with_name("src.pt")
    path.rename(src)
    rezip(src, path, lambda name: zipfile.ZIP_DEFLATED if name.endswith("/data/0")
          else zipfile.ZIP_STORED)
    return ""


def flagged(bits: int) -> Callable[[Path], str]:
    """Set general-purpose flag ``bits`` on data.pkl, in its local header and its directory
    record (what a zip tool writes for an encrypted or patched entry)."""

    def craft(path: Path) -> str:
        raw = bytearray(path.read_bytes())
        info = entry(path, "/data.pkl")
        for at in (info.header_offset + 6, central_records(bytes(raw))[info.filename] + 8):
            struct.pack_into("<H", raw, at, struct.unpack_from("<H", raw, at)[0] | bits)
        path.write_bytes(bytes(raw))
        return ""

    craft.__name__ = f"flag_{bits:#x}"
    return craft


@pytest.mark.parametrize(("craft", "expected"), [
    (overlap_by_size, "entries 'z/data.pkl' (bytes 0-*) and 'z/.format_version' (bytes 248-*) "
     "overlap; torch.save never writes overlapping entries"),
    (overlap_by_offset, "entries 'z/version' (bytes *) and 'z/data/0' (bytes *) "
     "overlap; torch.save never writes overlapping entries"),
    (outside_by_offset, "entry 'z/data/0' points outside the file (local header at byte *, "
     "the zip directory starts at byte *)"),
    (outside_by_size, "entry 'z/data/0' (2 GiB) runs past the end of the data (byte * > *): "
     "truncated or lying sizes"),
    (duplicate_name, "entry 'z/data/0' appears twice in the zip directory (readers disagree on "
     "which copy counts)"),
    (deflated, "entry 'z/data/0' is compressed (zip method 8); torch.save writes stored entries "
     "only, and a memory-mapped reload would read the compressed bytes as data"),
    # Issue 26: sentences naming the fault, never zipfile's bare NotImplementedError; an
    # encrypted entry is said to be encrypted, not compressed.
    (flagged(0x1), "entry 'z/data.pkl' is encrypted (flag bit 0), which torch.load cannot "
     "read; torch.save never encrypts: save the checkpoint again with torch.save and ship "
     "that file"),
    (flagged(0x41), "entry 'z/data.pkl' is encrypted with strong encryption (flag bit 6), "
     "which torch.load cannot read; torch.save never encrypts: *"),
    (flagged(0x40), "entry 'z/data.pkl' is encrypted with strong encryption (flag bit 6), *"),
    (flagged(0x20), "entry 'z/data.pkl' uses patched data (flag bit 5), which torch.load "
     "cannot read; torch.save never writes it: save the checkpoint again with torch.save and "
     "ship that file"),
])
def test_hostile_zip_structure_is_refused(reloader: Reloader, good: Path, tmp_path: Path,
                                          craft: Callable[[Path], str], expected: str) -> None:
    path = tensor_file(tmp_path, "z.pt")
    craft(path)
    res = reloader.reload(path, "runs/z.pt")
    assert not res.ok
    assert res.cause is not None
    pattern = f"runs/z.pt: {HOSTILE}: {expected}".replace("[", "[[]")
    assert fnmatch.fnmatchcase(res.cause, pattern), res.cause
    assert reloader.reload(good, "resume.pt").ok


def test_oversized_pickle_record_is_refused(reloader: Reloader, good: Path,
                                            tmp_path: Path) -> None:
    """A data.pkl over the 256 MiB cap is refused before it is read (streamed: no big buffer)."""
    path = tmp_path / "fat.pt"
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w") as zf, zf.open("fat/data.pkl", "w", force_zip64=True) as out:
        for _ in range(257):
            out.write(chunk)
    assert_refused_then_alive(reloader, good, path, "fat.pt",
                              f"{HOSTILE}: fat/data.pkl is 257 MiB, over the 256 MiB cap for a "
                              "checkpoint's pickle")


def real_mix() -> dict[str, object]:
    """Every storage width (1-16 bytes), views sharing one storage, a transposed view."""
    base = torch.arange(12, dtype=torch.float32)
    return {"f32": torch.ones(ELEMENTS), "views": [base[2:5], base.view(3, 4).t()],
            **{str(d): torch.ones(3, dtype=d) for d in (
                torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8,
                torch.int64, torch.bool, torch.complex64, torch.complex128,
                torch.float8_e4m3fn, torch.uint16)}}


def test_real_torch_archives_pass_the_structure_checks(reloader: Reloader, good: Path,
                                                       tmp_path: Path) -> None:
    """Controls: the archives the crafted files start from pass, and so does every dtype."""
    path = tmp_path / "mix.pt"
    torch.save(real_mix(), path)
    for target in (path, tensor_file(tmp_path, "plain.pt"), good):
        res = reloader.reload(target, target.name)
        assert res.ok, res.cause


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_symbolic_scan_reads_every_pickle_protocol(tmp_path: Path, protocol: int) -> None:
    """The scan (never unpickling) finds the same storages and views whatever the protocol
    (4 and 5 spell globals with STACK_GLOBAL and memoise with MEMOIZE)."""
    from pytest_itera.reload.server import archives

    path = tmp_path / "mix.pt"
    torch.save(real_mix(), path, pickle_protocol=protocol)
    with zipfile.ZipFile(path) as zf:
        storages, views = archives.storage_claims(zf.read("mix/data.pkl"))
    found = {(s.key, s.type, s.numel) for s in storages}
    assert ("0", "torch FloatStorage", ELEMENTS) in found
    assert ("1", "torch FloatStorage", 12) in found
    assert {t for _, t, _ in found} >= {"torch BFloat16Storage", "torch ComplexDoubleStorage",
                                        "torch.storage UntypedStorage", "torch BoolStorage"}
    assert {v[1:] for v in views if v[0].key == "1"} == {("", 2, (3,), (1,)),
                                                        ("", 0, (4, 3), (1, 4))}
    # dtypes without a typed storage class: a byte storage viewed through _rebuild_tensor_v3
    assert ("torch float8_e4m3fn", 0, (3,), (1,)) in {v[1:] for v in views}
    assert archives.storage_itemsize("torch ComplexDoubleStorage") == (16, "complex128")
    assert archives.storage_itemsize("torch float8_e4m3fn") == (1, "float8_e4m3fn")
    assert archives.storage_itemsize("os system") == (1, "byte")  # unknown: a lower bound


# ----------------------------------------------------------------------------- safetensors


def safetensors_with(tmp_path: Path, raw_header: bytes, length: int | None = None) -> Path:
    path = tmp_path / "m.safetensors"
    n = len(raw_header) if length is None else length
    path.write_bytes(struct.pack("<Q", n) + raw_header + bytes(16))
    return path


@pytest.mark.parametrize(("length", "header", "expected"), [
    (2**40, {}, "safetensors header length 1099511627776 exceeds the file size (*)"),
    (2**64 - 1, {}, "safetensors header length 18446744073709551615 exceeds the file size*"),
    (None, {"w": {"dtype": "F32", "shape": [2**31], "data_offsets": [0, 2**33]}},
     "safetensors header refused by the safetensors parser: incomplete metadata, file not "
     "fully covered (truncated or lying header)"),
    (None, {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}},
     "safetensors header refused by the safetensors parser: invalid shape, data type, or "
     "offset for tensor (truncated or lying header)"),
    (None, {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "v": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
     "safetensors header refused by the safetensors parser: invalid offset for tensor `?` "
     "(truncated or lying header)"),
])
def test_safetensors_header_larger_than_file_is_refused(
    reloader: Reloader, good: Path, tmp_path: Path, length: int | None,
    header: dict[str, object], expected: str,
) -> None:
    path = safetensors_with(tmp_path, json.dumps(header).encode(), length)
    res = reloader.reload(path, "m.safetensors")
    assert not res.ok
    assert res.cause is not None
    assert fnmatch.fnmatchcase(res.cause, f"m.safetensors: {expected}".replace("[", "[[]")), \
        res.cause
    assert reloader.reload(good, "resume.pt").ok


# ----------------------------------------------------------------------------- in a campaign


def test_hostile_containers_fail_in_a_campaign(
    itera: Itera, campaign: CampaignBuilder, tmp_path: Path
) -> None:
    huge = tensor_file(tmp_path, "huge.pt")
    patch_pickle(huge, bint(ELEMENTS), bint(2**31 - 1))
    overlap = tensor_file(tmp_path, "overlap.pt")
    overlap_by_offset(overlap)
    dup = tensor_file(tmp_path, "dup.pt")
    duplicate_name(dup)
    layout = {"runs/control/huge.pt": huge, "runs/control/overlap.pt": overlap,
              "runs/control/dup.pt": dup,
              "runs/control/good.pt": checkpoints.general_checkpoint(tmp_path)}
    for rel, src in layout.items():
        campaign.files[rel] = src.read_bytes()
        campaign.manifest["checkpoints"].append(
            {"path": rel, "run": "control", "format": "torch", "kind": "weights"})
    campaign.write()
    result = itera("-rA", check="checkpoint-reloads")
    assert result.parseoutcomes().get("failed") == 3  # the factory's own checkpoints pass
    head = "manifest.json $.checkpoints[{}]: does not reload in a fresh process with " \
        "weights_only=True: runs/control/{}: " + HOSTILE + ": "
    expect(result, "*FAILED*checkpoint-reloads[runs/control/huge.pt]*")
    expect(result, head.format("*", "huge.pt") + "huge/data.pkl declares a storage of 8 GiB "
           "(2147483647 float32 elements) for huge/data/0, but the archive holds 280000 bytes "
           "for it (a lying size)")
    expect(result, head.format("*", "overlap.pt") + "entries 'overlap/version' (bytes *) and "
           "'overlap/data/0' (bytes *) overlap; torch.save never writes overlapping entries")
    expect(result, head.format("*", "dup.pt") + "entry 'dup/data/0' appears twice in the zip "
           "directory (readers disagree on which copy counts)")
    expect(result, "PASSED out/manifest.json::checkpoint-reloads[runs/control/good.pt]")


@pytest.mark.parametrize(("error", "sentence"), [
    (NotImplementedError("compressed patched data (flag bit 5)"),
     "torch.load could not read it: compressed patched data (flag bit 5) (NotImplementedError)"),
    (ValueError(""), "torch.load could not read it (ValueError without a message)"),
    (FileNotFoundError(2, "No such file or directory"),
     "cannot be read: no such file or directory"),
])
def test_a_load_failure_nobody_foresaw_is_still_a_sentence(error: Exception,
                                                           sentence: str) -> None:
    """Issue 26: never a bare exception class as the finding ("NotImplementedError: ..."); the
    class stays, in brackets, for a bug report."""
    from pytest_itera.reload.server import loading

    assert loading.explained(error) == ("unreadable", sentence)
