"""The report as Markdown: campaign text escaped (no raw HTML, no table breaks). Its charts are
SVG files written next to it (:func:`markdown_charts`), linked as images."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from pytest_itera.core.text import clean, clean_block
from pytest_itera.files.outputs import MARKDOWN_MARK
from pytest_itera.report.charts import report_charts, resume_text
from pytest_itera.report.model import CampaignReport, PlanReport, overall_verdict
from pytest_itera.report.tables import (
    deliverables_text,
    deviation_rows,
    interruption_lines,
    objective_rows,
    provenance_rows,
    report_tables,
    results_table,
    shown_root,
)
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


def chart_file(reports: Sequence[CampaignReport], index: int, name: str) -> str:
    """The file name of a campaign's chart (prefixed by its position when several)."""
    return f"{name}.svg" if len(reports) == 1 else f"{index + 1}-{name}.svg"


def markdown_charts(reports: Sequence[CampaignReport]) -> dict[str, str]:
    """File name -> standalone SVG, for the folder the Markdown report links to."""
    return {chart_file(reports, i, c.name): c.svg for i, report in enumerate(reports)
            for c in report_charts(report, standalone=True)}


def render_markdown(reports: Sequence[CampaignReport], plans: Sequence[PlanReport] = (),
                    charts: str | None = None) -> str:
    """``charts``: the folder (relative to the report) holding :func:`markdown_charts`'s files,
    linked as images; None: no chart links."""
    lines: list[str] = [MARKDOWN_MARK]  # recognised if written inside a campaign (files.outputs)
    if len(reports) > 1:
        lines += [f"# Closure report: {overall_verdict(reports)}", ""]
    for i, report in enumerate(reports):
        links = {c.name: (c.caption, f"{charts}/{chart_file(reports, i, c.name)}")
                 for c in report_charts(report)} if charts is not None else {}
        lines += _markdown_campaign(report, level="##" if len(reports) > 1 else "#",
                                    links=links)
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


def _image(links: dict[str, tuple[str, str]], name: str) -> list[str]:
    if name not in links:
        return []
    caption, path = links[name]
    return [f"![{_md(caption)}]({quote(path)})", ""]


def _markdown_campaign(report: CampaignReport, *, level: str,
                       links: dict[str, tuple[str, str]]) -> list[str]:
    """The campaign's part; its absolute folder, wherever a text names it (a finding's
    message), spelt as the report shows the folder (:func:`.tables.shown_root`)."""
    root, shown = report.root, shown_root(report.root)
    lines = _markdown_campaign_lines(report, level=level, links=links)
    if not root or shown == root:
        return lines
    spelt = {root: shown, _md(root): _md(shown), html.escape(root): html.escape(shown)}
    out = []
    for line in lines:
        for absolute, name in spelt.items():
            line = line.replace(absolute, name)
        out.append(line)
    return out


def _markdown_campaign_lines(report: CampaignReport, *, level: str,
                             links: dict[str, tuple[str, str]]) -> list[str]:
    sub = level + "#"
    lines = [f"{level} Campaign {_md(report.campaign)}", ""]
    lines += [f"- **{label}:** {_md(value)}" for label, value in objective_rows(report)] + [""]
    lines += [f"**{_md(verdict_line(report))}**", ""]
    interruptions = interruption_lines(report)  # right under the verdict: what broke the run
    if interruptions:
        lines += [f"- {_md(line)}" for line in interruptions] + [""]
    if report.advisories_note:
        lines += [f"Advisories: {_md(report.advisories_note)}", ""]
    table = results_table(report)
    if table is not None:
        lines += [f"{sub} {table[0]}", "", *_md_table(table[1], table[2]), ""]
        lines += _image(links, "results")
    lines += [f"Folder: {_md(shown_root(report.root))}", ""]
    if report.played_clock_text:
        lines += [f"Clock: {_md(report.played_clock_text)}", ""]
    if report.plan_integrity:
        lines += [f"Note: {_md(report.plan_integrity)}", ""]
    lines += [line for note in report.file_notes for line in (f"Note: {_md(note)}", "")]
    if report.settings_note:
        lines += [f"Note: {_md(report.settings_note)}", ""]
    failures = [f"{sub} Failures", ""]
    failures += _markdown_failures(report) or ["None: every check that ran passed.", ""]
    if report.verdict == "rejected":
        lines += failures  # what to fix comes first
    lines += _markdown_tables(report, "runs", sub)
    lines += _markdown_curves(report, sub, links)
    if report.budget is not None:
        lines += [f"{sub} Budget", "", _md(budget_text(report.budget)), ""]
        delivered = deliverables_text(report)
        if delivered:
            lines += [f"Deliverables: {_md(delivered)}", ""]
    if report.schedule is not None:
        lines += [f"{sub} Schedule", "", _md(schedule_text(report.schedule)), ""]
        lines += _image(links, "timeline")
        deviations = deviation_rows(report)
        if deviations:
            lines += [f"{sub}# Deviations above tolerance", "", *_md_table(
                ("step", "planned h", "observed h", "explanation"), deviations), ""]
    lines += _markdown_tables(report, "steps", sub)
    if report.verdict != "rejected":
        lines += failures
    lines += [f"{sub} Provenance", "", *_md_table(("fact", "value"), provenance_rows(report)), ""]
    return lines


def _markdown_tables(report: CampaignReport, part: str, sub: str) -> list[str]:
    """Each table of ``part`` under its title, its note (said once for all its rows) above."""
    lines: list[str] = []
    for title, header, rows, note in report_tables(report, part):
        lines += [f"{sub} {title}", ""]
        lines += [f"Note: {_md(note)}", ""] if note else []
        lines += [*_md_table(header, rows), ""]
    return lines


def _markdown_curves(report: CampaignReport, sub: str,
                     links: dict[str, tuple[str, str]]) -> list[str]:
    """The resume check's comparison, then the curves (linked charts)."""
    lines: list[str] = []
    if report.evidence.resume:
        lines += [f"{sub} Resume check", ""]
        for r in report.evidence.resume:
            lines += [_md(resume_text(r)), ""]
        lines += [line for name in links if name.startswith("resume-")
                  for line in _image(links, name)]
    curves = [name for name in links if name.startswith("curve-")]
    if curves:
        lines += [f"{sub} Curves", ""] + [line for name in curves for line in _image(links, name)]
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
