"""The seal reuses the digests the checks computed (issue 29 item 3), only for files a new stat
shows unchanged since they were hashed: a file changed in between is still caught."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_itera.checks import Context, Options
from pytest_itera.core.campaign import load_campaign
from pytest_itera.files import scan
from pytest_itera.report import seal
from tests.factory import CampaignBuilder


def hashed(root: Path) -> Context:
    """A Context that kept its digests, after the checks hashed every file and closed."""
    ctx = Context(load_campaign(root), Options(), {}, keep_digests=True)
    for entry in ctx.entries():
        if entry.kind == "file":
            assert ctx.facts(entry.path).error is None
    ctx.close()
    return ctx


def listed(root: Path) -> dict[str, str]:
    manifest = json.loads((root / "manifest.json").read_text())
    return {f["path"]: f["sha256"] for f in manifest["files"]}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The files were written a moment ago: with the real margin none would be reused.
    monkeypatch.setattr(scan, "RACY_NS", -10**18)
    return CampaignBuilder(tmp_path / "camp").write()


def resources(path: Path) -> list[dict[str, str]]:
    found: list[dict[str, str]] = json.loads(path.read_text())["predicate"]["resources"]
    return found


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files model-signing reads from now on."""
    from model_signing._hashing import hashing, io

    read: list[Path] = []

    class Counting(io.SimpleFileHasher):
        def compute(self) -> hashing.Digest:
            read.append(Path(self._file))
            return super().compute()

    monkeypatch.setattr(io, "SimpleFileHasher", Counting)
    return read


def test_unchanged_files_reuse_the_checks_digests_and_the_seal_is_the_same(
    root: Path, tmp_path: Path, reads: list[Path]
) -> None:
    known = hashed(root).verified_digests()
    assert set(known) == {*listed(root), "manifest.json", "plan.json"}
    seal.write(root, tmp_path / "plain.json", {})
    assert len(reads) == len(known)
    reads.clear()
    seal.write(root, tmp_path / "reused.json", {}, expected=listed(root), known=known)
    assert reads == []  # every file reused: none read again
    assert resources(tmp_path / "reused.json") == resources(tmp_path / "plain.json")


def test_a_file_rewritten_after_its_checks_with_its_size_and_mtime_is_still_caught(
    root: Path, tmp_path: Path
) -> None:
    known = hashed(root).verified_digests()
    path = root / "RELOAD.md"
    before = path.stat()
    time.sleep(0.05)  # past the timestamp tick of the hashing: the rewrite moves the ctime
    path.write_bytes(bytes(b ^ 1 for b in path.read_bytes()))  # same size, other bytes
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(seal.SealError, match=r"^RELOAD\.md: changed after the checks ran"):
        seal.write(root, tmp_path / "s.json", {}, expected=listed(root), known=known)
    assert not (tmp_path / "s.json").exists()


def test_a_touched_file_is_hashed_again_and_an_added_one_sealed(
    root: Path, tmp_path: Path, reads: list[Path]
) -> None:
    known = hashed(root).verified_digests()
    path = root / "RELOAD.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    (root / "extra.txt").write_text("not hashed by the checks\n")
    seal.write(root, tmp_path / "s.json", {}, expected=listed(root), known=known)
    assert sorted(p.relative_to(root).as_posix() for p in reads) == ["RELOAD.md", "extra.txt"]
    digests = {r["name"]: r["digest"] for r in resources(tmp_path / "s.json")}
    assert digests["RELOAD.md"] == listed(root)["RELOAD.md"]
    assert "extra.txt" in digests


def test_a_file_changed_within_the_timestamp_tick_of_its_read_has_no_fingerprint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fresh.txt"
    path.write_text("just written\n")
    facts = scan.scan_file(path, "fresh.txt", None, fingerprint=True)
    assert facts.sha256 is not None
    assert facts.fingerprint is None  # racy: never reused
    assert scan.scan_file(path, "fresh.txt", None).fingerprint is None  # not asked for
