"""The rules of ``no-temp-paths`` (pytest_itera/checks/files/no_temp_paths.py): each break refused,
with its honest twin.
"""
from __future__ import annotations

from tests.factory import CampaignBuilder, expect_each, sha256
from tests.runner import Itera

# ---------------------------------------- first written in test_file_checks.py


# ------------------------------------------------------------ no-temp-paths


def test_no_temp_paths_passes(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    result = itera("-k", "no-temp-paths")
    result.assert_outcomes(passed=len(campaign.files) + 2)  # plan.json and manifest.json too


def test_temp_paths_in_json_markdown_and_csv(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["configs/control.json"] = (
        b'{\n  "run": "control",\n  "cache": "/tmp/hf/cache"\n}\n'
    )
    campaign.plan["runs"][0]["config_sha256"] = sha256(campaign.files["configs/control.json"])
    campaign.manifest["runs"][0]["config_sha256"] = campaign.plan["runs"][0]["config_sha256"]
    campaign.files["RELOAD.md"] = b"# Reload\n\nThe weights are in /var/folders/xy/T/run1/last.pt\n"
    campaign.files["runs/control/measurements.csv"] = (
        b"step,loss,file\n1,0.5,C:\\Users\\ana\\AppData\\Local\\Temp\\run\\x.pt\n"
    )
    campaign.write()
    result = itera("-k", "no-temp-paths")
    result.assert_outcomes(passed=len(campaign.files) - 1, failed=3)
    expect_each(  # three items: under xdist their failures come in the order they finish
        result,
        "RELOAD.md:3:20: path into a temporary folder: /var/folders/xy/T/run1/last.pt",
        "configs/control.json:3:13: path into a temporary folder: /tmp/hf/cache",
        "runs/control/measurements.csv:2:20: path into a temporary folder: "
        "C:\\Users\\ana\\AppData\\Local\\Temp\\run\\x.pt",
    )
