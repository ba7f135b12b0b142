"""Memory and speed of predictions-cover-corpus on big files (issue 5). Not a test.

Writes a corpus of N IDs (JSONL) and a predictions file of N lines (JSONL, or
CSV with --csv; --wide adds 32 probabilities per line) into a temporary folder,
then prints:

- the corpus index (what a process keeps: ID -> position), in MiB;
- the peak Python memory *above* that index while the predictions stream
  (tracemalloc): it must stay flat (a 1 MiB read block, one line, the seen
  bytearray), whatever the file's size;
- the wall time of the comparison against a floor: a bare loop that reads
  the same file line by line and json.loads each line (CSV: csv.reader);
- the process's peak RSS.

    PYTHONPATH=$PWD python benchmarks/bench_predictions.py --lines 1000000
    PYTHONPATH=$PWD python benchmarks/bench_predictions.py --lines 1000000 --wide --csv
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

from pytest_itera.files.predictions import cover, read_ids

MIB = 1 << 20


def write_files(folder: Path, lines: int, *, wide: bool, as_csv: bool) -> tuple[Path, Path]:
    corpus = folder / "corpus.jsonl"
    with corpus.open("w") as out:
        out.writelines(f'{{"id": "doc-{i:07d}", "text": "example {i}"}}\n' for i in range(lines))
    probs = ", ".join(f"0.{i:05d}" for i in range(32)) if wide else "0.5"
    predictions = folder / ("predictions.csv" if as_csv else "predictions.jsonl")
    with predictions.open("w") as out:
        if as_csv:
            out.write("id,label,probabilities\n")
            out.writelines(f'doc-{i:07d},pos,"[{probs}]"\n' for i in range(lines))
        else:
            out.writelines(f'{{"id": "doc-{i:07d}", "label": "pos", "probabilities": [{probs}]}}\n'
                           for i in range(lines))
    return corpus, predictions


def floor(path: Path, as_csv: bool) -> float:
    start = time.perf_counter()
    with path.open(newline="") as handle:
        if as_csv:
            for _row in csv.reader(handle):
                pass
        else:
            for line in handle:
                json.loads(line)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--wide", action="store_true", help="32 probabilities per line")
    parser.add_argument("--csv", action="store_true", help="CSV predictions instead of JSONL")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="itera-bench-predictions-"))
    try:
        corpus, predictions = write_files(folder, args.lines, wide=args.wide, as_csv=args.csv)
        size = predictions.stat().st_size / MIB
        print(f"{args.lines} lines, predictions {size:.1f} MiB ({predictions.suffix})")

        tracemalloc.start()
        ids = {rec.id: pos for pos, rec in enumerate(read_ids(corpus, "id")) if rec.id}
        index = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        coverage = cover(ids, read_ids(predictions, "id"))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        if not coverage.exact or coverage.records != args.lines:
            raise SystemExit(f"wrong comparison: {coverage}")
        print(f"corpus index: {index / MIB:.1f} MiB for {len(ids)} IDs")
        print(f"peak while streaming, above the index: {(peak - index) / MIB:.2f} MiB")

        start = time.perf_counter()
        cover(ids, read_ids(predictions, "id"))
        ours = time.perf_counter() - start
        bare = floor(predictions, args.csv)
        print(f"compare: {ours:.2f} s ({args.lines / ours / 1e6:.2f} M lines/s); "
              f"floor (bare parse): {bare:.2f} s; ratio {ours / bare:.2f}x")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"process peak RSS: {rss:.0f} MiB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
