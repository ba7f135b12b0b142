"""The HTML report in a real browser: Debian's chromium, headless, driven by Playwright.

What a reviewer sees: the verdict, the interruptions and reopenings listed under it, the
results table (absolute scores, rounded gains) and the threshold line; one loader-sandbox note;
no path of this machine; both series of the resume chart; the schedule's labels legible (no
two overlap); nothing logged as an error; nothing fetched from anywhere (the page is one
file). A screenshot of each page is kept under the test's tmp path.
Skips, saying why, without chromium or Playwright, unless ITERA_REQUIRE_BROWSER is set
(.ci/run sets it: CI never skips this test).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_itera import report
from pytest_itera.checks.closure import ReloadFacts
from pytest_itera.core.journal import Gap
from pytest_itera.report.model import CampaignReport
from pytest_itera.report.verify import check_campaign
from tests.factory import CampaignBuilder

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("ITERA_REQUIRE_BROWSER"):
        pytest.fail(f"{reason} (ITERA_REQUIRE_BROWSER is set: CI never skips this test)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("playwright is not installed (the test extra has it)")
    if not Path(CHROMIUM).is_file():
        _skip_or_fail("no chromium: scripts/setup installs Debian's chromium as root")
    with sync_playwright() as p:
        # As root (CI containers) chromium refuses its sandbox; the page is our own file.
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def _overlaps(boxes: list[dict[str, float]]) -> list[tuple[int, int]]:
    found = []
    for i, a in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            b = boxes[j]
            if (a["x"] + 0.5 < b["x"] + b["width"] and b["x"] + 0.5 < a["x"] + a["width"]
                    and a["y"] + 0.5 < b["y"] + b["height"]
                    and b["y"] + 0.5 < a["y"] + a["height"]):
                found.append((i, j))
    return found


GAP = Gap("interrupted", "step train-control", "2026-11-20T10:00:00Z", "2026-11-20T12:00:00Z")
GAP_LINE = ("step train-control interrupted: no process ran it after 2026-11-20T10:00:00Z, "
            "resumed at 2026-11-20T12:00:00Z; the time between is not counted as work")


def _reviewed(built: CampaignReport) -> CampaignReport:
    """The campaign with what the page must show once: an interrupted step, a reopening and
    two reloaded checkpoints in one sandbox."""
    facts = tuple(ReloadFacts(p, True, "torch", ("model",), 3, 10,
                              sandbox=("no_new_privs", "rlimit_fsize")) for p in ("a.pt", "b.pt"))
    reload = report.CheckResult("checkpoints-reload", "a.pt", "passed", "", "zz", reloads=facts)
    return replace(built, reopened=("repair 1",), checks=(*built.checks, reload),
                   gaps=(GAP, Gap("reopened", "repair 1", "2026-11-21T10:00:00Z")))


def _shows_what_a_reviewer_reads_first(page: Any, tmp_path: Path, case: str) -> None:
    cells = [row.locator("td").all_inner_texts()
             for row in page.locator("table.results tbody tr").all()]
    assert [c[3:5] for c in cells] == [["0.75", "—"],
                                       ["1.00", "+0.25"] if case == "accepted" else
                                       ["0.75", "0.00"]]
    text = page.locator("body").inner_text()
    assert str(tmp_path) not in page.content()
    assert str(tmp_path) not in text
    assert "Folder: camp" in text
    assert text.count("no_new_privs") == 1  # one sandbox note, not one per checkpoint
    listed = page.locator("ul.interruptions li")
    assert listed.all_inner_texts() == [
        GAP_LINE, "reopened at 2026-11-21T10:00:00Z after its closure: repair 1"]
    verdict, under = page.locator(".verdict").bounding_box(), \
        page.locator("ul.interruptions").bounding_box()
    assert verdict is not None
    assert under is not None
    assert 0 <= under["y"] - (verdict["y"] + verdict["height"]) < 40  # right under it
    chart = "svg.curve polyline"
    resumed = page.locator(f"{chart}.resumed").first
    resumed.scroll_into_view_if_needed()
    assert resumed.evaluate("e => getComputedStyle(e).strokeDasharray") not in ("none", "")
    reference = page.locator(f"{chart}.reference").first
    box = reference.bounding_box()
    assert box is not None
    assert box["width"] > 100
    assert reference.evaluate("e => getComputedStyle(e).strokeOpacity") == "1"


@pytest.mark.parametrize("case", ["accepted", "rejected"])
def test_the_html_report_reads_in_chromium(browser: Any, tmp_path: Path, case: str) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    if case == "rejected":  # variant-a predicts like the control: below the threshold
        builder.files["runs/variant-a/predictions.jsonl"] = \
            builder.files["runs/control/predictions.jsonl"]
    verdict = check_campaign(builder.write())
    assert verdict.verdict == case
    page_file = tmp_path / "report.html"
    report.write(page_file, [_reviewed(verdict.report)])

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.route("**/*", lambda route: route.continue_() if route.request.url == page_file.as_uri()
               else route.abort())
    page.goto(page_file.as_uri())

    shown = page.locator(".verdict")
    assert shown.is_visible()
    assert case.upper() in shown.inner_text()
    assert page.locator("table.results").is_visible()
    assert "variant-a" in page.locator("table.results").inner_text()
    threshold = page.locator("svg.results line.threshold")
    threshold.scroll_into_view_if_needed()
    box = threshold.bounding_box()
    assert box is not None
    assert box["height"] > 40  # across both rows of runs
    assert page.evaluate("getComputedStyle(document.querySelector("
                         "'svg.results line.threshold')).stroke") != "none"

    _shows_what_a_reviewer_reads_first(page, tmp_path, case)

    labels = page.locator("svg.timeline text")
    boxes = [b for b in (labels.nth(i).bounding_box() for i in range(labels.count())) if b]
    assert len(boxes) > 20
    texts = labels.all_inner_texts()
    assert [(texts[i], texts[j]) for i, j in _overlaps(boxes)] == []

    page.screenshot(path=str(tmp_path / f"report-{case}.png"), full_page=True)
    page.emulate_media(media="print")  # printed: the verdict and the results still there
    assert page.locator(".verdict").is_visible()
    assert page.locator("table.results").is_visible()
    page.pdf(path=str(tmp_path / f"report-{case}.pdf"))
    assert errors == []
    assert requests == [page_file.as_uri()]
    page.close()
