"""scan_file() and TempMatcher on real files in tmp_path."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_itera.files import scan
from pytest_itera.files.scan import (
    DEFAULT_TEMP_PATTERNS,
    FileFacts,
    TempHit,
    TempMatcher,
    scan_file,
)
from tests.factory import many_entry_zip
from tests.runner import REPO

MATCHER = TempMatcher(DEFAULT_TEMP_PATTERNS)


def _facts(path: Path, **kwargs: object) -> FileFacts:
    return scan_file(path, path.name, MATCHER, **kwargs)  # type: ignore[arg-type]


def _text(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


def _places(facts: FileFacts) -> list[tuple[str, int, int, str]]:
    return [(h.pattern, h.line, h.column, h.excerpt) for h in facts.hits]


# Hashing and sizes ---------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1 << 20, 4096, 8192 + 1])
@pytest.mark.parametrize("size", [0, 1, 8191, 65_536, 300_001])
def test_sha256_and_size_match_hashlib(tmp_path: Path, size: int, chunk_size: int) -> None:
    data = (b"line of text with a path data/x.json\n" * (size // 37 + 1))[:size]
    path = tmp_path / "f.txt"
    path.write_bytes(data)

    facts = _facts(path, chunk_size=chunk_size)

    assert facts == FileFacts("f.txt", size, hashlib.sha256(data).hexdigest(), False, (), 0)


def test_hash_and_scan_can_each_be_turned_off(tmp_path: Path) -> None:
    path = _text(tmp_path, "a.json", '{"p": "/tmp/x"}')

    no_hash = scan_file(path, "a.json", MATCHER, hash=False)
    no_scan = scan_file(path, "a.json", None)

    assert (no_hash.sha256, no_hash.hit_count, no_hash.size) == (None, 1, 15)
    assert (no_scan.sha256 is not None, no_scan.hits, no_scan.hit_count) == (True, (), 0)


# Temp paths in text --------------------------------------------------------------------


def test_json_hit_with_line_and_column(tmp_path: Path) -> None:
    path = _text(tmp_path, "m.json", '{\n  "ckpt": "/tmp/run1/last.pt",\n  "n": 3\n}\n')

    facts = _facts(path)

    assert facts.hit_count == 1
    assert facts.hits == (TempHit("/tmp/", 2, 12, "/tmp/run1/last.pt"),)


def test_markdown_and_csv_hits(tmp_path: Path) -> None:
    md = _text(tmp_path, "r.md", "# Reload\n\nRun `python load.py /dev/shm/w.pt` then\n")
    csv = _text(tmp_path, "m.csv", "run,path\ncontrol,/var/tmp/c.pt\nv1,/private/var/folders/T/x\n"
                "v2,/private/tmp/itera-run/out\n")

    assert _places(_facts(md)) == [("/dev/shm/", 3, 21, "/dev/shm/w.pt")]
    assert _places(_facts(csv)) == [
        ("/var/tmp/", 2, 9, "/var/tmp/c.pt"),
        ("/private/var/folders/", 3, 4, "/private/var/folders/T/x"),
        ("/private/tmp/", 4, 4, "/private/tmp/itera-run/out"),
    ]


def test_column_counts_characters_not_bytes(tmp_path: Path) -> None:
    path = _text(tmp_path, "u.txt", "première ligne\nrésumé été: /tmp/é\n")

    assert _places(_facts(path)) == [("/tmp/", 2, 13, "/tmp/é")]


def test_windows_paths_raw_escaped_and_cased(tmp_path: Path) -> None:
    raw = "C:\\Users\\x\\AppData\\Local\\Temp\\y.pt"
    path = _text(
        tmp_path,
        "w.json",
        f"{raw}\n"
        + json.dumps({"p": raw})
        + "\nC:/Users/x/AppData/Local/Temp/z\nc:\\users\\x\\appdata\\local\\temp\\q\n"
        + "set %TEMP%\\a and %tmp%\\b\n",
    )

    assert _places(_facts(path)) == [
        ("AppData\\Local\\Temp", 1, 12, raw),
        ("AppData\\\\Local\\\\Temp", 2, 22, raw.replace("\\", "\\\\")),
        ("AppData/Local/Temp", 3, 12, "C:/Users/x/AppData/Local/Temp/z"),
        ("AppData\\Local\\Temp", 4, 12, "c:\\users\\x\\appdata\\local\\temp\\q"),
        ("%TEMP%", 5, 5, "%TEMP%\\a"),
        ("%TMP%", 5, 18, "%tmp%\\b"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "/tmpfs/x"}',
        "/tmp_data/x",
        "/mytmp/x",
        "/home/u/tmp/x",
        "~/tmp/x",
        "/tmp.txt",
        "/tmp-1/x",
        "/var/tmpx/y",
        "/dev/shmem/x",
        "C:\\Users\\x\\NotAppData\\Local\\Temp\\y",
        "C:\\Users\\x\\AppData\\Local\\Temporary\\y",
        "\\Local\\Temp\\y",
        "a temperature of 3 and a template",
    ],
)
def test_no_false_positive(tmp_path: Path, text: str) -> None:
    facts = _facts(_text(tmp_path, "f.txt", text + "\n"))

    assert (facts.hits, facts.hit_count) == ((), 0)


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ('{"dir": "/tmp"}', 10),
        ("x = '/tmp'", 6),
        ("cd /tmp\nls", 4),
        ("export TMPDIR=/tmp", 15),
        ("file:///tmp/a", 8),
        ("at the very end /tmp", 17),  # no newline: the end of the file ends the path
    ],
)
def test_tmp_as_a_whole_value(tmp_path: Path, text: str, column: int) -> None:
    facts = _facts(_text(tmp_path, "f.txt", text))

    assert [(h.line, h.column) for h in facts.hits] == [(1, column)]


def test_user_patterns_are_plain_literals(tmp_path: Path) -> None:
    matcher = TempMatcher([*DEFAULT_TEMP_PATTERNS, "/scratch/", "$TMPDIR"])
    path = _text(tmp_path, "f.sh", "cp a /scratch/x\necho $TMPDIR/y /home/scratch/\n")

    facts = scan_file(path, "f.sh", matcher)

    assert [(h.pattern, h.line, h.column) for h in facts.hits] == [
        ("/scratch/", 1, 6),
        ("$TMPDIR", 2, 6),
        ("/scratch/", 2, 21),  # a literal has no boundary rules
    ]
    assert matcher.patterns[-2:] == ("/scratch/", "$TMPDIR")


def test_prefilter_canaries_are_never_hits(tmp_path: Path) -> None:
    # The 0xF8-0xFB needles only steer the automaton's prefilter (scan._CANARIES).
    path = tmp_path / "f.txt"
    path.write_bytes(b"".join(c * 2 for c in scan._CANARIES) + b" /tmp/a \xf8\xf8\xf8\xf8\n")

    facts = _facts(path)

    assert [(h.pattern, h.line, h.column, h.excerpt) for h in facts.hits] == [
        ("/tmp/", 1, 34, "/tmp/a")
    ]
    assert facts.hit_count == 1


def test_matcher_refuses_empty_patterns() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        TempMatcher([])
    with pytest.raises(ValueError, match="non-empty"):
        TempMatcher(["/tmp/", ""])


def test_gettempdir_becomes_a_directory_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/scratch/job42/tmp")
    assert scan.tempdir_patterns() == ("/scratch/job42/tmp/",)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/tmp/user7")
    assert scan.tempdir_patterns() == ()  # "/tmp/" already covers it


def test_hits_are_capped_but_counted_in_file_order(tmp_path: Path) -> None:
    path = _text(tmp_path, "many.txt", "".join(f"/tmp/{i}\n" for i in range(30)))

    facts = _facts(path, max_hits=20)

    assert facts.hit_count == 30
    assert [h.excerpt for h in facts.hits] == [f"/tmp/{i}" for i in range(20)]
    assert [h.line for h in facts.hits] == list(range(1, 21))


def test_excerpt_is_clipped_and_printable(tmp_path: Path) -> None:
    long_path = "/tmp/" + "d" * 300
    path = _text(tmp_path, "f.txt", f"x {long_path}\x07y\n")

    (hit,) = _facts(path).hits

    assert len(hit.excerpt) == 120
    assert hit.excerpt == long_path[:119] + "…"
    path.write_bytes(b"a /tmp/x\xe2\x80\x8by\xff\x1b[0m\n")  # zero-width space, bad byte, ESC
    assert _facts(path).hits[0].excerpt == "/tmp/x\\u200by\ufffd"


# Chunk boundaries ----------------------------------------------------------------------


@pytest.mark.parametrize("shift", range(-8, 3))
def test_hit_across_a_chunk_boundary_is_found_once(tmp_path: Path, shift: int) -> None:
    chunk = 8192  # the first read is at least 8 KiB: the next boundaries are multiples
    lines = ["x" * 99] * 400  # 100 bytes per line
    text = "\n".join(lines) + "\n"
    at = 3 * chunk + shift  # "/tmp/" straddles the boundary for shifts -4..-1
    text = text[: at - 1] + " /tmp/run " + text[at - 1 :]
    path = _text(tmp_path, "f.txt", text)
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1

    for size in (chunk, 1 << 20):
        facts = _facts(path, chunk_size=size)
        assert facts.hit_count == 1
        assert [(h.line, h.column) for h in facts.hits] == [(line, column)]
        assert facts.hits[0].excerpt.startswith("/tmp/run")


@pytest.mark.parametrize("chunk_size", [100, 701, 8192 + 17])  # below and above the seam size
def test_many_small_chunks_agree_with_one_read(tmp_path: Path, chunk_size: int) -> None:
    body = "".join(
        f'{{"i": {i}, "p": "/tmp/r{i}", "q": "/tmpfs/{i}", "w": "AppData\\\\Local\\\\Temp"}}\n'
        for i in range(2000)
    )
    path = _text(tmp_path, "f.jsonl", body)

    whole = _facts(path, max_hits=10_000)
    chunked = _facts(path, max_hits=10_000, chunk_size=chunk_size)

    assert whole.hit_count == chunked.hit_count == 4000
    assert whole.hits == chunked.hits


def test_hit_at_the_end_of_a_50_mb_line(tmp_path: Path) -> None:
    path = tmp_path / "one-line.json"
    filler = 50_000_000
    with path.open("wb") as f:
        f.write("é".encode() * 10)  # 2 bytes, 1 character each
        for _ in range(filler // 1_000_000):
            f.write(b"a" * 1_000_000)
        f.write(b' "/tmp/end"')

    facts = _facts(path)

    assert facts.size == 20 + filler + 11
    assert [(h.line, h.column, h.excerpt) for h in facts.hits] == [(1, 10 + filler + 3, "/tmp/end")]


# Binary files and their records --------------------------------------------------------


def test_binary_file_is_hashed_not_scanned(tmp_path: Path) -> None:
    data = b"\x00\x01binary" + b"/tmp/not-a-path " * 100
    path = tmp_path / "blob.bin"
    path.write_bytes(data)

    facts = _facts(path)

    assert facts == FileFacts("blob.bin", len(data), hashlib.sha256(data).hexdigest(), True, (), 0)


def test_nul_after_8_kib_leaves_the_file_text(tmp_path: Path) -> None:
    path = tmp_path / "late-nul.txt"
    path.write_bytes(b"a" * 9000 + b"\x00 /tmp/x\n")

    facts = _facts(path)

    assert (facts.binary, facts.hit_count) == (False, 1)


def test_torch_checkpoint_pickle_record_is_scanned(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "ckpt.pt"
    torch.save({"weights": torch.zeros(3), "resume_from": "/tmp/run/ckpt"}, path)

    facts = _facts(path)

    assert facts.binary
    assert facts.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert facts.hit_count == 1
    (hit,) = facts.hits
    assert (hit.pattern, hit.line, hit.excerpt) == ("/tmp/", 1, "/tmp/run/ckpt")
    assert hit.where == "ckpt/data.pkl (pickle record)"
    record = _zip_member(path, "ckpt/data.pkl")
    assert record[hit.column - 1 :].startswith(b"/tmp/run/ckpt")


def test_clean_torch_checkpoint_has_no_hits(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "clean.pt"
    torch.save({"weights": torch.zeros(1000), "note": "/tmpfs is fine"}, path)

    assert _facts(path).hit_count == 0


def _zip_member(path: Path, name: str) -> bytes:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        return archive.read(name)


def test_safetensors_header_is_scanned(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    save_file = pytest.importorskip("safetensors.torch").save_file
    path = tmp_path / "model.safetensors"
    save_file({"w": torch.ones(4)}, str(path), metadata={"source": "/tmp/export/w"})

    facts = _facts(path)

    (hit,) = facts.hits
    assert (hit.pattern, hit.line, hit.excerpt, hit.where) == (
        "/tmp/",
        1,
        "/tmp/export/w",
        "safetensors header",
    )
    header = path.read_bytes()[8:]
    assert header[hit.column - 1 :].startswith(b"/tmp/export/w")


def test_safetensors_header_larger_than_the_first_read(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    save_file = pytest.importorskip("safetensors.torch").save_file
    path = tmp_path / "big-header.safetensors"
    metadata = {"pad": "p" * 20_000, "z": "/var/tmp/late"}
    save_file({"w": torch.ones(4)}, str(path), metadata=metadata)

    facts = _facts(path, chunk_size=8192)

    assert [(h.pattern, h.excerpt, h.where) for h in facts.hits] == [
        ("/var/tmp/", "/var/tmp/late", "safetensors header")
    ]


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_plain_pickle_strings_are_scanned(tmp_path: Path, protocol: int) -> None:
    # 97 characters: with protocol 4+ the one-byte length is 0x61, an "a" before "/tmp".
    odd = "/tmp/" + "x" * 92
    path = tmp_path / "state.pkl"
    path.write_bytes(pickle.dumps({"a": odd, "b": "/home/u/tmp/fine", "c": 1}, protocol))

    facts = _facts(path)

    assert facts.binary
    assert [(h.excerpt[:6], h.where) for h in facts.hits] == [("/tmp/x", "pickle record")]


# Files that cannot or must not be read -------------------------------------------------


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    facts = _facts(fifo)

    assert facts == FileFacts("pipe", 0, None, False, (), 0, "is a FIFO, not a regular file")


def test_symlink_and_directory_are_refused(tmp_path: Path) -> None:
    target = _text(tmp_path, "t.txt", "/tmp/x")
    os.symlink(target, tmp_path / "link")

    assert _facts(tmp_path / "link").error == "is a symbolic link, not a regular file"
    assert _facts(tmp_path).error == "is a directory, not a regular file"


def test_missing_file_vanished(tmp_path: Path) -> None:
    facts = _facts(tmp_path / "gone.json")

    assert (facts.error, facts.sha256, facts.size) == ("vanished during the scan", None, 0)


def test_permission_denied(tmp_path: Path) -> None:
    path = _text(tmp_path, "secret.txt", "x")
    path.chmod(0)
    try:
        readable = os.access(path, os.R_OK)
        facts = _facts(path)
    finally:
        path.chmod(0o644)
    if readable:
        pytest.skip("chmod 000 does not deny reading here (root or CAP_DAC_OVERRIDE)")

    assert facts.error == "permission denied"


def test_permission_denied_as_the_os_says_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs even as root (where chmod 000 denies nothing): the OS refusal is injected.
    path = _text(tmp_path, "secret.txt", "x")
    real_open = os.open

    def refuse(file: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse)

    facts = _facts(path)

    assert facts == FileFacts("secret.txt", 0, None, False, (), 0, "permission denied")


def _grow_after_first_read(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    real_read: Callable[[int, int], bytes] = scan._read
    calls = []

    def read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        calls.append(len(data))
        if len(calls) == 1:
            with path.open("ab") as f:  # another process appends mid-scan
                f.write(b"0123456789")
        return data

    monkeypatch.setattr(scan, "_read", read)


@pytest.mark.parametrize("chunk_size", [1 << 20, 8192])
def test_file_changed_during_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_size: int
) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"step 1 /tmp/x\n" * 2000)  # 28000 bytes: several chunks of 8 KiB
    _grow_after_first_read(monkeypatch, path)

    facts = _facts(path, chunk_size=chunk_size)

    assert facts.error == "changed while being read (size 28000 -> 28010)"
    assert (facts.sha256, facts.hits, facts.hit_count) == (None, (), 0)


@pytest.mark.parametrize("how", ["renamed-over", "removed"])
def test_a_path_that_names_another_file_after_the_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """An atomic save (write elsewhere, rename over) while the old file is being read: the
    open file never changed, but the digest no longer describes what the path holds."""
    path = tmp_path / "last.pt"
    path.write_bytes(b"A" * 200_000)
    real_read: Callable[[int, int], bytes] = scan._read
    calls = []

    def read(fd: int, size: int) -> bytes:
        calls.append(size)
        if len(calls) == 1:
            if how == "renamed-over":
                newer = tmp_path / "last.pt.partial"
                newer.write_bytes(b"B" * 200_000)  # same size, valid-looking
                os.replace(newer, path)
            else:
                path.unlink()
        return real_read(fd, size)

    monkeypatch.setattr(scan, "_read", read)

    facts = _facts(path, chunk_size=8192)

    expected = {"renamed-over": "was replaced during the scan (another file now has its name)",
                "removed": "was removed during the scan"}[how]
    assert (facts.error, facts.sha256) == (expected, None)


def test_concurrent_scans_agree_with_serial_ones(tmp_path: Path) -> None:
    paths = []
    for i in range(6):
        body = "".join(f"{j} /tmp/{i}/{j} data/{j}\n" for j in range(3000 + i))
        paths.append(_text(tmp_path, f"f{i}.txt", body))
    serial = [_facts(p, chunk_size=8192) for p in paths]
    results: dict[int, FileFacts] = {}

    def work(i: int) -> None:
        results[i] = _facts(paths[i], chunk_size=8192)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert [results[i] for i in range(len(paths))] == serial
    assert all(f.hit_count == 3000 + i for i, f in enumerate(serial))


# Bounded hostile inputs: the pytest process's own peak RSS ------------------------------

_PEAK_PROBE = r"""
import json, resource, sys
from pathlib import Path
from pytest_itera.reload import Reloader
from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, TempMatcher, scan_file

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

matcher = TempMatcher(DEFAULT_TEMP_PATTERNS)
path = Path(sys.argv[1])
with Reloader(timeout=120) as reloader:
    scan_file(Path(sys.argv[2]), "warm", matcher)  # imports, threads, buffers: before
    assert reloader.reload(Path(sys.argv[2]), "warm").ok is False
    before = peak()
    facts = scan_file(path, path.name, matcher)
    result = reloader.reload(path, path.name)
    after = peak()
print(json.dumps({"growth": after - before, "unscanned": facts.unscanned,
                  "hits": [h.excerpt for h in facts.hits], "sha256": facts.sha256,
                  "error": facts.error, "cause": result.cause}))
"""
PEAK_BOUND = 48 << 20  # the scan's chunks and the hash thread's: never the declared sizes


def _peak_growth(path: Path, tmp_path: Path) -> dict[str, object]:
    """Scan and reload ``path`` in a fresh process (the test's own history would mask a
    peak) and return how far that process's peak RSS grew, with what it found."""
    import subprocess
    import sys

    warm = tmp_path / "warm.bin"
    warm.write_bytes(b"\0not a checkpoint" * 100)
    done = subprocess.run([sys.executable, "-c", _PEAK_PROBE, str(path), str(warm)],
                          capture_output=True, text=True, timeout=600, check=False,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_a_zip_of_300000_entries_does_not_grow_the_pytest_process(tmp_path: Path) -> None:
    """The temp-path scan streams the zip directory (it built an object per entry: +176
    MiB here) and stops at its entry cap with a clear note; the record before the cap is
    still scanned."""
    path = tmp_path / "many.pt"
    path.write_bytes(many_entry_zip(300_000))
    found = _peak_growth(path, tmp_path)
    assert isinstance(found["growth"], int)
    assert found["growth"] < PEAK_BOUND, found
    assert found["hits"] == ["/tmp/run-1/ckpt"]
    assert found["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert found["unscanned"] == (
        "its zip directory declares 300001 entries; only the first 100000 were scanned for "
        "pickle records (a torch.save archive has about one entry per tensor storage)")
    assert found["cause"] is not None  # the child's verdict, whatever it is: not a crash


def test_a_huge_safetensors_header_is_scanned_in_chunks_and_refused_bounded(
    tmp_path: Path,
) -> None:
    """A 74 MiB header (1.3 M empty tensors): the pytest process scans it in bounded
    chunks (a temp path at its end is found; it used to be skipped over 64 MiB) and the
    loader refuses it by its declared size, unparsed."""
    import struct

    entry = '"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},'
    body = "".join(entry % i for i in range(1_300_000))
    header = ("{" + body + '"__metadata__":{"source":"/tmp/export/model"}}').encode()
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    assert len(header) > 64 << 20
    found = _peak_growth(path, tmp_path)
    assert isinstance(found["growth"], int)
    assert found["growth"] < PEAK_BOUND, found
    assert found["hits"] == ["/tmp/export/model"]
    assert found["cause"] == (f"huge.safetensors: safetensors header is "
                              f"{len(header) / (1 << 20):.3g} MiB, over the 16 MiB cap (a "
                              "real model's header is KiB to a few MiB): refused unparsed")
