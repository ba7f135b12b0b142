"""One judgement of an open campaign folder: its frozen plan, its journal as of a moment, the
forecast of the lot's end (:func:`pytest_itera.core.lot_forecast.forecast_lot`), and how
``watch`` prints it: a one-screen status, or one JSON object (``watch-status.schema.json``).

Nothing is written into the folder: the journal is read as it is (a torn last line is left
where it is and not read, :func:`pytest_itera.core.journal.read_events`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import ROUND_UP, Decimal
from pathlib import Path
from typing import Any

from pytest_itera.core.campaign import PLAN_FILE, Plan, load_plan
from pytest_itera.core.journal import JOURNAL_FILE, JournalError, read_events
from pytest_itera.core.lot_forecast import (
    LotForecast,
    Upload,
    events_until,
    forecast_lot,
    moment_of,
)
from pytest_itera.core.money import example_catalogue
from pytest_itera.core.schedule import ScheduleError, hours_text
from pytest_itera.files.tree import walk
from pytest_itera.watch.judged import Judged, open_facts

__all__ = ["STATUS_FORMAT", "Folder", "FolderError", "judge", "lines", "open_folder", "render",
           "status_json", "verdict"]

STATUS_FORMAT = "itera-watch/1"
# The exit statuses of ``watch --once``: on track, off track, a folder that cannot be judged.
ON_TRACK, OFF_TRACK, UNJUDGEABLE = 0, 1, 4


class FolderError(ValueError):
    """A folder ``watch`` cannot judge: what is wrong, said plainly (exit 4)."""


@dataclass(frozen=True)
class Folder:
    """The campaign folder as read once: its plan and the digest the journal must start with."""

    root: Path
    plan: Plan
    plan_sha256: str


def open_folder(root: Path) -> Folder:
    """The folder's frozen plan, or :class:`FolderError` saying why it is not a campaign."""
    if not root.is_dir():
        raise FolderError(f"{root}: not a folder")
    path = root / PLAN_FILE
    if not path.is_file():
        raise FolderError(f"{root}: not a campaign folder (no {PLAN_FILE})")
    loaded = load_plan(path)
    if loaded.plan is None:
        why = "; ".join(str(e) for e in loaded.errors[:3]) or "it does not load"
        raise FolderError(f"{path}: not a plan the campaign can follow: {why}")
    return Folder(root, loaded.plan, hashlib.sha256(path.read_bytes()).hexdigest())


def judge(folder: Folder, now: datetime, *, lead: Decimal | int = 0,
          replay: bool = False, judged: Judged | None = None,
          upload_rate: Decimal | None = None) -> LotForecast:
    """The folder's journal judged at ``now`` (:class:`FolderError` when it is another
    campaign's, or broken before its last line). ``replay``: as of ``now``, the events after
    it unread (``--now``); else every event, and a journal ahead of this machine's clock (a
    played clock, another machine's) is judged at its last moment, and said so. Besides the
    forecast, the open campaign's facts (:func:`pytest_itera.watch.judged.open_facts`); with
    ``judged`` (one per ``watch``: its reload server and cache) its files are read too.
    ``upload_rate`` (bytes per second): the push of the folder's bytes now counts in the
    retrieval steps left (:class:`pytest_itera.core.lot_forecast.Upload`)."""
    notes: list[str] = []
    try:
        events, torn = read_events(folder.root)
    except FileNotFoundError:
        events, torn = [], None
        notes.append(f"no {JOURNAL_FILE} yet: nothing has run")
    except OSError as exc:
        raise FolderError(f"{folder.root / JOURNAL_FILE} cannot be read: "
                          f"{exc.strerror or exc}") from None
    except JournalError as exc:
        raise FolderError(str(exc)) from None
    if torn is not None:
        notes.append(f"{JOURNAL_FILE} line {torn.line} is torn ({torn.bytes} bytes): an "
                     "interrupted write, not read (the recorder cuts it off when it continues)")
    if events:
        _same_campaign(folder, events[0])
    last = max((m for e in events if (m := moment_of(e)) is not None), default=None)
    if not replay and last is not None and last > now:
        notes.append(f"the journal's last moment ({_iso(last)}) is after this machine's clock "
                     f"({_iso(now)}): a played clock or another machine's; judged at it")
        now = last
    try:
        upload = None if upload_rate is None else Upload(folder_bytes(folder.root), upload_rate)
        fc = forecast_lot(folder.plan, events, now, lead=lead, catalogue=example_catalogue(),
                          upload=upload)
    except ScheduleError as exc:
        raise FolderError(f"{folder.root / PLAN_FILE}: its schedule cannot be laid out: "
                          f"{exc}") from None
    facts = open_facts(folder.plan, folder.root, events_until(events, fc.now), fc.steps, judged)
    return replace(fc, facts=facts, notes=(*notes, *fc.notes, *facts.notes))


def folder_bytes(root: Path) -> int:
    """The bytes of the regular files in the folder now, links not followed: what a push
    of it moves (the checkpoints still to save come on top)."""
    return sum(e.size for e in walk(root) if e.kind == "file")


def _same_campaign(folder: Folder, first: dict[str, Any]) -> None:
    if first.get("event") != "plan":
        raise FolderError(f"{folder.root / JOURNAL_FILE}: line 1 is not the frozen plan "
                          f"({first.get('event')!r}): not a recorder's journal")
    if first.get("sha256") != folder.plan_sha256:
        raise FolderError(
            f"{folder.root / JOURNAL_FILE} is the journal of another campaign: it froze a plan "
            f"of sha256 {first.get('sha256')}, and {PLAN_FILE} here is {folder.plan_sha256}")


def verdict(fc: LotForecast) -> int:
    """0 on track; 1 when the lot overflows, a must run will not finish, a stop rule fired
    (recorded, or on the series so far) or a must run's checkpoint does not reload."""
    off = (not fc.on_track or fc.late_musts or fc.rules or fc.facts.rules
           or fc.facts.failing_musts)
    return OFF_TRACK if off else ON_TRACK


def _h(hours: Decimal) -> str:
    return f"{hours_text(hours.quantize(Decimal('0.01'), rounding=ROUND_UP))} h"


def _iso(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else None


def lines(fc: LotForecast) -> list[str]:
    """The one-screen status: a progress line per run, each lot's end and margin, the
    forecast end, the warning when the margin is negative."""
    out = [f"{fc.campaign} at {_iso(fc.now)}: {fc.events} journal events"
           + (" (closed)" if fc.closed else "")]
    for run in fc.runs:
        end = f", ends {_iso(run.end)}" if run.end is not None and run.state != "done" else ""
        late = " LATE" if run.late else ""
        out.append(f"  {run.run:<24} {run.category:<11} {run.state:<8} "
                   f"{_h(run.worked)} worked, {_h(run.remaining)} left{end}{late}")
    for lot in fc.lots:
        if lot.end is None:
            out.append(f"  lot {lot.lot}: not engaged, none of its steps is left")
            continue
        out.append(f"  lot {lot.lot} ({lot.days} days): ends {_iso(lot.end)}, margin "
                   f"{_h(lot.margin)} after the {_h(fc.lead)} lead"
                   + (f"; retrieval starts by {_iso(lot.retrieval_start)}"
                      if lot.retrieval_start else ""))
    if fc.push is not None:
        out.append(f"  push: {fc.push.describe()} (the folder's bytes now; checkpoints still "
                   "to save add to them)")
    if fc.rental_source is not None:
        out.append(f"  rental start {_iso(fc.rental_start)}: {fc.rental_source}")
    ratios = ", ".join(f"{kind} x{hours_text(r.quantize(Decimal('0.01')))}"
                       for kind, r in sorted(fc.ratios.items()))
    out.append(f"  forecast end {_iso(fc.end)}"
               + (f" (observed rates: {ratios})" if ratios else " (planned hours)")
               + (f"; restarts lost {_h(fc.lost_hours)}" if fc.lost_hours else ""))
    out += [f"  stop rule {r.rule} fired on {r.run} at {_iso(r.at)}" for r in fc.rules]
    out += _fact_lines(fc)
    out += [f"  saves: {gap.describe()}" for gap in fc.saves]
    out += [f"  note: {note}" for note in fc.notes]
    warning = fc.warning()
    out.append(warning if warning else "  on track")
    return out


def _fact_lines(fc: LotForecast) -> list[str]:
    """The open campaign's facts: a stop rule the series triggers, each checkpoint that does
    not reload and a count of the others, predictions that miss their corpus, times that do
    not fit the plan."""
    facts = fc.facts
    out = [f"  {rule.describe()}" for rule in facts.rules]
    out += [f"  checkpoint {c.path} ({c.run}{', must' if c.must else ''}) does not reload: "
            f"{c.cause}" for c in facts.checkpoints if c.state == "fails"]
    counts = [(sum(c.state == state for c in facts.checkpoints), words) for state, words in
              (("reloads", "reload"), ("fails", "do not"), ("missing", "not in the folder"))]
    if facts.checkpoints:
        out.append("  checkpoints: " + ", ".join(f"{n} {words}" for n, words in counts if n))
    out += [f"  predictions {p.path} ({p.run}): {'; '.join(p.problems)}"
            for p in facts.predictions if not p.covers]
    covered = [p.run for p in facts.predictions if p.covers]
    if covered:
        out.append(f"  predictions cover the frozen corpus: {', '.join(covered)}")
    out += [f"  times: {t.text}" for t in facts.times]
    return out


def render(fc: LotForecast, *, as_json: bool = False) -> str:
    """The judgement as ``watch`` prints it: the status's lines, or one line of JSON."""
    return json.dumps(status_json(fc), ensure_ascii=False) if as_json else "\n".join(lines(fc))


def _hours(value: Decimal) -> float:
    return float(value.quantize(Decimal("0.0001")))


def status_json(fc: LotForecast) -> dict[str, Any]:
    """The judgement as one JSON object (``pytest_itera/schemas/watch-status.schema.json``)."""
    return {
        "format": STATUS_FORMAT, "campaign": fc.campaign, "now": _iso(fc.now),
        "events": fc.events, "closed": fc.closed, "lead_hours": _hours(fc.lead),
        "rental_start": _iso(fc.rental_start), "rental_start_source": fc.rental_source,
        "end": _iso(fc.end),
        "margin_hours": None if fc.margin is None else _hours(fc.margin),
        "on_track": fc.on_track, "exit": verdict(fc), "warning": fc.warning(),
        "drop": list(fc.drop), "drop_fits": fc.drop_fits,
        "retrieval_start": _iso(fc.retrieval_start), "lost_hours": _hours(fc.lost_hours),
        "ratios": {k: _hours(v) for k, v in sorted(fc.ratios.items())},
        "runs": [{"run": r.run, "category": r.category, "state": r.state,
                  "worked_hours": _hours(r.worked), "remaining_hours": _hours(r.remaining),
                  "end": _iso(r.end), "late": r.late} for r in fc.runs],
        "lots": [{"lot": lot.lot, "days": lot.days, "start": _iso(lot.start),
                  "end": _iso(lot.end), "engaged": lot.engaged,
                  "span_hours": _hours(lot.span), "margin_hours": _hours(lot.margin),
                  "retrieval_start": _iso(lot.retrieval_start), "advice": lot.advice}
                 for lot in fc.lots],
        "rules": [{"run": r.run, "rule": r.rule, "at": _iso(r.at), "reason": r.reason}
                  for r in fc.rules],
        "saves": [{"run": g.run, "since": _iso(g.since), "until": _iso(g.until),
                   "hours": _hours(g.hours), "allowed_hours": _hours(g.allowed)}
                  for g in fc.saves],
        **_facts_json(fc),
        "push": None if fc.push is None else {
            "bytes": fc.push.upload.bytes, "rate_bytes_per_s": float(fc.push.upload.rate),
            "hours": _hours(fc.push.upload.hours), "planned_hours": _hours(fc.push.planned),
            "added_hours": _hours(fc.push.added), "step": fc.push.step},
        "notes": list(fc.notes),
    }


def _facts_json(fc: LotForecast) -> dict[str, Any]:
    facts = fc.facts
    return {
        "series_rules": [{"run": r.run, "rule": r.rule, "kind": r.kind, "step": r.step,
                          "where": r.where, "detail": r.detail} for r in facts.rules],
        "checkpoints_judged": facts.reloaded,
        "checkpoints": [{"path": c.path, "run": c.run, "must": c.must, "state": c.state,
                         "cause": c.cause, "step": c.step} for c in facts.checkpoints],
        "predictions": [{"run": p.run, "path": p.path, "covers": p.covers,
                         "problems": list(p.problems)} for p in facts.predictions],
        "times": [{"step": t.step, "planned_hours": _hours(t.planned),
                   "observed_hours": _hours(t.observed), "short": t.short, "text": t.text}
                  for t in facts.times],
    }
