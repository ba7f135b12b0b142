"""The closure report: a plain model of check results, rendered as text, JSON, Markdown, HTML.

No pytest import: the session plugin feeds it results taken from test reports,
so it is built the same way with or without pytest-xdist. Everything that
comes from the campaign is hostile input: terminal text loses its control
characters, Markdown and HTML are escaped.

The model is :mod:`.model`; each rendering has its module (:mod:`.terminal`,
:mod:`.jsondoc`, :mod:`.markdown`, :mod:`.htmldoc`); the names below are the ones the
rest of the package uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_itera.core.atomic import atomic_write_bytes
from pytest_itera.core.text import clean, clean_block
from pytest_itera.report.charts import timeline_svg
from pytest_itera.report.htmldoc import render_html
from pytest_itera.report.jsondoc import render_json, to_json
from pytest_itera.report.markdown import markdown_charts, render_markdown
from pytest_itera.report.model import (
    ACCEPTING,
    PARTIAL_NOTE,
    PLAN_INTEGRITY_NOTE,
    PLAYED,
    REHEARSED,
    REPORT_FORMAT,
    CampaignReport,
    CheckResult,
    PlanReport,
    RunRow,
    SettingFacts,
    StepRow,
    budget_section,
    build,
    overall_verdict,
    run_rows,
    runs_of,
    schedule_section,
    step_rows,
    verdict,
)
from pytest_itera.report.tables import objective_rows, provenance_rows
from pytest_itera.report.terminal import (
    acceptance,
    budget_text,
    check_counts,
    schedule_text,
    terminal_lines,
    uncommitted_source_text,
    verdict_line,
)

__all__ = [
    "ACCEPTING", "PARTIAL_NOTE", "PLAN_INTEGRITY_NOTE", "PLAYED", "REHEARSED", "RENDERERS",
    "REPORT_FORMAT", "SUFFIXES", "CampaignReport", "CheckResult", "PlanReport", "RunRow",
    "SettingFacts", "StepRow",
    "acceptance", "budget_section", "budget_text", "build", "check_counts", "clean",
    "clean_block", "markdown_charts", "objective_rows", "overall_verdict", "provenance_rows",
    "render_html", "render_json", "render_markdown", "run_rows", "runs_of", "schedule_section",
    "schedule_text", "step_rows", "terminal_lines", "timeline_svg", "to_json",
    "uncommitted_source_text", "verdict", "verdict_line", "write", "write_atomic", "write_json",
]

# The report files --itera-report writes, by suffix: the one home of the suffixes
# (pytest_itera.plugin.options checks a path against SUFFIXES).
RENDERERS: dict[str, Callable[[Sequence[CampaignReport], Sequence[PlanReport]], str]] = {
    ".json": render_json, ".md": render_markdown, ".html": render_html,
}
SUFFIXES = tuple(RENDERERS)


def write(
    path: Path, reports: Sequence[CampaignReport], plans: Sequence[PlanReport] = ()
) -> None:
    """Write the report in the format the path's extension names (.json, .md, .html); a
    Markdown report's charts go to the folder ``<name>.charts`` beside it, written first."""
    renderer = RENDERERS.get(path.suffix.lower())
    if renderer is None:
        raise ValueError(f"{path}: unknown report type; use a .json, .md or .html path")
    if path.suffix.lower() == ".md":
        folder = f"{path.stem}.charts"
        charts = markdown_charts(reports)
        if charts:
            (path.parent / folder).mkdir(parents=True, exist_ok=True)
        for name, svg in charts.items():
            write_atomic(path.parent / folder / name, svg)
        write_atomic(path, render_markdown(reports, plans, charts=folder if charts else None))
        return
    write_atomic(path, renderer(reports, plans))


def write_json(path: Path, reports: Sequence[CampaignReport]) -> None:
    write_atomic(path, render_json(reports))


def write_atomic(path: Path, text: str) -> None:
    """Write beside the target, then rename: a reader never sees half a report."""
    atomic_write_bytes(path, text.encode("utf-8"))
