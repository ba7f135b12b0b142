"""The rules of ``no-temp-paths`` (pytest_itera/checks/files/no_temp_paths.py): each break refused,
with its honest twin, judged in-process (tests/checks/judging.py).
"""
from __future__ import annotations

import os

from pytest_itera.files.scan import ZIP_ENTRY_CAP
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder, many_entry_zip, sha256
from tests.runner import Itera

CHECK = "no-temp-paths"


def test_no_temp_paths_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, CHECK))


def test_one_item_per_file(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    result = itera("-k", "no-temp-paths")
    result.assert_outcomes(passed=len(campaign.files) + 2)  # plan.json and manifest.json too


def test_temp_paths_in_json_markdown_and_csv(campaign: CampaignBuilder) -> None:
    campaign.files["configs/control.json"] = (
        b'{\n  "run": "control",\n  "cache": "/tmp/hf/cache"\n}\n'
    )
    campaign.plan["runs"][0]["config_sha256"] = sha256(campaign.files["configs/control.json"])
    campaign.manifest["runs"][0]["config_sha256"] = campaign.plan["runs"][0]["config_sha256"]
    campaign.files["RELOAD.md"] = b"# Reload\n\nThe weights are in /var/folders/xy/T/run1/last.pt\n"
    campaign.files["runs/control/measurements.csv"] = (
        b"step,loss,file\n1,0.5,C:\\Users\\ana\\AppData\\Local\\Temp\\run\\x.pt\n"
    )
    found = judge(campaign, CHECK)
    assert sorted((f.code, f.where, f.message) for f in found) == [
        ("no-temp-paths.temp-path", "RELOAD.md:3:20",
         "path into a temporary folder: /var/folders/xy/T/run1/last.pt"),
        ("no-temp-paths.temp-path", "configs/control.json:3:13",
         "path into a temporary folder: /tmp/hf/cache"),
        ("no-temp-paths.temp-path", "runs/control/measurements.csv:2:20",
         "path into a temporary folder: C:\\Users\\ana\\AppData\\Local\\Temp\\run\\x.pt"),
    ]



def test_past_twenty_paths_in_one_file_the_rest_are_counted(campaign: CampaignBuilder) -> None:
    campaign.files["RELOAD.md"] = "".join(f"/tmp/run-{n}/last.pt\n" for n in range(23)).encode()
    found = judge(campaign, CHECK, target="RELOAD.md")
    assert [f.code for f in found] == ["no-temp-paths.temp-path"] * 20 + ["no-temp-paths.more"]
    expect_finding(found, "no-temp-paths.more", where="RELOAD.md",
                   says="... and 3 more possible temporary paths in RELOAD.md")


def test_a_file_that_cannot_be_read(campaign: CampaignBuilder) -> None:
    """A link to a folder inside the campaign is scanned as a file: reading it fails."""
    campaign.write(before_manifest=lambda root: os.symlink(
        "../variant-a", root / "runs/control/alias"))
    expect_finding(judge(campaign, CHECK, target="runs/control/alias", write=False),
                   "no-temp-paths.unreadable", where="runs/control/alias",
                   says="runs/control/alias cannot be scanned")


def test_an_archive_past_its_entry_cap_is_not_passed_as_scanned(
    campaign: CampaignBuilder,
) -> None:
    """A zip directory that declares more entries than a torch.save archive would have is
    read up to its cap (its first record is still scanned): the rest is said unscanned."""
    campaign.files["runs/control/state.pt"] = many_entry_zip(ZIP_ENTRY_CAP + 1, {"step": 1})
    expect_finding(judge(campaign, CHECK, target="runs/control/state.pt"),
                   "no-temp-paths.unscanned", where="runs/control/state.pt",
                   says=("not fully scanned", f"only the first {ZIP_ENTRY_CAP}"))
