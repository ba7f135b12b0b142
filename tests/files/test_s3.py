"""A campaign in S3-compatible object storage (issue 28, item 1), against a real server.

moto's standalone server runs on 127.0.0.1 (a random port) for this module; campaigns are
written by the factory and uploaded with boto3; the plugin reads them through obstore
configured from the environment (``AWS_ENDPOINT_URL`` and static test keys, nothing else).
A small HTTP proxy in front of the server answers 500 before recovering; a socket that
accepts and never answers is the hanging server. No address but 127.0.0.1 is ever used.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import boto3  # type: ignore[import-untyped]
import jsonschema
import pytest
from moto.server import ThreadedMotoServer

from pytest_itera.checks import engine as run
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Options
from pytest_itera.core.campaign import load_campaign
from pytest_itera.files import scan, source
from pytest_itera.files.source import Held, S3Location, S3Source, SourceError, stage
from pytest_itera.reload import Reloader
from pytest_itera.report import seal
from tests.checks.judging import expect_finding
from tests.factory import CONTROL_CKPT, RESUME_CKPT, VARIANT_WEIGHTS, CampaignBuilder
from tests.inprocess import registry
from tests.runner import python_path_with_repo

LOOPBACK = "127.0.0.1"
COPIES = str(Path(tempfile.gettempdir()) / "itera-store-")  # where the local copies go


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    moto = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    assert host == LOOPBACK
    try:
        yield f"http://{LOOPBACK}:{port}"
    finally:
        moto.stop()


@pytest.fixture
def s3(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A boto3 client of the local server; the environment points obstore at it too. Closed
    after the test: a client left to the garbage collector closes its sockets whenever it
    runs, a ResourceWarning in some later test."""
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
                 "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    endpoint(monkeypatch, server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "itera-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "itera-test-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    client = boto3.client("s3", endpoint_url=server, region_name="us-east-1",
                          aws_access_key_id="itera-test-key",
                          aws_secret_access_key="itera-test-secret")
    yield client
    client.close()


def endpoint(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    assert url.startswith(f"http://{LOOPBACK}:")
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)


def upload(s3: Any, folder: Path, prefix: str = "closures/tiny", *,
           checksums: bool = False) -> str:
    """Every file of ``folder`` under a fresh bucket's ``prefix`` (``checksums``: each with the
    store's own SHA-256, a single-part upload); the campaign's s3:// URL."""
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    extra = {"ChecksumAlgorithm": "SHA256"} if checksums else {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}",
                          Body=path.read_bytes(), **extra)
    return f"s3://{bucket}/{prefix}/"


def bucket_of(url: str) -> str:
    return S3Location.parse(url).bucket


@pytest.fixture(scope="module")
def reloader() -> Iterator[Reloader]:
    with Reloader(timeout=120.0) as shared:
        yield shared


def judged(staged: source.Staged, reloader: Reloader, *names: str) -> dict[str, run.Outcome]:
    """The named items of the staged campaign, judged in this process by the plugin's engine
    with the store's facts, as the plugin judges an s3:// campaign (the wiring: the
    session tests above)."""
    context = Context(load_campaign(staged.root), Options(), registry(),
                      reloader_factory=lambda: reloader, close_reloader=False, stored=staged)
    try:
        found = {o.name: o for o in (run.evaluate(context, check, target)
                                     for check, target in run.pairs(context)
                                     if run.Outcome(check.id, target, check.scope).name in names)}
    finally:
        context.close()
    assert sorted(found) == sorted(names)
    return found


# ------------------------------------------------------------ the real pytest session


def test_a_campaign_uploaded_to_s3_is_accepted_from_its_url(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With --itera-store-checksums: the store's SHA-256 of each object (uploaded with one)
    verifies it, the seal records it, and the verification (bytes hashed) agrees."""
    python_path_with_repo(monkeypatch)
    url = upload(s3, campaign.write(), checksums=True)
    shutil.rmtree(campaign.root)  # nothing local: the store alone holds the campaign
    campaign.written_digest = None
    result = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider", "-v",
                                "--itera-store-checksums", "--itera-report", "closure.json",
                                "--itera-report", "closure.md", "--itera-seal", "seal.json")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()
    result.stdout.fnmatch_lines([
        f"{url}manifest.json::files-intact[[]{VARIANT_WEIGHTS}[]] PASSED*",
        "campaign tiny-2026-11: ACCEPTED — * checks",
        "  note: 18 files verified by the store's own SHA-256 (--itera-store-checksums), not "
        "by hashing their bytes: RELOAD.md, analysis.md, *"])
    assert result.ret == 0
    document = json.loads((pytester.path / "closure.json").read_text())
    assert document["root"] == url  # not the local copy
    jsonschema.Draft202012Validator(json.loads(resources.files("pytest_itera.schemas").joinpath(
        "report.schema.json").read_text())).validate(document)
    assert len(document["store_verified"]) == 18
    assert VARIANT_WEIGHTS in document["store_verified"]
    assert all(c["nodeid"].startswith(f"{url}manifest.json::") for c in document["checks"])
    assert "18 files verified by the store's own SHA-256" in \
        (pytester.path / "closure.md").read_text()
    everything = result.stdout.str() + (pytester.path / "closure.json").read_text()
    assert COPIES not in everything  # the local copy is named nowhere
    assert "itera-test-secret" not in everything
    assert "itera-test-key" not in everything
    assert not list(Path(tempfile.gettempdir()).glob("itera-store-*/" + bucket_of(url)))
    verified = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider",
                                  "--itera-verify-seal", "seal.json")
    assert verified.ret == 0, verified.stdout.str()
    assert verified.parseoutcomes()["passed"] >= 1


def test_a_missing_a_changed_a_truncated_and_an_unreadable_object_are_rejected(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any, server: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under xdist: the controller stages (through a proxy that always answers 500 for
    RELOAD.md; checkpoints over the ini's cache cap stay in the store), the workers judge
    its copy with the store's facts."""
    python_path_with_repo(monkeypatch)
    root = campaign.write()
    url = upload(s3, root, checksums=True)
    bucket, prefix = bucket_of(url), "closures/tiny"
    s3.delete_object(Bucket=bucket, Key=f"{prefix}/analysis.md")
    changed = (root / "runs/control/predictions.jsonl").read_bytes().replace(b"pos", b"neg", 1)
    s3.put_object(Bucket=bucket, Key=f"{prefix}/runs/control/predictions.jsonl", Body=changed)
    weights = (root / VARIANT_WEIGHTS).read_bytes()
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{VARIANT_WEIGHTS}",
                  Body=weights[: len(weights) // 2])
    pytester.makeini("[pytest]\nitera_store_cache_max = 512\nitera_store_checksums = true\n")

    class Broken(_Flaky):
        upstream, broken = server, ("RELOAD.md",)

    with proxied(monkeypatch, Broken):
        result = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider", "-k",
                                    "files-intact or checkpoint-reloads or no-temp-paths",
                                    "-rfs", "-n", "2")
    text = result.stdout.str()
    assert result.ret == 1, text
    half = len(weights) // 2
    for line in [  # in any order: the workers report them as they finish
        "*manifest.json $.files[[]*]: listed file analysis.md is missing",
        "*manifest.json $.files[[]*].sha256: runs/control/predictions.jsonl does not have the "
        "sha256 "
        "recorded in the manifest",
        f"*manifest.json $.files[[]*].bytes: {VARIANT_WEIGHTS} is {half} bytes, the manifest "
        f"says {len(weights)}",
        f"*manifest.json $.files[[]*]: RELOAD.md cannot be read: could not be read from the "
        f"store ({url}RELOAD.md): HTTP 500 after 3 retries (bytes 0-*)",
        # over the cap: spooled alone, and judged as a local checkpoint (this one truncated)
        f"*manifest.json $.checkpoints[[]2]: does not reload in a fresh process with "
        f"weights_only=True: {VARIANT_WEIGHTS}: corrupt or truncated torch archive *",
        "campaign tiny-2026-11: REJECTED — 5 of * checks failed, 1 not judged",
        # the two objects replaced without a checksum were hashed; RELOAD.md was not read
        "  note: 14 files verified by the store's own SHA-256 (--itera-store-checksums), not "
        "by hashing their bytes: configs/control.json, *",
        # pytest adds " - <message>" to the line where it fits, always under CI=true
        f"FAILED {url}manifest.json::files-intact[[]RELOAD.md[]]*",
        f"SKIPPED [[]1[]] {url.replace('//', '/')}manifest.json:1: not judged: "
        "files-intact[[]RELOAD.md[]] failed "
        f"(RELOAD.md could not be read from the store: HTTP 500 after 3 retries (bytes 0-*))",
    ]:
        result.stdout.fnmatch_lines([line])
    assert COPIES not in text  # the controller's copy is named nowhere
    assert "itera-test-secret" not in text


# ------------------------------------------------------------ refusals before any check


def test_an_s3_campaign_the_server_cannot_list_is_a_usage_error(
        pytester: pytest.Pytester, s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    result = pytester.runpytest("--itera-campaign", "s3://itera-no-such-bucket/x/",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --itera-campaign: s3://itera-no-such-bucket/x/: cannot be listed (*"])
    assert "itera-test-secret" not in result.stderr.str()
    real = tempfile.mkdtemp

    def full(suffix: str | None = None, prefix: str | None = None,
             dir: str | None = None) -> str:
        if prefix == "itera-store-":  # the local copy's folder, on a full disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(suffix, prefix, dir)

    monkeypatch.setattr(tempfile, "mkdtemp", full)
    result = pytester.runpytest("--itera-campaign", "s3://itera-no-such-bucket/x/",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --itera-campaign: s3://itera-no-such-bucket/x/: the "
                                 f"local copy cannot be written under {tempfile.gettempdir()} "
                                 "(No space left on device)"])


def test_a_checkpoint_over_the_cache_cap_is_spooled_alone_judged_and_removed(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path, reloader: Reloader,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a cap of 0 no checkpoint is in the local copy: each is spooled alone into a
    private folder when its judgement needs it (its reload, its scan), one at a time, then
    removed; its files are read from the store for that alone (the copy left them unread),
    hashed and scanned there. The local disk holds the evidence and at most one checkpoint."""
    root = campaign.write()
    url = upload(s3, root)
    staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "copy", 0)
    for key in (CONTROL_CKPT, RESUME_CKPT, VARIANT_WEIGHTS):  # left in the store, unread
        assert not (staged.root / key).exists(), key
        assert staged.objects[key].sha256 is None  # hashed when it is spooled: read once
    assert (staged.root / "runs/control/predictions.jsonl").is_file()  # evidence: always
    spooled: list[tuple[str, Path, int, int]] = []  # (checkpoint, folder, bytes, alive)
    real = source.Staged.spool

    def watched(self: source.Staged, path: str, into: Path) -> dict[str, Held | str]:
        done = real(self, path, into)
        alive = sum(folder.exists() for _, folder, _, _ in spooled)  # earlier spools
        spooled.append((path, into, sum(f.stat().st_size for f in into.rglob("*")
                                        if f.is_file()), alive))
        return done

    monkeypatch.setattr(source.Staged, "spool", watched)
    names = [f"{check}[{key}]" for key in (CONTROL_CKPT, RESUME_CKPT, VARIANT_WEIGHTS)
             for check in ("checkpoint-reloads", "files-intact", "no-temp-paths")]
    found = judged(staged, reloader, *names)
    assert {name: outcome.message for name, outcome in found.items() if outcome.failed} == {}
    # files-intact compared each spooled checkpoint's sha256 with the manifest's (a changed
    # byte fails it: tests/files/test_s3.py's truncated object, the session test above).
    assert sorted(path for path, _, _, _ in spooled) == sorted([CONTROL_CKPT, RESUME_CKPT,
                                                                 VARIANT_WEIGHTS])  # each once
    for path, folder, size, alive in spooled:
        assert size == (root / path).stat().st_size  # that checkpoint alone
        assert alive == 0  # one spool at a time: the ones before it are gone
        assert not folder.exists()  # and it is gone too
    assert not (staged.root / VARIANT_WEIGHTS).exists()  # the copy is as staged


def test_a_checkpoint_that_fits_the_cap_is_copied_and_reloads(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path, reloader: Reloader) -> None:
    root = campaign.write()
    url = upload(s3, root)
    sizes = {key: (root / key).stat().st_size for key in (CONTROL_CKPT, RESUME_CKPT,
                                                          VARIANT_WEIGHTS)}
    cap = sizes[CONTROL_CKPT] + sizes[RESUME_CKPT]  # in path order: these two, not the third
    staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "copy", cap)
    assert [k for k in sizes if (staged.root / k).is_file()] == [CONTROL_CKPT, RESUME_CKPT]
    found = judged(staged, reloader, f"checkpoint-reloads[{CONTROL_CKPT}]",
                   f"checkpoint-reloads[{VARIANT_WEIGHTS}]")
    assert not found[f"checkpoint-reloads[{CONTROL_CKPT}]"].failed
    assert not found[f"checkpoint-reloads[{VARIANT_WEIGHTS}]"].failed  # spooled for it


def test_each_object_is_hashed_once_while_it_streams(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """files-intact (and the seal, by the copy's fingerprint) reuse the sha256 computed during
    the copy: the scan of the copy reads text for temporary paths, and hashes nothing."""
    root = campaign.write()
    staged = stage(S3Source(S3Location.parse(upload(s3, root)), timeout=5), tmp_path / "c",
                   1 << 30)
    hashed: list[bool] = []
    real = scan.scan_file

    def spy(*args: Any, **kwargs: Any) -> scan.FileFacts:
        hashed.append(kwargs.get("hash", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(scan, "scan_file", spy)
    context = Context(load_campaign(staged.root), Options(), registry(), stored=staged,
                      keep_digests=True)
    try:
        for key in staged.objects:
            expected = hashlib.sha256((root / key).read_bytes()).hexdigest()
            assert context.facts(key).sha256 == expected, key
        assert len(hashed) == len(staged.objects)
        assert not any(hashed)
        st = (staged.root / CONTROL_CKPT).stat()
        assert context.verified_digests()[CONTROL_CKPT] == (
            staged.objects[CONTROL_CKPT].sha256,
            (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        assert context.facts("runs/control/predictions.jsonl").binary is False  # scanned
    finally:
        context.close()
    # The seal reuses the copy's digests by fingerprint (also under xdist, where the
    # controller's checks hashed nothing): a digest it reuses is the one it was handed.
    known = {key: (held.sha256 or "", held.fingerprint or (0, 0, 0, 0, 0))
             for key, held in staged.objects.items()}
    known[CONTROL_CKPT] = ("ab" * 32, known[CONTROL_CKPT][1])
    sealed = seal.write(staged.root, tmp_path / "seal.json", {}, known=known)
    resources = seal.read(sealed.path).resources()
    assert resources[CONTROL_CKPT] == "ab" * 32
    assert resources[VARIANT_WEIGHTS] == staged.objects[VARIANT_WEIGHTS].sha256


@pytest.mark.parametrize("changed", [False, True], ids=["as-listed", "changed-after-listing"])
def test_a_deferred_binary_file_is_read_only_by_the_item_that_hashes_it(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, reloader: Reloader, changed: bool) -> None:
    """``stage(defer=True)`` (the items run on xdist workers): a binary file no check reads is
    only sniffed; its temporary-path scan reads none of it, files-intact streams it once,
    from the version listed: a file replaced since is named, not mixed with the new one."""
    big = "runs/variant-a/embeddings.bin"
    campaign.files[big] = b"\0" + bytes(range(256)) * (1 << 12)  # 1 MiB, binary
    root = campaign.write()
    url = upload(s3, root)

    class Counted(_Counted):
        upstream, seen_requests = server, []

    with proxied(monkeypatch, Counted):
        staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "c", 1 << 30,
                       defer=True)
        assert staged.deferred(big)
        assert not (staged.root / big).exists()
        assert staged.deferred("runs/control/predictions.jsonl") is False  # text: copied
        prefix = f"/{bucket_of(url)}/closures/tiny/"
        sniffed = read_bytes(Counted.seen_requests, prefix)
        assert sniffed[big] == source.SNIFF
        if changed:
            s3.put_object(Bucket=bucket_of(url), Key=f"closures/tiny/{big}",
                          Body=b"\0" * (1 << 20))
        scanned = judged(staged, reloader, f"no-temp-paths[{big}]")
        assert not scanned[f"no-temp-paths[{big}]"].failed
        assert read_bytes(Counted.seen_requests, prefix) == sniffed  # the scan read nothing
        found = judged(staged, reloader, f"files-intact[{big}]")[f"files-intact[{big}]"]
    hashed = read_bytes(Counted.seen_requests, prefix)[big] - source.SNIFF
    if not changed:
        assert not found.failed, found.message
        assert hashed == len(campaign.files[big])
        return
    expect_finding(found.findings, "files-intact.unreadable",
                   says=f"{big} cannot be read: could not be read from the store ({url}{big}): "
                        "changed while it was being copied (its ETag is no longer ")


def test_the_stores_sha256_spares_hashing_and_downloading_and_is_named_when_it_differs(
        s3: Any, campaign: CampaignBuilder, tmp_path: Path, reloader: Reloader,
        monkeypatch: pytest.MonkeyPatch) -> None:
    big, predictions = "runs/variant-a/embeddings.bin", "runs/control/predictions.jsonl"
    campaign.files[big] = b"\0" + bytes(range(256)) * 400  # binary, nothing a check reads
    root = campaign.write()
    url = upload(s3, root, checksums=True)
    changed = (root / predictions).read_bytes().replace(b"pos", b"neg", 1)
    s3.put_object(Bucket=bucket_of(url), Key=f"closures/tiny/{predictions}", Body=changed,
                  ChecksumAlgorithm="SHA256")
    hashed: list[bytes] = []
    real = hashlib.sha256

    def counted(*data: bytes) -> Any:
        hashed.extend(data or [b""])
        return real(*data)

    monkeypatch.setattr(source, "hashlib", SimpleNamespace(sha256=counted))  # this module's
    staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "c", 1 << 30,
                   checksums=True)
    assert hashed == []  # every object: the store's own SHA-256
    assert all(h.by_store for h in staged.objects.values())
    assert staged.by_store() == tuple(sorted(staged.objects))
    assert not staged.objects[big].copied
    assert not (staged.root / big).exists()  # spared: one ranged GET of its first bytes
    assert (staged.root / VARIANT_WEIGHTS).is_file()  # a checkpoint: copied for its reload
    over = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "c1", 1, checksums=True)
    assert hashed == []  # a checkpoint over the cap: its store SHA-256, none of its bytes
    assert over.left_out() == [CONTROL_CKPT, RESUME_CKPT, VARIANT_WEIGHTS]
    assert over.objects[VARIANT_WEIGHTS] == Held(
        staged.objects[VARIANT_WEIGHTS].size, staged.objects[VARIANT_WEIGHTS].sha256,
        by_store=True, over_cap=True,  # not even sniffed: read when it is spooled
        etag=over.objects[VARIANT_WEIGHTS].etag)  # the version a spool reads
    assert over.objects[VARIANT_WEIGHTS].etag
    found = judged(staged, reloader, f"files-intact[{big}]", f"no-temp-paths[{big}]",
                   f"files-intact[{predictions}]", f"checkpoint-reloads[{VARIANT_WEIGHTS}]")
    assert not found[f"files-intact[{big}]"].failed
    assert not found[f"no-temp-paths[{big}]"].failed
    assert not found[f"checkpoint-reloads[{VARIANT_WEIGHTS}]"].failed
    (finding,) = found[f"files-intact[{predictions}]"].findings
    assert finding.message == (
        f"{predictions} does not have the sha256 recorded in the manifest (the sha256 is the "
        "store's own SHA-256 of the object: --itera-store-checksums)")
    assert finding.found == real(changed).hexdigest()


def test_a_multipart_upload_and_an_object_without_a_checksum_are_hashed(
        s3: Any, tmp_path: Path) -> None:
    """A multipart object's checksum is of its parts (composite): never taken for the
    object's SHA-256; an object the store holds no checksum of is hashed as it streams."""
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    parts = [b"x" * (5 << 20), b"y"]
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key="camp/m.bin",
                                           ChecksumAlgorithm="SHA256")["UploadId"]
    done = [s3.upload_part(Bucket=bucket, Key="camp/m.bin", UploadId=upload_id,
                           PartNumber=n, Body=body, ChecksumAlgorithm="SHA256")
            for n, body in enumerate(parts, 1)]
    s3.complete_multipart_upload(Bucket=bucket, Key="camp/m.bin", UploadId=upload_id,
                                 MultipartUpload={"Parts": [
                                     {"PartNumber": n, "ETag": d["ETag"],
                                      "ChecksumSHA256": d["ChecksumSHA256"]}
                                     for n, d in enumerate(done, 1)]})
    s3.put_object(Bucket=bucket, Key="camp/plain.bin", Body=b"\0plain")
    s3.put_object(Bucket=bucket, Key="camp/single.bin", Body=b"\0single",
                  ChecksumAlgorithm="SHA256")
    staged = stage(S3Source(S3Location.parse(f"s3://{bucket}/camp/"), timeout=5),
                   tmp_path / "c", 1 << 30, checksums=True)
    assert staged.objects["m.bin"].sha256 == hashlib.sha256(b"".join(parts)).hexdigest()
    assert [k for k, h in staged.objects.items() if h.by_store] == ["single.bin"]
    assert staged.objects["plain.bin"].sha256 == hashlib.sha256(b"\0plain").hexdigest()


def test_without_a_readable_manifest_a_prefix_over_the_cap_is_refused(
        s3: Any, tmp_path: Path) -> None:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="camp/manifest.json", Body=b"{not json")
    s3.put_object(Bucket=bucket, Key="camp/runs/last.pt", Body=b"w" * 5000)
    with pytest.raises(SourceError, match=rf"^s3://{bucket}/camp/: its 4\.9 KiB exceed the "
                       r"local cache cap of 4\.0 KiB \(largest: runs/last\.pt \(4\.9 KiB\), "
                       r"manifest\.json \(9 bytes\)\) and it has no readable manifest\.json"):
        stage(S3Source(S3Location.parse(f"s3://{bucket}/camp/"), timeout=5), tmp_path / "c",
              4096)


@pytest.mark.parametrize(("keys", "message"), [
    # obstore's own path rules refuse these while listing, naming the key
    (["a/../b"], r"cannot be listed \(.*\"camp/a/\.\./b\".*illegal character sequence"),
    (["x//y"], r"cannot be listed \(.*\"camp/x//y\" contained empty path segment"),
    (["Analysis.md", "analysis.md"], "differ only by case"),
])
def test_keys_a_folder_cannot_hold_are_refused(s3: Any, tmp_path: Path, keys: list[str],
                                                message: str) -> None:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    for key in keys:
        s3.put_object(Bucket=bucket, Key=f"camp/{key}", Body=b"x")
    s3.put_object(Bucket=bucket, Key="camp/ok.json", Body=b"{}")
    store = S3Source(S3Location.parse(f"s3://{bucket}/camp/"), timeout=5)
    with pytest.raises(SourceError, match=message):
        stage(store, tmp_path / "copy", 1 << 20)
    assert not (tmp_path.parent / "b").exists()


def test_without_obstore_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for loaded in [m for m in sys.modules if m == "obstore" or m.startswith("obstore.")]:
        monkeypatch.setitem(sys.modules, loaded, None)
    monkeypatch.setitem(sys.modules, "obstore", None)
    with pytest.raises(SourceError, match=r"^s3://itera-b/p/: reading object storage needs "
                       r"obstore: pip install 'pytest-itera\[s3\]'$"):
        S3Source(S3Location.parse("s3://itera-b/p"))


# ------------------------------------------------------------ a failing, then a hanging server


class _Flaky(BaseHTTPRequestHandler):
    """Forwards to the real server, answering 500 to the first ``failures`` requests."""

    upstream: str = ""
    failures = 0
    seen = 0
    hang_reads: threading.Event | None = None  # set: object reads hang until it is cleared
    hangs: tuple[str, ...] = ()  # only these keys' reads hang (none given: every object's)
    broken: tuple[str, ...] = ()  # keys (path ends) whose reads are always answered 500
    short: tuple[str, ...] = ()  # keys whose reads come one byte short
    # keys whose first read sends this many bytes of its body, then hangs (the rest: read)
    stall_after: tuple[tuple[str, int], ...] = ()

    def _any(self) -> None:
        cls = type(self)
        cls.seen += 1
        if cls.hang_reads is not None and "list-type" not in self.path and \
                self.path.split("?")[0].endswith(cls.hangs or ("",)):
            cls.hang_reads.wait(30)  # never answers while the test runs
            return
        if cls.seen <= cls.failures or (self.command == "GET" and \
                self.path.split("?")[0].endswith(cls.broken or ("\0",))):
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        host, port = self.upstream.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:  # closed also when the client went away meanwhile (a killed push)
            conn.request(self.command, self.path, body, dict(self.headers.items()))
            answer = conn.getresponse()
            data = answer.read()
        finally:
            conn.close()
        if self.command == "GET" and self.path.split("?")[0].endswith(cls.short or ("\0",)):
            data = data[:-1]
        stall = next((n for key, n in cls.stall_after if self.command == "GET"
                      and self.path.split("?")[0].endswith(key)), None)
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if stall is not None:
            cls.stall_after = ()  # once
            self.wfile.write(data[:stall])
            self.wfile.flush()
            time.sleep(30)  # never more while the test runs (the client gives up first)
            return
        self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = _any

    def log_message(self, *args: object) -> None:
        pass


class _Counted(_Flaky):
    """Forwards everything, noting each request: (method, key, Range header)."""

    seen_requests: ClassVar[list[tuple[str, str, str]]] = []

    def _any(self) -> None:
        type(self).seen_requests.append((self.command, self.path.split("?")[0],
                                         self.headers.get("Range") or ""))
        super()._any()

    do_GET = do_HEAD = do_PUT = _any


def read_bytes(requests: list[tuple[str, str, str]], prefix: str) -> dict[str, int]:
    """Key -> bytes asked for by GET (ranges summed)."""
    asked: dict[str, int] = {}
    for method, path, span in requests:
        if method == "GET" and path.startswith(prefix) and span.startswith("bytes="):
            start, end = span.removeprefix("bytes=").split("-")
            key = path[len(prefix):]
            asked[key] = asked.get(key, 0) + int(end) - int(start) + 1
    return asked


@contextmanager
def proxied(monkeypatch: pytest.MonkeyPatch, handler: type[_Flaky]) -> Iterator[None]:
    """The environment's endpoint is ``handler``'s proxy for the duration."""
    proxy = ThreadingHTTPServer((LOOPBACK, 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        endpoint(monkeypatch, f"http://{LOOPBACK}:{proxy.server_address[1]}")
        yield
    finally:
        if handler.hang_reads is not None:
            handler.hang_reads.set()
        proxy.shutdown()
        proxy.server_close()


def test_a_server_that_answers_500_then_recovers_is_read(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = campaign.write()
    url = upload(s3, root)

    class Flaky(_Flaky):
        upstream, failures, seen = server, 2, 0

    with proxied(monkeypatch, Flaky):
        staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "copy", 1 << 30)
    assert Flaky.seen > 2  # the 500s were answered, and retried
    local = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert sorted(staged.objects) == local
    for key in local:
        assert staged.objects[key].copied, key
        assert staged.objects[key].error is None, key
        assert (staged.root / key).read_bytes() == (root / key).read_bytes(), key


def test_an_object_the_store_keeps_failing_is_a_files_intact_finding(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path, reloader: Reloader,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Persistent 500s on one object, a short read of another: both are left out of the
    copy and judged; the items that read them are not judged (files-intact owns them)."""
    url = upload(s3, campaign.write())
    predictions = "runs/control/predictions.jsonl"
    measurements = "runs/variant-a/measurements.jsonl"

    class Broken(_Flaky):
        upstream, broken, short = server, (predictions,), (measurements,)

    with proxied(monkeypatch, Broken):
        staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "copy", 1 << 30)
    assert staged.objects[predictions].error == "HTTP 500 after 3 retries (bytes 0-" \
        f"{staged.objects[predictions].size - 1})"
    size = staged.objects[measurements].size
    assert staged.objects[measurements].error == \
        f"a short read: {size - 1} bytes came for bytes 0-{size - 1}"
    assert not (staged.root / predictions).exists()
    found = judged(staged, reloader, f"files-intact[{predictions}]",
                   f"files-intact[{measurements}]", "predictions-cover-corpus[control]",
                   f"no-temp-paths[{predictions}]")
    where = f"{url}{predictions}"
    assert found[f"files-intact[{predictions}]"].message == (
        f"files-intact[{predictions}]: 1 problem\nmanifest.json "
        f"$.files[{_index(staged, predictions)}]: "
        f"{predictions} cannot be read: could not be read from the store ({where}): HTTP 500 "
        f"after 3 retries (bytes 0-{staged.objects[predictions].size - 1})")
    assert [f.code for f in found[f"files-intact[{predictions}]"].findings] == \
        ["files-intact.unreadable"]
    assert f"could not be read from the store ({url}{measurements}): a short read" in \
        found[f"files-intact[{measurements}]"].message
    for name in ("predictions-cover-corpus[control]", f"no-temp-paths[{predictions}]"):
        assert found[name].not_judged == (
            f"not judged: files-intact[{predictions}] failed ({predictions} could not be read "
            f"from the store: HTTP 500 after 3 retries (bytes 0-"
            f"{staged.objects[predictions].size - 1}))"), name


def _index(staged: source.Staged, path: str) -> int:
    files = json.loads((staged.root / "manifest.json").read_text())["files"]
    return next(i for i, f in enumerate(files) if f["path"] == path)


def test_a_hanging_server_is_a_bounded_clear_error(
        s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as listener:  # accepts connections (the backlog), never answers
        listener.bind((LOOPBACK, 0))
        listener.listen(16)
        endpoint(monkeypatch, f"http://{LOOPBACK}:{listener.getsockname()[1]}")
        store = S3Source(S3Location.parse("s3://itera-hang/camp/"), timeout=0.5, retries=2)
        started = time.monotonic()
        with pytest.raises(SourceError, match=r"^s3://itera-hang/camp/: cannot be listed \("):
            stage(store, tmp_path / "copy", 1 << 20)
        assert time.monotonic() - started < 15
    assert source.CHUNK <= 8 << 20


def test_a_server_that_lists_then_hangs_on_reads_gives_findings_in_bounded_time(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = upload(s3, campaign.write())

    class Hangs(_Flaky):
        upstream, hang_reads, hangs = server, threading.Event(), ("analysis.md", "RELOAD.md")

    with proxied(monkeypatch, Hangs):
        store = S3Source(S3Location.parse(url), timeout=0.5, retries=1)
        started = time.monotonic()
        staged = stage(store, tmp_path / "copy", 1 << 30)
        assert time.monotonic() - started < 15
    held = staged.objects["analysis.md"]
    assert held.error == f"no answer within 0.5 s after 1 retries (bytes 0-{held.size - 1})"
    assert staged.trouble("analysis.md") == f"could not be read from the store ({url}" \
        f"analysis.md): {held.error}"
    assert [k for k, h in staged.objects.items() if not h.copied] == ["RELOAD.md",
                                                                      "analysis.md"]

    class HangsAll(_Flaky):  # the manifest too: nothing to judge, a usage error
        upstream, hang_reads = server, threading.Event()

    with proxied(monkeypatch, HangsAll):
        started = time.monotonic()
        with pytest.raises(SourceError, match=rf"^{url}manifest\.json could not be read from "
                           r"the store: no answer within 0\.5 s after 1 retries \(bytes 0-\d+\)$"):
            stage(S3Source(S3Location.parse(url), timeout=0.5, retries=1), tmp_path / "c2",
                  1 << 30)
        assert time.monotonic() - started < 15


def test_a_read_that_stalls_midway_is_asked_again_from_the_byte_reached(
        s3: Any, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One GET per object, its pieces handed on as they come: a stall (no piece within the
    timeout) is bounded, and the GET asked again from the byte reached, not from the start
    (nor a ranged GET per piece: a store that reads the whole object per range pays one
    whole read per piece)."""
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    data = os.urandom(2 * source.CHUNK + 1000)
    s3.put_object(Bucket=bucket, Key="camp/runs/last.pt", Body=data)

    class Stalls(_Counted):
        upstream, seen_requests = server, []
        stall_after = (("runs/last.pt", source.CHUNK + 5),)  # a whole piece, then nothing

    with proxied(monkeypatch, Stalls):
        store = S3Source(S3Location.parse(f"s3://{bucket}/camp/"), timeout=1.0, retries=1)
        [item] = store.list()
        started = time.monotonic()
        got = b"".join(store.chunks(item))
        assert time.monotonic() - started < 15
    assert got == data
    first, again = [span for method, path, span in Stalls.seen_requests
                    if method == "GET" and path.endswith("/runs/last.pt")]
    assert first == f"bytes=0-{len(data) - 1}"
    start, _, stop = again.removeprefix("bytes=").partition("-")
    assert source.CHUNK <= int(start) <= source.CHUNK + 5  # what came before the stall
    assert int(stop) == len(data) - 1


def test_an_object_changed_after_the_listing_is_not_mixed_with_its_new_version(
        s3: Any, tmp_path: Path) -> None:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="camp/runs/last.pt", Body=b"old" * 1000)
    store = S3Source(S3Location.parse(f"s3://{bucket}/camp/"), timeout=5)
    (listed,) = store.list()
    s3.put_object(Bucket=bucket, Key="camp/runs/last.pt", Body=b"new" * 1000)
    with pytest.raises(SourceError, match=r"^changed while it was being copied \(its ETag is "
                       r"no longer .+\)$"):
        list(store.chunks(listed))
    held = source.fetch(store, listed, tmp_path / "copy", tmp_path, "copy", None)
    assert not held.copied
    assert held.error is not None
    assert held.error.startswith("changed while it was being copied (its ETag is no longer ")
    assert not (tmp_path / "copy/runs/last.pt").exists()


def test_folder_markers_and_sibling_prefixes_are_not_the_campaign(s3: Any) -> None:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    for key, body in [("camp/", b""), ("camp/runs/", b""), ("camp/runs/last.pt", b"w"),
                      ("camp/empty.txt", b""), ("camp2/other.json", b"{}"), ("campx", b"x")]:
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    listed = S3Source(S3Location.parse(f"s3://{bucket}/camp"), timeout=5).list()
    assert [(o.key, o.size) for o in listed] == [("empty.txt", 0), ("runs/last.pt", 1)]
