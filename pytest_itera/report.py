"""The closure report: a plain model of check results, rendered as text, JSON, Markdown, HTML.

No pytest import: the session plugin feeds it results taken from test reports,
so it is built the same way with or without pytest-xdist. Everything that
comes from the campaign is hostile input: terminal text loses its control
characters, Markdown and HTML are escaped.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_itera import money
from pytest_itera import schedule as sched
from pytest_itera.atomic import atomic_write_bytes
from pytest_itera.campaign import Campaign, Manifest
from pytest_itera.closure import ACCEPTANCE, FindingFacts, ReloadFacts, WaiverFacts, plain

REPORT_FORMAT = "itera-report/2"
PARTIAL_NOTE = "only the checks named on the command line were collected"
PLAN_INTEGRITY_NOTE = (
    "plan integrity rests on the manifest's own record: no --itera-plan-sha256 or "
    "itera_plan_sha256 pin was given for this campaign"
)
SUFFIXES = (".json", ".md", ".html")


# Verdicts that pass the --itera-require-accepted gate.
ACCEPTING = ("accepted", "accepted with waivers")


@dataclass(frozen=True)
class CheckResult:
    check: str
    target: str | None
    outcome: str  # "passed" | "failed" | "skipped" (did not run) | "waived" (failed, accepted)
    message: str
    nodeid: str
    scope: str | None = None  # the check's scope ("run", "file", "test", ...), when known
    findings: tuple[FindingFacts, ...] = ()
    reloads: tuple[ReloadFacts, ...] = ()  # what the item's reloads found
    waiver: WaiverFacts | None = None  # why a failure was accepted (outcome "waived")


@dataclass(frozen=True)
class RunRow:
    """One run of the campaign: planned, recorded, or both."""

    id: str
    role: str | None  # None: not in the plan
    category: str | None
    status: str  # the manifest's outcome, or "not recorded"
    passed: int  # items owned by this run that passed
    total: int  # items owned by this run that ran


@dataclass(frozen=True)
class StepRow:
    """One step, planned vs actual; start/end in hours from the start of preparation."""

    id: str
    kind: str | None  # None: observed but not in the plan
    resource: str | None
    planned_hours: float | None
    observed_hours: float | None
    planned_start: float | None = None
    planned_end: float | None = None
    actual_start: float | None = None
    actual_end: float | None = None
    explanation: str | None = None


@dataclass(frozen=True)
class CampaignReport:
    campaign: str
    root: str
    # "accepted" | "accepted with waivers" | "rejected" | "plausible (fast mode)" | "incomplete"
    verdict: str
    checks: tuple[CheckResult, ...]
    budget: dict[str, Any] | None
    schedule: dict[str, Any] | None
    collected: int
    fast: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    runs: tuple[RunRow, ...] = ()
    steps: tuple[StepRow, ...] = ()
    # A note, never a failure: no pin outside the campaign vouches for plan.json.
    plan_integrity: str | None = None
    # What makes the report stand on its own (see pytest_itera.provenance).
    question: str | None = None
    decision_rule: str | None = None
    conclusion: str | None = None
    meets_threshold: tuple[str, ...] = ()
    provenance: Mapping[str, Any] | None = None
    digests: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def reloads(self) -> tuple[ReloadFacts, ...]:
        """What each reload found, once per path, in path order."""
        found = {r.path: r for c in self.checks for r in c.reloads}
        return tuple(found[p] for p in sorted(found))

    @property
    def waivers(self) -> tuple[tuple[WaiverFacts, tuple[str, ...]], ...]:
        """Each waiver applied, with the node ids of the failures it waived."""
        uses: dict[WaiverFacts, list[str]] = {}
        for c in self.checks:
            if c.outcome == "waived" and c.waiver is not None:
                uses.setdefault(c.waiver, []).append(c.nodeid)
        return tuple((w, tuple(ids)) for w, ids in uses.items())

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.checks if c.outcome == outcome)

    @property
    def all_notes(self) -> tuple[str, ...]:
        """The verdict's notes, then the plan-integrity note (what every report shows)."""
        return (*self.notes, *((self.plan_integrity,) if self.plan_integrity else ()))

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def ok(self) -> bool:
        return self.verdict in (*ACCEPTING, "plausible (fast mode)")


def build(
    campaign: Campaign,
    results: Iterable[CheckResult],
    *,
    collected: int,
    fast: bool,
    partial: bool = False,
    switched_off: Sequence[str] = (),
    plan_pinned: bool | None = None,
    provenance: Mapping[str, Any] | None = None,
    digests: Mapping[str, str | None] | None = None,
) -> CampaignReport:
    """``partial``: the user named node ids or files inside the campaign, so only some ran.
    ``switched_off``: built-in check families blocked with ``-p no:itera.<family>``; their
    checks were never collected, so the verdict cannot be "accepted".
    ``plan_pinned``: False when no ``--itera-plan-sha256``/``itera_plan_sha256`` pin applied
    (the report then notes that plan integrity rests on the manifest's own record); None when
    unknown (a library call).
    ``provenance``: when, how and with which versions the report was made; ``digests``: the
    sha256 of plan.json and manifest.json (``pytest_itera.provenance``)."""
    checks = tuple(sorted(results, key=lambda r: r.nodeid))
    notes: tuple[str, ...] = (PARTIAL_NOTE,) if partial else ()
    if switched_off:
        notes += (f"check families switched off: {', '.join(switched_off)}",)
    return CampaignReport(
        campaign=campaign.id,
        root=str(campaign.root),
        verdict=verdict(checks, collected=collected, fast=fast,
                        partial=partial or bool(switched_off)),
        notes=notes,
        checks=checks,
        budget=budget_section(campaign),
        schedule=schedule_section(campaign),
        collected=collected,
        fast=fast,
        runs=run_rows(campaign, checks),
        steps=step_rows(campaign),
        plan_integrity=PLAN_INTEGRITY_NOTE if plan_pinned is False else None,
        **_objective(campaign),
        provenance=provenance,
        digests=dict(digests or {}),
    )


def _objective(campaign: Campaign) -> dict[str, Any]:
    """The question, the decision rule and the conclusion, as the documents state them."""
    plan, man = campaign.plan, campaign.manifest
    rule = None
    if plan is not None:
        d = plan.decision
        sign = ">=" if d.direction == "higher" else "<="
        rule = (f"a variant meets the objective when {d.metric} {sign} {d.threshold:g} "
                f"({d.direction} is better)" + (f"; decision point: {d.point}" if d.point else ""))
    return {
        "question": plan.question if plan is not None else None,
        "decision_rule": rule,
        "conclusion": man.conclusion.text if man is not None else None,
        "meets_threshold": tuple(man.conclusion.meets_threshold) if man is not None else (),
    }


def verdict(
    checks: Sequence[CheckResult], *, collected: int, fast: bool, partial: bool = False
) -> str:
    outcomes = {c.outcome for c in checks}
    if outcomes - {"passed", "skipped", "waived"}:
        return "rejected"
    if partial or not checks or len(checks) < collected or "skipped" in outcomes:
        return "incomplete"  # some checks deselected or not run: never "accepted"
    if fast:
        return "plausible (fast mode)"
    return "accepted with waivers" if "waived" in outcomes else "accepted"


_WORST_FIRST = ("rejected", "incomplete", "plausible (fast mode)", "accepted with waivers")


def overall_verdict(reports: Sequence[CampaignReport]) -> str:
    """Several campaigns: the worst of their verdicts."""
    for worst in _WORST_FIRST:
        if any(r.verdict == worst for r in reports):
            return worst
    return "accepted" if reports else "incomplete"


# ------------------------------------------------------------- runs table


def runs_of(manifest: Manifest | None, scope: str | None, target: str) -> set[str]:
    """The runs a check target belongs to (``Manifest.owners``), none without a manifest.

    From data alone, so the pytest-xdist controller (which has no Context)
    rebuilds it from the reports' (check, target, scope).
    """
    return set() if manifest is None else manifest.owners(scope, target)


def run_rows(campaign: Campaign, results: Iterable[CheckResult]) -> tuple[RunRow, ...]:
    """Planned runs in plan order, then recorded runs the plan does not have."""
    plan, manifest = campaign.plan, campaign.manifest
    ids = [r.id for r in plan.runs] if plan else []
    planned = set(ids)  # sets, not list scans: a sweep has thousands of runs and items
    ids += [r.id for r in manifest.runs if r.id not in planned] if manifest else []
    known = set(ids)
    passed = dict.fromkeys(ids, 0)
    total = dict.fromkeys(ids, 0)
    for result in results:
        if result.target is None or result.scope == "test":
            continue  # a campaign-level check, or a user's acceptance test: no run owns it
        for run in runs_of(manifest, result.scope, result.target) & known:
            total[run] += 1
            passed[run] += result.outcome == "passed"
    return tuple(_run_row(campaign, rid, passed[rid], total[rid]) for rid in ids)


def _run_row(campaign: Campaign, run_id: str, passed: int, total: int) -> RunRow:
    planned = campaign.plan.run(run_id) if campaign.plan else None
    recorded = campaign.manifest.run(run_id) if campaign.manifest else None
    return RunRow(
        id=run_id,
        role=planned.role if planned else None,
        category=planned.category if planned else None,
        status=recorded.outcome if recorded else "not recorded",
        passed=passed,
        total=total,
    )


# ----------------------------------------------------------------- budget


def budget_section(campaign: Campaign) -> dict[str, Any] | None:
    manifest = campaign.manifest
    if manifest is None:
        return None
    b = manifest.budget
    engaged, engaged_source = _engaged(b)
    return {
        "currency": b.currency,
        "lots": list(b.lots),
        "lot_details": _lot_details(campaign),
        "rental_total": b.rental_total,
        "engaged_total": engaged,
        "engaged_source": engaged_source,
        "included_expenses": [asdict(e) for e in b.included_expenses],
        "external_expenses": [asdict(e) for e in b.external_expenses],
        "unit": b.unit,
        "accepted_deliverables": b.accepted_deliverables,
        "cost_per_deliverable": b.cost_per_deliverable,
        "rejection_cause": b.rejection_cause,
    }


def _engaged(b: Any) -> tuple[str, str]:
    """Rental plus included expenses (never external ones, R7), or the stated rental."""
    if not b.included_expenses:
        return b.rental_total, "rental"
    try:
        total = money.Money(b.rental_total, b.currency) + money.expenses_total(
            b.included_expenses, b.currency
        )
    except (ValueError, TypeError, ArithmeticError):
        return b.rental_total, "rental (included expenses could not be added)"
    return str(total), "rental + included expenses"


def _lot_details(campaign: Campaign) -> list[dict[str, Any]]:
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None or manifest is None:
        return []
    engaged = set(manifest.budget.lots)
    return [
        {"id": lot.id, "offer": lot.offer, "gpu": lot.gpu, "gpus_per_lot": lot.gpus_per_lot,
         "days": lot.days, "price": lot.price, "quantity": lot.quantity}
        for lot in plan.budget.lots
        if lot.id in engaged
    ]


# --------------------------------------------------------------- schedule


_Timelines = tuple[sched.Timeline | None, sched.Timeline | None, str | None]


def _timelines(campaign: Campaign) -> _Timelines:
    """The planned and the actual timelines, or the reason they cannot be computed."""
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None:
        return None, None, "plan.json did not load"
    try:
        planned = sched.makespan(plan.schedule.steps)
        if manifest is None:
            return planned, None, None
        observed = sched.observed_hours(manifest.schedule.steps)
        return planned, sched.makespan(sched.as_observed(plan.schedule.steps, observed)), None
    except (sched.ScheduleError, ValueError, TypeError) as exc:
        return None, None, f"the plan's steps cannot be scheduled: {exc}"


def schedule_section(campaign: Campaign) -> dict[str, Any] | None:
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None and manifest is None:
        return None
    planned, actual, problem = _timelines(campaign)
    stated = plan.schedule.uncommitted_hours if plan else None
    computed = (
        _number(sched.uncommitted_hours(plan.schedule.window_hours, planned))
        if plan and planned
        else None
    )
    return {
        "window_hours": plan.schedule.window_hours if plan else None,
        "sequential_hours": plan.schedule.sequential_hours if plan else None,
        "planned_makespan_hours": _number(planned.makespan) if planned else None,
        "actual_makespan_hours": _number(actual.makespan) if actual else None,
        "uncommitted_hours": computed if computed is not None else stated,
        "uncommitted_source": "computed" if computed is not None else "stated",
        "stated_uncommitted_hours": stated,
        "schedule_problem": problem,
        "reserved_hours": manifest.schedule.reserved_hours if manifest else None,
        "observed_hours": manifest.schedule.observed_hours if manifest else None,
    }


def step_rows(campaign: Campaign) -> tuple[StepRow, ...]:
    plan, manifest = campaign.plan, campaign.manifest
    planned_tl, actual_tl, _ = _timelines(campaign)
    observed = sched.observed_hours(manifest.schedule.steps) if manifest else {}
    explained: dict[str, list[str]] = {}
    for dev in manifest.schedule.deviations if manifest else ():
        explained.setdefault(dev.step, []).append(dev.explanation)
    rows = []
    for step in plan.schedule.steps if plan else ():
        seen = observed.get(step.id)
        p = planned_tl.slot(step.id) if planned_tl else None
        a = actual_tl.slot(step.id) if actual_tl and seen is not None else None
        rows.append(StepRow(
            step.id, step.kind, step.resource, step.hours, _number(seen),
            _number(p.start) if p else None, _number(p.end) if p else None,
            _number(a.start) if a else None, _number(a.end) if a else None,
            "; ".join(explained.get(step.id, [])) or None,
        ))
    known = {r.id for r in rows}
    for step_id in sorted(set(observed) - known):
        rows.append(StepRow(step_id, None, None, None, _number(observed[step_id]),
                            explanation="; ".join(explained.get(step_id, [])) or None))
    return tuple(rows)


def _number(value: Decimal | None) -> float | None:
    """A Decimal for JSON: an int when whole, else a float (hours, not money)."""
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)


# ---------------------------------------------------------------- JSON


def to_json(reports: Sequence[CampaignReport]) -> dict[str, Any]:
    """One campaign: its report object; several: {"format", "verdict", "campaigns": [...]}."""
    objects = [_campaign_json(r) for r in reports]
    if len(objects) == 1:
        return objects[0]
    return {"format": REPORT_FORMAT, "verdict": overall_verdict(reports), "campaigns": objects}


def _campaign_json(report: CampaignReport) -> dict[str, Any]:
    return {
        "format": REPORT_FORMAT,
        "campaign": report.campaign,
        "root": report.root,
        "verdict": report.verdict,
        "fast": report.fast,
        "collected": report.collected,
        "notes": list(report.all_notes),
        "question": report.question,
        "decision_rule": report.decision_rule,
        "conclusion": None if report.conclusion is None else
        {"text": report.conclusion, "meets_threshold": list(report.meets_threshold)},
        "provenance": dict(report.provenance) if report.provenance is not None else None,
        "plan_sha256": report.digests.get("plan_sha256"),
        "manifest_sha256": report.digests.get("manifest_sha256"),
        "waivers": [{**plain(w), "nodeids": list(ids)} for w, ids in report.waivers],
        "checks": [_check_json(c) for c in report.checks],
        "reloads": [plain(r) for r in report.reloads],
        "runs": [asdict(r) for r in report.runs],
        "budget": report.budget,
        "schedule": report.schedule,
        "steps": [asdict(s) for s in report.steps],
    }


def _check_json(c: CheckResult) -> dict[str, Any]:
    return {"check": c.check, "target": c.target, "outcome": c.outcome, "message": c.message,
            "nodeid": c.nodeid, "scope": c.scope, "findings": [plain(f) for f in c.findings],
            "waiver": plain(c.waiver) if c.waiver is not None else None}


def render_json(reports: Sequence[CampaignReport]) -> str:
    return json.dumps(to_json(reports), indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, reports: Sequence[CampaignReport]) -> None:
    write_atomic(path, render_json(reports))


def write(path: Path, reports: Sequence[CampaignReport]) -> None:
    """Write the report in the format the path's extension names (.json, .md, .html)."""
    renderers = {".json": render_json, ".md": render_markdown, ".html": render_html}
    suffix = path.suffix.lower()
    if suffix not in renderers:
        raise ValueError(f"{path}: unknown report type; use a .json, .md or .html path")
    write_atomic(path, renderers[suffix](reports))


def write_atomic(path: Path, text: str) -> None:
    """Write beside the target, then rename: a reader never sees half a report."""
    atomic_write_bytes(path, text.encode("utf-8"))


# -------------------------------------------------------------- terminal

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def clean(text: object) -> str:
    """One printable line: control characters (ANSI escapes, newlines) shown escaped."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def clean_block(text: str) -> str:
    """Several printable lines: like :func:`clean`, keeping the line breaks."""
    return "\n".join(clean(line) for line in text.split("\n"))


def verdict_line(report: CampaignReport) -> str:
    total = len(report.checks)
    head = f"campaign {clean(report.campaign)}"
    waived = report.count("waived")
    if report.verdict == "rejected":
        also = f", {waived} waived" if waived else ""
        return f"{head}: REJECTED — {report.failed} of {total} checks failed{also}"
    if report.verdict == "incomplete":
        skipped = report.count("skipped")
        ran = total - skipped
        did_not = f" ({skipped} skipped)" if skipped else ""
        why = "".join(f"; {note}" for note in report.notes)
        if report.notes and total == report.collected:
            return f"{head}: INCOMPLETE — {ran} checks ran{did_not}{why}"
        return f"{head}: INCOMPLETE — {ran} of {report.collected} checks ran{did_not}{why}"
    if report.verdict == "accepted with waivers":
        return (f"{head}: ACCEPTED WITH WAIVERS — {total - waived}/{total} checks passed, "
                f"{waived} waived")
    label = "PLAUSIBLE (fast mode)" if report.fast else "ACCEPTED"
    return f"{head}: {label} — {total}/{total} checks"


def terminal_lines(report: CampaignReport) -> list[str]:
    lines = [verdict_line(report)]
    lines += ["  " + clean(row) for row in _table(_RUN_HEADER, _run_cells(report.runs))]
    lines += [f"  acceptance test {clean(c.nodeid)}: {c.outcome}" for c in acceptance(report)]
    for waiver, nodeids in report.waivers:
        lines += [f"  waived: {clean(n)} — {clean(waiver.text())}" for n in nodeids]
    if report.budget is not None:
        lines.append("  budget: " + clean(budget_text(report.budget)))
    if report.schedule is not None:
        lines.append("  schedule: " + clean(schedule_text(report.schedule)))
    if report.plan_integrity:
        lines.append("  note: " + clean(report.plan_integrity))
    return lines


_RUN_HEADER = ("run", "role", "category", "status", "checks passed")


def acceptance(report: CampaignReport) -> list[CheckResult]:
    """The user's tests that use the itera_campaign fixture (part of the verdict)."""
    return [c for c in report.checks if c.check == ACCEPTANCE]


def check_counts(report: CampaignReport) -> list[tuple[str, int, int, int, int]]:
    """(check id, passed, failed, waived, skipped) per check, in first-seen order."""
    counts: dict[str, list[int]] = {}
    order = ("passed", "failed", "waived", "skipped")
    for c in report.checks:
        row = counts.setdefault(c.check, [0, 0, 0, 0])
        if c.outcome in order:
            row[order.index(c.outcome)] += 1
    return [(check, row[0], row[1], row[2], row[3]) for check, row in counts.items()]


def _run_cells(runs: Sequence[RunRow]) -> list[tuple[str, ...]]:
    return [
        (r.id, r.role or "(unplanned)", r.category or "-", r.status, f"{r.passed}/{r.total}")
        for r in runs
    ]


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    if not rows:
        return []
    cleaned = [tuple(clean(c) for c in row) for row in (header, *rows)]  # once per cell
    widths = [max(len(c) for c in col) for col in zip(*cleaned, strict=True)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cleaned
    ]


def budget_text(b: dict[str, Any]) -> str:
    """"47.14 USD engaged (lots: rtx4090-3d); 1 accepted corpus; 47.14 USD per corpus"."""
    cur, unit, accepted = b["currency"], b["unit"], b["accepted_deliverables"]
    lots = ", ".join(_lot_text(b, lot) for lot in b["lots"]) or "none"
    engaged = f"{b['engaged_total']} {cur} engaged (lots: {lots})"
    if b["included_expenses"]:
        engaged += f", of which {b['rental_total']} {cur} rental"
    if b["external_expenses"]:
        external = ", ".join(f"{e['label']} {e['amount']} {cur}" for e in b["external_expenses"])
        engaged += f"; external, not in the rental: {external}"
    if b["cost_per_deliverable"] is not None and accepted:
        cost = f"{b['cost_per_deliverable']} {cur} per {unit}"
    else:
        cause = b["rejection_cause"] or "not stated"
        cost = f"cost per {unit} undefined: {accepted} accepted — cause {cause}"
    units = unit if accepted == 1 else _PLURALS.get(unit, f"{unit}s")
    return f"{engaged}; {accepted} accepted {units}; {cost}"


_PLURALS = {"corpus": "corpora", "decision": "decisions"}


def _lot_text(b: dict[str, Any], lot_id: str) -> str:
    detail = next((d for d in b.get("lot_details", []) if d["id"] == lot_id), None)
    if detail is None:
        return lot_id
    times = f"{detail['quantity']} x " if detail["quantity"] != 1 else ""
    return f"{times}{lot_id} ({detail['days']} d, {detail['price']} {b['currency']})"


def schedule_text(s: dict[str, Any]) -> str:
    """Window, reserved, observed, uncommitted hours, saying where 'uncommitted' comes from."""
    head = (
        f"window {_h(s['window_hours'])}, reserved {_h(s['reserved_hours'])}, "
        f"observed {_h(s['observed_hours'])}, uncommitted {_h(s['uncommitted_hours'])}"
    )
    return f"{head} ({uncommitted_source_text(s)})"


def uncommitted_source_text(s: dict[str, Any]) -> str:
    if s["uncommitted_source"] == "computed":
        text = (
            f"computed: {_h(s['window_hours'])} window - {_h(s['planned_makespan_hours'])} "
            "planned makespan"
        )
        stated = s["stated_uncommitted_hours"]
        if stated is not None and stated != s["uncommitted_hours"]:
            text += f"; the plan states {_h(stated)}"
        return text
    if s["stated_uncommitted_hours"] is None:
        return f"unknown: {s['schedule_problem'] or 'not stated'}"
    return f"as stated in plan.json, not computed: {s['schedule_problem']}"


def _h(hours: float | None) -> str:
    return "?" if hours is None else f"{hours:g} h"


# -------------------------------------------------------------- Markdown


def _md(text: object) -> str:
    """Campaign text inside Markdown: no raw HTML, no table breaks, one line."""
    escaped = html.escape(clean(text), quote=False)
    escaped = re.sub(r"([\\`*|\[\]])", r"\\\1", escaped)
    return re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", escaped)  # intraword _ is never emphasis


def _md_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def _fence(text: str) -> list[str]:
    """A code fence longer than any backtick run inside, so a message cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [f"{ticks}text", text, ticks]


def render_markdown(reports: Sequence[CampaignReport]) -> str:
    lines: list[str] = []
    if len(reports) > 1:
        lines += [f"# Closure report: {overall_verdict(reports)}", ""]
    for report in reports:
        lines += _markdown_campaign(report, level="##" if len(reports) > 1 else "#")
    return "\n".join(lines).rstrip() + "\n"


def _markdown_campaign(report: CampaignReport, *, level: str) -> list[str]:
    lines = [f"{level} Campaign {_md(report.campaign)}", ""]
    lines += [f"- **{label}:** {_md(value)}" for label, value in objective_rows(report)] + [""]
    lines += [f"**{_md(verdict_line(report))}**", ""]
    lines += [f"Folder: {_md(report.root)}", ""]
    if report.plan_integrity:
        lines += [f"Note: {_md(report.plan_integrity)}", ""]
    sub = level + "#"
    failures = [f"{sub} Failures", ""]
    failures += _markdown_failures(report) or ["None: every check that ran passed.", ""]
    if report.verdict == "rejected":
        lines += failures  # what to fix comes first
    for title, header, rows in _tables(report, "runs"):
        lines += [f"{sub} {title}", "", *_md_table(header, rows), ""]
    if report.budget is not None:
        lines += [f"{sub} Budget", "", _md(budget_text(report.budget)), ""]
    if report.schedule is not None:
        lines += [f"{sub} Schedule", "", _md(schedule_text(report.schedule)), ""]
    for title, header, rows in _tables(report, "steps"):
        lines += [f"{sub} {title}", "", *_md_table(header, rows), ""]
    if report.verdict != "rejected":
        lines += failures
    lines += [f"{sub} Provenance", "", *_md_table(("fact", "value"), provenance_rows(report)), ""]
    return lines


def objective_rows(report: CampaignReport) -> list[tuple[str, str]]:
    """The question, the decision rule and the conclusion: what the verdict is about."""
    meets = ", ".join(report.meets_threshold) or "no variant"
    conclusion = (f"{report.conclusion} (meets the threshold: {meets})"
                  if report.conclusion is not None else "not stated (manifest.json did not load)")
    return [("Question", report.question or "not stated (plan.json did not load)"),
            ("Decision rule", report.decision_rule or "not stated (plan.json did not load)"),
            ("Conclusion", conclusion)]


_Table = tuple[str, tuple[str, ...], list[tuple[str, ...]]]


def _tables(report: CampaignReport, part: str) -> list[_Table]:
    """The tables of the Markdown and HTML reports, with their titles; those with no rows left
    out. ``part``: "runs" (runs, acceptance tests, waivers), "steps" (planned vs actual,
    reloads, checks)."""
    if part == "runs":
        tables: list[_Table] = [
            ("Runs", _RUN_HEADER, _run_cells(report.runs)),
            ("Acceptance tests", ("test", "outcome"),
             [(c.nodeid, c.outcome) for c in acceptance(report)]),
            ("Waivers applied", ("item", "waiver"),
             [(n, w.text()) for w, ids in report.waivers for n in ids]),
        ]
    else:
        tables = [
            ("Planned vs actual", _STEP_HEADER, _step_cells(report)),
            ("Checkpoints as reloaded", _RELOAD_HEADER, _reload_cells(report)),
            ("Checks", ("check", "passed", "failed", "waived", "skipped"),
             [tuple(str(x) for x in row) for row in check_counts(report)]),
        ]
    return [t for t in tables if t[2]]


_RELOAD_HEADER = ("checkpoint", "format", "loaded", "parts", "tensors", "bytes",
                  "non-finite tensors (NaN, inf values)", "seconds")


def _reload_cells(report: CampaignReport) -> list[tuple[str, ...]]:
    return [
        (r.path, r.format or "-", "yes" if r.ok else f"no: {r.cause or 'no cause given'}",
         ", ".join(r.parts) or "-", str(r.tensors), str(r.bytes),
         f"{r.nonfinite_tensors} ({r.nan_values}, {r.inf_values})", f"{r.seconds:g}")
        for r in report.reloads
    ]


def provenance_rows(report: CampaignReport) -> list[tuple[str, str]]:
    """When, from which command and with which versions the report was made, over which
    documents."""
    p = report.provenance or {}
    rows = [("created (UTC)", str(p.get("created") or "unknown")),
            ("command", " ".join(map(str, p.get("command") or ())) or "unknown"),
            ("pytest process", _versions(p.get("pytest_process"))),
            ("reload interpreter", _interpreter(p.get("reload_interpreter")))]
    rows += [(f"{name} sha256", report.digests.get(f"{name}_sha256") or "unreadable")
             for name in ("plan", "manifest")]
    return rows


def _interpreter(facts: Any) -> str:
    if not isinstance(facts, Mapping):
        return "not used: nothing was reloaded"
    if not facts.get("probed"):
        return f"{facts.get('executable')}: its versions could not be read"
    return _versions(facts)


def _versions(facts: Any) -> str:
    if not isinstance(facts, Mapping):
        return "unknown"
    names = (("plugin", "pytest-itera"), ("pytest", "pytest"), ("python", "Python"),
             ("torch", "torch"), ("numpy", "numpy"), ("safetensors", "safetensors"))
    shown = [f"{label} {facts.get(key) or 'absent'}" for key, label in names if key in facts]
    return f"{', '.join(shown)} ({facts.get('executable')})"


_STEP_HEADER = ("step", "kind", "resource", "planned h", "observed h", "change", "explanation")


def _step_cells(report: CampaignReport) -> list[tuple[str, ...]]:
    return [
        (s.id, s.kind or "(unplanned)", s.resource or "-", _n(s.planned_hours),
         _n(s.observed_hours), _change(s), s.explanation or "")
        for s in report.steps
    ]


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _change(step: StepRow) -> str:
    if step.planned_hours is None or step.observed_hours is None:
        return "not observed" if step.observed_hours is None else "unplanned"
    delta = step.observed_hours - step.planned_hours
    return f"{delta:+g} h" if delta else "="


def _markdown_failures(report: CampaignReport) -> list[str]:
    lines: list[str] = []
    for c in report.checks:
        if c.outcome == "passed":
            continue
        head = f"- **{_md(c.outcome)}** {_md(c.nodeid)}"
        if c.waiver is not None:
            head += f" — {_md(c.waiver.text())}"
        lines += [head, "", *_fence(clean_block(c.message)), ""]
    return lines


# ------------------------------------------------------------------ HTML

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222;padding:0 1em}
h1,h2,h3{line-height:1.2}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
.verdict{font-size:1.3em;font-weight:bold;padding:.4em .8em;border-radius:4px}
.ok{background:#e3f6e3;color:#14501b}.bad{background:#fde4e1;color:#7a1a10}
.panel{border:1px solid #ccc;border-radius:4px;padding:.6em 1em;margin:1em 0}
pre{background:#f6f6f6;padding:.6em;overflow:auto;white-space:pre-wrap}
svg text{font:11px system-ui,sans-serif}
.planned{fill:#8fb3de}.actual{fill:#e6a157}.zero{fill:#b33}
.uncommitted{fill:#e9f3e9}.window{stroke:#b00;stroke-width:2}
svg text.label{font-size:9px;fill:#111}
dl.objective{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}
dl.objective dt{font-weight:bold}dl.objective dd{margin:0}
""".strip()


def _e(text: object) -> str:
    """Escape campaign text for HTML; '://' spelt with entities so no URL appears in the file."""
    return html.escape(clean(text), quote=True).replace("://", ":&#47;&#47;")


def render_html(reports: Sequence[CampaignReport]) -> str:
    title = "Closure report" if len(reports) != 1 else f"Closure report: {reports[0].campaign}"
    body = [part for report in reports for part in _html_campaign(report)]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
    ]) + "\n"


def _html_campaign(report: CampaignReport) -> Iterator[str]:
    css = "ok" if report.ok else "bad"
    yield f"<section><h1>Campaign {_e(report.campaign)}</h1>"
    yield '<dl class="objective">' + "".join(
        f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in objective_rows(report)
    ) + "</dl>"
    yield f'<p class="verdict {css}">{_e(verdict_line(report))}</p>'
    yield f"<p>Folder: <code>{_e(report.root)}</code></p>"
    if report.plan_integrity:
        yield f'<p class="note">Note: {_e(report.plan_integrity)}</p>'
    if report.verdict == "rejected":
        yield from _html_failures(report)  # what to fix comes first
    for title, header, rows in _tables(report, "runs"):
        yield f"<h2>{_e(title)}</h2>"
        yield _html_table(header, rows)
    if report.budget is not None:
        yield from _html_budget(report.budget)
    if report.schedule is not None:
        yield "<h2>Schedule</h2>"
        yield f"<p>{_e(schedule_text(report.schedule))}</p>"
        yield timeline_svg(report)
    for title, header, rows in _tables(report, "steps"):
        yield f"<h2>{_e(title)}</h2>"
        yield _html_table(header, rows)
    if report.verdict != "rejected":
        yield from _html_failures(report)
    yield "<h2>Provenance</h2>"
    yield _html_table(("fact", "value"), provenance_rows(report))
    yield "</section>"


def _html_failures(report: CampaignReport) -> Iterator[str]:
    yield "<h2>Failures</h2>"
    failures = [c for c in report.checks if c.outcome != "passed"]
    if not failures:
        yield "<p>None: every check that ran passed.</p>"
    for c in failures:
        yield f"<h3>{_e(c.outcome)}: <code>{_e(c.nodeid)}</code></h3>"
        if c.waiver is not None:
            yield f'<p class="waiver">{_e(c.waiver.text())}</p>'
        message = html.escape(clean_block(c.message)).replace("://", ":&#47;&#47;")
        yield f"<pre>{message}</pre>"


def _html_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_budget(b: dict[str, Any]) -> Iterator[str]:
    cur = b["currency"]
    yield '<div class="panel budget"><h2>Budget</h2>'
    yield f"<p>{_e(budget_text(b))}</p>"
    if b["lot_details"]:
        yield _html_table(
            ("lot", "offer", "GPU", "GPUs per lot", "days", "price", "quantity"),
            [(d["id"], d["offer"], d["gpu"], d["gpus_per_lot"], d["days"], f"{d['price']} {cur}",
              d["quantity"]) for d in b["lot_details"]],
        )
    rows = [("rental total", f"{b['rental_total']} {cur}")]
    rows += [(f"included: {e['label']}", f"{e['amount']} {cur}") for e in b["included_expenses"]]
    rows.append(("engaged total", f"{b['engaged_total']} {cur}"))
    rows += [(f"external (kept apart): {e['label']}", f"{e['amount']} {cur}")
             for e in b["external_expenses"]]
    rows.append((f"accepted deliverables ({b['unit']})", str(b["accepted_deliverables"])))
    cost = b["cost_per_deliverable"]
    rows.append((f"cost per {b['unit']}", f"{cost} {cur}" if cost is not None else
                 f"undefined — cause: {b['rejection_cause'] or 'not stated'}"))
    yield _html_table(("item", "amount"), rows)
    yield "</div>"


# --------------------------------------------------------------- SVG

_LABEL_W, _PLOT_W, _ROW_H, _BAR_H, _TOP = 150, 760, 34, 12, 44


def timeline_svg(report: CampaignReport) -> str:
    """Planned (upper) and actual (lower) bars per resource, the window edge, uncommitted time."""
    s = report.schedule or {}
    bars = [st for st in report.steps if st.resource is not None]
    resources = list(dict.fromkeys(st.resource for st in bars if st.resource))
    if not resources:
        return f"<p>No timeline: {_e(s.get('schedule_problem') or 'no planned steps')}.</p>"
    window = float(s.get("window_hours") or 0)
    span = max([window, *(float(x) for st in bars for x in (st.planned_end, st.actual_end) if x)])
    scale = _PLOT_W / (span or 1)
    height = _TOP + _ROW_H * len(resources) + 44
    width = _LABEL_W + _PLOT_W + 20
    out = [f'<svg class="timeline" role="img" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           "<title>Planned (upper bar) and actual (lower bar) steps per resource</title>"]
    out += _svg_window(s, scale, height)
    for i, res in enumerate(resources):
        y = _TOP + i * _ROW_H
        out.append(f'<text x="4" y="{y + _BAR_H + 4}">{_e(res)}</text>')
        for st in (b for b in bars if b.resource == res):
            out += _svg_bars(st, y, scale)
    out += _svg_axis(span, scale, height - 20)
    out += _svg_legend(height)
    out.append("</svg>")
    return "\n".join(out)


def _x(hours: float, scale: float) -> str:
    return f"{_LABEL_W + hours * scale:.2f}"


def _svg_window(s: dict[str, Any], scale: float, height: int) -> list[str]:
    """The uncommitted stretch (planned makespan to window) shaded, the window edge a red line."""
    out = []
    makespan, window = s.get("planned_makespan_hours"), s.get("window_hours")
    bottom = height - 40
    if makespan is not None and window is not None and window > makespan:
        x, w = _x(makespan, scale), (window - makespan) * scale
        label = f"uncommitted {_h(s.get('uncommitted_hours'))}"
        out.append(f'<rect class="uncommitted" x="{x}" y="{_TOP - 4}" width="{w:.2f}" '
                   f'height="{bottom - _TOP + 4}"><title>{_e(label)}</title></rect>')
        out.append(f'<text x="{x}" y="{_TOP - 8}">{_e(label)}</text>')
    if window is not None:
        x = _x(window, scale)
        out.append(f'<line class="window" x1="{x}" y1="{_TOP - 36}" x2="{x}" y2="{bottom}"/>')
        out.append(f'<text x="{x}" y="{_TOP - 26}" text-anchor="end">'
                   f"window edge {_e(_h(window))}</text>")
    return out


def _svg_legend(height: int) -> list[str]:
    y = height - 12
    return [
        f'<rect class="planned" x="{_LABEL_W}" y="{y - 9}" width="14" height="10"/>',
        f'<text x="{_LABEL_W + 18}" y="{y}">planned</text>',
        f'<rect class="actual" x="{_LABEL_W + 80}" y="{y - 9}" width="14" height="10"/>',
        f'<text x="{_LABEL_W + 98}" y="{y}">actual (observed hours, same dependency rules)</text>',
    ]


def _svg_bars(st: StepRow, y: int, scale: float) -> list[str]:
    out = []
    for kind, start, end, dy in (("planned", st.planned_start, st.planned_end, 0),
                                 ("actual", st.actual_start, st.actual_end, _BAR_H + 2)):
        if start is None or end is None:
            continue
        hours = end - start
        css = kind if hours > 0 else f"{kind} zero"
        width = max(hours * scale, 1.5)  # a step that took 0 h stays visible
        out.append(
            f'<rect class="bar {css}" data-step="{_e(st.id)}" x="{_x(start, scale)}" '
            f'y="{y + dy}" width="{width:.2f}" height="{_BAR_H}">'
            f"<title>{_e(kind)} {_e(st.id)}: {_e(_n(start))} to {_e(_n(end))} h "
            f"({_e(_h(hours))})</title></rect>"
        )
        # Visible without hovering: the step and its hours, from the bar's start.
        out.append(f'<text class="label" x="{_x(start, scale)}" dx="2" y="{y + dy + _BAR_H - 3}">'
                   f"{_e(st.id)} {_e(_h(hours))}</text>")
    return out


def _svg_axis(span: float, scale: float, height: int) -> list[str]:
    # At most 13 ticks whatever the hours (a hostile plan may state 1e12 h).
    nice = (1, 2, 4, 6, 12, 24, 48, 96, 168, 336, 720)
    step = next((t for t in nice if span / t <= 12), math.ceil(span / 12))
    return [
        f'<text x="{_x(t, scale)}" y="{height - 6}" text-anchor="middle">{t} h</text>'
        for t in range(0, math.floor(span) + 1, step)
    ]
