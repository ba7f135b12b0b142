"""The report as one self-contained HTML page with a timeline (SVG); campaign text escaped."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pytest_itera.core.text import clean, clean_block
from pytest_itera.files.outputs import HTML_MARK
from pytest_itera.report.model import CampaignReport, PlanReport, StepRow
from pytest_itera.report.tables import number_text, objective_rows, provenance_rows, report_tables
from pytest_itera.report.terminal import (
    budget_text,
    hours_text,
    schedule_text,
    verdict_line,
)

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


def render_html(reports: Sequence[CampaignReport], plans: Sequence[PlanReport] = ()) -> str:
    title = "Closure report" if len(reports) != 1 else f"Closure report: {reports[0].campaign}"
    body = [part for report in reports for part in _html_campaign(report)]
    body += [part for plan in plans for part in _html_plan(plan)]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        HTML_MARK,  # recognised if written inside a campaign (files.outputs)
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
    ]) + "\n"


def _html_plan(plan: PlanReport) -> Iterator[str]:
    """A plan before renting: its verdict, what fails, then the schedule and the lots."""
    css = "ok" if plan.verdict == "ready" else "bad"
    yield f"<section><h1>Plan {_e(plan.plan)}</h1>"
    yield f'<p class="verdict {css}">{_e(plan.verdict.upper())}</p>'
    for c in plan.checks:
        if c.outcome == "failed":
            yield f"<h2>{_e(c.nodeid)}</h2><pre>{_e(clean_block(c.message))}</pre>"
    yield "<h2>Planned schedule, window and lots</h2>"
    yield "<pre>" + _e("\n".join(clean(line) for line in plan.summary)) + "</pre></section>"


def _html_campaign(report: CampaignReport) -> Iterator[str]:
    css = "ok" if report.ok else "bad"
    yield f"<section><h1>Campaign {_e(report.campaign)}</h1>"
    yield '<dl class="objective">' + "".join(
        f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in objective_rows(report)
    ) + "</dl>"
    yield f'<p class="verdict {css}">{_e(verdict_line(report))}</p>'
    yield f"<p>Folder: <code>{_e(report.root)}</code></p>"
    if report.reopened_text:
        yield f'<p class="note">{_e(report.reopened_text)}</p>'
    if report.plan_integrity:
        yield f'<p class="note">Note: {_e(report.plan_integrity)}</p>'
    for note in report.left_out:
        yield f'<p class="note">Note: {_e(note)}</p>'
    if report.verdict == "rejected":
        yield from _html_failures(report)  # what to fix comes first
    for title, header, rows in report_tables(report, "runs"):
        yield f"<h2>{_e(title)}</h2>"
        yield _html_table(header, rows)
    if report.budget is not None:
        yield from _html_budget(report.budget)
    if report.schedule is not None:
        yield "<h2>Schedule</h2>"
        yield f"<p>{_e(schedule_text(report.schedule))}</p>"
        yield timeline_svg(report)
    for title, header, rows in report_tables(report, "steps"):
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
        label = f"uncommitted {hours_text(s.get('uncommitted_hours'))}"
        out.append(f'<rect class="uncommitted" x="{x}" y="{_TOP - 4}" width="{w:.2f}" '
                   f'height="{bottom - _TOP + 4}"><title>{_e(label)}</title></rect>')
        out.append(f'<text x="{x}" y="{_TOP - 8}">{_e(label)}</text>')
    if window is not None:
        x = _x(window, scale)
        out.append(f'<line class="window" x1="{x}" y1="{_TOP - 36}" x2="{x}" y2="{bottom}"/>')
        out.append(f'<text x="{x}" y="{_TOP - 26}" text-anchor="end">'
                   f"window edge {_e(hours_text(window))}</text>")
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
            f"<title>{_e(kind)} {_e(st.id)}: {_e(number_text(start))} to {_e(number_text(end))} h "
            f"({_e(hours_text(hours))})</title></rect>"
        )
        # Visible without hovering: the step and its hours, from the bar's start.
        out.append(f'<text class="label" x="{_x(start, scale)}" dx="2" y="{y + dy + _BAR_H - 3}">'
                   f"{_e(st.id)} {_e(hours_text(hours))}</text>")
    return out


def _svg_axis(span: float, scale: float, height: int) -> list[str]:
    # At most 13 ticks whatever the hours (a hostile plan may state 1e12 h).
    nice = (1, 2, 4, 6, 12, 24, 48, 96, 168, 336, 720)
    step = next((t for t in nice if span / t <= 12), math.ceil(span / 12))
    return [
        f'<text x="{_x(t, scale)}" y="{height - 6}" text-anchor="middle">{t} h</text>'
        for t in range(0, math.floor(span) + 1, step)
    ]
