"""A campaign in S3-compatible object storage (issue 28, item 1), against a real server.

moto's standalone server runs on 127.0.0.1 (a random port) for this module; campaigns are
written by the factory and uploaded with boto3; the plugin reads them through obstore
configured from the environment (``AWS_ENDPOINT_URL`` and static test keys, nothing else).
A small HTTP proxy in front of the server answers 500 before recovering; a socket that
accepts and never answers is the hanging server. No address but 127.0.0.1 is ever used.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from moto.server import ThreadedMotoServer

from pytest_itera.files import source
from pytest_itera.files.source import S3Location, S3Source, SourceError, stage
from tests.factory import CONTROL_CKPT, VARIANT_WEIGHTS, CampaignBuilder
from tests.runner import python_path_with_repo

LOOPBACK = "127.0.0.1"


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
def s3(server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 client of the local server; the environment points obstore at it too."""
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
                 "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    endpoint(monkeypatch, server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "itera-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "itera-test-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return boto3.client("s3", endpoint_url=server, region_name="us-east-1",
                        aws_access_key_id="itera-test-key",
                        aws_secret_access_key="itera-test-secret")


def endpoint(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    assert url.startswith(f"http://{LOOPBACK}:")
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)


def upload(s3: Any, folder: Path, prefix: str = "closures/tiny") -> str:
    """Every file of ``folder`` under a fresh bucket's ``prefix``; the campaign's s3:// URL."""
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}",
                          Body=path.read_bytes())
    return f"s3://{bucket}/{prefix}/"


def bucket_of(url: str) -> str:
    return S3Location.parse(url).bucket


# ------------------------------------------------------------ the real pytest session


def test_a_campaign_uploaded_to_s3_is_accepted_from_its_url(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    url = upload(s3, campaign.write())
    shutil.rmtree(campaign.root)  # nothing local: the store alone holds the campaign
    campaign.written_digest = None
    result = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider",
                                "--itera-report", "closure.json", "--itera-seal", "seal.json")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["campaign tiny-2026-11: ACCEPTED — * checks"])
    assert result.ret == 0
    document = json.loads((pytester.path / "closure.json").read_text())
    assert document["root"] == url  # not the local copy
    everything = result.stdout.str() + (pytester.path / "closure.json").read_text()
    assert "itera-test-secret" not in everything
    assert "itera-test-key" not in everything
    assert not list(Path(tempfile.gettempdir()).glob("itera-store-*/" + bucket_of(url)))
    verified = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider",
                                  "--itera-verify-seal", "seal.json")
    assert verified.ret == 0, verified.stdout.str()
    assert verified.parseoutcomes()["passed"] >= 1


def test_a_missing_a_changed_and_a_truncated_object_are_rejected(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    root = campaign.write()
    url = upload(s3, root)
    bucket, prefix = bucket_of(url), "closures/tiny"
    s3.delete_object(Bucket=bucket, Key=f"{prefix}/analysis.md")
    changed = (root / "runs/control/predictions.jsonl").read_bytes().replace(b"pos", b"neg", 1)
    s3.put_object(Bucket=bucket, Key=f"{prefix}/runs/control/predictions.jsonl", Body=changed)
    weights = (root / VARIANT_WEIGHTS).read_bytes()
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{VARIANT_WEIGHTS}",
                  Body=weights[: len(weights) // 2])
    result = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider", "-k",
                                "files-intact", "-rf", "-n", "2")  # workers read one copy
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
        "campaign tiny-2026-11: REJECTED — 3 of * checks failed",
    ]:
        result.stdout.fnmatch_lines([line])
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


def test_the_cache_cap_refuses_a_campaign_too_big_for_it(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    url = upload(s3, campaign.write())
    pytester.makeini(f"[pytest]\nitera_campaign = {url}\nitera_store_cache_max = 4K\n")
    result = pytester.runpytest("-p", "no:cacheprovider")  # the ini twin names the campaign
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --itera-campaign: {url}: its * KiB exceed the local cache cap of 4.0 KiB "
        f"(largest: {CONTROL_CKPT} (*), *); raise the cap (itera_store_cache_max) or "
        "accept the campaign from a local copy"])


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

    def _any(self) -> None:
        cls = type(self)
        cls.seen += 1
        if cls.hang_reads is not None and "list-type" not in self.path:
            cls.hang_reads.wait(30)  # never answers while the test runs
            return
        if cls.seen <= cls.failures:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        host, port = self.upstream.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request(self.command, self.path, body, dict(self.headers.items()))
        answer = conn.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_HEAD = do_PUT = _any

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_that_answers_500_then_recovers_is_read(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = campaign.write()
    url = upload(s3, root)
    class Flaky(_Flaky):
        upstream, failures, seen = server, 2, 0

    handler = Flaky
    proxy = ThreadingHTTPServer((LOOPBACK, 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        endpoint(monkeypatch, f"http://{LOOPBACK}:{proxy.server_address[1]}")
        staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "copy", 1 << 30)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert handler.seen > 2  # the 500s were answered, and retried
    local = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert sorted(staged.objects) == local
    for key in local:
        assert (staged.root / key).read_bytes() == (root / key).read_bytes(), key


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


def test_a_server_that_lists_then_hangs_on_reads_is_a_bounded_clear_error(
        s3: Any, server: str, campaign: CampaignBuilder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = upload(s3, campaign.write())
    release = threading.Event()

    class Hangs(_Flaky):
        upstream, hang_reads = server, release

    proxy = ThreadingHTTPServer((LOOPBACK, 0), Hangs)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        endpoint(monkeypatch, f"http://{LOOPBACK}:{proxy.server_address[1]}")
        store = S3Source(S3Location.parse(url), timeout=0.5, retries=1)
        started = time.monotonic()
        with pytest.raises(SourceError, match=rf"^{url}[^ ]+: cannot be read at bytes 0-\d+ \("):
            stage(store, tmp_path / "copy", 1 << 30)
        assert time.monotonic() - started < 15
    finally:
        release.set()
        proxy.shutdown()
        proxy.server_close()


def test_an_object_changed_after_the_listing_is_not_mixed_with_its_new_version(
        s3: Any, tmp_path: Path) -> None:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="camp/runs/last.pt", Body=b"old" * 1000)
    store = S3Source(S3Location.parse(f"s3://{bucket}/camp/"), timeout=5)
    (listed,) = store.list()
    s3.put_object(Bucket=bucket, Key="camp/runs/last.pt", Body=b"new" * 1000)
    with pytest.raises(SourceError, match=rf"^s3://{bucket}/camp/runs/last.pt: changed while it "
                       r"was being copied \(its ETag is no longer .+\)$"):
        list(store.chunks(listed))


def test_folder_markers_and_sibling_prefixes_are_not_the_campaign(s3: Any) -> None:
    bucket = f"itera-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    for key, body in [("camp/", b""), ("camp/runs/", b""), ("camp/runs/last.pt", b"w"),
                      ("camp/empty.txt", b""), ("camp2/other.json", b"{}"), ("campx", b"x")]:
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    listed = S3Source(S3Location.parse(f"s3://{bucket}/camp"), timeout=5).list()
    assert [(o.key, o.size) for o in listed] == [("empty.txt", 0), ("runs/last.pt", 1)]
