"""The closure report: terminal summary, JSON (and its schema), Markdown, self-contained HTML."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from pytest_itera import report
from pytest_itera.campaign import load_campaign
from pytest_itera.checks import Context, Options
from pytest_itera.checks import contract as contract_family
from pytest_itera.checks import files as files_family
from tests.factory import CampaignBuilder, expect

# Hypothesis' pytest plugin imports hypothesis (seconds) in every in-process run: not needed here.
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")
HOSTILE = "<script>alert(1)</script> see https://evil.example/x.png \x1b[2J"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--itera-campaign", "out", *NO_HYPOTHESIS, *args)


def summary(result: pytest.RunResult) -> list[str]:
    """The pytest-itera section of the terminal output."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "= pytest-itera =" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return lines[start:end]


def report_schema() -> dict[str, object]:
    text = resources.files("pytest_itera.schemas").joinpath("report.schema.json").read_text()
    loaded: dict[str, object] = json.loads(text)
    return loaded


def validate_report(data: object) -> None:
    jsonschema.Draft202012Validator.check_schema(report_schema())
    jsonschema.Draft202012Validator(report_schema()).validate(data)


def with_files(builder: CampaignBuilder) -> CampaignBuilder:
    """The tiny campaign with a checkpoint and an adapter folder owned by the control."""
    builder.files["runs/control/last.pt"] = b"not really a checkpoint"
    builder.files["runs/control/adapter/adapter_config.json"] = b'{"r": 2}'
    builder.manifest["checkpoints"] = [
        {"path": "runs/control/last.pt", "run": "control", "format": "torch", "kind": "weights"}
    ]
    builder.manifest["adapters"] = [
        {"path": "runs/control/adapter", "run": "control", "base_model": "tiny",
         "base_revision": "0" * 40}
    ]
    return builder


# ------------------------------------------------------------ the pure model


def test_run_ownership_matches_the_checks_context(tmp_path: Path) -> None:
    builder = with_files(CampaignBuilder(tmp_path / "camp"))
    builder.write()
    checks = {c.id: c for c in (*contract_family.CHECKS, *files_family.CHECKS)}
    ctx = Context(load_campaign(builder.root), Options(), checks)
    manifest = ctx.campaign.manifest
    compared = 0
    for check in checks.values():
        for target in ctx.targets(check):
            if target is not None:
                assert report.runs_of(manifest, check.scope, target) == ctx.runs_of(check, target)
                compared += 1
    assert compared > 20
    adapter_file = "runs/control/adapter/adapter_config.json"
    assert report.runs_of(manifest, "file", adapter_file) == {"control"}
    assert report.runs_of(manifest, "run", "variant-a") == {"variant-a"}
    assert report.runs_of(manifest, "campaign", "control") == set()


def test_runs_table_counts_each_runs_own_items(tmp_path: Path) -> None:
    builder = with_files(CampaignBuilder(tmp_path / "camp"))
    builder.write()
    results = [
        report.CheckResult("files-intact", "runs/control/last.pt", "passed", "", "a", "file"),
        report.CheckResult("files-intact", "runs/control/adapter/adapter_config.json", "failed",
                           "bad", "b", "file"),
        report.CheckResult("stop-records", "control", "passed", "", "c", "run"),
        report.CheckResult("files-intact", "analysis.md", "passed", "", "d", "file"),
        report.CheckResult("manifest", None, "passed", "", "e", "campaign"),
    ]
    built = report.build(load_campaign(builder.root), results, collected=5, fast=False)
    rows = {r.id: r for r in built.runs}
    assert [r.id for r in built.runs] == ["control", "data-check", "resume-check", "variant-a"]
    assert (rows["control"].passed, rows["control"].total) == (2, 3)
    assert (rows["variant-a"].passed, rows["variant-a"].total) == (0, 0)
    assert (rows["control"].role, rows["control"].category, rows["control"].status) == (
        "control", "must", "accepted")
    assert built.verdict == "rejected"


def test_unplanned_and_unrecorded_runs_are_rows(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    extra = dict(builder.manifest["runs"][0], id="surprise")
    builder.manifest["runs"] = [*builder.manifest["runs"][1:], extra]  # control not recorded
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    rows = {r.id: r for r in built.runs}
    assert rows["control"].status == "not recorded"
    assert (rows["surprise"].role, rows["surprise"].status) == (None, "accepted")
    table = report.terminal_lines(built)
    assert any(re.match(r"  surprise +\(unplanned\) +- +accepted +0/0$", line) for line in table)


def test_zero_accepted_budget_says_undefined_with_cause(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.manifest["budget"].update(
        accepted_deliverables=0, cost_per_deliverable=None,
        rejection_cause="no variant passed its checks",
    )
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert report.terminal_lines(built)[-2] == (
        "  budget: 47.14 USD engaged (lots: rtx4090-3d (3 d, 47.14 USD)); 0 accepted corpora; "
        "cost per corpus undefined: 0 accepted — cause no variant passed its checks"
    )


def test_engaged_total_adds_included_expenses_never_external_ones(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.manifest["budget"]["included_expenses"] = [{"label": "storage", "amount": "2.86"}]
    builder.manifest["budget"]["external_expenses"] = [{"label": "engineer", "amount": "400.00"}]
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert built.budget is not None
    assert (built.budget["engaged_total"], built.budget["rental_total"]) == ("50.00", "47.14")
    line = report.budget_text(built.budget)
    assert line.startswith("50.00 USD engaged (lots: rtx4090-3d (3 d, 47.14 USD)), of which "
                           "47.14 USD rental; external, not in the rental: engineer 400.00 USD;")


def test_uncommitted_hours_are_computed_and_a_wrong_statement_is_shown(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.plan["schedule"]["uncommitted_hours"] = 20
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert built.schedule is not None
    assert built.schedule["uncommitted_hours"] == 24
    assert built.schedule["uncommitted_source"] == "computed"
    assert report.terminal_lines(built)[-1] == (
        "  schedule: window 72 h, reserved 72 h, observed 48 h, uncommitted 24 h "
        "(computed: 72 h window - 48 h planned makespan; the plan states 20 h)"
    )


def test_unschedulable_plan_falls_back_to_the_stated_hours_and_says_why(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.plan["schedule"]["steps"][0]["after"] = ["retrieve"]  # a cycle through every step
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    line = report.terminal_lines(built)[-1]
    assert line.startswith("  schedule: window 72 h, reserved 72 h, observed 48 h, "
                           "uncommitted 24 h (as stated in plan.json, not computed: "
                           "the plan's steps cannot be scheduled: dependency cycle:")
    assert all(s.planned_start is None for s in built.steps)
    assert "No timeline" not in report.render_html([built])  # bars without times: just none drawn


def test_actual_timeline_uses_observed_hours_with_the_plans_rules(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    observed = builder.manifest["schedule"]["steps"]
    next(s for s in observed if s["id"] == "train-control")["observed_hours"] = 20  # +6 h
    builder.manifest["schedule"]["deviations"] = [
        {"step": "train-control", "explanation": "slower data loader"}]
    builder.manifest["schedule"]["steps"] = [s for s in observed if s["id"] != "check-data"]
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    steps = {s.id: s for s in built.steps}
    assert (steps["train-control"].planned_end, steps["train-control"].actual_end) == (22, 28)
    # +6 h on train-control, and check-data (2 h on gpu0) was not observed: 48 + 6 - 2.
    assert (steps["retrieve"].planned_end, steps["retrieve"].actual_end) == (48, 52)
    assert steps["train-control"].explanation == "slower data loader"
    assert (steps["check-data"].observed_hours, steps["check-data"].actual_start) == (None, None)
    assert built.schedule is not None
    assert built.schedule["actual_makespan_hours"] == 52


def test_terminal_text_never_carries_control_characters(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.manifest["budget"]["external_expenses"] = [{"label": HOSTILE, "amount": "1.00"}]
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    text = "\n".join(report.terminal_lines(built))
    assert "\x1b" not in text
    assert "\\x1b[2J" in text


@pytest.mark.parametrize(
    ("verdicts", "overall"),
    [(("accepted", "accepted"), "accepted"), (("accepted", "incomplete"), "incomplete"),
     (("incomplete", "rejected"), "rejected")],
)
def test_several_campaigns_take_the_worst_verdict(verdicts: tuple[str, ...], overall: str) -> None:
    reports = [report.CampaignReport(f"c{i}", f"/c{i}", v, (), None, None, 0)
               for i, v in enumerate(verdicts)]
    assert report.overall_verdict(reports) == overall


# ------------------------------------------------------------ pytest runs


def test_terminal_summary_has_verdict_runs_budget_schedule(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = run(pytester)
    assert result.ret == 0
    lines = summary(result)
    assert lines[1].startswith("campaign tiny-2026-11: ACCEPTED — ")
    assert lines[2:7] == [
        "  run           role          category  status    checks passed",
        "  control       control       must      accepted  6/6",
        "  data-check    data_check    must      accepted  6/6",
        "  resume-check  resume_check  must      accepted  6/6",
        "  variant-a     variant       useful    accepted  6/6",
    ]
    assert lines[7:] == [
        "  budget: 47.14 USD engaged (lots: rtx4090-3d (3 d, 47.14 USD)); 1 accepted corpus; "
        "47.14 USD per corpus",
        "  schedule: window 72 h, reserved 72 h, observed 48 h, uncommitted 24 h "
        "(computed: 72 h window - 48 h planned makespan)",
    ]


def test_rejected_summary_counts_failures_and_the_runs_failing_items(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    with (campaign.root / "runs/variant-a/predictions.jsonl").open("ab") as handle:
        handle.write(b"\n")  # its files-intact item fails: one of variant-a's 4 items
    campaign.seal()
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = result.parseoutcomes()["failed"]
    total = failed + result.parseoutcomes()["passed"]
    expect(result, f"campaign tiny-2026-11: REJECTED — {failed} of {total} checks failed",
           "  variant-a     variant       useful    accepted  5/6")


@pytest.mark.parametrize("color", ["yes", "no"])
def test_summary_respects_color(
    pytester: pytest.Pytester, campaign: CampaignBuilder, color: str
) -> None:
    campaign.write()
    result = run(pytester, f"--color={color}")
    verdict = next(line for line in result.stdout.lines if "tiny-2026-11: ACCEPTED" in line)
    assert ("\x1b[32m" in verdict) is (color == "yes"), repr(verdict)


def test_every_format_is_written_and_announced(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = run(pytester, "--itera-report", "r/x.json", "--itera-report", "r/deep/x.md",
                 "--itera-report", "r/x.html")
    assert result.ret == 0
    for rel in ("r/x.json", "r/deep/x.md", "r/x.html"):
        assert (pytester.path / rel).stat().st_size > 500
        result.stdout.fnmatch_lines([f"closure report: {pytester.path / rel}"])
    leftovers = [p.name for p in (pytester.path / "r").rglob("*") if p.name.startswith(".")]
    assert leftovers == []  # written through a temporary file, renamed into place
    # Readable as any file the user writes (not mkstemp's 0600): CI artifacts, a team folder.
    umask = os.umask(0o022)
    os.umask(umask)
    for rel in ("r/x.json", "r/deep/x.md", "r/x.html"):
        assert (pytester.path / rel).stat().st_mode & 0o777 == 0o666 & ~umask


def test_json_report_matches_its_schema(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.files["analysis.md"] = b""
    campaign.write()
    run(pytester, "--itera-report", "report.json")
    data = json.loads((pytester.path / "report.json").read_text())
    validate_report(data)
    assert data["verdict"] == "rejected"
    assert data["schedule"]["uncommitted_source"] == "computed"
    assert {r["id"]: (r["passed"], r["total"]) for r in data["runs"]}["control"] == (6, 6)
    assert len(data["steps"]) == len(campaign.plan["schedule"]["steps"])
    data["verdict"] = "fine"  # the schema is not a rubber stamp
    with pytest.raises(jsonschema.ValidationError):
        validate_report(data)


def test_json_report_for_two_campaigns(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    other = CampaignBuilder(pytester.path / "other")
    other.files["RELOAD.md"] = b""
    other.write()
    run(pytester, "--itera-campaign", "other", "--itera-report", "both.json")
    data = json.loads((pytester.path / "both.json").read_text())
    validate_report(data)
    assert data["verdict"] == "rejected"
    assert [c["verdict"] for c in data["campaigns"]] == ["accepted", "rejected"]


def test_markdown_report(pytester: pytest.Pytester, campaign: CampaignBuilder) -> None:
    campaign.files["analysis.md"] = b""
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "validate", "explanation": "a | pipe and <b>html</b> and ``` fences"}]
    campaign.write()
    run(pytester, "--itera-report", "report.md")
    text = (pytester.path / "report.md").read_text()
    for heading in ("# Campaign tiny-2026-11", "## Runs", "## Budget", "## Schedule",
                    "## Planned vs actual", "## Failures"):
        assert f"\n{heading}\n" in f"\n{text}"
    assert "**campaign tiny-2026-11: REJECTED — 2 of " in text
    assert "| control | control | must | accepted | 6/6 |" in text
    row = "| validate | validation | gpu0 | 4 | 4 | = | a \\| pipe and &lt;b&gt;html&lt;/b&gt;"
    assert row in text
    assert "- **failed** out/manifest.json::no-empty-files" in text
    assert "analysis.md is empty" in text
    assert "<b>" not in text


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_html_report_is_self_contained_and_draws_every_step(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    observed = campaign.manifest["schedule"]["steps"]
    campaign.manifest["schedule"]["steps"] = [s for s in observed if s["id"] != "check-data"]
    campaign.write()
    run(pytester, "--itera-report", "report.html")
    text = (pytester.path / "report.html").read_text()
    root = ET.fromstring(text.split("\n", 1)[1])  # well-formed (after the doctype)
    svg = [e for e in root.iter() if e.tag == "svg"]
    assert len(svg) == 1
    bars = [e for e in svg[0].iter("rect") if "bar" in e.get("class", "").split()]
    planned = [e.get("data-step") for e in bars if "planned" in e.get("class", "")]
    actual = [e.get("data-step") for e in bars if "actual" in e.get("class", "")]
    steps = [s["id"] for s in campaign.plan["schedule"]["steps"]]
    assert sorted(planned) == sorted(steps)
    assert sorted(actual) == sorted(set(steps) - {"check-data"})
    texts = ["".join(e.itertext()) for e in svg[0].iter("text")]
    assert "window edge 72 h" in texts
    assert "uncommitted 24 h" in texts
    assert any(e.get("class") == "uncommitted" for e in svg[0].iter("rect"))
    panel = [e for e in root.iter("div") if "budget" in e.get("class", "")]
    assert "cost per corpus" in "".join(panel[0].itertext())
    _assert_offline(text)


def _assert_offline(text: str) -> None:
    lowered = text.lower()
    for needle in ("http://", "https://", "url(", "<script", "<link", "<img", "@import", "src="):
        assert needle not in lowered, needle
    parser = _Collect()
    parser.feed(text)
    assert not [attrs for _, attrs in parser.tags if "href" in attrs or "src" in attrs]


def test_hostile_campaign_text_is_escaped_everywhere(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["deviations"] = [{"step": "validate", "explanation": HOSTILE}]
    campaign.manifest["budget"]["external_expenses"] = [{"label": HOSTILE, "amount": "1.00"}]
    campaign.files["<script>alert(2)<!--.txt"] = b"https://evil.example/\n"  # unlisted: fails
    campaign.unlisted.add("<script>alert(2)<!--.txt")
    campaign.write()
    result = run(pytester, "--color=no", "--itera-report", "r.html", "--itera-report", "r.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "\x1b" not in result.stdout.str()
    html_text = (pytester.path / "r.html").read_text()
    ET.fromstring(html_text.split("\n", 1)[1])
    _assert_offline(html_text)
    assert "&lt;script&gt;alert(2)&lt;!--.txt" in html_text  # the failing item's message
    assert "see https:&#47;&#47;evil.example" in html_text  # shown as text, not a URL
    md = (pytester.path / "r.md").read_text()
    outside_fences = re.sub(r"```text\n.*?\n```", "", md, flags=re.S)
    assert "<script>" in md  # inside a fenced failure message: shown as code
    assert "<script>" not in outside_fences
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md


def test_report_that_cannot_be_written_fails_the_run(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    (pytester.path / "blocker").write_text("a file, not a folder")
    result = run(pytester, "--itera-report", "blocker/report.json")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    target = pytester.path / "blocker" / "report.json"
    result.stdout.fnmatch_lines([f"closure report NOT written: {target}: *"])
    result.stdout.no_fnmatch_line("closure report: *")


def test_unknown_report_type_is_a_usage_error(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = run(pytester, "--itera-report", "report.pdf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*report.pdf: unknown report type; use a .json, .md or .html*"])
