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

With ``--packing gzip|zstd|parquet`` (issue 28) the predictions are also written packed, and
the packed comparison is timed against the plain JSON Lines one (target: Parquet within
1.5x and the process under 300 MiB); pyarrow's own peak allocation is printed too (it is
outside tracemalloc).
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


def pack(predictions: Path, packing: str) -> Path:
    """The predictions written again as ``packing``: streamed for gzip and zstd, one row group
    of 65,536 rows at a time for Parquet."""
    import gzip

    if packing == "gzip":
        out_path = predictions.with_name(predictions.name + ".gz")
        with predictions.open("rb") as src, gzip.open(out_path, "wb", compresslevel=6) as out:
            shutil.copyfileobj(src, out, 1 << 20)
        return out_path
    if packing == "zstd":
        import zstandard

        out_path = predictions.with_name(predictions.name + ".zst")
        with predictions.open("rb") as src, out_path.open("wb") as raw:
            zstandard.ZstdCompressor(write_checksum=True).copy_stream(src, raw)
        return out_path
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_path = predictions.with_name("predictions.parquet")
    writer = None
    with predictions.open() as src:
        while rows := [json.loads(line) for _, line in zip(range(65_536), src, strict=False)]:
            table = pa.Table.from_pylist(rows)
            writer = writer or pq.ParquetWriter(out_path, table.schema)
            writer.write_table(table)
    if writer is not None:
        writer.close()
    return out_path


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
    parser.add_argument("--packing", choices=("none", "gzip", "zstd", "parquet"), default="none",
                        help="also time the predictions packed this way (issue 28)")
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
        if args.packing != "none":
            packed = pack(predictions, args.packing)
            import pyarrow as pa

            pool = pa.default_memory_pool()
            start = time.perf_counter()
            packed_cover = cover(ids, read_ids(packed, "id"))
            took = time.perf_counter() - start
            if not packed_cover.exact:
                raise SystemExit(f"wrong packed comparison: {packed_cover}")
            print(f"{args.packing}: {packed.stat().st_size / MIB:.1f} MiB, compare {took:.2f} s, "
                  f"ratio to plain {took / ours:.2f}x; arrow pool peak "
                  f"{pool.max_memory() / MIB:.1f} MiB")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"process peak RSS: {rss:.0f} MiB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
