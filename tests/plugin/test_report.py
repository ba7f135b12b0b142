"""The closure report: terminal summary, JSON (and its schema), Markdown, self-contained HTML."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_itera import report
from pytest_itera.checks import Context, Options
from pytest_itera.checks import contract as contract_family
from pytest_itera.checks import files as files_family
from pytest_itera.checks.engine import judge
from pytest_itera.core.campaign import load_campaign
from tests.factory import CampaignBuilder, expect
from tests.runner import SAME_REPORT, Itera, only_xdist

HOSTILE = "<script>alert(1)</script> see https://evil.example/x.png \x1b[2J"
# Why a test of what a report says runs in one xdist mode (tests/plugin/conftest.py).
CONTENT = f"{SAME_REPORT}, and each format renders that one report model"



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
        for target in judge(ctx).targets(check):
            if target is not None:
                owners = judge(ctx).runs_of(check, target)
                assert report.runs_of(manifest, check.scope, target) == owners
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


def summary_line(built: report.CampaignReport, start: str) -> str:
    """The summary's one line that starts with ``start`` (the notes follow it, if any)."""
    [line] = [line for line in report.terminal_lines(built) if line.startswith(start)]
    return line


def test_zero_accepted_budget_says_undefined_with_cause(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.manifest["budget"].update(
        accepted_deliverables=0, cost_per_deliverable=None,
        rejection_cause="no variant passed its checks",
    )
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert summary_line(built, "  budget:") == (
        "  budget: 47.14 USD engaged (lots: rtx4090-3d (3 d, 47.14 USD)); 0 accepted corpora; "
        "cost per corpus undefined: 0 accepted — cause no variant passed its checks"
    )


def test_engaged_total_adds_included_expenses_never_external_ones(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.manifest["budget"]["included_expenses"] = [
        {"label": "storage", "amount": "2.86", "source": {"reference": "invoice 2026-118"}}]
    builder.manifest["budget"]["external_expenses"] = [{"label": "engineer", "amount": "400.00"}]
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert built.budget is not None
    assert (built.budget["engaged_total"], built.budget["rental_total"]) == ("50.00", "47.14")
    validate_report(report.to_json([built]))  # expenses with their sources; no provenance
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
    assert summary_line(built, "  schedule:") == (
        "  schedule: window 72 h, reserved 72 h, observed 48 h, uncommitted 24 h "
        "(computed: 72 h window - 48 h planned makespan; the plan states 20 h)"
    )


def test_unschedulable_plan_falls_back_to_the_stated_hours_and_says_why(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.plan["schedule"]["steps"][0]["after"] = ["retrieve"]  # a cycle through every step
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    line = summary_line(built, "  schedule:")
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


def test_a_reopened_campaign_says_so_in_every_rendering(tmp_path: Path) -> None:
    """Issue 26, point 2: the reopenings the journal records, under the verdict."""
    builder = CampaignBuilder(tmp_path / "camp")
    events = [{"event": "reopen", "reason": f"repair {n}", "manifest_sha256": None,
               "at": "2026-11-21T10:00:00Z"} for n in (1, 2)]
    builder.files["itera-journal.jsonl"] = b"".join(
        json.dumps(e).encode() + b"\n" for e in events[:1])
    builder.write()
    built = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert built.reopened == ("repair 1",)
    assert report.terminal_lines(built)[1] == "  reopened once: repair 1"
    reopened = "reopened at 2026-11-21T10:00:00Z after its closure: repair 1"
    assert f"- {reopened}" in report.render_markdown([built])
    assert (f'<ul class="interruptions"><li>{reopened}</li></ul>'
            in report.render_html([built]))
    data = json.loads(report.render_json([built]))
    assert data["reopened"] == ["repair 1"]
    validate_report(data)
    (builder.root / "itera-journal.jsonl").write_bytes(b"".join(
        json.dumps(e).encode() + b"\n" for e in events))
    again = report.build(load_campaign(builder.root), [], collected=1, fast=False)
    assert again.reopened_text == "reopened 2 times: repair 1; repair 2"


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
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--color=no")  # (--color=yes: test_summary_respects_color)
    assert result.ret == 0
    lines = summary(result)
    assert lines[1].startswith("campaign tiny-2026-11: ACCEPTED — ")
    assert "\x1b[32m" not in lines[1]
    assert [re.sub(r"\d+/\d+$", "n/n", line) for line in lines[2:7]] == [
        "  run           role          category  status    checks passed",
        "  control       control       must      accepted  n/n",
        "  data-check    data_check    must      accepted  n/n",
        "  resume-check  resume_check  must      accepted  n/n",
        "  variant-a     variant       useful    accepted  n/n",
    ]
    assert all(line.split()[-1].split("/")[0] == line.split()[-1].split("/")[1]
               for line in lines[3:7])
    assert lines[7:9] == [
        "  budget: 47.14 USD engaged (lots: rtx4090-3d (3 d, 47.14 USD)); 1 accepted corpus; "
        "47.14 USD per corpus",
        "  schedule: window 72 h, reserved 72 h, observed 48 h, uncommitted 24 h "
        "(computed: 72 h window - 48 h planned makespan)",
    ]


def test_rejected_summary_counts_failures_and_the_runs_failing_items(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    with (campaign.root / "runs/variant-a/predictions.jsonl").open("ab") as handle:
        handle.write(b"\n")  # its files-intact item fails: one of variant-a's 4 items
    campaign.seal()
    result = itera()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = result.parseoutcomes()["failed"]
    total = failed + result.parseoutcomes()["passed"]
    expect(result, f"campaign tiny-2026-11: REJECTED — {failed} of {total} checks failed")
    row = next(line for line in result.stdout.lines if line.startswith("  variant-a "))
    passed, ran = map(int, row.split()[-1].split("/"))
    assert passed == ran - 1


def test_summary_respects_color(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    result = itera("--color=yes")  # (--color=no: test_terminal_summary_has_verdict_...)
    verdict = next(line for line in result.stdout.lines if "tiny-2026-11: ACCEPTED" in line)
    assert "\x1b[32m" in verdict, repr(verdict)


def test_every_format_is_written_and_announced(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--itera-report", "r/x.json", "--itera-report", "r/deep/x.md",
                   "--itera-report", "r/x.html")
    assert result.ret == 0
    for rel in ("r/x.json", "r/deep/x.md", "r/x.html"):
        assert (pytester.path / rel).stat().st_size > 500
        result.stdout.fnmatch_lines([f"closure report: {pytester.path / rel}"])
    # The session's report carries the evidence (through the campaign's Context, also on the
    # pytest-xdist controller): the recomputed decision metrics, the Markdown's chart files.
    html_text = (pytester.path / "r/x.html").read_text()
    assert 'id="results"' in html_text
    assert "recomputed (accuracy) from runs/variant-a/predictions.jsonl" in html_text
    md = (pytester.path / "r/deep/x.md").read_text()
    assert "![accuracy per run against the threshold (dashed line)](x.charts/results.svg)" in md
    assert (pytester.path / "r/deep/x.charts/results.svg").is_file()
    leftovers = [p.name for p in (pytester.path / "r").rglob("*") if p.name.startswith(".")]
    assert leftovers == []  # written through a temporary file, renamed into place
    # Readable as any file the user writes (not mkstemp's 0600): CI artifacts, a team folder.
    umask = os.umask(0o022)
    os.umask(umask)
    for rel in ("r/x.json", "r/deep/x.md", "r/x.html"):
        assert (pytester.path / rel).stat().st_mode & 0o777 == 0o666 & ~umask


def rejected_report(itera: Itera, campaign: CampaignBuilder) -> dict[str, Any]:
    """The validated JSON report of the campaign with an empty analysis (two items fail)."""
    campaign.files["analysis.md"] = b""
    campaign.write()
    itera("--itera-report", "report.json")
    data: dict[str, Any] = json.loads((itera.pytester.path / "report.json").read_text())
    validate_report(data)
    return data


@pytest.mark.one_mode(CONTENT)
def test_json_report_matches_its_schema(itera: Itera, campaign: CampaignBuilder) -> None:
    data = rejected_report(itera, campaign)
    assert data["verdict"] == "rejected"
    assert data["schedule"]["uncommitted_source"] == "computed"
    passed, total = {r["id"]: (r["passed"], r["total"]) for r in data["runs"]}["control"]
    assert passed == total > 5
    assert len(data["steps"]) == len(campaign.plan["schedule"]["steps"])
    data["verdict"] = "fine"  # the schema is not a rubber stamp
    with pytest.raises(jsonschema.ValidationError):
        validate_report(data)


def test_json_report_for_two_campaigns(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    other = CampaignBuilder(pytester.path / "other")
    other.files["RELOAD.md"] = b""
    other.write()
    itera("--itera-campaign", "other", "--itera-report", "both.json")
    data = json.loads((pytester.path / "both.json").read_text())
    validate_report(data)
    assert data["verdict"] == "rejected"
    assert [c["verdict"] for c in data["campaigns"]] == ["accepted", "rejected"]


@pytest.mark.one_mode(CONTENT)
def test_markdown_report(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.files["analysis.md"] = b""
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "validate", "explanation": "a | pipe and <b>html</b> and ``` fences"}]
    campaign.write()
    itera("--itera-report", "report.md")
    text = (pytester.path / "report.md").read_text()
    for heading in ("# Campaign tiny-2026-11", "## Runs", "## Budget", "## Schedule",
                    "## Planned vs actual", "## Failures"):
        assert f"\n{heading}\n" in f"\n{text}"
    assert "**campaign tiny-2026-11: REJECTED — 2 of " in text
    assert re.search(r"\| control \| control \| must \| accepted \| (\d+)/\1 \|", text)
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


@pytest.mark.one_mode(CONTENT)
def test_html_report_is_self_contained_and_draws_every_step(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    observed = campaign.manifest["schedule"]["steps"]
    campaign.manifest["schedule"]["steps"] = [s for s in observed if s["id"] != "check-data"]
    campaign.write()
    itera("--itera-report", "report.html")
    text = (pytester.path / "report.html").read_text()
    root = ET.fromstring(text.split("\n", 1)[1])  # well-formed (after the doctype)
    svg = [e for e in root.iter() if e.tag == "svg" and e.get("class") == "timeline"]
    assert len(svg) == 1
    bars = [e for e in svg[0].iter("rect") if "bar" in e.get("class", "").split()]
    planned = [e.get("data-step", "") for e in bars if "planned" in e.get("class", "")]
    actual = [e.get("data-step", "") for e in bars if "actual" in e.get("class", "")]
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


@pytest.mark.one_mode("what the reports and the items' failure text say: workers send that text "
                      "as written, and test_gate.py checks the terminal's hygiene in every mode")
def test_hostile_campaign_text_is_escaped_everywhere(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["deviations"] = [{"step": "validate", "explanation": HOSTILE}]
    campaign.manifest["budget"]["external_expenses"] = [{"label": HOSTILE, "amount": "1.00"}]
    campaign.files["<script>alert(2)<!--.txt"] = b"https://evil.example/\n"  # unlisted: fails
    campaign.unlisted.add("<script>alert(2)<!--.txt")
    campaign.write()
    result = itera("--color=no", "--itera-report", "r.html", "--itera-report", "r.md")
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
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    (pytester.path / "blocker").write_text("a file, not a folder")
    result = itera("--itera-report", "blocker/report.json")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    target = pytester.path / "blocker" / "report.json"
    result.stdout.fnmatch_lines([f"closure report NOT written: {target}: *"])
    result.stdout.no_fnmatch_line("closure report: *")


# ------------------------------------------------------------ a report that stands on its own


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.one_mode(CONTENT)
def test_json_report_stands_on_its_own(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    data = rejected_report(itera, campaign)
    assert data["format"] == "itera-report/3"
    assert data["question"] == campaign.plan["question"]
    assert data["decision_rule"] == ("a variant meets the objective when accuracy >= 0.8 "
                                     "(higher is better)")
    assert data["conclusion"]["meets_threshold"] == ["variant-a"]
    assert data["plan_sha256"] == _sha256(campaign.root / "plan.json")
    assert data["manifest_sha256"] == _sha256(campaign.root / "manifest.json")
    prov = data["provenance"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", prov["created"])
    *command, basetemp = prov["command"]  # pytester adds --basetemp
    assert command == ["pytest", *itera.args("--itera-report", "report.json")]
    assert basetemp.startswith("--basetemp=")
    assert prov["cwd"] == str(pytester.path)
    here = prov["pytest_process"]
    assert (here["pytest"], here["python"], here["torch"]) == (
        pytest.__version__, platform.python_version(), metadata.version("torch"))
    assert here["plugin"] == metadata.version("pytest-itera")
    there = prov["reload_interpreter"]
    assert (there["python"], there["torch"], there["probed"]) == (
        platform.python_version(), metadata.version("torch"), True)
    assert there["safetensors"] == metadata.version("safetensors")
    # What each reload found, per checkpoint.
    reloads = {r["path"]: r for r in data["reloads"]}
    assert set(reloads) == {c["path"] for c in campaign.manifest["checkpoints"]}
    for path, found in reloads.items():
        assert (found["ok"], found["format"]) == (True, "torch")
        assert found["tensors"] > 0
        assert found["seconds"] >= 0
        assert found["bytes"] == (campaign.root / path).stat().st_size
        assert (found["nonfinite_tensors"], found["nan_values"], found["inf_values"]) == (0, 0, 0)
        assert "model" in found["parts"]
        # The loader child's sandbox, layer by layer: no new privileges and no file writes
        # hold on any Linux; every layer is either in force or missing with its reason.
        assert {"no_new_privs", "rlimit_fsize"} <= set(found["sandbox"])
        layers = set(found["sandbox"]) | {m.split(":")[0] for m in found["sandbox_missing"]}
        assert {"seccomp", "network_namespace", "rlimit_cpu"} <= layers
        assert found["holds_code"] == []
    # Findings as fields, with a stable code: <check id>.<kind of problem>.
    failing = next(c for c in data["checks"] if c["check"] == "no-empty-files")
    finding, = failing["findings"]
    assert finding["code"] == "no-empty-files.empty-file"
    assert (finding["where"], finding["hint"]) == (
        "analysis.md", "an empty output is not a verified output: rerun the step that writes it")
    assert finding["message"] == "analysis.md is empty (listed in the manifest)"
    passing = next(c for c in data["checks"] if c["outcome"] == "passed")
    assert passing["findings"] == []
    broken = json.loads(json.dumps(data))
    del broken["checks"][0]["findings"]
    with pytest.raises(jsonschema.ValidationError):
        validate_report(broken)
    broken = json.loads(json.dumps(data))
    broken["reloads"][0]["tensors"] = -1
    with pytest.raises(jsonschema.ValidationError):
        validate_report(broken)


def test_a_finding_keeps_its_own_code() -> None:
    from pytest_itera.checks.closure import FindingFacts
    from pytest_itera.core.findings import Finding

    own = FindingFacts.of(Finding("bad", where="a.json", code="files-intact.sha256"), "x")
    assert (own.code, own.where) == ("files-intact.sha256", "a.json")
    assert FindingFacts.of(Finding("bad"), "files-intact").code == "files-intact"


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [(("passed", "waived"), "accepted with waivers"), (("passed", "skipped"), "incomplete"),
     (("waived", "failed"), "rejected"), (("passed",), "accepted")],
)
def test_verdict_of_waived_and_skipped_items(outcomes: tuple[str, ...], expected: str) -> None:
    checks = [report.CheckResult("c", None, o, "", f"n{i}") for i, o in enumerate(outcomes)]
    assert report.verdict(checks, collected=len(checks), fast=False) == expected


@pytest.mark.one_mode(CONTENT)
def test_markdown_opens_with_the_objective_and_puts_failures_first_when_rejected(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    analysis = campaign.files["analysis.md"]
    campaign.files["analysis.md"] = b""
    campaign.write()
    itera("--itera-report", "bad.md", "-k", "empty or analysis")
    bad = (pytester.path / "bad.md").read_text()
    assert bad.index("**Question:**") < bad.index("**Decision rule:**") < bad.index(
        "**Conclusion:**") < bad.index("REJECTED")
    assert bad.index("## Failures") < bad.index("## Runs") < bad.index("## Provenance")
    campaign.files["analysis.md"] = analysis
    campaign.write()
    itera("--itera-report", "good.md")
    good = (pytester.path / "good.md").read_text()
    assert good.index("## Runs") < good.index("## Checkpoints as reloaded") < good.index(
        "## Failures")
    assert "| runs/variant-a/weights.pt | torch | yes | model |" in good
    assert "| reload interpreter | pytest-itera " not in good  # its own versions, not ours
    assert re.search(r"\| reload interpreter \| Python [\d.]+, torch [^,]+, numpy", good)


@pytest.mark.one_mode(CONTENT)
def test_timeline_bars_carry_visible_labels(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    itera("--itera-report", "report.html", "-k", "manifest")
    text = (pytester.path / "report.html").read_text()
    root = ET.fromstring(text.split("\n", 1)[1])
    svg = next(e for e in root.iter() if e.tag == "svg" and e.get("class") == "timeline")
    labels = ["".join(e.itertext()) for e in svg.iter("text") if e.get("class") == "label"]
    bars = [e for e in svg.iter("rect") if "bar" in e.get("class", "").split()]
    assert len(labels) == len(bars) > 0
    assert "train-control 14 h" in labels
    objective = next(e for e in root.iter("dl") if e.get("class") == "objective")
    assert "".join(objective.itertext()).startswith("Question")


@pytest.mark.one_mode(CONTENT)
def test_a_checkpoint_that_holds_code_is_named_in_the_report(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, tmp_path: Path
) -> None:
    """The JSON report keeps what the pickle walk found (refused unloaded), as a field."""
    from tests import checkpoints

    marker = tmp_path / "pwned"
    evil = checkpoints.hostile_checkpoint(tmp_path, marker)
    campaign.files["runs/variant-a/evil.pt"] = evil.read_bytes()
    campaign.manifest["checkpoints"].append(
        {"path": "runs/variant-a/evil.pt", "run": "variant-a", "format": "torch",
         "kind": "weights"})
    campaign.write()
    itera("-k", "checkpoint-reloads", "--itera-report", "r.json")
    data = json.loads((pytester.path / "r.json").read_text())
    validate_report(data)
    found = next(r for r in data["reloads"] if r["path"] == "runs/variant-a/evil.pt")
    assert (found["ok"], found["holds_code"]) == (False, ["posix.system"])
    assert not marker.exists()


@only_xdist("absent")  # the session's own outputs; the process model is not the point
def test_a_report_written_inside_is_left_out_of_the_next_acceptance(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """Issue 26.6, as the user met it: accepted, the reports written inside the campaign
    with --itera-report-inside; the next acceptance recognises them by their content, leaves
    them out and says so, and is ACCEPTED again. A file that only looks like one is judged."""
    campaign.write()
    first = itera("--itera-report-inside", "--itera-report", "out/reports/closure.json",
                  "--itera-report", "out/closure.md", "--itera-report", "out/closure.html")
    assert first.ret == 0
    again = itera("--itera-require-accepted")
    assert again.ret == 0, again.stdout.str()
    expect(again, "campaign tiny-2026-11: ACCEPTED — * checks",
           "  note: not judged: closure.charts/results.svg, a closure report's chart (SVG) "
           "that pytest-itera wrote inside the campaign (not part of it; unlisted)",
           "  note: not judged: closure.html, a closure report (HTML) that pytest-itera wrote "
           "inside the campaign (not part of it; unlisted)",
           "  note: not judged: closure.md, a closure report (Markdown) that pytest-itera "
           "wrote inside the campaign (not part of it; unlisted)",
           "  note: not judged: reports/closure.json, a closure report (itera-report/3) that "
           "pytest-itera wrote inside the campaign (not part of it; unlisted)")
    (campaign.root / "reports/other.json").write_text('{"format": "itera-report/x"}\n')
    impostor = itera()
    assert impostor.ret == pytest.ExitCode.TESTS_FAILED
    expect(impostor, "reports/other.json: reports/other.json is in the campaign folder but "
           "not listed in the manifest")
    for rel in ("reports/closure.json", "reports/other.json", "closure.md", "closure.html"):
        (campaign.root / rel).unlink()  # the folder as written (the fixture checks it)
    (campaign.root / "reports").rmdir()
    shutil.rmtree(campaign.root / "closure.charts")  # the Markdown report's charts
