"""The report's pictures, as SVG (:mod:`.svg`): the decision metric per run against the
threshold, each run's measurement series, the resume check over its reference run, and the
planned-vs-actual schedule. Each chart draws data the JSON report carries (the evidence and
the steps); each returns "" when it has nothing to draw."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_itera.report.evidence import MAX_CURVES, Evidence, ResumeFacts, SeriesFacts
from pytest_itera.report.model import CampaignReport, StepRow
from pytest_itera.report.svg import Canvas, Scale, esc, short, text_width


@dataclass(frozen=True)
class Chart:
    """One picture: a file-safe name, a caption, and the SVG."""

    name: str
    caption: str
    svg: str


# ---------------------------------------------------------------- results


def results_chart(ev: Evidence, standalone: bool = False) -> str:
    """A bar per compared run from 0 to its decision metric, the threshold a dashed line."""
    if ev.decision is None or not ev.results:
        return ""
    d = ev.decision
    labels = [f"{r.run} ({r.role})" for r in ev.results]
    left = min(max(text_width(t, 10) for t in labels) + 12, 260)
    plot, right = 380.0, 190.0
    top, row = 30.0, 22.0
    bottom = top + row * len(ev.results)
    values = [r.value for r in ev.results if r.value is not None and math.isfinite(r.value)]
    x = Scale(min([0.0, d.threshold, *values]), max([0.0, d.threshold, *values]),
              left, left + plot)
    c = Canvas(left + plot + right, bottom + 28, "results",
               f"{d.metric} per run; the threshold {short(d.threshold)} ({d.direction} is "
               "better) is the dashed line")
    for tick in x.ticks():
        c.line(x(tick), top - 4, x(tick), bottom, "grid")
        c.text(x(tick), bottom + 16, short(tick), anchor="middle")
    zero = x(0.0)
    for i, (r, label) in enumerate(zip(ev.results, labels, strict=True)):
        y = top + i * row
        c.text(4, y + 14, label, max_width=left - 10)
        if r.value is None or not math.isfinite(r.value):
            shown = "no value" if r.value is None else str(r.value)
            c.text(left + plot + 8, y + 14, f"{shown} ({r.outcome})")
            continue
        cls = "meets" if r.meets else "misses"
        end = x(r.value)
        c.rect(min(zero, end), y + 4, max(abs(end - zero), 1.5), 12, f"bar {cls}",
               f"{r.run}: {d.metric} = {r.value!r} ({r.source})")
        verdict = "meets" if r.meets else "below" if d.direction == "higher" else "above"
        c.text(left + plot + 8, y + 14, f"{short(r.value)} {verdict}", max_width=right - 10)
    t = x(d.threshold)
    c.line(t, top - 8, t, bottom, "threshold", f"threshold {d.threshold!r}")
    c.text(t, 14, f"threshold {short(d.threshold)}", cls="threshold-label", anchor="middle")
    c.line(zero, top - 4, zero, bottom, "axis")
    return c.render(standalone)


# ----------------------------------------------------------------- curves


# The resumed series, drawn over its reference run's: dashed with a dot at some of its
# points, so the reference shows through wherever the two coincide.
RESUMED = "series resumed"
MAX_DOTS = 16  # dots along the resumed series (the thinned points, every k-th)


def series_chart(lines: Sequence[tuple[SeriesFacts, str]], marks: Sequence[tuple[int, str]],
                 title: str, standalone: bool = False, legend: Sequence[str] = ()) -> str:
    """Lines (series, css class) over steps, in drawing order; ``marks``: (step, label) drawn
    as dashed verticals; non-finite points as red markers along the top edge; ``legend``: a
    label per line, drawn under the axis with a sample of its line."""
    points = [p for s, _ in lines for p in s.points]
    steps = [p[0] for p in points] + [st for s, _ in lines for st, _ in s.non_finite]
    steps += [m for m, _ in marks]
    if not steps:
        return ""
    left, width, top, height = 64.0, 440.0, 18.0 + 12 * len(marks), 150.0
    x = Scale(min(steps), max(steps), left, left + width)
    values = [v for _, v in points]
    log = log_scale(values)
    ys = [math.log10(v) for v in values] if log else values
    y = Scale(min(ys, default=0.0), max(ys, default=1.0), top + height, top + 6)
    c = Canvas(left + width + 16, top + height + 30 + 14 * len(legend), "curve", title)
    ticks = [float(t) for t in range(math.ceil(y.lo), math.floor(y.hi) + 1)] if log else \
        y.ticks(4)
    for tick in ticks[:: max(1, len(ticks) // 5)]:
        c.line(left, y(tick), left + width, y(tick), "grid")
        c.text(left - 4, y(tick) + 3, short(10 ** tick if log else tick), anchor="end")
    for tick in x.ticks(5):
        c.text(x(tick), top + height + 16, short(tick), anchor="middle")
    c.line(left, top + height, left + width, top + height, "axis")
    for s, cls in lines:
        drawn = [(x(st), y(math.log10(v) if log else v)) for st, v in s.points]
        if drawn:
            c.polyline(drawn, cls)
        if cls == RESUMED:
            for px, py in drawn[::max(1, math.ceil(len(drawn) / MAX_DOTS))]:
                c.circle(px, py, 2.5, "dot")
        for st, text in s.non_finite:
            c.rect(x(st) - 3, top, 6, 6, "nonfinite", f"{s.run} {s.name} at step {st}: {text}")
    for i, (step, label) in enumerate(marks):
        c.line(x(step), top - 2, x(step), top + height, "mark", label)
        anchor = "end" if x(step) > left + width / 2 else "start"
        c.text(x(step), 12 + 12 * i, label, anchor=anchor)
    c.text(left + width / 2, top + height + 28, "step", anchor="middle")
    for i, ((_, cls), label) in enumerate(zip(lines, legend, strict=False)):
        row = top + height + 42 + 14 * i
        c.polyline([(left, row - 4), (left + 28, row - 4)], cls)
        c.text(left + 36, row, label, cls="legend", max_width=width - 36)
    return c.render(standalone)


def log_scale(values: Sequence[float]) -> bool:
    """A series that spans more than three decades (a diverging loss) is drawn on a log
    scale, when every value is positive."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > 1e3


def curve_charts(ev: Evidence, standalone: bool = False) -> list[Chart]:
    """One chart per run and series (at most :data:`MAX_CURVES`), stop step marked."""
    out = []
    for s in ev.series[:MAX_CURVES]:
        marks = [(s.stop_step, f"stopped at step {s.stop_step}")] if s.stop_step is not None \
            else []
        if s.resume_step is not None:
            marks.append((s.resume_step, f"resumed at step {s.resume_step}"))
        bad = f"; {s.non_finite_count} non-finite point(s), red" if s.non_finite_count else ""
        thinned = f", thinned to {len(s.points)} for the chart" if len(s.points) < s.count - \
            s.non_finite_count else ""
        scale = ", log scale" if log_scale([v for _, v in s.points]) else ""
        caption = (f"{s.run}: {s.name} per step ({s.count} points in {s.source}{thinned}"
                   f"{scale}){bad}")
        svg = series_chart([(s, "series")], marks, caption, standalone)
        if svg:
            out.append(Chart(f"curve-{_slug(s.run)}-{_slug(s.name)}", caption, svg))
    return out


def resume_charts(ev: Evidence, standalone: bool = False) -> list[Chart]:
    """The resume check's series drawn over its reference run's, the resume step marked:
    the reference solid and first, the resumed series dashed and dotted over it, so both
    show where they coincide after the resume step (a resume that reproduces its reference
    does so exactly); a legend names them."""
    out = []
    for r in ev.resume:
        name = _resume_series(ev, r)
        if name is None or r.step is None:
            continue
        mine = {s.name: s for s in ev.series if s.run == r.run}
        theirs = {s.name: s for s in ev.series if s.run == r.reference}
        caption = resume_text(r) + (f"; drawn: {name} (solid orange: {r.reference}; dashed "
                                    f"blue with dots, over it: {r.run})")
        svg = series_chart([(theirs[name], "reference"), (mine[name], RESUMED)],
                           [(r.step, f"resumed at step {r.step}")], caption, standalone,
                           legend=(f"{r.reference} ({name}, the reference run)",
                                   f"{r.run} ({name}, resumed at step {r.step})"))
        out.append(Chart(f"resume-{_slug(r.run)}", caption, svg))
    return out


def resume_text(r: ResumeFacts) -> str:
    """"resume-check against control after step 105: 105 points, max difference 0 ..."."""
    if r.reference is None:
        return f"{r.run}: no reference run ({r.detail})"
    diff = "no shared point" if r.max_difference is None else \
        f"max |difference| {r.max_difference:.6g}" + (
            f" ({r.max_at[0]} at step {r.max_at[1]})" if r.max_at else "")
    return (f"{r.run} against {r.reference} after step {r.step}: {r.compared} points "
            f"compared, {diff}, tolerance {r.tolerance:g} — {r.status}")


def _slug(text: str) -> str:
    kept = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "-" for ch in text)
    return kept.strip("-")[:40] or "x"


# --------------------------------------------------------------- schedule

_LEFT, _PLOT, _BAR, _TRACK = 150.0, 760.0, 12.0, 13.0


@dataclass
class _Lane:
    """One lane of bars and, below it, the label tracks its labels needed."""

    tracks: list[list[tuple[float, float]]]
    inside: list[tuple[float, float]]

    def place(self, x: float, width: float) -> int:
        """The first track where [x, x+width] touches no label; a new one when none."""
        for i, taken in enumerate(self.tracks):
            if all(x + width + 6 <= a or x >= b + 6 for a, b in taken):
                taken.append((x, x + width))
                return i
        self.tracks.append([(x, x + width)])
        return len(self.tracks) - 1


def timeline_svg(report: CampaignReport, standalone: bool = False) -> str:
    """One row per resource (a planned and an actual lane) and one per lot; labels inside
    bars that hold them, else on tracks under the lane where no two overlap; the window edge,
    the uncommitted hours and a deviation above tolerance (red outline) drawn."""
    s = report.schedule or {}
    bars = [st for st in report.steps if st.resource is not None]
    resources = list(dict.fromkeys(st.resource for st in bars if st.resource))
    if not resources:
        return f"<p>No timeline: {esc(s.get('schedule_problem') or 'no planned steps')}.</p>"
    window = s.get("window_hours")
    ends = [float(v) for st in bars for v in (st.planned_end, st.actual_end) if v is not None]
    span = max([float(window or 0), *ends, 1.0])
    x = Scale(0.0, span, _LEFT, _LEFT + _PLOT)
    parts: list[tuple[str, list[tuple[str, list[StepRow]]]]] = [
        (res, [("planned", [b for b in bars if b.resource == res]),
               ("actual", [b for b in bars if b.resource == res])]) for res in resources]
    layout = _layout(parts, x)
    lots = _lot_spans(report)
    lot_rows = len(lots) * 2 * (_BAR + 2) + (8 if lots else 0)
    top = 44.0
    height = top + sum(h for _, h, _ in layout) + lot_rows + 56
    c = Canvas(_LEFT + _PLOT + 20, height, "timeline",
               "Planned (upper bar) and actual (lower bar) steps per resource, and each lot's span")
    _window(c, s, x, top, height - 44)
    y = top
    for (res, lanes), (_, row_h, placed) in zip(parts, layout, strict=True):
        c.text(4, y + _BAR, res, max_width=_LEFT - 10)
        lane_y = y
        for (kind, steps), (lane_h, labels) in zip(lanes, placed, strict=True):
            for st in steps:
                _bar(c, st, kind, lane_y, x)
            for text, lx, track, _ in labels:  # the bar carries the tooltip
                ly = lane_y + _BAR - 3 if track < 0 else lane_y + _BAR + 10 + track * _TRACK
                c.text(lx, ly, text, cls="label", size=9)
            lane_y += lane_h
        y += row_h
    for lot, (planned, actual, capacity) in lots.items():
        y = _lot_row(c, lot, planned, actual, capacity, y + 4, x)
    _axis(c, span, x, height - 30)
    _legend(c, height - 10)
    return c.render(standalone)


def _label(st: StepRow, kind: str) -> tuple[str, float, float, str] | None:
    start, end = (st.planned_start, st.planned_end) if kind == "planned" else \
        (st.actual_start, st.actual_end)
    if start is None or end is None:
        return None
    hours = end - start
    flag = " !" if kind == "actual" and st.over_tolerance else ""
    tip = f"{kind} {st.id}: {start:g} to {end:g} h ({hours:g} h)"
    if kind == "actual" and st.over_tolerance:
        tip += f"; planned {st.planned_hours:g} h, above tolerance: " \
            f"{st.explanation or 'no explanation recorded'}"
    return f"{st.id} {hours:g} h{flag}", start, end, tip


def _layout(parts: list[tuple[str, list[tuple[str, list[StepRow]]]]], x: Scale
            ) -> list[tuple[str, float, list[tuple[float, list[tuple[str, float, int, str]]]]]]:
    """Per resource: its height and, per lane, (lane height, labels (text, x, track, tip)):
    track -1 is inside the bar."""
    out = []
    for res, lanes in parts:
        placed = []
        for kind, steps in lanes:
            lane = _Lane([], [])
            labels = []
            for st in sorted(steps, key=lambda s: (_start(s, kind), s.id)):
                found = _label(st, kind)
                if found is None:
                    continue
                text, start, end, tip = found
                w = text_width(text, 9)
                if x(end) - x(start) >= w + 4 and all(
                        x(start) + 2 + w + 4 <= a or x(start) + 2 >= b + 4 for a, b in lane.inside):
                    lane.inside.append((x(start) + 2, x(start) + 2 + w))
                    labels.append((text, x(start) + 2, -1, tip))
                    continue
                lx = min(x(start), _LEFT + _PLOT - w)
                labels.append((text, lx, lane.place(lx, w), tip))
            placed.append((_BAR + 4 + len(lane.tracks) * _TRACK, labels))
        out.append((res, sum(h for h, _ in placed) + 6, placed))
    return out


def _start(st: StepRow, kind: str) -> float:
    value = st.planned_start if kind == "planned" else st.actual_start
    return float(value) if value is not None else math.inf


def _bar(c: Canvas, st: StepRow, kind: str, y: float, x: Scale) -> None:
    found = _label(st, kind)
    if found is None:
        return
    _, start, end, tip = found
    css = kind if end > start else f"{kind} zero"
    if kind == "actual" and st.over_tolerance:
        css += " deviation"
    c.rect(x(start), y, max(x(end) - x(start), 1.5), _BAR, f"bar {css}", tip, data=st.id)


def _window(c: Canvas, s: dict[str, object], x: Scale, top: float, bottom: float) -> None:
    """The uncommitted stretch shaded (label on track 2), the window edge (label on track 1)."""
    makespan, window = s.get("planned_makespan_hours"), s.get("window_hours")
    if isinstance(makespan, int | float) and isinstance(window, int | float) \
            and window > makespan:
        label = f"uncommitted {s.get('uncommitted_hours')} h"
        c.rect(x(makespan), top - 4, x(window) - x(makespan), bottom - top + 4, "uncommitted",
               label)
        c.text(x(window) - 4, top - 10, label, anchor="end")
    if isinstance(window, int | float):
        c.line(x(window), 8, x(window), bottom, "window", f"window edge {window:g} h")
        c.text(x(window) - 4, 16, f"window edge {window:g} h", anchor="end")


def _lot_spans(report: CampaignReport) -> dict[str, tuple[tuple[float, float] | None,
                                                           tuple[float, float] | None,
                                                           float | None]]:
    """Lot -> (planned span, actual span, capacity in hours) from the steps on its clock."""
    capacity = {d["id"]: float(d["days"]) * 24 for d in (report.budget or {}).get(
        "lot_details", []) if isinstance(d.get("days"), int | float)}
    out = {}
    for lot in dict.fromkeys(st.lot for st in report.steps if st.lot):
        assert lot is not None
        mine = [st for st in report.steps if st.lot == lot]
        out[lot] = (_span([(st.planned_start, st.planned_end) for st in mine]),
                    _span([(st.actual_start, st.actual_end) for st in mine]),
                    capacity.get(lot))
    return out


def _span(pairs: list[tuple[float | None, float | None]]) -> tuple[float, float] | None:
    known = [(float(a), float(b)) for a, b in pairs if a is not None and b is not None]
    if not known:
        return None
    return min(a for a, _ in known), max(b for _, b in known)


def _lot_row(c: Canvas, lot: str, planned: tuple[float, float] | None,
             actual: tuple[float, float] | None, capacity: float | None, y: float,
             x: Scale) -> float:
    c.text(4, y + _BAR, f"lot {lot}", max_width=_LEFT - 10)
    for kind, found, dy in (("planned", planned, 0.0), ("actual", actual, _BAR + 2)):
        if found is None:
            continue
        a, b = found
        cap = f" of its {capacity:g} h" if capacity is not None else ""
        tip = f"lot {lot}, {kind}: runs {a:g} to {b:g} h ({b - a:g} h{cap})"
        c.rect(x(a), y + dy, x(b) - x(a), _BAR, f"lot {kind}", tip)
        text = f"{kind} {b - a:g} h ({a:g} to {b:g} h){cap}"
        if x(b) - x(a) >= text_width(text, 9) + 4:
            c.text(x(a) + 2, y + dy + _BAR - 3, text, cls="lot-label", size=9)
        if capacity is not None and kind == "planned":
            c.line(x(a + capacity), y - 2, x(a + capacity), y + 2 * _BAR + 4, "window",
                   f"lot {lot} ends {capacity:g} h after its first step")
    return y + 2 * (_BAR + 2)


def _axis(c: Canvas, span: float, x: Scale, y: float) -> None:
    # At most 13 ticks whatever the hours (a hostile plan may state 1e12 h).
    nice = (1, 2, 4, 6, 12, 24, 48, 96, 168, 336, 720)
    step = next((t for t in nice if span / t <= 12), math.ceil(span / 12))
    for t in range(0, math.floor(span) + 1, step):
        c.text(x(t), y, f"{t} h", anchor="middle")


def _legend(c: Canvas, y: float) -> None:
    items = (("planned", "planned"), ("actual", "actual (observed hours, same dependency rules)"),
             ("actual deviation", "above tolerance (!)"), ("lot planned", "a lot's span"))
    left = _LEFT
    for cls, text in items:
        c.rect(left, y - 9, 14, 10, cls)
        left += 18 + c.text(left + 18, y, text) + 16


def charts_index(report: CampaignReport) -> list[dict[str, str]]:
    """Each chart the HTML and Markdown reports draw: its name, caption and the part of the
    JSON report it draws (a JSON pointer into this campaign's object)."""
    ev = report.evidence
    out = []
    if results_chart(ev):
        out.append({"name": "results", "caption": "the decision metric per run against the "
                    "threshold", "draws": "/evidence/results"})
    index = {(s.run, s.name): i for i, s in enumerate(ev.series)}
    for i, r in enumerate(ev.resume):
        name = _resume_series(ev, r)
        if name is not None:
            out.append({"name": f"resume-{_slug(r.run)}", "caption": resume_text(r),
                        "draws": f"/evidence/resume/{i}"})
    for s in ev.series[:MAX_CURVES]:
        if s.points or s.non_finite:
            out.append({"name": f"curve-{_slug(s.run)}-{_slug(s.name)}",
                        "caption": f"{s.run}: {s.name} per step",
                        "draws": f"/evidence/series/{index[(s.run, s.name)]}"})
    if report.schedule is not None and any(st.resource for st in report.steps):
        out.append({"name": "timeline", "caption": "planned vs actual steps per resource and lot",
                    "draws": "/steps"})
    return out


def _resume_series(ev: Evidence, r: ResumeFacts) -> str | None:
    """The series the resume chart draws: the loss when both runs have it, else the first
    they share; None when they share none."""
    mine = {s.name for s in ev.series if s.run == r.run}
    theirs = {s.name for s in ev.series if s.run == r.reference}
    shared = sorted(mine & theirs, key=lambda n: (n != "loss", n))
    return shared[0] if shared and r.step is not None else None


def report_charts(report: CampaignReport, standalone: bool = False) -> list[Chart]:
    """Every chart of a campaign, in page order: results, resume, curves, timeline."""
    ev = report.evidence
    out = []
    results = results_chart(ev, standalone)
    if results:
        out.append(Chart("results", f"{ev.decision.metric if ev.decision else ''} per run "
                         "against the threshold (dashed line)", results))
    out += resume_charts(ev, standalone) + curve_charts(ev, standalone)
    if report.schedule is not None and any(st.resource for st in report.steps):
        out.append(Chart("timeline", "planned (upper) vs actual (lower) steps per resource, "
                         "and each lot's span", timeline_svg(report, standalone)))
    return out
