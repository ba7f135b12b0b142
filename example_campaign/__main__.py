"""``python -m example_campaign --out DIR [--start 2026-01-05T08:00:00Z]``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path


def parse_start(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text}: give a time zone, e.g. 2026-01-05T08:00:00Z")
    return moment.astimezone(UTC)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m example_campaign", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="new or empty campaign folder")
    parser.add_argument(
        "--start", type=parse_start, default=None,
        help="when the rental starts (ISO 8601 with zone); fixes every timestamp, so two builds "
        "with the same --start give the same plan.json. Default: now, to the second.",
    )
    args = parser.parse_args(argv)
    start = args.start or datetime.now(UTC).replace(microsecond=0)
    from example_campaign.build import build_campaign  # torch only after argument parsing

    manifest = build_campaign(args.out, start)
    print(f"campaign written: {manifest.parent} (manifest {manifest.name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
