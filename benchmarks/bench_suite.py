"""How long the whole test suite takes through the README's command (issue 27). Not a test.

Runs ``bash scripts/test`` (set-up, then ``pytest -n 2``) with any extra pytest arguments,
shows its output as it comes, then prints the wall time, the number of tests and their
outcomes, the ratio to the target (6 minutes on an idle 2-core machine) and the load
average before and after: a figure taken on a busy machine says so.

    python benchmarks/bench_suite.py                 # the whole suite
    python benchmarks/bench_suite.py tests/checks -x # extra arguments go to pytest
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# pytest's last line: "=== 2 failed, 1234 passed, 3 xfailed in 301.20s (0:05:01) ===".
SUMMARY = re.compile(r"^=+ (?P<counts>.+?) in (?P<seconds>[\d.]+)s\b.*=+$")
COUNT = re.compile(r"(\d+) (\w+)")
RAN = ("passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed")


def run(extra: list[str]) -> tuple[int, float, str | None]:
    """(exit status, wall seconds, pytest's summary line) of ``bash scripts/test *extra``."""
    start = time.monotonic()
    with subprocess.Popen(["bash", "scripts/test", *extra], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        assert proc.stdout is not None
        summary = None
        for line in proc.stdout:
            sys.stdout.write(line)
            if SUMMARY.match(line.strip()):
                summary = line.strip()
        status = proc.wait()
    return status, time.monotonic() - start, summary


def counts(summary: str | None) -> dict[str, int]:
    match = SUMMARY.match(summary or "")
    if match is None:
        return {}
    return {word: int(n) for n, word in COUNT.findall(match.group("counts"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target-minutes", type=float, default=6.0)
    parser.add_argument("pytest_args", nargs="*", help="passed to scripts/test (pytest)")
    args, unknown = parser.parse_known_args()
    args.pytest_args = [*args.pytest_args, *unknown]
    before = os.getloadavg()
    status, wall, summary = run(args.pytest_args)
    after = os.getloadavg()
    found = counts(summary)
    tests = sum(n for word, n in found.items() if word in RAN)
    target = args.target_minutes * 60
    print()
    print(f"command:      bash scripts/test {' '.join(args.pytest_args)}".rstrip())
    print(f"exit status:  {status}")
    print(f"wall time:    {wall:.1f} s ({wall / 60:.1f} min)")
    print(f"tests:        {tests} ({summary or 'no pytest summary line'})")
    print(f"target:       {target:.0f} s; ratio {wall / target:.2f} "
          f"({'within' if wall <= target else 'OVER'} the target)")
    print(f"machine:      {os.cpu_count()} CPUs; load average {before[0]:.2f} before, "
          f"{after[0]:.2f} after (1 min)")
    return status


if __name__ == "__main__":
    sys.exit(main())
