"""The charts' geometry, in-process: no two labels of the schedule overlap, a deviation above
tolerance is drawn and explained, the SVG is the same bytes for the same campaign."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_itera import report
from pytest_itera.core.campaign import load_campaign
from pytest_itera.report.charts import timeline_svg
from tests.factory import CampaignBuilder

Box = tuple[float, float, float, float]


def text_boxes(svg: str) -> list[tuple[str, Box]]:
    """Each <text>'s (content, box): x and textLength across, the font size up from y."""
    out = []
    for el in ET.fromstring(svg).iter("text"):
        x, y = float(el.attrib["x"]), float(el.attrib["y"])
        size, width = float(el.attrib["font-size"]), float(el.attrib["textLength"])
        title = el.find("title")  # a tooltip: not drawn
        shown = (title.tail if title is not None else el.text) or ""
        out.append((shown, (x, y - size, x + width, y + size * 0.25)))
    return out


def overlapping(boxes: list[tuple[str, Box]]) -> list[tuple[str, str]]:
    found = []
    for i, (a, (ax0, ay0, ax1, ay1)) in enumerate(boxes):
        for b, (bx0, by0, bx1, by1) in boxes[i + 1:]:
            if ax0 < bx1 and bx0 < ax1 and ay0 < by1 and by0 < ay1:
                found.append((a, b))
    return found


def crowded(tmp_path: Path) -> CampaignBuilder:
    """Many short steps on one GPU: their labels cannot fit inside their bars."""
    builder = CampaignBuilder(tmp_path / "camp")
    steps = builder.plan["schedule"]["steps"]
    last = "load-data"
    for i in range(12):
        steps.append({"id": f"probe-{i}", "kind": "validation", "resource": "gpu0",
                      "hours": 0.25, "after": [last], "lot": "rtx4090-3d"})
        last = f"probe-{i}"
    builder.manifest["schedule"]["steps"] = [
        {"id": s["id"], "observed_hours": s["hours"]} for s in steps]
    return builder


def test_no_two_timeline_labels_overlap(tmp_path: Path) -> None:
    builder = crowded(tmp_path)
    built = report.build(load_campaign(builder.write()), [], collected=0, fast=False)
    svg = timeline_svg(built)
    boxes = text_boxes(svg)
    assert len([t for t, _ in boxes if t.startswith("probe-")]) == 24  # planned and actual
    assert overlapping(boxes) == []
    assert timeline_svg(built) == svg  # deterministic


def test_a_deviation_above_tolerance_is_drawn_and_explained(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    step = next(s for s in builder.manifest["schedule"]["steps"] if s["id"] == "validate")
    step["observed_hours"] = 9
    builder.manifest["schedule"]["deviations"] = [
        {"step": "validate", "explanation": "the grader was rerun after a crash"}]
    built = report.build(load_campaign(builder.write()), [], collected=0, fast=False)
    svg = timeline_svg(built)
    bar = next(el for el in ET.fromstring(svg).iter("rect")
               if "deviation" in el.attrib["class"])
    assert bar.attrib["data-step"] == "validate"
    assert "the grader was rerun after a crash" in "".join(bar.itertext())
    page = report.render_html([built])
    assert "<h3>Deviations above tolerance</h3>" in page
    assert "<td>validate</td><td>4</td><td>9</td><td>the grader was rerun after a crash</td>" \
        in page


def test_lots_and_the_window_are_drawn(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    built = report.build(load_campaign(builder.write()), [], collected=0, fast=False)
    texts = [t for t, _ in text_boxes(timeline_svg(built))]
    assert "window edge 72 h" in texts
    assert "uncommitted 24 h" in texts
    assert "lot rtx4090-3d" in texts
    assert "planned 44 h (4 to 48 h) of its 72 h" in texts


def test_a_diverging_series_is_drawn_on_a_log_scale() -> None:
    from pytest_itera.report.charts import curve_charts
    from pytest_itera.report.evidence import Evidence, SeriesFacts

    diverging = SeriesFacts("hot", "loss", "runs/hot/m.jsonl", 5,
                            tuple((i, 10.0 ** (3 * i)) for i in range(4)), ((4, "Infinity"),),
                            1, stop_step=4)
    flat = SeriesFacts("cold", "loss", "runs/cold/m.jsonl", 2, ((1, 1.0), (2, 0.5)), (), 0)
    hot, cold = curve_charts(Evidence(series=(diverging, flat)))
    assert hot.caption == ("hot: loss per step (5 points in runs/hot/m.jsonl, log scale); "
                           "1 non-finite point(s), red")
    assert cold.caption == "cold: loss per step (2 points in runs/cold/m.jsonl)"
    ticks = [t for t, _ in text_boxes(hot.svg)]
    assert "1e+08" in ticks  # every other decade (at most 5 or so labels)
    assert "stopped at step 4" in ticks
