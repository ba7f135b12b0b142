"""The rules of ``no-empty-files`` (pytest_itera/checks/files/no_empty_files.py): each break
refused, with its honest twin, judged in-process (tests/checks/judging.py).
"""
from __future__ import annotations

from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder

CHECK = "no-empty-files"


def test_no_empty_files_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, CHECK))


def test_empty_listed_and_unlisted_files(campaign: CampaignBuilder) -> None:
    campaign.files["runs/control/predictions.jsonl"] = b""
    campaign.files["runs/variant-a/stderr.txt"] = b""
    campaign.unlisted.add("runs/variant-a/stderr.txt")
    found = judge(campaign, CHECK)
    assert [(f.code, f.where) for f in found] == [
        ("no-empty-files.empty-file", "runs/control/predictions.jsonl"),
        ("no-empty-files.empty-file", "runs/variant-a/stderr.txt")]
    assert "is empty (listed in the manifest)" in found[0].message
    assert found[1].message == "runs/variant-a/stderr.txt is empty"


def test_empty_directory_a_run_relies_on(campaign: CampaignBuilder) -> None:
    campaign.write(before_manifest=lambda root: (root / "runs/variant-a/checkpoints").mkdir())
    found = judge(campaign, CHECK, write=False)
    expect_finding(found, "no-empty-files.empty-dir", where="runs/variant-a/checkpoints",
                   says="is empty, and a run relies on it")
    expect_no_finding(found, "no-empty-files.empty-file")
