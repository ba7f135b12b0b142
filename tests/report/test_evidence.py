"""The reviewer's view, in-process: the numbers behind the verdict (decision metrics as
conclusion-consistent judges them, curves, the resume check, deliveries) in every rendering."""

from __future__ import annotations

import json
import math
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from pytest_itera import report
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Options
from pytest_itera.checks.runs.conclusion_consistent import conclusion_consistent, judged_facts
from pytest_itera.core.campaign import load_campaign
from pytest_itera.files.outputs import SVG_MARK
from pytest_itera.report.charts import resume_text
from pytest_itera.report.evidence import MAX_POINTS, ResultRow, thin
from pytest_itera.report.tables import deliverables_text
from tests.factory import CampaignBuilder, _jsonl, measurements_path

HOSTILE = "<script>alert(1)</script>https://evil.example/x.png"


def validate(data: object) -> None:
    schema = json.loads(resources.files("pytest_itera.schemas")
                        .joinpath("report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(data)


def built(builder: CampaignBuilder, results: list[report.CheckResult] | None = None
          ) -> report.CampaignReport:
    root = builder.write()
    return report.build(load_campaign(root), results or [], collected=len(results or []),
                        fast=False)


def test_results_are_the_values_conclusion_consistent_judges(tmp_path: Path) -> None:
    """variant-a's predictions score 0.75 although the manifest lists it as meeting 0.8: the
    check says 0.75, and so does the results table (recomputed, not the manifest's 1.0)."""
    builder = CampaignBuilder(tmp_path / "camp")
    builder.files["runs/variant-a/predictions.jsonl"] = _jsonl(
        [{"id": i, "prediction": p} for i, p in
         zip(("ex-1", "ex-2", "ex-3", "ex-4"), ("pos", "neg", "pos", "pos"), strict=True)])
    built_report = built(builder)
    ctx = Context(load_campaign(builder.root), Options(), {})
    findings = [f for f in conclusion_consistent(ctx, None)
                if f.code == "conclusion-consistent.below-threshold"]
    assert [f.message for f in findings] == [
        "the conclusion lists variant-a as meeting the threshold, but its accuracy is 0.75"]
    source = "recomputed (accuracy) from runs/variant-a/predictions.jsonl"
    assert built_report.evidence.results == (
        ResultRow("control", "control", "accepted", 0.75,
                  "recomputed (accuracy) from runs/control/predictions.jsonl", None, False),
        ResultRow("variant-a", "variant", "accepted", 0.75, source, 0.0, False),
    )
    assert source in (findings[0].found or "")
    table = report.render_markdown([built_report])
    interval = built_report.evidence.interval("variant-a")
    assert interval is not None
    assert interval.low is None  # a handful of examples: too few to resample
    assert (f"| variant-a | variant | accepted | 0.75 | 0.00 | {interval.note} | no | {source} |"
            in table)


def test_accepted_campaign_results_under_the_verdict(tmp_path: Path) -> None:
    built_report = built(CampaignBuilder(tmp_path / "camp"))
    rows = built_report.evidence.results
    assert [(r.run, r.value, r.delta, r.meets) for r in rows] == [
        ("control", 0.75, None, False), ("variant-a", 1.0, 0.25, True)]
    page = report.render_html([built_report])
    verdict, results = page.index('class="verdict'), page.index('id="results"')
    assert page.index("Decision rule") < verdict < results < page.index("<h2>Runs</h2>")
    assert '<line class="threshold"' in page
    assert "meets accuracy &gt;= 0.8" in page


def test_failing_run_is_shown_failing_with_its_checks(tmp_path: Path) -> None:
    results = [
        report.CheckResult("stop-records", "variant-a", "failed", "no", "m::a", "run"),
        report.CheckResult("config-identity", "variant-a", "passed", "", "m::b", "run"),
        report.CheckResult("config-identity", "control", "passed", "", "m::c", "run"),
    ]
    built_report = built(CampaignBuilder(tmp_path / "camp"), results)
    assert built_report.verdict == "rejected"
    lines = report.terminal_lines(built_report)
    assert any(re.fullmatch(r"\s*variant-a\s+variant\s+useful\s+failing \(stop-records\); "
                            r"recorded accepted\s+1/2", line) for line in lines), lines
    assert deliverables_text(built_report) == (
        "1 accepted run that passed their checks on 1 corpus → 1 deliverable (one per "
        "distinct corpus): tiny-corpus: control; variant-a does not count: it failed "
        "stop-records")
    assert "failing (stop-records); recorded accepted" in report.render_html([built_report])


def test_deliverables_say_which_runs_delivered_which_corpus(tmp_path: Path) -> None:
    built_report = built(CampaignBuilder(tmp_path / "camp"))
    text = deliverables_text(built_report)
    assert text == ("2 accepted runs that passed their checks on 1 corpus → 1 deliverable "
                    "(one per distinct corpus): tiny-corpus: control, variant-a")
    assert f"Deliverables: {text}" in report.render_html([built_report])


def test_curves_mark_the_stop_step_and_non_finite_points(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.measurements["variant-a"][2] = {"step": 3, "loss": "NaN"}
    builder.run_record("variant-a")["stop"] = {"rule": "non-finite-loss", "reason": "NaN",
                                               "step": 3}
    built_report = built(builder)
    series = next(s for s in built_report.evidence.series if s.run == "variant-a")
    assert (series.points, series.non_finite, series.stop_step) == (
        ((1, 1.0), (2, 0.7), (4, 0.4)), ((3, "NaN"),), 3)
    page = report.render_html([built_report])
    curve = page[page.index('id="curve-variant-a-loss"'):]
    assert '<rect class="nonfinite"' in curve.split("</figure>")[0]
    assert "stopped at step 3" in curve.split("</figure>")[0]
    data = report.to_json([built_report])
    validate(data)
    shown = next(s for s in data["evidence"]["series"] if s["run"] == "variant-a")
    assert shown["non_finite"] == [[3, "NaN"]]


def test_resume_check_over_its_reference_states_the_largest_difference(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.files[measurements_path("resume-check")] = _jsonl(
        [{"step": 3, "loss": 0.6}, {"step": 4, "loss": 0.525}])
    built_report = built(builder)
    (resume,) = built_report.evidence.resume
    assert (resume.reference, resume.step, resume.compared, resume.max_at) == (
        "control", 2, 2, ("loss", 4))
    assert math.isclose(resume.max_difference or 0, 0.025)
    assert resume.status == "triggered"
    text = resume_text(resume)
    assert text == ("resume-check against control after step 2: 2 points compared, max "
                    "|difference| 0.025 (loss at step 4), tolerance 0 — triggered")
    page = report.render_html([built_report])
    figure = page[page.index('id="resume-resume-check"'):].split("</figure>")[0]
    assert figure.count("<polyline") == 4  # both series, and their legend's samples
    assert "resumed at step 2" in figure


def test_thinning_keeps_at_most_the_cap_and_every_spike() -> None:
    points = [(i, 1.0) for i in range(100_000)]
    points[54_321] = (54_321, 9.0)
    kept = thin(points)
    assert len(kept) <= MAX_POINTS
    assert (54_321, 9.0) in kept
    assert kept == sorted(kept)
    assert kept[0] == (0, 1.0)


def test_every_value_is_escaped_and_the_page_fetches_nothing(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.measurements["variant-a"] = [{"step": 1, HOSTILE: 1.0}]
    builder.plan["question"] = HOSTILE
    built_report = built(builder)
    page = report.render_html([built_report])
    assert "<script" not in page
    assert "://" not in page
    assert not re.search(r"\b(?:src|href)=", page)
    assert "&lt;script&gt;" in page


def test_json_carries_the_data_of_every_chart(tmp_path: Path) -> None:
    built_report = built(CampaignBuilder(tmp_path / "camp"))
    data: dict[str, Any] = report.to_json([built_report])
    validate(data)
    assert data["format"] == "itera-report/3"
    names = [c["name"] for c in data["charts"]]
    assert names == ["results", "resume-resume-check", "curve-control-loss",
                     "curve-resume-check-loss", "curve-variant-a-loss", "timeline"]
    for chart in data["charts"]:
        target: Any = data
        for part in chart["draws"].strip("/").split("/"):
            target = target[int(part)] if isinstance(target, list) else target[part]
        assert target, chart


def test_markdown_links_its_charts_written_beside_it(tmp_path: Path) -> None:
    built_report = built(CampaignBuilder(tmp_path / "camp"))
    path = tmp_path / "out" / "closure.md"
    report.write(path, [built_report])
    text = path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links
    assert all((path.parent / link).is_file() for link in links)
    svg = (path.parent / "closure.charts" / "results.svg").read_text()
    assert svg.startswith(f'{SVG_MARK}\n<svg xmlns="http')  # recognised if written inside
    assert "<style>" in svg
    assert "| run | role | outcome | accuracy | Δ to control |" in text


def test_report_of_a_campaign_is_built_and_rendered_quickly(tmp_path: Path) -> None:
    """As the session builds it: conclusion-consistent's item brought the decision metrics it
    judged (Check.facts), so the report scores nothing again."""
    campaign = load_campaign(CampaignBuilder(tmp_path / "camp").write())
    facts = tuple(judged_facts(Context(campaign, Options(), {}), None))
    judged = report.CheckResult("conclusion-consistent", None, "passed", "", "m::c", "campaign",
                                facts=facts)
    start = time.perf_counter()
    built_report = report.build(campaign, [judged], collected=1, fast=False)
    for renderer in report.RENDERERS.values():
        renderer([built_report], [])
    assert time.perf_counter() - start < 1.0
    assert [r.value for r in built_report.evidence.results] == [0.75, 1.0]
