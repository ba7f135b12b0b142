"""The plan gate (``--itera-plan``): a plan judged alone, before renting, and re-forecast at
the post-pilot decision point (R2-R6). Registered as the plugin ``itera.plan``.

Its checks have scope ``plan``: they are collected for a plan given with ``--itera-plan``,
never for a closed campaign. They reuse the closure's plan rules (one home per rule):

- ``plan-valid``: JSON and schema-valid (``manifest``'s rule), a computable schedule
  (no dependency cycle), and no ``input_truncated`` rule contradicting its corpus entry
  (the recorder's rule too), each problem with its JSON path and line:column;
- ``plan-frozen-ready``: what the closure checks will need is declared (``itera-plan/2``,
  corpora, the must category, stop rules with evaluable parameters, a decision point after
  the pilot, a checkpoint policy that says where checkpoints live);
- ``plan-schedule-fits``: ``schedule-fits`` on the plan alone (window, lots with the
  cheapest lot that fits and the reduced protocol, stated hours, step kinds with positive
  hours, checkpoint interval plus save cost within the tolerable loss);
- ``plan-forecast`` (a campaign folder with a journal): the forecast against the window
  and the lots, with the same advice;
- ``plan-journal`` (idem): every line of the journal is complete and usable.

The journal is the recorder's (:mod:`pytest_itera.core.journal`, ``itera-journal.jsonl``).
:func:`read_journal` reads it without touching it (the recorder cuts a torn tail off when it
continues; the gate only reports it): a finished step is
``{"event": "step", "step": "<step id>", "hours": <measured hours>}``; other events are
skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from pytest_itera.checks.common.documents import manifest, must_roles
from pytest_itera.checks.common.rules_declared import rules_declared
from pytest_itera.checks.common.schedule_fits import (
    lot_findings,
    protocol_advice,
    reduction_for,
    rounded,
    schedule_fits,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Needs
from pytest_itera.checks.stop_rules import contradicts_corpus
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Plan, locate
from pytest_itera.core.findings import Finding, recoded
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.money import Catalogue, Money, Offer, lot_options
from pytest_itera.core.schedule import as_hours, hours_text
from pytest_itera.core.text import is_blank

MAX_JOURNAL_BYTES = 64 * 1024 * 1024
# Context.memo keys the collector seeds: the plan file and the journal (None: no journal).
PLAN_PATH = "itera.plan-path"
JOURNAL_PATH = "itera.journal-path"


def _h(value: Decimal) -> str:
    return f"{hours_text(rounded(value))} h"


def plan_path(ctx: Context) -> Path:
    return ctx.memo(PLAN_PATH, lambda: ctx.root / PLAN_FILE)


def journal_path(ctx: Context) -> Path | None:
    return ctx.memo(JOURNAL_PATH, lambda: None)


# ==================================================================== plan-valid


def plan_valid(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """JSON, schema-valid, and a schedule that can be computed."""
    yield from recoded(manifest(ctx, None), "plan-valid")
    plan = ctx.campaign.plan
    if plan is None:
        return
    try:
        sched.makespan(plan.schedule.steps)
    except sched.ScheduleError as exc:
        path: list[str | int] = ["schedule", "steps"]
        index = _culprit(plan)
        if index is not None:
            path += [index, "after"]
        yield Finding(f"the schedule cannot be computed: {exc}", where=_where(ctx, path),
                      hint="fix the steps' 'after' lists and their order on each resource",
                      code="plan-valid.schedule-not-computable")
    for i, rule in enumerate(plan.stop_rules):
        contradiction = contradicts_corpus(plan, rule)
        if contradiction is not None:
            c = contradiction
            yield Finding(c.detail, where=_where(ctx, ["stop_rules", i, "parameters", c.key]),
                          expected=f"{c.frozen}, the corpus entry's {c.key}", found=c.wanted,
                          hint=c.fix, code="plan-valid.rule-contradicts-corpus")


def _culprit(plan: Plan) -> int | None:
    """The first step in a dependency cycle or waiting for an unknown step."""
    steps = plan.schedule.steps
    ids = {s.id for s in steps}
    closure = sched.ancestors(steps)
    return next((i for i, s in enumerate(steps)
                 if s.id in closure[s.id] or any(d not in ids for d in s.after)), None)


def _where(ctx: Context, path: list[str | int]) -> str:
    """``plan.json:12:7 $.schedule.steps[3].after``."""
    file = plan_path(ctx)
    try:
        line, column = locate(file.read_text("utf-8"), path)
    except (OSError, UnicodeDecodeError):
        line = column = None
    pos = f":{line}:{column}" if line is not None else ""
    return json_where(f"{file.name}{pos}", *path)


# ============================================================= plan-frozen-ready


def frozen_ready(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Everything the closure checks will need is declared before the trials."""
    plan = ctx.campaign.plan
    assert plan is not None  # guaranteed by Check.needs
    if plan.version < 2:
        yield Finding(
            f"{plan.format} cannot be closed with evidence: corpora, machine-readable stop "
            "rules and the run of each step are itera-plan/2",
            where=json_where(PLAN_FILE, "format"), expected="itera-plan/2", found=plan.format,
            hint="write the plan with pytest_itera.record.campaign (docs/contract-v2.md)",
            code="plan-frozen-ready.plan-v1")
    yield from _corpora(plan)
    yield from recoded(must_roles(plan), "plan-frozen-ready")
    yield from recoded(rules_declared(ctx, None), "plan-frozen-ready")
    yield from _decision_point(plan)
    yield from _checkpoint_policy(plan)


def _corpora(plan: Plan) -> Iterator[Finding]:
    declared = [c.id for c in plan.corpora]
    for i, run in enumerate(plan.runs):
        if run.corpus is not None and run.corpus not in declared:
            yield Finding(f"run {run.id} works on corpus {run.corpus!r}, which the plan does "
                          "not declare", where=json_where(PLAN_FILE, "runs", i, "corpus"),
                          expected=f"one of {declared}", found=repr(run.corpus),
                          hint="declare every frozen corpus in corpora (id, path, sha256)",
                          code="plan-frozen-ready.corpus-undeclared")
        elif run.corpus is None and len(declared) > 1 and run.role in ("control", "variant"):
            yield Finding(f"run {run.id} names no corpus, and the plan has {len(declared)}",
                          where=json_where(PLAN_FILE, "runs", i, "corpus"),
                          expected=f"one of {declared}", found="none",
                          hint="a deliverable is one corpus: name the one the run predicts on",
                          code="plan-frozen-ready.no-corpus")


def _decision_point(plan: Plan) -> Iterator[Finding]:
    """A decision point is fixed (its place after the pilot: rules-declared's rule)."""
    if not is_blank(plan.decision.point) or any(
            s.kind == "decision" for s in plan.schedule.steps):
        return
    yield Finding(
        "the plan fixes no decision point", where=json_where(PLAN_FILE, "decision", "point"),
        expected="decision.point, or a schedule step of kind 'decision' after the pilot",
        hint="decide after the pilot: continue, drop an optional variant or revise the "
        "question; the budget is not an obligation to fill every hour",
        code="plan-frozen-ready.no-decision-point")


def _checkpoint_policy(plan: Plan) -> Iterator[Finding]:
    policy = plan.checkpoint_policy
    where = json_where(PLAN_FILE, "checkpoint_policy")
    if not policy.resume_state:
        yield Finding("the checkpoint policy requires no resume state", where=f"{where}"
                      ".resume_state", expected="at least model, optimizer, progress",
                      hint="a resume needs more than weights: the optimizer state and the "
                      "progress too, and per loop the scheduler, scaler, RNG and data position",
                      code="plan-frozen-ready.no-resume-state")
    if policy.storage is None or is_blank(policy.storage):
        yield Finding("the checkpoint policy does not say where checkpoints live",
                      where=f"{where}.storage",
                      hint="state where the files are written and how they are retrieved "
                      "before the rental period ends",
                      code="plan-frozen-ready.no-checkpoint-place")


# ============================================================= plan-schedule-fits


def plan_schedule_fits(ctx: Context, target: str | None) -> Iterator[Finding]:
    """``schedule-fits`` on the plan alone: the same makespan, window and lot rules."""
    yield from recoded(schedule_fits(ctx, target), "plan-schedule-fits")


# ================================================================== the journal


@dataclass(frozen=True)
class Journal:
    """What the journal says about finished steps, from its complete lines only."""

    hours: dict[str, Decimal] = field(default_factory=dict)  # step id -> measured hours
    lines: int = 0  # complete lines read
    torn: int | None = None  # the line number of a torn last line (not used)
    unreadable: tuple[tuple[int, str], ...] = ()  # (line number, why) of lines not used
    steps_at: dict[str, int] = field(default_factory=dict)  # step id -> its last line


def read_journal(path: Path) -> Journal | str:
    """Read the journal's complete lines (or say why it cannot be read).

    A last line without its newline is torn (a power cut in the middle of a write): it is
    reported and not used, even if it happens to parse.
    """
    if path.is_symlink() or not path.is_file():
        return f"{path.name} is not a regular file"
    try:
        size = path.stat().st_size
        if size > MAX_JOURNAL_BYTES:
            return f"{path.name} is {size} bytes, over the {MAX_JOURNAL_BYTES}-byte limit"
        data = path.read_bytes()
    except OSError as exc:
        return f"{path.name} cannot be read: {exc.strerror or exc}"
    *complete, last = data.split(b"\n")
    hours: dict[str, Decimal] = {}
    steps_at: dict[str, int] = {}
    unreadable: list[tuple[int, str]] = []
    for number, raw in enumerate(complete, 1):
        if not raw.strip():
            continue
        entry = _entry(raw)
        if isinstance(entry, str):
            unreadable.append((number, entry))
        elif entry is not None:
            step, measured = entry
            hours[step] = hours.get(step, Decimal(0)) + measured
            steps_at[step] = number
    torn = len(complete) + 1 if last.strip() else None
    return Journal(hours, len(complete), torn, tuple(unreadable), steps_at)


def _entry(raw: bytes) -> tuple[str, Decimal] | str | None:
    """(step, hours) of a finished step's line, None for another event, or why not usable."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("event") != "step" or "hours" not in data:
        return None  # another event, or a step that started and has not ended
    step, hours = data.get("step"), data.get("hours")
    if not isinstance(step, str) or is_blank(step):
        return "a step line without its step id"
    if not isinstance(hours, int | float) or isinstance(hours, bool):
        return f"step {step!r}: hours {hours!r} is not a number"
    try:
        return step, as_hours(hours)
    except (TypeError, ValueError) as exc:
        return f"step {step!r}: {exc}"


def journal_beside(plan_file: Path) -> Path | None:
    """The journal of the campaign a ``plan.json`` opens, when its folder has one."""
    if plan_file.name != PLAN_FILE:
        return None  # a plan file of another name is a draft, not a campaign's
    if os.path.lexists(plan_file.parent / MANIFEST_FILE):
        return None  # a closed campaign: its manifest has the actual schedule
    journal = plan_file.parent / JOURNAL_FILE
    return journal if os.path.lexists(journal) else None


def journal_of(ctx: Context) -> Journal | str | None:
    """The campaign's journal, read once; None when there is none."""
    path = journal_path(ctx)
    if path is None:
        return None
    return ctx.memo("itera.journal", lambda: read_journal(path))


def journal_targets(ctx: Context) -> list[str]:
    """One item for the journal, only when the folder has one."""
    return [JOURNAL_FILE] if journal_path(ctx) is not None else []


def plan_journal(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Every line of the journal is complete and usable by the forecast."""
    journal = journal_of(ctx)
    if journal is None:
        return
    if isinstance(journal, str):
        yield Finding(journal, where=JOURNAL_FILE, code="plan-journal.unreadable")
        return
    if journal.torn is not None:
        yield Finding(
            f"the last line of the journal is torn (no newline: an interrupted write); the "
            f"forecast uses the {journal.lines} complete lines only",
            where=f"{JOURNAL_FILE}:{journal.torn}",
            hint="re-record the step whose line was cut (the recorder continues from its "
            "journal); the plan gate never edits the campaign",
            code="plan-journal.torn-line")
    for number, why in journal.unreadable:
        yield Finding(f"journal line {number} is not used: {why}",
                      where=f"{JOURNAL_FILE}:{number}",
                      code="plan-journal.unused-line")
    plan = ctx.campaign.plan
    known = {s.id for s in plan.schedule.steps} if plan is not None else set()
    for step, number in sorted(journal.steps_at.items(), key=lambda kv: kv[1]):
        if plan is not None and step not in known:
            yield Finding(f"journal step {step!r} is not a step of the plan; the forecast "
                          "leaves it out", where=f"{JOURNAL_FILE}:{number}",
                          hint="the plan is frozen: record unplanned work under a planned "
                          "step, or explain it at closure (schedule.deviations)",
                          code="plan-journal.unknown-step")


# ================================================================= plan-forecast


def plan_forecast(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """The re-forecast schedule (measured, scaled, planned) fits the window and the lots."""
    plan = ctx.campaign.plan
    assert plan is not None  # guaranteed by Check.needs
    journal = journal_of(ctx)
    if not isinstance(journal, Journal):
        yield Finding(f"no forecast: {journal or 'no journal'}", where=JOURNAL_FILE,
                      code="plan-forecast.no-forecast")
        return
    fc = sched.forecast(plan, journal.hours)
    reduction = reduction_for(plan, fc.steps, fc.timeline, keep=fc.started_runs)
    window = as_hours(plan.schedule.window_hours)
    if fc.makespan > window:
        yield Finding(
            f"forecast: the schedule now takes {_h(fc.makespan)} ({forecast_basis(fc)}), "
            f"{_h(fc.makespan - window)} more than the {_h(window)} window",
            where=JOURNAL_FILE, expected=f"at most {_h(window)}", found=_h(fc.makespan),
            hint=f"{protocol_advice(reduction) or 'reduce the protocol'}; or plan a longer "
            "window. The plan stays as frozen: record the decision at the decision point",
            code="plan-forecast.window")
    yield from recoded(lot_findings(ctx, plan, fc.timeline, reduction, prefix="forecast: "),
                       "plan-forecast")


def forecast_basis(fc: sched.Forecast) -> str:
    """``4 steps measured; training steps x1.5``."""
    count = len(fc.measured)
    parts = [f"{count} step{'s' if count != 1 else ''} measured"]
    parts += [f"{kind} steps x{hours_text(rounded(ratio))}"
              for kind, ratio in sorted(fc.ratios.items()) if ratio != 1 and any(
                  s.kind == kind and s.id in fc.scaled for s in fc.steps)]
    return "; ".join(parts)


# ================================================================== the summary


def offers_for(plan: Plan, gpu: str, catalogue: Catalogue) -> Catalogue:
    """The catalogue's offers for ``gpu`` and the plan's own lots of it, one per duration
    and price."""
    own = [Offer(p.offer, p.gpu, p.gpus_per_lot, p.days, Money(p.price, plan.budget.currency))
           for p in plan.budget.lots if p.gpu == gpu]
    offers: dict[tuple[int, Decimal, str], Offer] = {}
    for offer in (*catalogue.for_gpu(gpu).offers, *own):
        offers.setdefault((offer.days, offer.price.amount, offer.price.currency), offer)
    return Catalogue(catalogue.provider, catalogue.currency, tuple(offers.values()))


def summary_lines(label: str, plan: Plan, catalogue: Catalogue | str,
                  journal: Journal | str | None = None) -> list[str]:
    """The planned schedule, the window edge, uncommitted time and the lot comparison
    (``catalogue``: the one in force, or why it cannot be used)."""
    try:
        timeline = sched.makespan(plan.schedule.steps)
    except sched.ScheduleError:
        return [f"plan {label}: the schedule cannot be computed (see plan-valid)"]
    window = as_hours(plan.schedule.window_hours)
    free = window - timeline.makespan
    lines = [f"plan {label} ({plan.campaign}): {_h(timeline.makespan)} from preparation to "
             f"retrieval in the {_h(window)} window: "
             + (f"{_h(free)} uncommitted" if free >= 0 else f"{_h(-free)} OVER the window")]
    if plan.frozen_at is None:
        lines.append("  a draft (no frozen_at): CampaignRecorder.freeze_plan sets it when it "
                     "freezes the plan, before the first run")
    lines += _timeline_lines(timeline, window)
    for use in sched.lot_uses(plan.budget.lots, timeline):
        lot = next(lot for lot in plan.budget.lots if lot.id == use.lot)
        lines.append(f"  lot {lot.id} ({lot.days} days, {lot.price} {plan.budget.currency}"
                     f"{f' x {lot.quantity}' if lot.quantity > 1 else ''}): spans "
                     f"{_h(use.span)} of {use.capacity} h"
                     + ("" if use.excess <= 0 else f": {_h(use.excess)} OVER the lot"))
        off = sched.off_lot_text(timeline, lot.id) if use.named else None
        if off is not None:
            lines.append(f"    {off}")
        options = [] if isinstance(catalogue, str) else lot_options(
            use.span, offers_for(plan, lot.gpu, catalogue))
        table = " | ".join(f"{o.offer.days}-day {o.price.format()} ({_h(o.idle_hours)} idle)"
                           for o in options) or (
            catalogue if isinstance(catalogue, str) else "none in the catalogue")
        lines.append(f"    lots that fit {_h(use.span)} of {lot.gpu}: {table}")
    if isinstance(journal, Journal):
        fc = sched.forecast(plan, journal.hours)
        left = window - fc.makespan
        lines.append(f"  forecast ({forecast_basis(fc)}): {_h(fc.makespan)}: "
                     + (f"{_h(left)} uncommitted" if left >= 0 else f"{_h(-left)} OVER the "
                        "window"))
    return lines


def _timeline_lines(timeline: sched.Timeline, window: Decimal) -> list[str]:
    width = max((len(s.id) for s in timeline.slots), default=4)
    rows = [f"  {'step'.ljust(width)}  {'resource':<10} {'start':>7} {'end':>7}"]
    rows += [f"  {s.id.ljust(width)}  {s.resource:<10} {hours_text(rounded(s.start)):>7} "
             f"{hours_text(rounded(s.end)):>7}" for s in timeline.slots]
    rows.append(f"  {'window edge'.ljust(width)}  {'':<10} {'':>7} {hours_text(window):>7}")
    return rows


_PLAN: frozenset[Needs] = frozenset({"plan"})
CHECKS = (
    Check("plan-valid", "the plan is JSON, schema-valid and its schedule computable",
          plan_valid, scope="plan", needs=frozenset(), fast=True, order=0),
    Check("plan-frozen-ready", "everything the closure will need is declared before the trials",
          frozen_ready, scope="plan", needs=_PLAN, fast=True, order=1),
    Check("plan-schedule-fits", "the end-to-end schedule fits the window and every lot",
          plan_schedule_fits, scope="plan", needs=_PLAN, fast=True, order=2),
    Check("plan-journal", "every line of the journal is complete and usable", plan_journal,
          scope="plan", targets=journal_targets, needs=frozenset(), fast=True, order=3),
    Check("plan-forecast", "the forecast from the measured steps fits the window and the lots",
          plan_forecast, scope="plan", targets=journal_targets, needs=_PLAN, fast=True,
          order=4),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
