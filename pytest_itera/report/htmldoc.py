"""The report as one self-contained HTML page: the verdict, the results against the threshold,
the curves and the schedule as inline SVG (:mod:`.charts`), every value escaped; no script,
no external resource, printable."""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pytest_itera.core.text import clean, clean_block
from pytest_itera.files.outputs import HTML_MARK
from pytest_itera.report.charts import (
    Chart,
    curve_charts,
    results_chart,
    resume_charts,
    resume_text,
    timeline_svg,
)
from pytest_itera.report.model import CampaignReport, PlanReport
from pytest_itera.report.svg import STYLE
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
from pytest_itera.report.terminal import budget_text, schedule_text, verdict_line

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222;padding:0 1em}
h1,h2,h3{line-height:1.2}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
.verdict{font-size:1.3em;font-weight:bold;padding:.4em .8em;border-radius:4px}
.ok{background:#e3f6e3;color:#14501b}.bad{background:#fde4e1;color:#7a1a10}
.panel{border:1px solid #ccc;border-radius:4px;padding:.6em 1em;margin:1em 0}
pre{background:#f6f6f6;padding:.6em;overflow:auto;white-space:pre-wrap}
dl.objective{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}
dl.objective dt{font-weight:bold}dl.objective dd{margin:0}
figure{margin:.5em 0 1em}.charts figure{max-width:480px}
figcaption{font-size:.9em;color:#444}
.charts{display:flex;flex-wrap:wrap;gap:0 1.5em}
svg{max-width:100%;height:auto}
@media print{body{margin:0;max-width:none;font-size:11px}section{break-after:page}
figure,table,svg{break-inside:avoid}pre{white-space:pre-wrap}}
""".strip() + "\n" + STYLE


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
    """The campaign's section; its absolute folder, wherever a text names it (a finding's
    message), spelt as the page shows the folder (:func:`.tables.shown_root`)."""
    root, shown = report.root, shown_root(report.root)
    spelt = {root: shown, _e(root): _e(shown), html.escape(root): html.escape(shown)}
    for part in _html_campaign_parts(report):
        if root and shown != root:
            for absolute, name in spelt.items():
                part = part.replace(absolute, name)
        yield part


def _html_campaign_parts(report: CampaignReport) -> Iterator[str]:
    css = "ok" if report.ok else "bad"
    yield f"<section><h1>Campaign {_e(report.campaign)}</h1>"
    yield '<dl class="objective">' + "".join(
        f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in objective_rows(report)
    ) + "</dl>"
    yield f'<p class="verdict {css}">{_e(verdict_line(report))}</p>'
    yield from _html_interruptions(report)  # right under the verdict: what broke the run
    if report.advisories_note:
        yield f'<p class="note advisories">{_e(report.advisories_note)}</p>'
    yield from _html_results(report)  # right under the verdict: what it rests on
    yield f"<p>Folder: <code>{_e(shown_root(report.root))}</code></p>"
    if report.played_clock_text:
        yield f'<p class="note">{_e(report.played_clock_text)}</p>'
    if report.plan_integrity:
        yield f'<p class="note">Note: {_e(report.plan_integrity)}</p>'
    for note in report.file_notes:
        yield f'<p class="note">Note: {_e(note)}</p>'
    if report.settings_note:
        yield f'<p class="note">Note: {_e(report.settings_note)}</p>'
    if report.verdict == "rejected":
        yield from _html_failures(report)  # what to fix comes first
    yield from _html_tables(report, "runs")
    yield from _html_curves(report)
    if report.budget is not None:
        yield from _html_budget(report)
    if report.schedule is not None:
        yield "<h2>Schedule</h2>"
        yield f"<p>{_e(schedule_text(report.schedule))}</p>"
        yield timeline_svg(report)
        deviations = deviation_rows(report)
        if deviations:
            yield "<h3>Deviations above tolerance</h3>"
            yield _html_table(("step", "planned h", "observed h", "explanation"), deviations)
    yield from _html_tables(report, "steps")
    if report.verdict != "rejected":
        yield from _html_failures(report)
    yield "<h2>Provenance</h2>"
    yield _html_table(("fact", "value"), provenance_rows(report))
    yield "</section>"


def _html_interruptions(report: CampaignReport) -> Iterator[str]:
    """The interruptions and reopenings, each with when and why, as a short list."""
    lines = interruption_lines(report)
    if lines:
        yield ('<ul class="interruptions">'
               + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>")


def _html_tables(report: CampaignReport, part: str) -> Iterator[str]:
    """Each table of ``part`` under its title, its note (said once for all its rows) above."""
    for title, header, rows, note in report_tables(report, part):
        yield f"<h2>{_e(title)}</h2>"
        if note:
            yield f'<p class="note table-note">{_e(note)}</p>'
        yield _html_table(header, rows)


def _html_results(report: CampaignReport) -> Iterator[str]:
    """The decision metric of every compared run against the threshold: table, then chart."""
    table = results_table(report)
    if table is None:
        return
    title, header, rows = table
    yield f'<h2 id="results">{_e(title)}</h2>'
    yield _html_table(header, rows, css="results")
    chart = results_chart(report.evidence)
    if chart:
        yield f"<figure>{chart}<figcaption>{_e(_results_caption(report))}</figcaption></figure>"


def _results_caption(report: CampaignReport) -> str:
    d = report.evidence.decision
    assert d is not None
    return (f"{d.metric} per run (green: meets the threshold, grey: does not); the dashed red "
            f"line is the threshold {d.threshold:g}, {d.direction} is better")


def _html_curves(report: CampaignReport) -> Iterator[str]:
    ev = report.evidence
    resumes = resume_charts(ev)
    if ev.resume:
        yield "<h2>Resume check</h2>"
        yield from (f"<p>{_e(line)}</p>" for line in _resume_lines(report))
        yield _figures(resumes)
    curves = curve_charts(ev)
    if curves:
        yield "<h2>Curves</h2>"
        more = len(ev.series) - len(curves)
        if more > 0:
            yield f"<p>{more} more series in the JSON report.</p>"
        yield _figures(curves)


def _resume_lines(report: CampaignReport) -> list[str]:
    return [resume_text(r) for r in report.evidence.resume]


def _figures(charts: Sequence[Chart]) -> str:
    return '<div class="charts">' + "".join(
        f'<figure id="{_e(c.name)}">{c.svg}<figcaption>{_e(c.caption)}</figcaption></figure>'
        for c in charts) + "</div>"


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


def _html_table(header: Sequence[str], rows: Iterable[Sequence[object]], css: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_budget(report: CampaignReport) -> Iterator[str]:
    b: dict[str, Any] = report.budget or {}
    cur = b["currency"]
    yield '<div class="panel budget"><h2>Budget</h2>'
    yield f"<p>{_e(budget_text(b))}</p>"
    delivered = deliverables_text(report)
    if delivered:
        yield f'<p class="deliverables">Deliverables: {_e(delivered)}</p>'
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


