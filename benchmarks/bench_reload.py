"""Reload benchmark: pytest-itera's reload server against the floors, in the same run.

    PYTHONPATH=. python benchmarks/bench_reload.py [--n 50] [--gib 1] [--per-file-sample N]
        [--repeat 3]

(1) N small checkpoints: one Reloader (one torch import, a forked child per checkpoint),
    handed all of them at once (as a whole pytest run does) and one at a time (as an xdist
    worker does), vs one interpreter per file vs the floor (one interpreter: import torch +
    all the loads). Target: Reloader <= 1.2 x the floor.
(2) one checkpoint of --gib GiB (64 tensors): wall time and peak RSS of the loading process
    vs a bare ``python -c "import torch; torch.load(p, mmap=True, weights_only=True)"``.
    Target: peak RSS <= 1.3 x the bare mmap load's.  Warm page cache (files read once first).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_itera.reload import Reloader

LOAD = "torch.load(p, mmap=True, weights_only=True, map_location='cpu')"


def small_checkpoints(folder: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        torch.manual_seed(i)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8))
        opt = torch.optim.AdamW(model.parameters())
        ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": i,
                "rng_state": torch.get_rng_state()}
        paths.append(folder / f"ckpt_{i:03d}.pt")
        torch.save(ckpt, paths[-1])
    return paths


def big_checkpoint(folder: Path, gib: float) -> Path:
    count = 64
    per = int(gib * (1 << 30)) // count // 4
    path = folder / "big.pt"
    torch.save({f"layer{i}.weight": torch.randn(per) for i in range(count)}, path)
    return path


def warm(paths: list[Path]) -> None:
    for path in paths:
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass


# VmHWM, not wait4's ru_maxrss: Linux carries ru_maxrss across exec, so a child forked from
# this (large) benchmark process would report our RSS instead of its own.
HWM = "\nprint(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"


def run_python(code: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one fresh interpreter running ``code``."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-I", "-c", code + HWM], check=True,
                         capture_output=True, text=True).stdout
    return time.perf_counter() - started, int(out.split()[-1]) * 1024


def reload_all(paths: list[Path], jobs: int) -> float:
    """Wall seconds for a fresh Reloader (server start included) to judge every path."""
    started = time.perf_counter()
    with Reloader(jobs=jobs) as reloader:
        if jobs > 1:
            reloader.prefetch(paths)
        results = [reloader.reload(p, p.name) for p in paths]
    assert all(r.ok for r in results), [r.cause for r in results if not r.ok]
    return time.perf_counter() - started


def bench_many(folder: Path, n: int, sample: int, repeat: int) -> None:
    paths = small_checkpoints(folder, n)
    warm(paths)
    listing = repr([str(p) for p in paths])
    jobs = min(4, len(os.sched_getaffinity(0)))
    floors, batch_runs, serial_runs = [], [], []
    for _ in range(repeat):  # interleaved, medians: the machine is shared and noisy
        floors.append(run_python(f"import torch\nfor p in {listing}: {LOAD}")[0])
        batch_runs.append(reload_all(paths, jobs))
        serial_runs.append(reload_all(paths, 1))
    floor = statistics.median(floors)
    batch, serial = statistics.median(batch_runs), statistics.median(serial_runs)
    chosen = paths[:sample]
    per_file = sum(run_python(f"import torch\np = {str(p)!r}\n{LOAD}")[0] for p in chosen)
    per_file *= n / len(chosen)
    note = "" if len(chosen) == n else f" (extrapolated from {len(chosen)})"
    print(f"\n(1) {n} small checkpoints, warm cache, medians of {repeat} interleaved runs")
    print(f"  floor: one interpreter, import torch + {n} loads  {floor:8.2f} s   1.00x")
    print(f"  Reloader, all at once, {jobs} children at a time  {batch:8.2f} s   "
          f"{batch / floor:.2f}x  (target <= 1.2x; what a whole pytest run does)")
    print(f"  Reloader, one at a time (an xdist worker)       {serial:8.2f} s   "
          f"{serial / floor:.2f}x")
    print(f"  one interpreter per file{note:<22} {per_file:8.2f} s   {per_file / floor:.2f}x")


def bench_big(folder: Path, gib: float) -> None:
    path = big_checkpoint(folder, gib)
    warm([path])
    bare_s, bare_rss = run_python(f"import torch\np = {str(path)!r}\n{LOAD}")
    with Reloader() as reloader:
        assert reloader.check_interpreter() is None
        started = time.perf_counter()
        result = reloader.reload(path, path.name)
        ours_s = time.perf_counter() - started
    assert result.ok, result.cause
    rss = result.peak_rss or 0
    mib = 1 << 20
    print(f"\n(2) one {gib:g} GiB checkpoint ({path.stat().st_size / (1 << 30):.2f} GiB, "
          "64 tensors), warm cache")
    print(f"  bare: python -c 'import torch; torch.load(mmap=True)'  {bare_s:6.2f} s wall "
          f"(with import)   peak RSS {bare_rss / mib:7.0f} MiB   1.00x")
    print(f"  pytest-itera reload + finite check (warm server)  {ours_s:6.2f} s wall "
          f"(no import)     peak RSS {rss / mib:7.0f} MiB   {rss / bare_rss:.2f}x "
          "(target <= 1.3x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--per-file-sample", type=int, default=0,
                        help="time only this many per-file interpreters and extrapolate "
                             "(0: all of them)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-reload-") as tmp:
        bench_many(Path(tmp), args.n, args.per_file_sample or args.n, args.repeat)
        bench_big(Path(tmp), args.gib)


if __name__ == "__main__":
    main()
