"""``python -m pytest_itera``: check a campaign folder, or start a plan.

    python -m pytest_itera check DIR       # the plugin's verdict, without a pytest session
    python -m pytest_itera rehearse DIR    # the verdict on a rehearsal (REHEARSED or not)
    python -m pytest_itera new-plan DIR    # DIR/plan.json: a complete itera-plan/3 to edit
    python -m pytest_itera watch DIR       # follow an open campaign: the lot's end, forecast
    python -m pytest_itera next-plan DIR --to DRAFT  # the next plan, from the observed hours
    python -m pytest_itera push DIR s3://bucket/prefix/   # upload, then verify in place

``check`` exits 0 only when the campaign is accepted (like ``pytest --itera-campaign
--itera-require-accepted``); ``rehearse`` only when it is REHEARSED: a rehearsal
(``CampaignRecorder(..., rehearsal=True)``, run on any machine at any speed) whose every
check passed, its observed hours not judged against the plan.
``new-plan`` writes the seed's example: 48 sequential hours inside a 72-hour
window on one IteraGPU RTX 4090 3-day lot (47.14 USD), a control, a data check,
a resume check, a pilot with a decision point after it, one variant, stop rules
with machine-readable parameters and a checkpoint policy. Digests are zeros
until you compute yours (``sha256sum``). It is a draft: it has no ``frozen_at`` until
``CampaignRecorder.freeze_plan`` freezes it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_itera.core.campaign import PLAN_FILE, validate
from pytest_itera.core.schedule import as_hours
from pytest_itera.record.base import atomic_write_json
from pytest_itera.reload.formats import DEFAULT_TIMEOUT

__all__ = ["main", "plan_skeleton"]

PLACEHOLDER = "0" * 64  # replace with the sha256 of the file (sha256sum)
LOT = "rtx4090-3d"

# (id, kind, resource, hours, after, run): one chain, 48 h of a 72 h window.
_STEPS: tuple[tuple[str, str, str, float, tuple[str, ...], str | None], ...] = (
    ("prepare", "preparation", "human", 4, (), None),
    ("setup", "setup", "gpu0", 2, ("prepare",), None),
    ("load-data", "data_load", "gpu0", 2, ("setup",), None),
    ("check-data", "validation", "gpu0", 1, ("load-data",), "data-check"),
    ("train-pilot", "training", "gpu0", 3, ("check-data",), "pilot"),
    ("decide-after-pilot", "decision", "human", 1, ("train-pilot",), None),
    ("train-control", "training", "gpu0", 12, ("decide-after-pilot",), "control"),
    ("save-checkpoint", "checkpoint_save", "gpu0", 1, ("train-control",), "control"),
    ("restore-checkpoint", "checkpoint_restore", "gpu0", 1, ("save-checkpoint",),
     "resume-check"),
    ("train-resume-check", "training", "gpu0", 2, ("restore-checkpoint",), "resume-check"),
    ("train-variant", "training", "gpu0", 12, ("train-resume-check",), "variant"),
    ("validate", "validation", "gpu0", 3, ("train-variant",), None),
    ("write-outputs", "output", "gpu0", 2, ("validate",), None),
    ("retrieve", "retrieval", "gpu0", 2, ("write-outputs",), None),
)
_RUNS = (
    ("control", "control", "must", "the reference configuration"),
    ("data-check", "data_check", "must", "the frozen corpus is complete and unchanged"),
    ("resume-check", "resume_check", "must",
     "resumes the control's early checkpoint in a new process"),
    ("pilot", "pilot", "useful", "a short run that informs the decision point"),
    ("variant", "variant", "useful", "the change under test"),
)


SKELETON_FORMAT = "itera-plan/3"


def plan_skeleton(campaign: str = "my-campaign") -> dict[str, Any]:
    """A complete ``itera-plan/3`` to edit (``frozen_at`` aside: the recorder sets it): /3,
    so that the decision metric says how it is computed from the predictions and the
    corpus's labels (``metrics-recomputed`` cannot prove an /2 plan's)."""
    return {
        "format": SKELETON_FORMAT,
        "campaign": campaign,
        "question": "Does the variant raise validation accuracy by at least 0.02 over the "
                    "control on the frozen corpus?",
        "decision": {"metric": "accuracy_gain", "direction": "higher", "threshold": 0.02,
                     "point": "after the pilot: continue, drop an optional variant, or revise "
                              "the question",
                     "computation": {"kind": "accuracy", "label_field": "label",
                                     "prediction_field": "prediction",
                                     "where": {"split": "validation"},
                                     "relative_to": "control"}},
        "corpora": [{"id": "corpus-v1", "path": "data/corpus.jsonl", "sha256": PLACEHOLDER,
                     "id_field": "id", "examples": 600}],
        "runs": [{"id": rid, "role": role, "category": category, "description": text,
                  "config_sha256": PLACEHOLDER} for rid, role, category, text in _RUNS],
        "stop_rules": [
            {"id": "non-finite-loss", "kind": "non_finite_loss",
             "parameters": {"series": "loss"}},
            {"id": "quality-below", "kind": "quality_below",
             "parameters": {"metric": "validation_accuracy", "threshold": 0.5,
                            "direction": "higher", "split": "validation"}},
            {"id": "corpus-truncated", "kind": "input_truncated",
             "parameters": {"input": "corpus-v1", "examples": 600},
             "description": "examples is corpora[0].examples: edit both together"},
            {"id": "no-usable-resume", "kind": "no_resume",
             "parameters": {"resume_check": "resume-check"}},
        ],
        "checkpoint_policy": {
            "interval_hours": 1, "tolerable_loss_hours": 2, "save_hours": 0.05,
            "resume_state": ["model", "optimizer", "progress", "scheduler", "rng", "data"],
            "storage": "runs/<run>/ on the rented machine's disk, copied to the retrieval "
                       "bucket by the retrieve step before the lot ends",
        },
        "schedule": {
            "window_hours": 72, "sequential_hours": 48, "uncommitted_hours": 24,
            "steps": [_step(*row) for row in _STEPS],
        },
        "budget": {"currency": "USD", "lots": [
            {"id": LOT, "offer": "IteraGPU RTX 4090, 3 days", "gpu": "RTX 4090",
             "gpus_per_lot": 1, "days": 3, "price": "47.14", "quantity": 1}]},
    }


def _step(step_id: str, kind: str, resource: str, hours: float, after: tuple[str, ...],
          run: str | None) -> dict[str, Any]:
    step: dict[str, Any] = {"id": step_id, "kind": kind, "resource": resource, "hours": hours}
    if after:
        step["after"] = list(after)
    if resource != "human":
        step["lot"] = LOT
    if run is not None:
        step["run"] = run
    return step


def _new_plan(folder: Path, campaign: str | None) -> int:
    target = folder / PLAN_FILE
    if target.exists():
        print(f"{target} exists: a plan is never overwritten", file=sys.stderr)
        return 1
    plan = plan_skeleton(campaign or folder.resolve().name)
    problems = validate("plan", plan)
    if problems:  # a bug of this module, not of the user's
        raise AssertionError("\n".join(problems))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(target, plan)
    print(f"wrote {target}, a draft: edit the question, corpora, runs and sha256 digests "
          "(zeros now), and the corpus-truncated rule's examples with corpora[0].examples "
          "(both 600 now), judge it with pytest --itera-plan, then freeze it with "
          "CampaignRecorder.freeze_plan (which sets frozen_at)")
    return 0


def _check(folder: Path, python: str | None, timeout: float, *, rehearsal: bool = False,
           strict_text: bool = False) -> int:
    from pytest_itera.report.verify import check_campaign

    if not folder.is_dir():
        print(f"{folder}: not a folder", file=sys.stderr)
        return 4
    result = check_campaign(folder, python=python, timeout=timeout, strict_text=strict_text)
    print("\n".join(result.lines()))
    if rehearsal:
        man = result.report
        if result.verdict != "rehearsed" and result.verdict in ("accepted",
                                                                "accepted with waivers"):
            print(f"{man.campaign} is not a rehearsal: its manifest does not say "
                  "\"rehearsal\": true (judge it with check)", file=sys.stderr)
        return 0 if result.verdict == "rehearsed" else 1
    return 0 if result.accepted else 1


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not an ISO 8601 moment") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text}: give a time zone, e.g. 2026-01-05T08:00Z")
    return moment.astimezone(UTC)


def _lead(text: str) -> Decimal:
    try:
        return as_hours(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not a number of hours >= 0") from None


def _rate(text: str) -> Decimal:
    from pytest_itera.core.lot_forecast import rate_of

    try:
        return rate_of(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _watch(args: argparse.Namespace) -> int:
    from pytest_itera.watch.follow import Follow, follow
    from pytest_itera.watch.judged import Judged
    from pytest_itera.watch.status import FolderError, judge, open_folder, render, verdict

    try:
        folder = open_folder(args.folder)
        with Judged() as judged:  # one reload server for the whole watch
            if args.once or args.now is not None:
                fc = judge(folder, args.now or datetime.now(UTC), lead=args.lead,
                           replay=args.now is not None, judged=judged,
                           upload_rate=args.upload_rate)
                print(render(fc, as_json=args.json))
                return verdict(fc)
            return follow(folder, Follow(args.lead, args.interval, args.json,
                                         live=sys.stdout.isatty() and not args.json,
                                         upload_rate=args.upload_rate),
                          sys.stdout, judged=judged)
    except FolderError as exc:
        print(f"watch: {exc}", file=sys.stderr)
        return 4


def _next_plan(folder: Path, to: Path, margin: Decimal) -> int:
    from pytest_itera.watch.next_plan import UNCERTAINTIES_FILE, write_next_plan
    from pytest_itera.watch.status import FolderError

    try:
        failures = write_next_plan(folder, to, margin=margin)
    except FolderError as exc:
        print(f"next-plan: {exc}", file=sys.stderr)
        return 4
    print(f"wrote {to / PLAN_FILE} (a draft: no frozen_at) and {to / UNCERTAINTIES_FILE}")
    if failures:
        print("the draft does not pass the plan gate:\n" + "\n".join(
            f"  {line}" for line in failures), file=sys.stderr)
        return 1
    print(f"the draft passes the plan gate (pytest --itera-plan {to})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_itera", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="the plugin's verdict on a campaign folder")
    check.add_argument("folder", type=Path)
    check.add_argument("--python", default=None,
                       help="interpreter for the fresh-process reloads (default: this one)")
    check.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                       help="seconds per reload")
    check.add_argument("--strict-text", action="store_true",
                       help="the readings of human text decide too (as --itera-strict-text)")
    rehearse = sub.add_parser("rehearse", help="the verdict on a rehearsal: exits 0 when "
                              "REHEARSED (every check passed, hours not judged)")
    rehearse.add_argument("folder", type=Path)
    rehearse.add_argument("--python", default=None,
                          help="interpreter for the fresh-process reloads (default: this one)")
    rehearse.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                          help="seconds per reload")
    new = sub.add_parser("new-plan", help="write a complete itera-plan/3 skeleton")
    new.add_argument("folder", type=Path)
    new.add_argument("--campaign", default=None, help="campaign id (default: the folder name)")
    watch = sub.add_parser("watch", help="follow an open campaign's journal: the forecast of "
                           "the lot's end, what to drop (never writes into DIR)")
    watch.add_argument("folder", type=Path)
    watch.add_argument("--once", action="store_true",
                       help="judge once and exit: 0 on track, 1 off track, a stop rule fired or a "
                       "must run's checkpoint does not reload")
    watch.add_argument("--json", action="store_true", help="one JSON object per judgement")
    watch.add_argument("--now", type=_moment, default=None,
                       help="judge the journal as of this ISO 8601 moment (with its zone), once")
    watch.add_argument("--lead", type=_lead, default=Decimal(0),
                       help="hours kept before the lot's end (default 0)")
    watch.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
    watch.add_argument("--upload-rate", type=_rate, default=None, metavar="RATE",
                       help="count the push of the folder in the retrieval at this rate (e.g. "
                       "40MiB/s, 300Mbit/s: what 'push' printed for this store)")
    nxt = sub.add_parser("next-plan", help="write the next campaign's draft plan from this "
                         "one's observed hours, with the uncertainties left")
    nxt.add_argument("folder", type=Path)
    nxt.add_argument("--to", type=Path, required=True, help="the draft's folder (new)")
    nxt.add_argument("--margin", type=_lead, default=Decimal("0.10"),
                     help="observed hours are rounded up by this share (default 0.10)")
    pushed = sub.add_parser("push", help="upload a closed campaign to object storage with "
                            "each object's SHA-256, then verify it in place (exits 0 only "
                            "when the store holds exactly the manifest's files)")
    pushed.add_argument("folder", type=Path)
    pushed.add_argument("url", help="s3://bucket/prefix/ (settings from the AWS_* environment)")
    pushed.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per request, each retried up to 3 times")
    pushed.add_argument("--concurrency", type=int, default=4, help="objects at a time")
    args = parser.parse_args(argv)
    if args.command == "watch":
        return _watch(args)
    if args.command == "next-plan":
        return _next_plan(args.folder, args.to, args.margin)
    if args.command == "push":
        from pytest_itera.files.push import command

        return command(args.folder, args.url, timeout=args.timeout,
                       concurrency=args.concurrency)
    if args.command in ("check", "rehearse"):
        return _check(args.folder, args.python, args.timeout,
                      rehearsal=args.command == "rehearse",
                      strict_text=getattr(args, "strict_text", False))
    return _new_plan(args.folder, args.campaign)
