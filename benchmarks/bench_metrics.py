"""predictions-cover-corpus alone vs with metric recomputation (issue 24). Not a test.

Writes the factory campaign with a corpus of N labelled examples and a variant whose
predictions cover them (N JSON Lines rows: id, split, label, prediction), then times, each
in a fresh process (the page cache warm), the checks of that run through a Context:

- ``cover``: the campaign as itera-plan/2, predictions-cover-corpus alone (today's cost);
- ``metrics``: the same campaign as itera-plan/3 (accuracy where split=test, and f1_macro
  as a reported metric), predictions-cover-corpus then metrics-recomputed (one shared pass
  over the predictions, the corpus labels read with its IDs, torchmetrics imported).

It prints wall time and the process's peak RSS for each, and the ratio.
Target: metrics within 1.5x of cover, under 300 MiB.

    PYTHONPATH=$PWD python benchmarks/bench_metrics.py --lines 1000000
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MIB = 1 << 20
LABELS = ("pos", "neg", "neutral")
SPLITS = ("train", "validation", "test")


def write_campaign(root: Path, lines: int, version: int) -> Path:
    from tests.factory import CampaignBuilder, sha256

    campaign = CampaignBuilder(root)
    ids = [f"doc-{i:07d}" for i in range(lines)]
    corpus = "".join(json.dumps({"id": d, "text": f"example {i}", "label": LABELS[i % 3]}) + "\n"
                     for i, d in enumerate(ids)).encode()
    campaign.files["corpus/corpus.jsonl"] = corpus
    campaign.plan["corpora"][0].update(sha256=sha256(corpus), examples=lines)
    for run_id in ("control", "variant-a"):
        hits = 0
        rows = []
        for i, d in enumerate(ids):
            guess = LABELS[(i * 7 // 5) % 3] if run_id == "variant-a" else LABELS[i % 3]
            split = SPLITS[i % 10 // 4 if i % 10 < 8 else 2]
            rows.append(json.dumps({"id": d, "split": split, "label": LABELS[i % 3],
                                    "prediction": guess}) + "\n")
            hits += split == "test" and guess == LABELS[i % 3]
        campaign.files[f"runs/{run_id}/predictions.jsonl"] = "".join(rows).encode()
        tested = sum(1 for i in range(lines) if i % 10 >= 8 or i % 10 // 4 == 2)
        campaign.set_metric(run_id, "accuracy", round(hits / tested, 4))
    if version == 3:
        computation = {"kind": "accuracy", "label_field": "label",
                       "prediction_field": "prediction", "where": {"split": "test"}}
        campaign.plan["format"] = "itera-plan/3"
        campaign.plan["decision"]["computation"] = computation
        campaign.plan["metrics"] = {"f1": {**computation, "kind": "f1_macro"}}
    return campaign.write()


def measure(root: Path, mode: str) -> None:
    """In a fresh process: the run's checks, wall time and peak RSS as one JSON line."""
    from pytest_itera.checks import Context, Options
    from pytest_itera.checks.engine import judge
    from pytest_itera.checks.metrics import CHECKS as METRICS
    from pytest_itera.checks.runs import CHECKS as RUNS
    from pytest_itera.core.campaign import load_campaign

    wanted = ["predictions-cover-corpus"] + (["metrics-recomputed"] if mode == "metrics" else [])
    registry = {c.id: c for c in (*RUNS, *METRICS) if c.id in wanted}
    campaign = load_campaign(root)
    start = time.perf_counter()
    context = Context(campaign, Options(), registry)
    verdicts = judge(context)
    found = [f for check in wanted for f in verdicts.findings(check, "variant-a")]
    wall = time.perf_counter() - start
    context.close()
    rss = peak_rss_mib()
    print(json.dumps({"wall": wall, "rss": rss, "findings": [f.message for f in found]}))


def peak_rss_mib() -> float:
    """This process's VmHWM (ru_maxrss keeps the forked parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fresh(root: Path, mode: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, __file__, "--measure", mode, "--root", str(root)],
                         capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", choices=("cover", "metrics"))
    parser.add_argument("--root", type=Path)
    args = parser.parse_args()
    if args.measure:
        measure(args.root, args.measure)
        return
    folder = Path(tempfile.mkdtemp(prefix="itera-bench-metrics-"))
    try:
        roots = {"cover": write_campaign(folder / "v2", args.lines, 2),
                 "metrics": write_campaign(folder / "v3", args.lines, 3)}
        size = (roots["metrics"] / "runs/variant-a/predictions.jsonl").stat().st_size / MIB
        print(f"{args.lines} predictions ({size:.1f} MiB JSONL), corpus of {args.lines}")
        best: dict[str, dict[str, object]] = {}
        for _ in range(args.repeat):  # interleaved; the best wall of each is kept
            for mode, root in roots.items():
                sample = fresh(root, mode)
                if sample["findings"]:
                    raise SystemExit(f"{mode}: unexpected findings {sample['findings']}")
                if mode not in best or float(str(sample["wall"])) < float(str(best[mode]["wall"])):
                    best[mode] = sample
        for mode, sample in best.items():
            print(f"{mode:8} wall {float(str(sample['wall'])):6.2f} s   "
                  f"peak RSS {float(str(sample['rss'])):6.0f} MiB")
        ratio = float(str(best["metrics"]["wall"])) / float(str(best["cover"]["wall"]))
        print(f"ratio metrics/cover: {ratio:.2f}x (target <= 1.5x, < 300 MiB)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
