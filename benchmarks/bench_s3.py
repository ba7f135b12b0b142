"""Accepting a campaign from S3-compatible storage against the plain route (issue 28, point 5).
Not a test.

Starts moto's server on 127.0.0.1, uploads the factory's campaign plus one large listed file
(random bytes, --size-mib, default 256; the issue's figure is 1024), then times:

- the floor: the library's own copy of every object (boto3 ``download_file``, what
  ``aws s3 cp --recursive`` does) into a local folder, then ``pytest --itera-campaign DIR``;
- ours: ``pytest --itera-campaign s3://bucket/prefix/``: every object read once, hashed
  once while it streams (the checks reuse that sha256: the copy is scanned, not re-hashed);
- ours with ``--itera-store-checksums`` (every object was uploaded with its SHA-256): no
  object hashed, and the large listed file (random bytes: binary, not a checkpoint, nothing
  a check reads) not downloaded at all.

The pytest runs are subprocesses with the same options; the ratios are printed (target 1.3x).

    PYTHONPATH=$PWD python benchmarks/bench_s3.py --size-mib 1024
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import boto3  # type: ignore[import-untyped]
from moto.server import ThreadedMotoServer

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=256)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="itera-bench-s3-"))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        env = {**os.environ, **KEYS, "AWS_ENDPOINT_URL": endpoint}
        campaign = CampaignBuilder(work / "source")
        campaign.files["runs/variant-a/big.bin"] = os.urandom(args.size_mib << 20)
        root = campaign.write()
        del campaign.files["runs/variant-a/big.bin"]
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="bench", aws_secret_access_key="bench")
        s3.create_bucket(Bucket="itera-bench")
        keys = []
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            key = f"camp/{path.relative_to(root).as_posix()}"
            with path.open("rb") as body:  # single-part: its checksum is of the whole object
                s3.put_object(Bucket="itera-bench", Key=key, Body=body,
                              ChecksumAlgorithm="SHA256")
            keys.append(key)
        shutil.rmtree(root)
        print(f"uploaded {len(keys)} objects, {args.size_mib} MiB listed file included")

        local = work / "copy"
        start = time.perf_counter()
        for key in keys:
            dest = local / key.removeprefix("camp/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file("itera-bench", key, str(dest))
        copy = time.perf_counter() - start
        accept = pytest_run(str(local), env)
        ours = pytest_run("s3://itera-bench/camp/", env)
        trusted = pytest_run("s3://itera-bench/camp/", env, "--itera-store-checksums")
        floor = copy + accept
        print(f"floor: boto3 copy {copy:.1f} s + local acceptance {accept:.1f} s = {floor:.1f} s")
        print(f"ours: pytest --itera-campaign s3://itera-bench/camp/ {ours:.1f} s; "
              f"ratio {ours / floor:.2f}x (target 1.3x); each object read and hashed once")
        print(f"ours --itera-store-checksums: {trusted:.1f} s; ratio {trusted / floor:.2f}x; "
              f"nothing hashed, the {args.size_mib} MiB listed file not downloaded")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
