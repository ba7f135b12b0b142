"""Big campaigns (issue 19): above ``itera_group_files_above`` listed files, the per-file
checks get one item per folder, ``<folder>/*``, whose message names every failing file and
whose report lists every finding; the verdict and runs table are the ungrouped run's."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest

from tests.factory import CampaignBuilder, expect
from tests.runner import SAME_REPORT, Itera, only_xdist

FOLDERS = ("extra/a", "extra/b", "extra/c")
GROUPED = "[pytest]\nitera_group_files_above = 20\n"
# Why a test of what a grouped item says runs in one xdist mode (tests/plugin/conftest.py).
GROUPED_TEXT = ("what a folder's item says: test_same_items_with_and_without_xdist shows the "
                "grouped items and their outcomes the same with xdist on")


def add_files(campaign: CampaignBuilder) -> None:
    """60 small listed files in 3 folders, beside the default campaign's own."""
    for folder in FOLDERS:
        for n in range(20):
            campaign.files[f"{folder}/f{n:02d}.txt"] = f"{folder} file {n}\n".encode()


def corrupt(campaign: CampaignBuilder, *relpaths: str) -> None:
    for relpath in relpaths:
        (campaign.root / relpath).write_bytes(b"changed in transfer\n")
    campaign.seal()



def report(pytester: pytest.Pytester, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text())
    return data


def test_many_files_get_one_item_per_folder(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    add_files(campaign)
    campaign.write()
    pytester.makeini(GROUPED)
    result = itera("--collect-only", "-q", "-k", "files-intact or no-temp-paths")
    ids = [line for line in result.stdout.lines if line.startswith("out/manifest.json::")]
    for check in ("files-intact", "no-temp-paths"):
        for folder in FOLDERS:
            assert f"out/manifest.json::{check}[{folder}/*]" in ids
    assert not [i for i in ids if "[extra/a/f" in i]
    # A file a run names (its predictions, config, measurements, checkpoints) keeps its item.
    assert "out/manifest.json::files-intact[runs/control/step-2.pt]" in ids
    assert ids == sorted(ids, key=lambda i: (not i.split("::")[1].startswith("files"), i))


def test_default_threshold_keeps_one_item_per_file(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    add_files(campaign)
    campaign.write()
    result = itera("--collect-only", "-q", "-k", "files-intact")
    result.stdout.fnmatch_lines(["out/manifest.json::files-intact[[]extra/a/f00.txt]"])
    assert "extra/a/*" not in result.stdout.str()


def test_folder_item_passes(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    add_files(campaign)
    campaign.write()
    pytester.makeini(GROUPED)
    result = itera("-k", "files-intact and extra")
    result.assert_outcomes(passed=3)


def many_files(campaign: CampaignBuilder) -> None:
    """30 small listed files in one folder, ``many/``."""
    for n in range(30):
        campaign.files[f"many/f{n:02d}.txt"] = f"many {n:02d}\n".encode()


@pytest.mark.one_mode(GROUPED_TEXT)
@pytest.mark.parametrize(
    ("files", "broken", "selection", "outcomes", "lines"),
    [pytest.param(add_files, ("extra/b/f07.txt",), "files-intact and extra",
                  {"passed": 2, "failed": 1},
                  ("files-intact[extra/b/*]: 2 problems in 1 of 20 files",
                   "manifest.json $.files[*].bytes: extra/b/f07.txt is 20 bytes, the manifest "
                   "says 15",
                   "manifest.json $.files[*].sha256: extra/b/f07.txt does not have the sha256 *"),
                  id="one-corrupted-file"),
     pytest.param(add_files, tuple(f"extra/c/f{n:02d}.txt" for n in range(20)),
                  "files-intact and extra/c", {"failed": 1},
                  ("files-intact[extra/c/*]: * problems in 20 of 20 files",),
                  id="every-file-failing"),
     pytest.param(many_files, tuple(f"many/f{n:02d}.txt" for n in range(30)),
                  "files-intact and many", {"failed": 1},
                  ("... and 10 more failing files (every finding is in the JSON report):",
                   "  many/f20.txt: many/f20.txt is 20 bytes, the manifest says 8",
                   "  many/f29.txt: *"),
                  id="a-long-list")],
)
def test_a_folder_item_fails_naming_each_failing_file_and_reports_every_finding(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder,
    files: Callable[[CampaignBuilder], None], broken: tuple[str, ...], selection: str,
    outcomes: dict[str, int], lines: tuple[str, ...],
) -> None:
    """A corrupted file fails its folder's item, which names it (the other folders' pass);
    when every file of a folder fails, each is named in the message, the JSON report and the
    JUnit XML; a long list names the first files in full, then the rest, and every finding is
    still in the JSON report."""
    files(campaign)
    campaign.write()
    corrupt(campaign, *broken)
    pytester.makeini(GROUPED)
    result = itera("-k", selection, "--itera-report", "r.json", "--junitxml=j.xml")
    result.assert_outcomes(**outcomes)
    expect(result, *lines)
    failed = [c for c in report(pytester, "r.json")["checks"] if c["outcome"] == "failed"]
    assert [c["target"] for c in failed] == [f"{broken[0].rsplit('/', 1)[0]}/*"]
    assert {f["message"].split()[0] for f in failed[0]["findings"]} == set(broken)
    case = next(ET.parse(pytester.path / "j.xml").iter("failure"))
    text = (case.get("message") or "") + (case.text or "")
    assert all(path in text for path in broken)


@only_xdist("on")  # it compares the workers' items with one process's itself
def test_same_items_with_and_without_xdist(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    add_files(campaign)
    campaign.write()
    corrupt(campaign, "extra/a/f03.txt")
    pytester.makeini(GROUPED)
    ran = {}
    for mode in ("on", "absent"):
        result = itera("-k", "files-intact or no-temp-paths", f"--junitxml={mode}.xml",
                       xdist=mode)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        cases = ET.parse(pytester.path / f"{mode}.xml").iter("testcase")
        ran[mode] = sorted(
            (f"{c.get('classname')}::{c.get('name')}", c.find("failure") is not None)
            for c in cases)
    assert ran["on"] == ran["absent"]
    assert ("out.manifest.json::files-intact[extra/a/*]", True) in ran["on"]


@pytest.mark.one_mode(SAME_REPORT)
def test_verdict_and_runs_table_are_the_ungrouped_runs(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    add_files(campaign)
    campaign.write()
    corrupt(campaign, "extra/a/f03.txt", "runs/control/measurements.jsonl")
    outcomes = {}
    for name, ini in (("grouped", GROUPED), ("per-file", "[pytest]\n")):
        pytester.makeini(ini)
        result = itera("--itera-report", f"{name}.json")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        written = report(pytester, f"{name}.json")
        outcomes[name] = (
            written["verdict"],
            [(r["id"], r["status"], r["passed"] == r["total"]) for r in written["runs"]],
            sorted({f["message"] for c in written["checks"] for f in c["findings"]}),
        )
    assert outcomes["grouped"] == outcomes["per-file"]
    assert outcomes["grouped"][0] == "rejected"
    assert ("control", "accepted", False) in outcomes["grouped"][1]

