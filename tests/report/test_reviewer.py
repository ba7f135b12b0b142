"""What a reviewer reads first (issue 38, point 6), renderer by renderer: each run's absolute
decision metric and its gain rounded to what the corpus resolves, no path of this machine,
one loader-sandbox note, the interruptions and reopenings under the verdict, and a resume
chart whose reference run stays visible under the resumed one."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_itera import report
from pytest_itera.checks.closure import ReloadFacts
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.journal import Gap
from pytest_itera.report.charts import resume_charts
from pytest_itera.report.evidence import ResultRow
from pytest_itera.report.model import CampaignReport
from pytest_itera.report.tables import (
    machine_name,
    provenance_rows,
    report_tables,
    results_table,
    shown_decimals,
)
from tests.factory import CampaignBuilder


@pytest.fixture
def built(tmp_path: Path) -> CampaignReport:
    return report.build(load_campaign(CampaignBuilder(tmp_path / "camp").write()), [],
                        collected=0, fast=False)


def renderings(built: CampaignReport) -> tuple[str, str]:
    return report.render_html([built]), report.render_markdown([built])


@pytest.mark.parametrize(("values", "decimals"), [
    ([0.75, 1.0], 2),  # 4 examples: exact
    ([341 / 400, 0.8], 4),  # 400 examples: 1/400 = 0.0025 written exactly
    ([256 / 300, 241 / 300], 3),  # 300 examples: 3 decimals tell any two apart
    ([1 / 1200, 0.5], 4),
    ([1.0, 0.0], 0),
    ([0.123456789, 2.5], 3),  # not a count: 4 significant digits
    ([64 / 75, 0.8], 3),  # 300 examples, reduced to 75ths: still 3
    ([1 / 3], 3),
    ([None], 3),
])
def test_decimals_resolve_the_corpus(values: list[float | None], decimals: int) -> None:
    assert shown_decimals(values) == decimals


def test_results_show_absolute_scores_and_rounded_gains(built: CampaignReport) -> None:
    control, variant = built.evidence.results
    n = 300  # the gain 0.054 of the issue, on 300 examples: 7-8 digits as a float
    rows = (replace(control, value=240 / n),
            replace(variant, value=256 / n, delta=256 / n - 240 / n))
    shown = replace(built, evidence=replace(built.evidence, results=rows))
    table = results_table(shown)
    assert table is not None
    (_, _, _, c_value, c_gain, *_), (_, _, _, v_value, v_gain, *_) = table[2]
    assert (c_value, c_gain) == ("0.800", "—")  # the control has no gain, not a gain of 0
    assert (v_value, v_gain) == ("0.853", "+0.053")
    page, text = renderings(shown)
    assert "<td>0.853</td><td>+0.053</td>" in page
    assert "| control | control | accepted | 0.800 | — |" in text
    assert str(256 / n - 240 / n) not in page + text


def test_a_zero_gain_is_unsigned_and_a_missing_control_says_so(built: CampaignReport) -> None:
    control, variant = built.evidence.results
    rows = (replace(control, value=0.75), replace(variant, value=0.75, delta=0.0),
            ResultRow("other", "variant", "accepted", 0.5, "x", None, False))
    table = results_table(replace(built, evidence=replace(built.evidence, results=rows)))
    assert table is not None
    assert [row[4] for row in table[2]] == ["—", "0.00", "-"]


def test_no_path_of_this_machine(tmp_path: Path, built: CampaignReport) -> None:
    failing = report.CheckResult("files-intact", "x", "failed",
                                 f"{tmp_path}/camp/runs/x is gone", "n1")
    shown = replace(built, checks=(failing,), provenance={
        "command": ["/usr/bin/pytest", str(tmp_path / "camp"), f"--itera-report={tmp_path}/r"],
        "pytest_process": {"python": "3.11", "executable": "/opt/venv/bin/python"}})
    for text in renderings(shown):
        assert str(tmp_path) not in text
        assert not re.search(r"(^|[\s(>`])/(tmp|home|usr|opt)/", text, re.M)
    page, text = renderings(shown)
    assert "<p>Folder: <code>camp</code></p>" in page
    assert "Folder: camp\n" in text
    assert "camp/runs/x is gone" in page
    assert "camp/runs/x is gone" in text
    assert dict(provenance_rows(shown))["command"] == "pytest camp --itera-report=r"
    assert dict(provenance_rows(shown))["pytest process"] == "Python 3.11 (python)"


@pytest.mark.parametrize(("given", "shown"), [
    ("/tmp/x/camp", "camp"), ("camp", "camp"), ("runs/camp", "runs/camp"),
    ("s3://bucket/camp", "s3://bucket/camp"), ("C:\\Users\\me\\camp", "camp"),
])
def test_a_folder_is_shown_by_its_name_or_as_given(given: str, shown: str) -> None:
    assert machine_name(given) == shown


def _reloads(*paths: str, sandbox: tuple[str, ...] = ("no_new_privs", "seccomp")) -> tuple[
        report.CheckResult, ...]:
    facts = tuple(ReloadFacts(p, True, "torch", ("model",), 3, 10, sandbox=sandbox,
                              sandbox_missing=("network_namespace: unprivileged",))
                  for p in paths)
    return (report.CheckResult("checkpoints-reload", "x", "passed", "", "n1", reloads=facts),)


def test_one_sandbox_note_for_the_page(built: CampaignReport) -> None:
    shown = replace(built, checks=_reloads("a.pt", "b.pt", "c.pt"))
    (_title, header, rows, note), = [t for t in report_tables(shown, "steps")
                                    if t[0] == "Checkpoints as reloaded"]
    assert "loader sandbox" not in header
    assert len(rows) == 3
    assert note == ("loader sandbox of every checkpoint: no_new_privs, seccomp "
                    "(not network_namespace: unprivileged)")
    page, text = renderings(shown)
    for rendered in (page, text):
        assert rendered.count("no_new_privs") == 1
        assert rendered.index("no_new_privs") < rendered.index("a.pt")  # above the table


def test_a_checkpoint_whose_sandbox_differs_is_named(built: CampaignReport) -> None:
    checks = _reloads("a.pt", "b.pt") + _reloads("c.pt", sandbox=("no_new_privs",))
    checks = tuple(replace(c, nodeid=f"n{i}") for i, c in enumerate(checks))
    note = report_tables(replace(built, checks=checks), "steps")[1][3]
    assert note == ("loader sandbox: no_new_privs, seccomp (not network_namespace: "
                    "unprivileged) for a.pt, b.pt; no_new_privs (not network_namespace: "
                    "unprivileged) for c.pt")


def test_interruptions_and_reopenings_are_listed_under_the_verdict(
        built: CampaignReport) -> None:
    """From the journal's events (core.journal.gaps), whatever the deviations' words say."""
    gaps = (Gap("interrupted", "step train-control", "2026-11-20T10:00:00Z",
                "2026-11-20T12:00:00Z"),
            Gap("reopened", "the predictions missed one example"))
    shown = replace(built, gaps=gaps, reopened=("the predictions missed one example",))
    page, text = renderings(shown)
    item = ("step train-control interrupted: no process ran it after 2026-11-20T10:00:00Z, "
            "resumed at 2026-11-20T12:00:00Z; the time between is not counted as work")
    html_list = re.search(r'<p class="verdict [^"]+">[^<]*</p>\n<ul class="interruptions">'
                          r"<li>(.*?)</li><li>(.*?)</li></ul>", page)
    assert html_list is not None
    assert html_list.groups() == (html.escape(item),
                                  "reopened after its closure: the predictions missed one "
                                  "example")
    verdict = text.index("**campaign tiny-2026-11: ")
    listed = text[verdict:].split("\n\n")[1].splitlines()
    assert len(listed) == 2
    assert listed[0].startswith("- step train-control interrupted: ")
    assert listed[1] == "- reopened after its closure: the predictions missed one example"


def test_no_interruption_no_list(built: CampaignReport) -> None:
    page, text = renderings(built)
    assert "interruptions" not in page
    assert "reopened after" not in text


def test_the_resume_chart_keeps_the_reference_visible(built: CampaignReport) -> None:
    chart, = resume_charts(built.evidence)
    svg = ET.fromstring(chart.svg)
    lines = [e.get("class") for e in svg.iter("polyline")]
    # The reference drawn first (solid, wider), the resumed series over it (dashed, dotted),
    # then the legend's two samples.
    assert lines == ["reference", "series resumed", "reference", "series resumed"]
    assert len([e for e in svg.iter("circle") if e.get("class") == "dot"]) >= 1
    legend = [e.text for e in svg.iter("text") if e.get("class") == "legend"]
    assert legend == ["control (loss, the reference run)",
                      "resume-check (loss, resumed at step 2)"]
    style = report.render_html([built])
    assert "svg .resumed{stroke:#1f5fa8;stroke-width:1.5;stroke-dasharray:5 4}" in style
    assert "stroke-opacity" not in style.split("svg .reference", 1)[1].split("}", 1)[0]
