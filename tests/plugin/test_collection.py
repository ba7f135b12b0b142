"""The plugin as users meet it: options, node ids, selection, inertness, the JSON report."""

from __future__ import annotations

import json

import pytest

from tests.factory import CampaignBuilder, expect
from tests.runner import BEFORE_WORKERS, SAME_REPORT, Itera


def test_inert_without_the_option(itera: Itera, pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): pass")
    result = itera(campaign=None)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*pytest-itera*")
    result.stdout.no_fnmatch_line("*campaign*")


def test_good_campaign_is_accepted_and_its_conftest_never_imported(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    marker = pytester.path / "conftest-ran"
    campaign.files["conftest.py"] = (
        b"open('conftest-ran', 'w').write('ran')\n"  # cwd: pytester.path
    )
    campaign.write()
    pytester.makepyfile(test_other="def test_not_collected(): pass")
    result = itera()
    assert not marker.exists()
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()
    assert outcomes["passed"] > 10
    result.stdout.fnmatch_lines(
        ["*= pytest-itera =*", "campaign tiny-2026-11: ACCEPTED — * checks"]
    )
    result.stdout.no_fnmatch_line("*test_not_collected*")
    assert result.ret == 0


def test_node_ids_name_check_and_target(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "out/manifest.json::manifest",
            "out/manifest.json::plan-frozen",
            "out/manifest.json::expected-ids",
            "out/manifest.json::files-intact[RELOAD.md]",
            "out/manifest.json::no-temp-paths[runs/control/predictions.jsonl]",
            "out/manifest.json::analysis-present",
        ],
        consecutive=False,
    )


def test_one_node_id_reruns_exactly_that_check(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    node = "out/manifest.json::files-intact[runs/control/measurements.jsonl]"
    result = itera(node, "-v", "-rA")
    result.assert_outcomes(passed=1)
    expect(result, f"PASSED {node}")  # the -v line differs under xdist; -rA's does not


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        (("-k", "no-empty-files"), 1),
        (("-k", "manifest and not files and not temp"), 1),
        (("-m", "itera"), None),
    ],
)
def test_selection_by_keyword_and_marker(
    itera: Itera,
    campaign: CampaignBuilder,
    selection: tuple[str, str],
    expected: int | None,
) -> None:
    campaign.write()
    result = itera(*selection)
    passed = result.parseoutcomes()["passed"]
    assert passed == expected if expected is not None else passed > 10
    if expected is not None:
        result.stdout.fnmatch_lines(["campaign tiny-2026-11: INCOMPLETE — * checks ran"])


@pytest.mark.one_mode(BEFORE_WORKERS)
def test_missing_dir_is_one_usage_error(itera: Itera) -> None:
    result = itera(campaign="nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "nowhere" in line]
    assert errors == ["ERROR: --itera-campaign: nowhere: no such directory"]


@pytest.mark.one_mode(BEFORE_WORKERS)
def test_file_given_as_campaign_is_a_usage_error(itera: Itera, pytester: pytest.Pytester) -> None:
    pytester.makefile(".txt", notes="x")
    result = itera(campaign="notes.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*notes.txt: not a directory*"])


@pytest.mark.one_mode(BEFORE_WORKERS)
def test_folder_without_plan_or_manifest_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester
) -> None:
    pytester.mkdir("results")
    result = itera(campaign="results")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        result.stderr.lines.count(
            "ERROR: --itera-campaign: results: not a campaign folder "
            "(it has neither plan.json nor manifest.json)"
        )
        == 1
    )


@pytest.mark.one_mode(BEFORE_WORKERS)
@pytest.mark.parametrize(
    ("ini", "args", "error"),
    [pytest.param("itera_timeout = soon", (), "ERROR: itera_timeout = soon: not a number",
                  id="bad-ini-value"),
     pytest.param("itera_group_files_above = lots", (),
                  "*itera_group_files_above = lots: not a whole number of files",
                  id="group-threshold-not-whole"),
     pytest.param(None, ("--itera-campaign", "./out/"), "*the same campaign is given twice*",
                  id="same-campaign-twice"),
     pytest.param(None, ("--itera-report", "out/report.json"),
                  "*out/report.json is inside the campaign*--itera-report-inside*",
                  id="report-inside-campaign"),
     pytest.param(None, ("--itera-report", "report.pdf"),
                  "*report.pdf: unknown report type; use a .json, .md or .html*",
                  id="unknown-report-type")],
)
def test_a_bad_setting_beside_a_good_campaign_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, ini: str | None,
    args: tuple[str, ...], error: str,
) -> None:
    """An ini value that is no number (the reload timeout) or no whole number of files (the
    big campaigns' ``itera_group_files_above``, issue 19), the campaign given twice, a JSON
    report inside the campaign, a report of a type no format writes: each stops the session
    before a check runs."""
    campaign.write()
    if ini is not None:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = itera(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([error])


def test_ini_twin(itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder) -> None:
    campaign.write()
    pytester.makeini("[pytest]\nitera_campaign = out\n")
    result = itera(campaign=None)
    result.stdout.fnmatch_lines(["campaign tiny-2026-11: ACCEPTED — * checks"])
    assert result.ret == 0


def test_command_line_campaign_replaces_the_ini_one(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.makeini("[pytest]\nitera_campaign = out\n")
    result = itera()
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["campaign tiny-2026-11: ACCEPTED — * checks"])


def test_campaign_outside_rootdir_has_readable_ids(
    itera: Itera, pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "camp"
    builder = CampaignBuilder(outside)
    builder.write()
    pytester.makeini("[pytest]\n")
    result = itera("--collect-only", "-q", campaign=str(outside))
    lines = [line for line in result.stdout.lines if "::" in line]
    assert lines, result.stdout.str()
    assert all(line.split("::")[0].endswith("camp/manifest.json") for line in lines)
    assert not any(line.startswith("manifest.json") for line in lines)
    full = itera(campaign=str(outside))
    full.stdout.fnmatch_lines(["campaign tiny-2026-11: ACCEPTED*"])
    assert full.ret == 0


@pytest.mark.one_mode(SAME_REPORT)
def test_json_report(itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder) -> None:
    campaign.files["analysis.md"] = b""
    campaign.write()
    result = itera("--itera-report", "report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["campaign"] == "tiny-2026-11"
    assert report["verdict"] == "rejected"
    failed = [c for c in report["checks"] if c["outcome"] == "failed"]
    assert {c["check"] for c in failed} == {"no-empty-files", "analysis-present"}
    assert all(set(c) >= {"check", "target", "outcome", "message"} for c in report["checks"])
    assert "analysis.md is empty" in failed[0]["message"]
    assert report["budget"]["engaged_total"] == "47.14"
    assert report["schedule"]["window_hours"] == 72


def test_running_from_inside_the_campaign_writes_no_cache_and_never_imports_its_conftest(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["conftest.py"] = b"open('conftest-ran', 'w').write('ran')\n"
    campaign.write()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(campaign.root)
        result = itera(campaign=".", subprocess=True, cache=True)
    assert result.ret == 0, result.stdout.str()
    assert not (campaign.root / ".pytest_cache").exists()
    assert not (campaign.root / "conftest-ran").exists()
    assert not (campaign.root / "__pycache__").exists()
