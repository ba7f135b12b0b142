"""The plugin's own outputs are recognised by their content, never by their name alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.files.outputs import HTML_MARK, MARKDOWN_MARK, SVG_MARK, own_output, own_outputs
from pytest_itera.report.svg import Canvas


@pytest.mark.parametrize(("name", "text", "what"), [
    ("r.json", json.dumps({"format": "itera-report/2", "verdict": "accepted"}),
     "a closure report (itera-report/2)"),
    ("r.md", f"{MARKDOWN_MARK}\n# Campaign x: ACCEPTED\n", "a closure report (Markdown)"),
    ("r.html", f"<!DOCTYPE html>\n<html><head>{HTML_MARK}</head><body></body></html>\n",
     "a closure report (HTML)"),
    ("closure.seal.json", json.dumps({"_type": "https://in-toto.io/Statement/v1",
                                      "predicate": {"itera": {"format": "itera-seal/1"}}}),
     "a seal (itera-seal/1)"),
])
def test_each_output_is_recognised_by_its_mark(tmp_path: Path, name: str, text: str,
                                               what: str) -> None:
    (tmp_path / name).write_text(text)
    assert own_output(tmp_path / name) == what


@pytest.mark.parametrize(("name", "text"), [
    ("r.json", json.dumps({"format": "itera-report/2"})),  # no verdict: not a report
    ("r.json", "[1, 2]"),
    ("r.json", "{not json"),
    ("r.md", f"# Notes\n{MARKDOWN_MARK}\n"),  # the mark is the first line or nothing
    ("r.html", f"<html><head></head><body>{HTML_MARK}</body></html>"),  # in the head only
    ("c.svg", f"<svg>{SVG_MARK}</svg>"),  # the chart's mark is its first line
    ("r.txt", json.dumps({"format": "itera-report/2", "verdict": "accepted"})),
])
def test_a_look_alike_is_not_an_output(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    assert own_output(tmp_path / name) is None


def test_a_listed_file_is_never_left_out(tmp_path: Path) -> None:
    (tmp_path / "r.md").write_text(f"{MARKDOWN_MARK}\n")
    assert own_outputs(tmp_path, ["r.md"], set()) == {"r.md": "a closure report (Markdown)"}
    assert own_outputs(tmp_path, ["r.md"], {"r.md"}) == {}


def test_a_markdown_reports_chart_is_recognised(tmp_path: Path) -> None:
    """The .svg files the Markdown report writes beside it carry the mark themselves."""
    chart = Canvas(40, 20, "results", "a chart")
    (tmp_path / "results.svg").write_text(chart.render(standalone=True))
    assert own_output(tmp_path / "results.svg") == "a closure report's chart (SVG)"
    (tmp_path / "inline.svg").write_text(chart.render())  # the HTML page's, not a file's
    assert own_output(tmp_path / "inline.svg") is None


@pytest.mark.parametrize("encode", [
    lambda text: text.replace("/", "\\/").encode(),  # JSON may escape any "/"
    lambda text: text.replace("i", "\\u0069").encode(),
    lambda text: text.encode("utf-16-le"),  # json reads UTF-16 and UTF-32 too
    lambda text: text.encode("utf-32-le"),
])
def test_a_report_spelled_otherwise_is_still_recognised(tmp_path: Path, encode: Any) -> None:
    """Documents without our formats' names in their bytes are not parsed (a campaign's
    10 MB manifest.json): those whose bytes could still spell them are."""
    text = json.dumps({"format": "itera-report/2", "verdict": "accepted"})
    (tmp_path / "r.json").write_bytes(encode(text))
    assert own_output(tmp_path / "r.json") == "a closure report (itera-report/2)"
