"""How much the temp-path scan costs on top of SHA-256 (issue 8). Not a test.

Writes JSONL text and random binary data into a temporary folder outside the
repository, warms the page cache, then prints for each file: the hashlib-only
floor (read + SHA-256, same 1 MiB chunks), scan_file, their ratio, and
``openssl dgst -sha256`` when available. Targets: text <= 1.25x, binary <= 1.1x.

    PYTHONPATH=$PWD python benchmarks/bench_scan.py --mib 256 --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, TempMatcher, scan_file

CHUNK = 1 << 20


def write_jsonl(path: Path, mib: int, *, paths: int) -> None:
    """Prediction-like records.

    ``paths``: 0 = no '/' at all; 1 = each record has an image path and a URL
    (~8 '/' per record); 2 = worst case, a '/'-laden word every ~4 words
    (including '/tmpfs/...', which the matcher must look at and reject).
    """
    rng = random.Random(8)
    words = ["the", "model", "predicts", "a", "label", "über", "token", "x", "résumé", "and"]
    if paths == 2:
        words += ["data/x.json", "/home/u/run/", "s3://bucket/k", "/tmpfs/cache"]
    lines = []
    for i in range(4000):
        record: dict[str, object] = {
            "id": f"ex-{i:06d}",
            "text": " ".join(rng.choice(words) for _ in range(30)),
            "pred": rng.random(),
            "label": rng.randint(0, 9),
        }
        if paths == 1:
            record["image"] = f"data/images/{i:06d}.jpg"
            record["source"] = f"https://example.org/corpus/v2/{i % 97}/item"
        lines.append(json.dumps(record, ensure_ascii=False))
    block = ("\n".join(lines) + "\n").encode()
    with path.open("wb") as f:
        written = 0
        while written < mib << 20:
            f.write(block)
            written += len(block)


def write_random(path: Path, mib: int) -> None:
    with path.open("wb") as f:
        for _ in range(mib):
            f.write(os.urandom(CHUNK))


def hash_floor(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb", buffering=0) as f:
        while data := f.read(CHUNK):
            h.update(data)
    return h.hexdigest()


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def openssl_time(path: Path, repeat: int) -> float | None:
    exe = shutil.which("openssl")
    if exe is None:
        return None
    cmd = [exe, "dgst", "-sha256", str(path)]
    return best_of(repeat, lambda: subprocess.run(cmd, check=True, capture_output=True))


def bench(path: Path, label: str, repeat: int, matcher: TempMatcher) -> None:
    hash_floor(path)  # warm the page cache
    floor = best_of(repeat, lambda: hash_floor(path))
    scan = best_of(repeat, lambda: scan_file(path, path.name, matcher))
    facts = scan_file(path, path.name, matcher)
    assert facts.sha256 == hash_floor(path), "scan_file and hashlib disagree"
    mib = path.stat().st_size / (1 << 20)
    print(
        f"{label:22s} {mib:7.0f} MiB  hashlib {floor:6.3f} s ({mib / floor:6.0f} MiB/s)"
        f"  scan_file {scan:6.3f} s  ratio {scan / floor:5.2f}x  hits {facts.hit_count}"
    )
    ssl = openssl_time(path, repeat)
    if ssl is not None:
        print(f"{'':22s} openssl dgst -sha256 {ssl:6.3f} s ({mib / ssl:6.0f} MiB/s)")


def bench_small_files(folder: Path, repeat: int, matcher: TempMatcher, count: int = 5000) -> None:
    """Per-file overhead on many small JSON files (a campaign may hold 100,000 of them)."""
    folder.mkdir()
    paths = []
    for i in range(count):
        path = folder / f"{i:05d}.json"
        path.write_text(json.dumps({"id": i, "pred": [0.1] * 200, "path": f"data/{i}.jpg"}))
        paths.append(path)
    floor = best_of(repeat, lambda: [hash_floor(p) for p in paths])
    scan = best_of(repeat, lambda: [scan_file(p, p.name, matcher) for p in paths])
    size = paths[0].stat().st_size
    print(
        f"{'small files':22s} {count} x {size} B  hashlib {floor / count * 1e6:5.1f} us/file"
        f"  scan_file {scan / count * 1e6:5.1f} us/file  ratio {scan / floor:5.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="size of each file (MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings")
    args = parser.parse_args()
    matcher = TempMatcher(DEFAULT_TEMP_PATTERNS)
    with tempfile.TemporaryDirectory(prefix="itera-bench-") as tmp:
        folder = Path(tmp)
        cases: list[tuple[str, str, Callable[[Path], None]]] = [
            ("plain.jsonl", "JSONL, no paths", lambda p: write_jsonl(p, args.mib, paths=0)),
            ("paths.jsonl", "JSONL, path+URL", lambda p: write_jsonl(p, args.mib, paths=1)),
            ("dense.jsonl", "JSONL, dense '/'", lambda p: write_jsonl(p, args.mib, paths=2)),
            ("random.bin", "random binary", lambda p: write_random(p, args.mib)),
        ]
        print(f"cores: {os.cpu_count()}  chunk: {CHUNK >> 20} MiB  best of {args.repeat}")
        for name, label, make in cases:
            path = folder / name
            make(path)
            bench(path, label, args.repeat, matcher)
            path.unlink()
        bench_small_files(folder / "small", args.repeat, matcher)


if __name__ == "__main__":
    main()
