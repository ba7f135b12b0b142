"""``python -m pytest_itera push DIR s3://bucket/prefix/`` (issue 41, point 1), against the
local moto server of :mod:`tests.files.test_s3` (127.0.0.1 only): uploaded with each
object's SHA-256, resumed after an interruption, verified in place, the local folder only
read (the ``campaign`` fixture asserts it is unchanged after each test)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.cli import main
from pytest_itera.core.lot_forecast import rate_of
from pytest_itera.core.text import size_text
from pytest_itera.files import push as pushing
from pytest_itera.files.push import PushError, push
from pytest_itera.files.source import SNIFF, S3Location, S3Source, full_sha256, stage
from pytest_itera.record import CampaignRecorder, Closure
from pytest_itera.reload import Reloader
from tests import recorded
from tests.factory import VARIANT_WEIGHTS, CampaignBuilder
from tests.files.test_s3 import (
    LOOPBACK,
    _Counted,
    _Flaky,
    endpoint,
    judged,
    proxied,
    read_bytes,
    upload,
)
from tests.files.test_s3 import reloader as reloader
from tests.files.test_s3 import s3 as s3  # the fixtures of the local server
from tests.files.test_s3 import server as server
from tests.runner import python_path_with_repo

BIG = "runs/variant-a/embeddings.bin"


def fresh(s3: Any, prefix: str = "closures/tiny") -> str:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/{prefix}/"


def stored(s3: Any, url: str) -> dict[str, dict[str, Any]]:
    """Relative key -> its HEAD (with checksums) of every object under the prefix."""
    loc = S3Location.parse(url)
    listed = s3.list_objects_v2(Bucket=loc.bucket, Prefix=f"{loc.prefix}/").get("Contents", [])
    return {o["Key"][len(loc.prefix) + 1:]: s3.head_object(Bucket=loc.bucket, Key=o["Key"],
                                                           ChecksumMode="ENABLED")
            for o in listed}


def local(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file()}


def test_a_pushed_campaign_holds_every_file_with_its_sha256_and_is_judged_by_head(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = campaign.write()
    url = fresh(s3)
    assert main(["push", str(root), url]) == 0
    out, err = capsys.readouterr()
    files = local(root)
    head, rate = out.splitlines()
    assert head == f"{url}: {len(files)} objects verified in place ({len(files)} uploaded, 0 " \
        "already there)"
    # the rate that watch --upload-rate counts a retrieval's push at
    sent = sum((root / key).stat().st_size for key in files)
    assert re.fullmatch(rf"  uploaded {re.escape(size_text(sent))} in \d+\.\d s: "
                        r"(\d+\.\d)MiB/s \(watch --upload-rate \1MiB/s counts the "
                        r"retrieval's push at it\)", rate), rate
    assert rate_of(rate.split(": ")[1].split()[0]) > 0
    assert err.splitlines()[-1].startswith(f"push: {len(files)}/{len(files)} objects, ")
    heads = stored(s3, url)
    assert {key: full_sha256(head)[0] for key, head in heads.items()} == files
    # judged where it lives: every object's SHA-256 is the store's (HEAD), none hashed
    staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "c", 1 << 30,
                   checksums=True)
    assert staged.by_store() == tuple(sorted(files))
    assert main(["push", str(root), url]) == 0  # again: nothing to upload
    assert capsys.readouterr().out.splitlines() == [
        f"{url}: {len(files)} objects verified in place (0 uploaded, {len(files)} already "
        "there)"]


def test_an_interrupted_push_continues_where_it_stopped(
        s3: Any, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = campaign.write()
    url = fresh(s3)
    done: list[str] = []

    def killed(key: str) -> None:
        done.append(key)
        if len(done) == 3:
            raise KeyboardInterrupt

    real = pushing.push
    monkeypatch.setattr(pushing, "push", lambda folder, url, **options: real(
        folder, url, **{**options, "concurrency": 1, "uploaded": killed}))
    assert main(["push", str(root), url]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"push: interrupted; run it again to continue: the objects already in {url} with their "
        "SHA-256 are skipped")
    there = set(stored(s3, url))
    assert set(done) <= there
    assert len(there) <= len(done) + 1  # the one in flight, at most
    assert "manifest.json" not in there  # no manifest over a partial store
    result = push(root, url)
    assert result.complete, result.lines()
    assert sorted(result.skipped) == sorted(there)
    assert sorted(result.uploaded + result.skipped) == sorted(local(root))
    assert result.uploaded[-1] == "manifest.json"


def test_a_prefix_that_holds_other_objects_is_refused_before_any_upload(
        s3: Any, campaign: CampaignBuilder) -> None:
    root = campaign.write()
    url = fresh(s3)
    loc = S3Location.parse(url)
    s3.put_object(Bucket=loc.bucket, Key=f"{loc.prefix}/old/notes.txt", Body=b"other")
    s3.put_object(Bucket=loc.bucket, Key=f"{loc.prefix}2/sibling.txt", Body=b"not under it")
    with pytest.raises(PushError, match=rf"^{url} already holds 1 object that is not this "
                       r"campaign's: old/notes\.txt; push to an empty prefix, or remove them$"):
        push(root, url)
    assert sorted(stored(s3, url)) == ["old/notes.txt"]


def test_a_local_file_changed_after_the_closure_is_not_pushed_nor_the_manifest(
        s3: Any, campaign: CampaignBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    root = campaign.write()
    changed = "runs/control/predictions.jsonl"
    (root / changed).write_bytes((root / changed).read_bytes().replace(b"pos", b"neg", 1))
    campaign.seal()  # the test's own change; push changes nothing
    url = fresh(s3)
    assert main(["push", str(root), url]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{url}: NOT COMPLETE — 1 problem (")
    assert f"  {changed}: the local file is not the one the manifest lists (" in out
    assert "the folder changed after its closure (reopen and close it again)" in out
    assert changed not in stored(s3, url)
    assert "manifest.json" not in stored(s3, url)


def test_an_object_over_a_single_put_is_composite_and_verified_by_its_bytes(
        s3: Any, campaign: CampaignBuilder) -> None:
    campaign.files[BIG] = b"\0" + bytes(range(256)) * (24 << 10)  # 6 MiB: two 5 MiB parts
    root = campaign.write()
    url = fresh(s3)
    result = push(root, url, single_max=5 << 20, part=5 << 20)
    assert result.complete, result.lines()
    assert result.hashed == {BIG: "composite"}
    assert result.lines()[-1] == (
        "  note: 1 verified by hashing their bytes, the store's SHA-256 of each being of its "
        f"parts (a multipart upload), not of the object: {BIG}")
    assert full_sha256(stored(s3, url)[BIG]) == (None, "composite")
    again = push(root, url, single_max=5 << 20, part=5 << 20)  # its sha256 in its metadata
    assert again.complete, again.lines()
    assert again.uploaded == []
    assert again.hashed == {BIG: "composite"}  # verified by its bytes again, all the same


class _Stale(_Flaky):
    """Answers 412 to a HEAD If-Match of one key: it changed after the listing."""

    stale = ""

    def _any(self) -> None:
        if self.command == "HEAD" and self.path.split("?")[0].endswith(self.stale) and \
                self.headers.get("If-Match"):
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super()._any()

    do_GET = do_HEAD = do_PUT = _any


def test_an_object_changed_after_the_listing_is_named(
        s3: Any, server: str, campaign: CampaignBuilder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = campaign.write()
    url = fresh(s3)
    assert push(root, url).complete

    class Stale(_Stale):
        upstream, stale = server, VARIANT_WEIGHTS

    with proxied(monkeypatch, Stale):
        result = push(root, url)
    assert not result.complete
    assert VARIANT_WEIGHTS in result.uploaded  # not taken as already there: uploaded again
    assert result.problems == [
        f"{url}{VARIANT_WEIGHTS}: changed while it was being verified (its ETag is no longer "
        f"{stored(s3, url)[VARIANT_WEIGHTS]['ETag']}): something else writes under the "
        "prefix; run the push again when it stops"]


def test_a_hanging_server_and_missing_credentials_are_bounded_clear_errors(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = campaign.write()
    with socket.socket() as listener:  # accepts connections (the backlog), never answers
        listener.bind((LOOPBACK, 0))
        listener.listen(16)
        endpoint(monkeypatch, f"http://{LOOPBACK}:{listener.getsockname()[1]}")
        started = time.monotonic()
        with pytest.raises(PushError, match=r"^s3://itera-hang/camp/: cannot be listed \(no "
                           r"answer within 0\.5 s after the retries\)$"):
            push(root, "s3://itera-hang/camp/", timeout=0.5, retries=1)
        assert time.monotonic() - started < 15
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(PushError, match=r"^s3://itera-b/camp/: cannot be listed \(no "
                       r"credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \(or "
                       r"AWS_PROFILE\) in the environment\)$"):
        push(root, "s3://itera-b/camp/", timeout=2)


def test_a_folder_that_is_not_closed_is_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plan.json").write_text("{}")
    assert main(["push", str(tmp_path), "s3://itera-b/camp/"]) == 1
    assert capsys.readouterr().err == (
        f"push: {tmp_path}: manifest.json is not there: push a closed campaign "
        "(CampaignRecorder.close writes its manifest.json)\n")
    assert main(["push", str(tmp_path / "nope"), "s3://itera-b/camp/"]) == 4
    assert pushing.SINGLE_MAX == 5 << 30


def test_the_recorder_pushes_the_campaign_it_closes(
        s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = fresh(s3)
    real = recorded.conclude

    def conclude(rec: CampaignRecorder, *, check: bool) -> Closure:
        monkeypatch.setattr(rec, "close", functools.partial(rec.close, push_to=url))
        return real(rec, check=check)

    monkeypatch.setattr(recorded, "conclude", conclude)
    root = tmp_path / "camp"
    closure = recorded.record(root, check=False)
    assert closure.pushed is not None
    assert closure.pushed.complete, closure.pushed.lines()
    files = local(root)
    assert {key: full_sha256(head)[0] for key, head in stored(s3, url).items()} == files
    assert capsys.readouterr().out.splitlines()[-2] == (
        f"{url}: {len(files)} objects verified in place ({len(files)} uploaded, 0 already "
        "there)")


@pytest.mark.parametrize("checksums", [False, True])
def test_a_pushed_campaign_is_judged_reading_each_object_once(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, checksums: bool) -> None:
    """With the push's SHA-256: one HEAD per object, no byte hashed, a binary file no check
    reads never downloaded (its first 64 KiB sniffed), the others read once (a text file
    over 64 KiB is not asked for its first bytes twice). Without: each object read once,
    hashed as it streams, that binary file never written. The local copy is the rest."""
    campaign.files[BIG] = b"\0" + bytes(range(256)) * (1 << 12)  # 1 MiB, binary
    notes = "runs/variant-a/notes.txt"
    campaign.files[notes] = b"a line of notes\n" * (1 << 13)  # 128 KiB of text
    root = campaign.write()
    url = fresh(s3)
    assert push(root, url).complete
    loc = S3Location.parse(url)

    class Counted(_Counted):
        upstream, seen_requests = server, []

    with proxied(monkeypatch, Counted):
        staged = stage(S3Source(loc, timeout=5), tmp_path / "c", 1 << 30, checksums=checksums)
    prefix = f"/{loc.bucket}/{loc.prefix}/"
    asked = read_bytes(Counted.seen_requests, prefix)
    sizes = {key: (root / key).stat().st_size for key in local(root)}
    heads = [p for m, p, _ in Counted.seen_requests if m == "HEAD"]
    copied = sum(p.stat().st_size for p in staged.root.rglob("*") if p.is_file())
    if checksums:
        assert sorted(h[len(prefix):] for h in heads) == sorted(sizes)
        assert staged.by_store() == tuple(sorted(sizes))
        assert asked.pop(BIG) == SNIFF  # its first bytes only
        assert asked == {k: n for k, n in sizes.items() if k != BIG}  # the others once, whole
    else:
        assert heads == []
        assert asked == sizes  # each object read once, whole
        gets = [p[len(prefix):] for m, p, _ in Counted.seen_requests
                if m == "GET" and p.startswith(prefix)]
        assert sorted(gets) == sorted(sizes)  # by one GET each: BIG's sniff is that GET's start
        assert staged.objects[BIG].sha256 == local(root)[BIG]  # hashed as it streamed
    assert not staged.objects[BIG].copied  # no check reads it: never written
    assert copied == sum(sizes.values()) - sizes[BIG]


def test_objects_the_store_holds_no_sha256_of_are_uploaded_again_then_hashed(
        s3: Any, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Uploaded before by another tool (no checksum): not taken as there, uploaded with one.
    A store that keeps none at all (its HEAD says nothing): each object verified by its
    bytes, and the summary says so."""
    root = campaign.write()
    url = fresh(s3)
    loc = S3Location.parse(url)
    s3.put_object(Bucket=loc.bucket, Key=f"{loc.prefix}/RELOAD.md",
                  Body=(root / "RELOAD.md").read_bytes())
    result = push(root, url)
    assert result.complete, result.lines()
    assert "RELOAD.md" in result.uploaded
    assert full_sha256(stored(s3, url)["RELOAD.md"])[0] == local(root)["RELOAD.md"]
    monkeypatch.setattr(pushing, "full_sha256", lambda head: (None, "none"))
    again = push(root, url)
    assert again.complete, again.lines()
    assert sorted(again.hashed) == sorted(local(root))
    assert again.lines()[-1].startswith(
        f"  note: {len(again.hashed)} verified by hashing their bytes, the store holding no "
        "SHA-256 of them: RELOAD.md, ")


def test_an_object_whose_stored_sha256_differs_is_named_and_the_push_fails(
        s3: Any, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = campaign.write()
    url = fresh(s3)
    wrong = "0" * 64
    real = full_sha256
    monkeypatch.setattr(pushing, "full_sha256", lambda head: (
        (wrong, "") if head.get("ContentLength") == (root / "RELOAD.md").stat().st_size
        else real(head)))
    assert main(["push", str(root), url]) == 1
    out = capsys.readouterr().out
    assert (f"  {url}RELOAD.md: the store's SHA-256 of it is sha256 {wrong}, the manifest says "
            f"{local(root)['RELOAD.md']}: run the push again") in out.splitlines()


def test_a_binary_file_no_check_reads_is_judged_by_its_streamed_sha256(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path, reloader: Reloader) -> None:
    """Without the store's checksums: hashed as it streams, never written to the copy;
    files-intact judges it by that sha256, the same finding as on disk."""
    other = "runs/control/embeddings.bin"
    campaign.files[BIG] = b"\0" + bytes(range(256)) * 400
    campaign.files[other] = b"\0" + bytes(range(255, -1, -1)) * 400
    root = campaign.write()
    url = upload(s3, root)
    loc = S3Location.parse(url)
    s3.put_object(Bucket=loc.bucket, Key=f"{loc.prefix}/{other}",
                  Body=b"\0" + bytes(range(256)) * 400)  # the same size, other bytes
    staged = stage(S3Source(loc, timeout=5), tmp_path / "c", 1 << 30)
    assert not (staged.root / BIG).exists()
    assert not (staged.root / other).exists()
    found = judged(staged, reloader, f"files-intact[{BIG}]", f"files-intact[{other}]",
                   f"no-temp-paths[{BIG}]")
    assert not found[f"files-intact[{BIG}]"].failed
    assert not found[f"no-temp-paths[{BIG}]"].failed
    (finding,) = found[f"files-intact[{other}]"].findings
    assert finding.message == f"{other} does not have the sha256 recorded in the manifest"


class _Slow(_Flaky):
    """Each PUT waits a little before it is forwarded: a push long enough to be killed."""

    def _any(self) -> None:
        if self.command == "PUT":
            time.sleep(0.3)
        super()._any()

    do_GET = do_HEAD = do_PUT = _any


def test_a_push_killed_with_sigkill_resumes(
        s3: Any, server: str, campaign: CampaignBuilder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    root = campaign.write()
    url = fresh(s3)

    class Slow(_Slow):
        upstream = server

    with proxied(monkeypatch, Slow):
        child = subprocess.Popen([sys.executable, "-m", "pytest_itera", "push", str(root), url,
                                  "--concurrency", "1"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while len(stored(s3, url)) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(timeout=30)
    endpoint(monkeypatch, server)  # the server itself again, no proxy
    there = set(stored(s3, url))
    assert 3 <= len(there) < len(local(root))
    assert "manifest.json" not in there
    result = push(root, url)
    assert result.complete, result.lines()
    assert set(result.skipped) == there
    assert result.uploaded[-1] == "manifest.json"



def test_the_example_pushed_is_judged_from_the_store_one_checkpoint_on_disk_at_a_time(
        pytester: pytest.Pytester, example_campaign: Path, s3: Any,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 41's done-when: the example campaign pushed, then judged from s3:// under a
    cache cap of 0 with --itera-store-checksums, gives the verdict it gives locally, while
    the local disk (the copy and its spools, polled) never holds more than the evidence and
    the largest checkpoint."""
    python_path_with_repo(monkeypatch)
    url = fresh(s3, "closures/example")
    assert push(example_campaign, url).complete
    local = pytester.runpytest("--itera-campaign", str(example_campaign), "-p",
                               "no:cacheprovider")
    private = tmp_path / "tmp"  # the inner session's temporary folder: its copy, its spools
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    peak, stop = [0], threading.Event()

    def poll() -> None:
        while not stop.is_set():
            held = 0
            for folder, _, files in os.walk(private):  # a folder removed meanwhile: skipped
                for name in files:
                    with contextlib.suppress(OSError):  # a spool removed while it is counted
                        held += os.stat(os.path.join(folder, name)).st_size
            peak[0] = max(peak[0], held)
            stop.wait(0.005)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    pytester.makeini("[pytest]\nitera_store_cache_max = 0\n")
    try:
        stored = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider",
                                    "--itera-store-checksums")
    finally:
        stop.set()
        watcher.join()
    verdict = re.compile(r"^campaign \S+: (.*?)(?: —.*)?$")
    said = {name: [m.group(1) for line in run.outlines if (m := verdict.match(line))]
            for name, run in (("local", local), ("stored", stored))}
    assert said["stored"] == said["local"] != [], said
    assert stored.ret == local.ret
    manifest = json.loads((example_campaign / "manifest.json").read_text())
    units = [r["path"].strip("/") for r in (*manifest["checkpoints"], *manifest["adapters"])]
    sizes = {p.relative_to(example_campaign).as_posix(): p.stat().st_size
             for p in example_campaign.rglob("*") if p.is_file()}

    def unit_of(key: str) -> str | None:
        return next((u for u in units if key == u or key.startswith(u + "/")), None)

    evidence = sum(n for key, n in sizes.items() if unit_of(key) is None)
    largest = max(sum(n for key, n in sizes.items() if unit_of(key) == u) for u in units)
    assert 0 < peak[0] <= evidence + largest + (64 << 10), (peak[0], evidence, largest)
    assert peak[0] < sum(sizes.values())  # never the whole campaign
