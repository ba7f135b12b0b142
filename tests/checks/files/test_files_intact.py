"""The rules of ``files-intact`` (pytest_itera/checks/files/files_intact.py): each break refused,
with its honest twin (judged in-process: tests/checks/judging.py; a pytest session where the
items, the skips or the ini options are the point).

Where the cases come from (the files they were first written in):

files-intact, no-empty-files, no-temp-paths: each passes, and fails for each of its reasons.
"""
from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks import Context, Options
from pytest_itera.checks.files import CHECKS as FILE_CHECKS
from pytest_itera.core.campaign import load_campaign
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder, expect, expect_each, sha256
from tests.runner import Itera

# ------------------------------------------------------------ files-intact


def test_a_missing_file_whose_bytes_are_elsewhere_says_renamed(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """Issue 26: the sha256 of a missing listed file under an unlisted path: "renamed to
    ...?", and the unlisted copy is not a second failure."""
    campaign.write()
    (campaign.root / "runs/control/step-2.pt").rename(campaign.root / "runs/control/step-02.pt")
    campaign.seal()
    result = itera("-rA", "-k", "files-intact and step-")
    result.assert_outcomes(failed=1, skipped=1)
    expect(result,
           "manifest.json $.files[*]: listed file runs/control/step-2.pt is missing: renamed to "
           "runs/control/step-02.pt? (same sha256)",
           "    fix:      move runs/control/step-02.pt back to runs/control/step-2.pt, or correct "
           "the manifest",
           "SKIPPED [1] out/manifest.json:1: not judged: files-intact[runs/control/step-2.pt] "
           "failed (runs/control/step-2.pt is missing)")
    # Another file's bytes are no rename: the plain finding (test_listed_file_missing too).
    (campaign.root / "runs/control/step-02.pt").write_bytes(b"other bytes")
    campaign.seal()
    expect(itera("-k", "files-intact and step-2"),
           "manifest.json $.files[*]: listed file runs/control/step-2.pt is missing")


def test_a_renamed_folder_is_one_finding_with_one_hint(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """A renamed run folder broke 13 items, each for itself: now the folder's first missing
    file says what happened and how to undo it; every other item waits on it, once."""
    campaign.write()
    (campaign.root / "runs/control").rename(campaign.root / "runs/control-old")
    campaign.seal()
    result = itera("-rA", "-k", "not temp")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1, outcomes
    expect(result,
           "manifest.json $.files[*]: listed file runs/control/measurements.jsonl is missing: "
           "the folder runs/control renamed to runs/control-old? (3 of its missing listed files "
           "are there, same sha256: runs/control-old/measurements.jsonl)",
           "    fix:      rename runs/control-old back to runs/control (or list the files where "
           "they are now, with the recorder)",
           f"SKIPPED [{outcomes['skipped']}] out/manifest.json:1: not judged: "
           "files-intact[runs/control/measurements.jsonl] failed "
           "(runs/control/measurements.jsonl is missing)",
           "FAILED out/manifest.json::files-intact[runs/control/measurements.jsonl]")
    assert outcomes["skipped"] >= 12, outcomes
    # Renamed back, the campaign passes again.
    (campaign.root / "runs/control-old").rename(campaign.root / "runs/control")
    campaign.seal()
    assert "failed" not in itera("-k", "not temp").parseoutcomes()


def test_dotfiles_are_not_skipped(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.files[".hidden/state"] = b"x\n"
    campaign.unlisted.add(".hidden/state")
    campaign.write()
    result = itera("-k", "files-intact and .hidden/")
    result.assert_outcomes(failed=1)


def test_ignore_patterns(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.files["logs/train.log"] = b"step 1\n"
    campaign.unlisted.add("logs/train.log")
    campaign.write()
    pytester.makeini("[pytest]\nitera_ignore = logs/*\n")
    result = itera("-k", "files-intact")
    result.assert_outcomes(passed=len(campaign.files) - 1)


def test_temp_path_in_the_manifest_itself(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.manifest["conclusion"]["text"] = "see /tmp/scratch/plots for the curves"
    campaign.write()
    result = itera("-k", "no-temp-paths and manifest.json")
    result.assert_outcomes(failed=1)
    expect(result, "manifest.json:*:*: path into a temporary folder: /tmp/scratch/plots*")


def test_user_temp_patterns(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] = b"# Reload\nfrom /scratch/job42/last.pt\n"
    campaign.write()
    pytester.makeini("[pytest]\nitera_temp_patterns = /scratch/\n")
    result = itera("-k", "no-temp-paths and RELOAD")
    result.assert_outcomes(failed=1)
    expect(result, "RELOAD.md:2:6: path into a temporary folder: /scratch/job42/last.pt*")


def test_absolute_paths_into_the_campaign_itself_are_not_temporary(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """Lightning and Trainer record their output dir; under /tmp that is the campaign, kept."""
    own = f"{campaign.root}/lightning_logs/version_0/checkpoints"
    campaign.files["runs/control/hparams.json"] = json.dumps({"dirpath": own}).encode()
    campaign.files["runs/control/cache.json"] = json.dumps({"cache": "/tmp/hf-cache/x"}).encode()
    # neither a sibling whose name extends the campaign's, nor an escape through '..'
    campaign.files["runs/control/sibling.json"] = json.dumps(
        {"d": f"{campaign.root}-old/x"}
    ).encode()
    campaign.files["runs/control/escape.json"] = json.dumps({"d": f"{campaign.root}/../x"}).encode()
    campaign.write()
    result = itera("-k", "no-temp-paths and runs/control/")
    # predictions, measurements, the checkpoint and hparams.json pass
    result.assert_outcomes(passed=4, failed=3)
    expect_each(  # three items: under xdist their failures come in the order they finish
        result,
        "runs/control/cache.json:1:*: path into a temporary folder: /tmp/hf-cache/x",
        f"runs/control/escape.json:1:*: path into a temporary folder: {campaign.root}/../x",
        f"runs/control/sibling.json:1:*: path into a temporary folder: {campaign.root}-old/x",
    )


# ------------------------------------------------- files-intact, judged in-process

CHECK = "files-intact"


def relist(campaign: CampaignBuilder, edit: Callable[[Path, list[dict[str, Any]]], None]) -> None:
    """The campaign written, then ``edit`` given its folder and the manifest's file list (to
    change both); the manifest rewritten and the folder sealed as it is now."""
    root = campaign.write()
    manifest = json.loads((root / "manifest.json").read_text())
    edit(root, manifest["files"])
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    campaign.seal()


def _entry(path: str, data: bytes = b"") -> dict[str, Any]:
    return {"path": path, "bytes": len(data), "sha256": sha256(data)}


def _missing(root: Path, files: list[dict[str, Any]]) -> None:
    (root / "runs/control/measurements.jsonl").unlink()


def _appended(root: Path, files: list[dict[str, Any]]) -> None:
    with (root / "RELOAD.md").open("ab") as handle:
        handle.write(b"appended later\n")


def _same_size(root: Path, files: list[dict[str, Any]]) -> None:
    path = root / "runs/control/measurements.jsonl"
    path.write_bytes(path.read_bytes().replace(b"0.75", b"0.95"))


def _twice(root: Path, files: list[dict[str, Any]]) -> None:
    files.append(dict(next(f for f in files if f["path"] == "RELOAD.md")))


def _itself(root: Path, files: list[dict[str, Any]]) -> None:
    files.append(_entry("manifest.json"))


def _link_out(root: Path, files: list[dict[str, Any]]) -> None:
    os.symlink("/etc/hostname", root / "runs/control/out-link")
    files.append(_entry("runs/control/out-link"))


def _folder(root: Path, files: list[dict[str, Any]]) -> None:
    (root / "runs/control/plots").mkdir()
    files.append(_entry("runs/control/plots"))


def _drive_letter(root: Path, files: list[dict[str, Any]]) -> None:
    (root / "runs/control/a:b.txt").write_bytes(b"x\n")
    files.append(_entry("runs/control/a:b.txt", b"x\n"))


def _letter_case(root: Path, files: list[dict[str, Any]]) -> None:
    for name in ("Notes.txt", "notes.txt"):
        (root / "runs/control" / name).write_bytes(name.encode())
        files.append(_entry(f"runs/control/{name}", name.encode()))


def _unlisted(root: Path, files: list[dict[str, Any]]) -> None:
    (root / "scratch").mkdir()
    (root / "scratch/notes.txt").write_bytes(b"forgot to list me\n")


def _link_to_a_folder(root: Path, files: list[dict[str, Any]]) -> None:
    os.symlink("../variant-a", root / "runs/control/alias")
    files.append(_entry("runs/control/alias"))


# Each file is its own item: a collision is a finding of both files of the pair, one is asked.
ONE_ITEM = {"files-intact.name-collision": "runs/control/Notes.txt"}


@pytest.mark.parametrize(("break_", "code", "where", "says"), [
    pytest.param(_missing, "files-intact.missing", "manifest.json $.files[",
                 "listed file runs/control/measurements.jsonl is missing", id="missing"),
    pytest.param(_appended, "files-intact.size", "manifest.json $.files[0].bytes",
                 "RELOAD.md is ", id="size"),
    pytest.param(_same_size, "files-intact.sha256", "manifest.json $.files[",
                 "runs/control/measurements.jsonl does not have the sha256 recorded",
                 id="same-size-other-bytes"),
    pytest.param(_twice, "files-intact.listed-twice", "manifest.json $.files[0]",
                 "RELOAD.md is listed 2 times", id="listed-twice"),
    pytest.param(_itself, "files-intact.lists-manifest", "manifest.json $.files[",
                 "manifest.json lists itself", id="lists-itself"),
    pytest.param(_link_out, "files-intact.outside", "manifest.json $.files[",
                 "leaves the campaign folder", id="symlink-out"),
    pytest.param(_folder, "files-intact.not-a-file", "manifest.json $.files[",
                 "runs/control/plots is a directory", id="a-folder"),
    pytest.param(_drive_letter, "files-intact.unportable", "manifest.json $.files[",
                 "contains ':'", id="unportable"),
    pytest.param(_letter_case, "files-intact.name-collision", "manifest.json $.files[",
                 "'runs/control/Notes.txt' differs from 'runs/control/notes.txt' only by "
                 "letter case", id="letter-case"),
    pytest.param(_unlisted, "files-intact.unlisted", "scratch/notes.txt",
                 "is in the campaign folder but not listed in the manifest", id="unlisted"),
    pytest.param(_link_to_a_folder, "files-intact.unreadable", "manifest.json $.files[",
                 "runs/control/alias cannot be read", id="link-to-a-folder"),
])
def test_a_file_not_intact_is_refused(campaign: CampaignBuilder, break_: Callable[
        [Path, list[dict[str, Any]]], None], code: str, where: str, says: str) -> None:
    relist(campaign, break_)
    found = judge(campaign, CHECK, target=ONE_ITEM.get(code), write=False)
    expect_finding(found, code, where=where, says=says)


def test_every_listed_file_intact(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, CHECK))


# ------------------------------------------------------------------ read-ahead


def _big_campaign(campaign: CampaignBuilder) -> list[str]:
    """Files over the one-read size, text and binary, one with a temporary path deep in."""
    rng = random.Random(3)
    big = {
        "runs/control/predictions-full.jsonl": b"".join(
            b'{"id": "ex-%06d", "label": "pos"}\n' % i for i in range(20_000)),
        "runs/variant-a/log.txt": b"step ok\n" * 30_000 + b"saved to /tmp/run-7/last.pt\n",
        "runs/variant-a/blob.bin": bytes(rng.getrandbits(8) for _ in range(300_000)),
    }
    campaign.files.update(big)
    campaign.write()
    os.mkfifo(campaign.root / "runs/control/pipe")
    os.symlink("/etc/hostname", campaign.root / "runs/control/out-link")
    campaign.seal()
    return sorted(big)


def test_read_ahead_gives_the_facts_of_an_inline_read(campaign: CampaignBuilder) -> None:
    """The reader threads compute what the items would, file for file; a FIFO and a link
    out of the folder are never handed to them."""
    files = _big_campaign(campaign)
    checks = {c.id: c for c in FILE_CHECKS}
    every = [e.path for e in Context(load_campaign(campaign.root), Options(), checks).entries()]
    ahead = Context(load_campaign(campaign.root), Options(), checks)
    ahead.read_ahead(every, workers=3)
    assert "runs/control/pipe" not in ahead.reader._facts
    assert "runs/control/out-link" not in ahead.reader._facts
    inline = Context(load_campaign(campaign.root), Options(), checks)
    for relpath in [*files, *campaign.files]:
        assert ahead.facts(relpath) == inline.facts(relpath), relpath
    hit = ahead.facts("runs/variant-a/log.txt").hits[0]
    assert (hit.line, hit.excerpt) == (30_001, "/tmp/run-7/last.pt")
    assert "is a" in str(ahead.facts("runs/control/pipe").error)  # refused, never opened
    ahead.close()
    inline.close()


def test_close_drops_the_reads_still_queued(campaign: CampaignBuilder) -> None:
    """An interrupted or finished run does not wait for files nobody will ask about."""
    for n in range(12):
        campaign.files[f"runs/control/shard-{n:02d}.bin"] = bytes([n]) * (1 << 20)
    campaign.write()
    ctx = Context(load_campaign(campaign.root), Options(), {c.id: c for c in FILE_CHECKS})
    ctx.read_ahead(sorted(campaign.files), workers=2)
    handed = [f for f in ctx.reader._facts.values() if isinstance(f, Future)]
    assert len(handed) == 12
    ctx.close()  # also lets go of the per-file facts: the futures are checked as handed out
    assert not ctx.reader._facts
    deadline = time.monotonic() + 30
    while not all(f.done() for f in handed) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(f.done() for f in handed)
    assert any(f.cancelled() for f in handed)
