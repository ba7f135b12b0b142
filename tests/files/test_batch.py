"""files/batch.py: small files read by a helper process, last first, as the caller reads them."""

from __future__ import annotations

import time
from pathlib import Path

from pytest_itera.files.batch import Helper
from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, FileFacts, TempMatcher, scan_file


def small_files(root: Path, count: int) -> list[str]:
    """Text, binary and a file with a temporary path: each outcome a scan can have."""
    names = []
    for i in range(count):
        name = f"d{i % 3}/f{i:03d}.txt"
        (root / name).parent.mkdir(exist_ok=True)
        data = b"\0\1" * (i + 1) if i % 2 else f"line {i}\nsee /tmp/run-{i}/x\n".encode()
        (root / name).write_bytes(data)
        names.append(name)
    return names


def everything(helper: Helper) -> list[FileFacts]:
    sent: list[FileFacts] = []
    deadline = time.monotonic() + 60
    while helper.running and time.monotonic() < deadline:
        sent += helper.arrived()
        time.sleep(0.01)
    return sent


def test_the_helper_reads_each_file_as_the_caller_would_last_first(tmp_path: Path) -> None:
    names = small_files(tmp_path, 25)
    matcher = TempMatcher(DEFAULT_TEMP_PATTERNS)
    helper = Helper(matcher.patterns, fingerprint=False)
    assert helper.arrived() == []  # nothing asked yet
    helper.read(f"{tmp_path}/", names)
    try:
        sent = everything(helper)
    finally:
        helper.close()
    assert [f.path for f in sent] == names[::-1]
    for facts in sent:
        assert facts == scan_file(f"{tmp_path}/{facts.path}", facts.path, matcher, walked=True)
    assert any(f.hit_count for f in sent)


def test_a_closed_helper_sends_nothing_more(tmp_path: Path) -> None:
    names = small_files(tmp_path, 5)
    idle = Helper(DEFAULT_TEMP_PATTERNS, fingerprint=False)
    idle.close()  # never asked
    assert not idle.running
    assert idle.arrived() == []
    helper = Helper(DEFAULT_TEMP_PATTERNS, fingerprint=False)
    helper.read(f"{tmp_path}/", names)
    helper.close()
    assert not helper.running
    assert helper.arrived() == []
