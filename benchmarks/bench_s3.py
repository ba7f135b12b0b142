"""Accepting a campaign from S3-compatible storage against the plain route (issue 28, point 5).
Not a test.

Starts moto's server on 127.0.0.1 (a process of its own: in this one, its threads would share
the GIL with the boto3 floor and with the poller of the local copy's size), uploads the
factory's campaign plus one large listed file (random bytes, --size-mib, default 256; the
issue's figure is 1024), then times:

- the floor: the library's own copy of every object (boto3 ``download_file``, what
  ``aws s3 cp --recursive`` does) into a local folder, then ``pytest --itera-campaign DIR``;
- ours: ``pytest --itera-campaign s3://bucket/prefix/``: every object read once, hashed
  once while it streams (the checks reuse that sha256: the copy is scanned, not re-hashed);
- ours with ``--itera-store-checksums`` (every object was uploaded with its SHA-256): no
  object hashed, and the large listed file (random bytes: binary, not a checkpoint, nothing
  a check reads) not downloaded at all;
- issue 41's floor: a boto3 script that downloads and hashes every object (no disk), and
  the peak bytes of our local copy while each run lasts (polled);
- the push: ``python -m pytest_itera push`` (uploads, then verifies in place) against a
  boto3 ``put_object`` of every file with its SHA-256, and the push again (all there).

The pytest runs are subprocesses with the same options; the ratios are printed (target 1.3x).

    PYTHONPATH=$PWD python benchmarks/bench_s3.py --size-mib 1024
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import boto3  # type: ignore[import-untyped]

from tests.factory import CampaignBuilder

KEYS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def pytest_run(target: str, env: dict[str, str], *extra: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--itera-campaign", target, *extra], env=env, capture_output=True,
                          text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest on {target} failed:\n{done.stdout[-3000:]}{done.stderr}")
    return took


def tree_bytes(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` (the runs' own temporary folder)."""
    total = 0
    for top, _, names in os.walk(folder):  # a folder removed meanwhile: skipped
        for name in names:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.stat(os.path.join(top, name)).st_size
    return total


def peak_while(run: Callable[[], float], folder: Path) -> tuple[float, int]:
    """``run``'s time and the peak bytes under ``folder`` while it ran (polled)."""
    peak, done = [0], threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_bytes(folder))
            done.wait(0.05)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        took = run()
    finally:
        done.set()
        watcher.join()
    return took, peak[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--no-copy", action="store_true",
                        help="skip the boto3 download_file copy and its local acceptance "
                        "(moto reads a whole object for each of its ranged GETs: minutes per GiB)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="itera-bench-s3-"))
    host, port = "127.0.0.1", free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(host, port)
        endpoint = f"http://{host}:{port}"
        scratch = work / "tmp"  # the runs' TMPDIR: their local copies, no one else's
        scratch.mkdir()
        env = {**os.environ, **KEYS, "AWS_ENDPOINT_URL": endpoint, "TMPDIR": str(scratch)}
        campaign = CampaignBuilder(work / "source")
        campaign.files["runs/variant-a/big.bin"] = os.urandom(args.size_mib << 20)
        root = campaign.write()
        del campaign.files["runs/variant-a/big.bin"]
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="bench", aws_secret_access_key="bench")
        s3.create_bucket(Bucket="itera-bench")
        files = sorted(p for p in root.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in files)

        start = time.perf_counter()  # the plain route: each file put with its SHA-256
        for path in files:
            with path.open("rb") as body:  # single-part: its checksum is of the whole object
                s3.put_object(Bucket="itera-bench", Key=f"plain/{path.relative_to(root)}",
                              Body=body, ChecksumAlgorithm="SHA256")
        plain_up = time.perf_counter() - start
        pushed = command([sys.executable, "-m", "pytest_itera", "push", str(root),
                          "s3://itera-bench/camp/"], env)
        resumed = command([sys.executable, "-m", "pytest_itera", "push", str(root),
                           "s3://itera-bench/camp/"], env)
        keys = [f"camp/{p.relative_to(root).as_posix()}" for p in files]
        shutil.rmtree(root)
        print(f"{len(keys)} objects, {size / (1 << 20):.1f} MiB ({args.size_mib} MiB listed "
              "file included)")
        print(f"push: boto3 put_object of every file {plain_up:.1f} s; python -m pytest_itera "
              f"push {pushed:.1f} s (uploads, then verifies every object in place): ratio "
              f"{pushed / plain_up:.2f}x; again (all there: HEADs only) {resumed:.1f} s")

        start = time.perf_counter()  # the floor: download and hash every object
        for key in keys:
            digest = hashlib.sha256()
            for piece in s3.get_object(Bucket="itera-bench", Key=key)["Body"].iter_chunks(
                    8 << 20):
                digest.update(piece)
        hashed = time.perf_counter() - start
        local = work / "copy"
        start = time.perf_counter()
        for key in keys if not args.no_copy else ():
            dest = local / key.removeprefix("camp/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file("itera-bench", key, str(dest))
        copy = time.perf_counter() - start
        accept = pytest_run(str(local), env) if not args.no_copy else float("nan")
        ours, ours_disk = peak_while(lambda: pytest_run("s3://itera-bench/camp/", env),
                                     scratch)
        trusted, trusted_disk = peak_while(
            lambda: pytest_run("s3://itera-bench/camp/", env, "--itera-store-checksums"),
            scratch)
        floor = copy + accept
        print(f"floor: boto3 download and sha256 of every object {hashed:.1f} s; boto3 copy "
              f"{copy:.1f} s + local acceptance {accept:.1f} s = {floor:.1f} s")
        print(f"ours: pytest --itera-campaign s3://itera-bench/camp/ {ours:.1f} s; ratio "
              f"{ours / hashed:.2f}x the download-and-hash script (target 1.3x), "
              f"{ours / floor:.2f}x copy + local; peak local copy {ours_disk / (1 << 20):.1f} "
              "MiB")
        print(f"ours --itera-store-checksums: {trusted:.1f} s; ratio {trusted / hashed:.2f}x "
              f"the download-and-hash script (target 0.3x); nothing hashed, the "
              f"{args.size_mib} MiB listed file not downloaded; peak local copy "
              f"{trusted_disk / (1 << 20):.1f} MiB")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(host: str, port: int, seconds: float = 30.0) -> None:
    """Until the server accepts connections."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"moto's server did not start on {host}:{port}") from None
            time.sleep(0.1)


def command(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}{done.stderr}")
    return took


if __name__ == "__main__":
    main()
