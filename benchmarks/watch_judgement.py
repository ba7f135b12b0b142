"""One ``watch`` judgement of a 2,000-event journal (issue 37: target < 200 ms on 2 cores).

    PYTHONPATH=$PWD python benchmarks/watch_judgement.py [--events 2000] [--repeat 20]

The campaign is the example's plan (example_campaign/plan.py) with a played journal
(tests/watch/journal.py) padded with log lines to --events events, slowed so that the lot
overflows and the reduced protocol is searched too. One judgement is what ``watch`` does at
each new event: read plan.json and the journal, parse every line, forecast the lot's end and
judge the open campaign's facts (:func:`pytest_itera.watch.status.judge` with the watch's
:class:`~pytest_itera.watch.judged.Judged`): the stop rules on the series so far (the log
lines), the saved checkpoints, the predictions, the times. The median of --repeat
judgements is printed.

Reloads are not in that figure: a checkpoint is reloaded once per content, in the reload
server, and its verdict cached by size and mtime (a re-judgement reloads nothing unchanged).
The first judgement, which would pay them, is not timed; this folder has no checkpoint file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from pytest_itera.watch.judged import Judged
from pytest_itera.watch.status import judge, open_folder
from tests.watch.journal import played, write
from tests.watch.test_lot_forecast import DROPS, example_plan

TARGET_MS = 200


def campaign(root: Path, events: int) -> datetime:
    """The folder with a journal of ``events`` events; the moment of its middle."""
    plan = example_plan()
    (root / "plan.json").write_text(json.dumps(plan), "utf-8")
    digest = hashlib.sha256((root / "plan.json").read_bytes()).hexdigest()
    journal = played(plan, drops=DROPS, slow={"training": 1.6}, close=False,
                     plan_sha256=digest)
    cut = len(journal) // 2
    head, tail = journal[:cut], journal[cut:]
    logs = [{"event": "log", "run": "control", "step": i, "values": {"loss": 1 / (i + 1)}}
            for i in range(max(0, events - len(journal)))]
    write(root, [*head, *logs, *tail])
    return datetime.fromisoformat(tail[-1]["at"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Judged() as judged:
        root = Path(tmp)
        now = campaign(root, args.events)
        folder = open_folder(root)
        judge(folder, now, lead=2, judged=judged)  # what is cached: the reloads
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            fc = judge(folder, now, lead=2, judged=judged)
            times.append((time.perf_counter() - start) * 1000)
    median = statistics.median(times)
    print(f"one judgement of a {fc.events}-event journal: median {median:.1f} ms, "
          f"max {max(times):.1f} ms over {args.repeat} (target < {TARGET_MS} ms)"
          f"; warning: {'yes' if fc.warning() else 'no'}")
    return 0 if median < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
