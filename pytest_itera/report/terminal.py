"""The report as terminal lines, and the plain-text sentences every rendering shares.

Campaign text is hostile: each line loses its control characters (:func:`clean`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_itera.checks.closure import ACCEPTANCE
from pytest_itera.checks.common.measured import level_text
from pytest_itera.core.text import clean
from pytest_itera.report.model import CampaignReport, CheckResult, RunRow


def verdict_line(report: CampaignReport) -> str:
    """The verdict in one line; a selection or mode that the command line did not give is
    said on it (``report.steered``)."""
    line = _verdict_line(report)
    return f"{line} ({clean(report.steered)})" if report.steered else line


def _verdict_line(report: CampaignReport) -> str:
    total = len(report.checks)
    head = f"campaign {clean(report.campaign)}"
    waived = report.count("waived")
    if report.verdict == "rejected":
        also = f", {waived} waived" if waived else ""
        skipped = report.count("skipped")  # not judged: they depend on a failed check
        also += f", {skipped} not judged" if skipped else ""
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
    if report.verdict == "rehearsed":
        return (f"{head}: REHEARSED — {total}/{total} checks (a rehearsal: its observed hours "
                "are not judged against the plan; a rehearsal is never ACCEPTED)")
    if report.verdict == "played clock":
        return (f"{head}: PLAYED CLOCK — {total}/{total} checks passed on a played clock: the "
                "observed hours were not measured; a campaign on a played clock is never "
                "ACCEPTED")
    label = "PLAUSIBLE (fast mode)" if report.fast else "ACCEPTED"
    return f"{head}: {label} — {total}/{total} checks"


def terminal_lines(report: CampaignReport) -> list[str]:
    lines = [verdict_line(report)]
    if report.advisories_note:
        lines.append("  " + clean(report.advisories_note))
    if report.reopened_text:
        lines.append("  " + clean(report.reopened_text))
    if report.played_clock_text:
        lines.append("  " + clean(report.played_clock_text))
    lines += ["  " + clean(row) for row in _table(RUN_HEADER, run_cells(report.runs))]
    lines += [f"  acceptance test {clean(c.nodeid)}: {c.outcome}" for c in acceptance(report)]
    for waiver, nodeids in report.waivers:
        lines += [f"  waived: {clean(n)} — {clean(waiver.text())}" for n in nodeids]
    if report.budget is not None:
        lines.append("  budget: " + clean(budget_text(report.budget)))
    if report.schedule is not None:
        lines.append("  schedule: " + clean(schedule_text(report.schedule)))
    lines += ["  " + clean(line) for line in interval_lines(report)]
    if report.plan_integrity:
        lines.append("  note: " + clean(report.plan_integrity))
    lines += ["  note: " + clean(note) for note in report.file_notes]
    if report.settings_note:
        lines.append("  " + clean(report.settings_note))
    return lines


RUN_HEADER = ("run", "role", "category", "status", "checks passed")


def interval_lines(report: CampaignReport) -> list[str]:
    """Each variant's gain with its interval, under the runs, budget and schedule (the
    summary's table and its lines stay as they were): "variant-a: accuracy gain
    +0.055, 95 % interval [...] (paired bootstrap, ...): not decisive at 95 %". Why a variant
    has none is said when the plan requires the interval (decision.confidence); else a
    campaign too small for one shows nothing more than before."""
    ev = report.evidence
    metric = ev.decision.metric if ev.decision is not None else "decision metric"
    meets = {r.run: r.meets for r in ev.results}
    out = []
    for interval in ev.intervals:
        if interval.gain is None and ev.confidence is None:
            continue
        line = f"{interval.run}: {metric} {interval.text}"
        if interval.inside_noise(meets.get(interval.run)):
            line += f": not decisive at {level_text(interval.level)}"
        out.append(line)
    return out


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


def run_cells(runs: Sequence[RunRow]) -> list[tuple[str, ...]]:
    return [
        (r.id, r.role or "(unplanned)", r.category or "-", r.shown_status,
         f"{r.passed}/{r.total}")
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
        f"window {hours_text(s['window_hours'])}, reserved {hours_text(s['reserved_hours'])}, "
        f"observed {hours_text(s['observed_hours'])}, "
        f"uncommitted {hours_text(s['uncommitted_hours'])}"
    )
    return f"{head} ({uncommitted_source_text(s)})"


def uncommitted_source_text(s: dict[str, Any]) -> str:
    if s["uncommitted_source"] == "computed":
        text = (
            f"computed: {hours_text(s['window_hours'])} window - "
            f"{hours_text(s['planned_makespan_hours'])} planned makespan"
        )
        stated = s["stated_uncommitted_hours"]
        if stated is not None and stated != s["uncommitted_hours"]:
            text += f"; the plan states {hours_text(stated)}"
        return text
    if s["stated_uncommitted_hours"] is None:
        return f"unknown: {s['schedule_problem'] or 'not stated'}"
    return f"as stated in plan.json, not computed: {s['schedule_problem']}"


def hours_text(hours: float | None) -> str:
    return "?" if hours is None else f"{hours:g} h"
