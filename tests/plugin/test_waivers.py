"""Waivers decided by the reviewer, recorded (issue 17): a waivers file, and xfail with a reason."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks import waivers
from tests.factory import CampaignBuilder, expect, expect_each
from tests.plugin.test_report import validate_report
from tests.runner import BEFORE_WORKERS, Itera

GATE = "--itera-require-accepted"
TODAY = waivers.today()
LATER = TODAY + timedelta(days=30)



def toml_waiver(check: str, target: str, *, expires: date | None = LATER,
                reason: str | None = "the analysis is in the notebook, agreed with the team",
                approved_by: str | None = "M. Reviewer", extra: str = "") -> str:
    lines = ["[[waivers]]", f"check = {check!r}", f"target = {target!r}"]
    lines += [f"reason = {reason!r}"] if reason is not None else []
    lines += [f"approved_by = {approved_by!r}"] if approved_by is not None else []
    lines += [f"expires = {expires.isoformat()}"] if expires is not None else []
    return "\n".join([*lines, extra, ""])


def empty_analysis(campaign: CampaignBuilder) -> None:
    """Two items fail: no-empty-files and analysis-present (both campaign-level)."""
    campaign.files["analysis.md"] = b""
    campaign.write()


def run_waived(itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, toml: str,
               *args: str) -> pytest.RunResult:
    """The analysis emptied (``empty_analysis``), ``toml`` as waivers.toml, and a run given
    it and ``args``."""
    empty_analysis(campaign)
    (pytester.path / "waivers.toml").write_text(toml)
    return itera("--itera-waivers", "waivers.toml", *args)


def validated(pytester: pytest.Pytester) -> dict[str, Any]:
    """The JSON report r.json, checked against its schema."""
    data: dict[str, Any] = json.loads((pytester.path / "r.json").read_text())
    validate_report(data)
    return data


# ------------------------------------------------------------------ the file


def test_a_waivers_file_in_toml_and_in_json_reads_the_same(tmp_path: Path) -> None:
    (tmp_path / "w.toml").write_text(toml_waiver("no-empty-files", "*"))
    (tmp_path / "w.json").write_text(json.dumps({"waivers": [{
        "check": "no-empty-files", "target": "*", "approved_by": "M. Reviewer",
        "reason": "the analysis is in the notebook, agreed with the team",
        "expires": LATER.isoformat()}]}))
    toml, = waivers.load(tmp_path / "w.toml")
    from_json, = waivers.load(tmp_path / "w.json")
    assert (toml.check, toml.target, toml.expires, toml.problems) == (
        "no-empty-files", "*", LATER, ())
    assert from_json.as_facts() | {"file": ""} == toml.as_facts() | {"file": ""}
    assert toml.applies(TODAY)
    assert toml.matches("no-empty-files", None)
    assert not toml.matches("no-empty-files-x", None)


def test_an_incomplete_waiver_is_kept_with_its_problems(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(toml_waiver("files-intact", "runs/*", reason=None, approved_by="  ",
                                expires=None, extra='aproved_by = "typo"'))
    waiver, = waivers.load(path)
    assert waiver.problems == (
        "has an unknown field 'aproved_by' (known: check, target, reason, approved_by, "
        "expires, campaign, code)",
        "has no reason", "has a blank approved_by", "has no expiry date (expires)",
    )
    assert not waiver.applies(TODAY)
    found = waivers.findings(waiver, on=TODAY, campaign="c", matched=3)
    assert {f.code for f in found} == {"waiver.incomplete"}


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [("w.toml", "waivers = [", "not valid TOML"),
     ("w.json", '{"waiver": []}', "unknown top-level key(s) 'waiver'"),
     ("w.yaml", "waivers: []", "use a .toml or .json file"),
     ("w.json", '{"waivers": {}}', "'waivers' must be a list of tables")],
)
def test_a_file_that_is_no_waivers_file_is_refused(
    tmp_path: Path, name: str, text: str, error: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(waivers.WaiversError, match=error.replace("(", r"\(").replace(")", r"\)")):
        waivers.load(tmp_path / name)


# ------------------------------------------------------------------ in a run


def test_waived_failures_give_accepted_with_waivers_listed_everywhere(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = run_waived(itera, pytester, campaign,
                        toml_waiver("no-empty-files", "*") + toml_waiver("analysis-present", "*"),
                        GATE, "--itera-report", "r.json", "--itera-report", "r.md",
                        "--itera-report", "r.html", "-rx")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    expect(result, "campaign tiny-2026-11: ACCEPTED WITH WAIVERS — */* checks passed, 2 waived",
           "  waived: out/manifest.json::analysis-present — waived by M. Reviewer until "
           f"{LATER}: the analysis is in the notebook, agreed with the team")
    result.stdout.fnmatch_lines(["XFAIL out/manifest.json::no-empty-files - waived by M. "
                                 f"Reviewer until {LATER} (*waivers.toml #1): the analysis*"])
    data = validated(pytester)
    assert data["verdict"] == "accepted with waivers"
    checks = {c["check"]: c for c in data["checks"]}
    waived = checks["no-empty-files"]
    assert waived["outcome"] == "waived"
    assert "analysis.md is empty" in waived["message"]  # the failure is kept, not erased
    assert waived["waiver"]["approved_by"] == "M. Reviewer"
    assert checks["waiver"]["outcome"] == "passed"  # the waivers' own items passed
    assert sorted((w["check"], w["nodeids"]) for w in data["waivers"]) == [
        ("analysis-present", ["out/manifest.json::analysis-present"]),
        ("no-empty-files", ["out/manifest.json::no-empty-files"])]
    md = (pytester.path / "r.md").read_text()
    assert "## Waivers applied" in md
    assert "- **waived** out/manifest.json::no-empty-files — waived by M. Reviewer" in md
    assert "Waivers applied" in (pytester.path / "r.html").read_text()


def test_waivers_under_xdist(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """Workers mark and judge; the controller reads the waiver from each report."""
    result = run_waived(itera, pytester, campaign,
                        toml_waiver("no-empty-files", "*")
                        + toml_waiver("files-intact", "nothing/*"),
                        "-k", "empty or waiver", "--itera-report", "r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the unmatched waiver's own item
    data = validated(pytester)
    outcomes = {c["nodeid"]: c["outcome"] for c in data["checks"]}
    assert outcomes["out/manifest.json::no-empty-files"] == "waived"
    assert outcomes["out/manifest.json::waiver[1-no-empty-files]"] == "passed"
    assert outcomes["out/manifest.json::waiver[2-files-intact]"] == "failed"
    assert [w["nodeids"] for w in data["waivers"]] == [["out/manifest.json::no-empty-files"]]


@pytest.mark.one_mode("what a waiver item says: test_waivers_under_xdist shows the waiver items "
                      "judged on the workers in every xdist mode")
def test_an_expired_waiver_waives_nothing_and_fails(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    today = waivers.today()  # now, not at import: a suite that runs across midnight
    yesterday = today - timedelta(days=1)
    result = run_waived(itera, pytester, campaign,
                        toml_waiver("no-empty-files", "*", expires=yesterday)
                        + toml_waiver("analysis-present", "*"),
                        "-k", "empty or analysis or waiver")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes["xfailed"]) == (2, 1)  # the item and its waiver
    expect(result, f"*waivers.toml waivers[0]: waiver #1 (no-empty-files '*') expired on "
           f"{yesterday}: it waives nothing",
           f"    expected: an expiry date on or after {today}")
    expect_each(result, "FAILED out/manifest.json::no-empty-files*",  # in the order they finish
                "FAILED out/manifest.json::waiver[1-no-empty-files]*")


@pytest.mark.one_mode("what a waiver item says: test_waivers_under_xdist shows the waiver items "
                      "judged on the workers in every xdist mode")
def test_an_incomplete_or_unmatched_waiver_is_a_failing_item(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = run_waived(itera, pytester, campaign,
                        toml_waiver("no-empty-files", "*", approved_by=None)
                        + toml_waiver("files-intact", "runs/nothing-here/*"),
                        "-k", "empty or waiver")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Each waiver item's failure, in the order the items finish (any, under xdist).
    expect_each(result, "*waivers[0]: waiver #1 has no approver (approved_by): it waives nothing",
           "*waivers[1]: waiver #2 matches no item of campaign tiny-2026-11: check "
           "'files-intact', target 'runs/nothing-here/*'")
    result.stdout.fnmatch_lines(["FAILED out/manifest.json::no-empty-files*"])  # not waived


@pytest.mark.one_mode(BEFORE_WORKERS)
def test_the_waivers_file_must_stay_outside_the_campaign(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.files["waivers.toml"] = toml_waiver("no-empty-files", "*").encode()
    campaign.write()
    result = itera("--itera-waivers", "out/waivers.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --itera-waivers: out/waivers.toml is inside the "
                                 "campaign */out: keep it outside*"])
    pytester.makeini("[pytest]\nitera_waivers = out/waivers.toml\n")
    assert itera().ret == pytest.ExitCode.USAGE_ERROR


def test_the_ini_twin_is_relative_to_the_ini_file(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    empty_analysis(campaign)
    (pytester.path / "ci").mkdir()
    (pytester.path / "ci" / "waivers.json").write_text(json.dumps({"waivers": [
        {"check": "no-empty-files", "target": "*", "reason": "agreed", "approved_by": "M. R.",
         "expires": LATER.isoformat(), "campaign": "tiny-*"}]}))
    pytester.makeini("[pytest]\nitera_waivers = ci/waivers.json\n")
    result = itera("-k", "empty or waiver")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, xfailed=1)


# ------------------------------------------------------------------ xfail from a conftest

XFAIL_CONFTEST = '''
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "no-empty-files":
            item.add_marker(pytest.mark.xfail(reason=REASON))
'''


@pytest.mark.parametrize("reason", ["'the analysis ships in a later lot'", "''"],
                         ids=["with-reason", "without"])
def test_an_xfail_is_a_waiver_only_with_a_reason(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, reason: str
) -> None:
    empty_analysis(campaign)
    pytester.makeconftest(XFAIL_CONFTEST.replace("REASON", reason))
    args = ("-k", "empty", "--itera-report", "r.json")
    plain = itera(*args)
    assert plain.ret == pytest.ExitCode.OK  # pytest's semantics: an xfail is not a failure
    data = validated(pytester)
    item, = (c for c in data["checks"] if c["check"] == "no-empty-files")
    if reason != "''":
        assert item["outcome"] == "waived"
        assert item["waiver"] == {"source": "xfail", "reason": "the analysis ships in a later lot",
                                  "approved_by": None, "expires": None, "check": None,
                                  "target": None, "file": None, "code": None}
        return
    assert item["outcome"] == "failed"  # no reason: no waiver, the failure stands
    assert item["message"].startswith("an xfail without a reason waives nothing")
    assert data["verdict"] == "rejected"
    gated = itera(*args, GATE)
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    expect(gated, f"{GATE}: exit status 1: campaign tiny-2026-11: REJECTED — 1 of * checks failed")
