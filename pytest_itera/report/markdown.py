"""The report as Markdown: campaign text escaped (no raw HTML, no table breaks)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from pytest_itera.core.text import clean, clean_block
from pytest_itera.files.outputs import MARKDOWN_MARK
from pytest_itera.report.model import CampaignReport, PlanReport, overall_verdict
from pytest_itera.report.tables import objective_rows, provenance_rows, report_tables
from pytest_itera.report.terminal import (
    budget_text,
    schedule_text,
    verdict_line,
)


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


def render_markdown(reports: Sequence[CampaignReport], plans: Sequence[PlanReport] = ()) -> str:
    lines: list[str] = [MARKDOWN_MARK]  # recognised if written inside a campaign (files.outputs)
    if len(reports) > 1:
        lines += [f"# Closure report: {overall_verdict(reports)}", ""]
    for report in reports:
        lines += _markdown_campaign(report, level="##" if len(reports) > 1 else "#")
    for plan in plans:
        lines += _markdown_plan(plan)
    return "\n".join(lines).rstrip() + "\n"


def _markdown_plan(plan: PlanReport) -> list[str]:
    """A plan before renting: its verdict, what fails, then the schedule and the lots."""
    lines = [f"# Plan {_md(plan.plan)}: {plan.verdict.upper()}", ""]
    if plan.campaign is not None:
        lines += [f"Campaign: {_md(plan.campaign)}", ""]
    failed = [c for c in plan.checks if c.outcome == "failed"]
    for c in failed:
        lines += [f"- **{_md(c.nodeid)}**", "", *_fence(clean_block(c.message)), ""]
    lines += ["Planned schedule, window and lots:", "",
              *_fence("\n".join(clean(line) for line in plan.summary)), ""]
    return lines


def _markdown_campaign(report: CampaignReport, *, level: str) -> list[str]:
    lines = [f"{level} Campaign {_md(report.campaign)}", ""]
    lines += [f"- **{label}:** {_md(value)}" for label, value in objective_rows(report)] + [""]
    lines += [f"**{_md(verdict_line(report))}**", ""]
    lines += [f"Folder: {_md(report.root)}", ""]
    if report.reopened_text:
        lines += [f"Reopened: {_md(report.reopened_text)}", ""]
    if report.plan_integrity:
        lines += [f"Note: {_md(report.plan_integrity)}", ""]
    lines += [line for note in report.left_out for line in (f"Note: {_md(note)}", "")]
    sub = level + "#"
    failures = [f"{sub} Failures", ""]
    failures += _markdown_failures(report) or ["None: every check that ran passed.", ""]
    if report.verdict == "rejected":
        lines += failures  # what to fix comes first
    for title, header, rows in report_tables(report, "runs"):
        lines += [f"{sub} {title}", "", *_md_table(header, rows), ""]
    if report.budget is not None:
        lines += [f"{sub} Budget", "", _md(budget_text(report.budget)), ""]
    if report.schedule is not None:
        lines += [f"{sub} Schedule", "", _md(schedule_text(report.schedule)), ""]
    for title, header, rows in report_tables(report, "steps"):
        lines += [f"{sub} {title}", "", *_md_table(header, rows), ""]
    if report.verdict != "rejected":
        lines += failures
    lines += [f"{sub} Provenance", "", *_md_table(("fact", "value"), provenance_rows(report)), ""]
    return lines


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
