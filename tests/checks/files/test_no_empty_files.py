"""The rules of ``no-empty-files`` (pytest_itera/checks/files/no_empty_files.py): each break
refused, with its honest twin.
"""
from __future__ import annotations

from tests.factory import CampaignBuilder, expect
from tests.runner import Itera

# ---------------------------------------- first written in test_file_checks.py


# ----------------------------------------------------------- no-empty-files


def test_no_empty_files_passes(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    itera("-k", "no-empty-files").assert_outcomes(passed=1)


def test_empty_listed_and_unlisted_files(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["runs/control/predictions.jsonl"] = b""
    campaign.files["runs/variant-a/stderr.txt"] = b""
    campaign.unlisted.add("runs/variant-a/stderr.txt")
    campaign.write()
    result = itera("-k", "no-empty-files")
    result.assert_outcomes(failed=1)
    expect(
        result,
        "*no-empty-files: 2 problems*",
        "runs/control/predictions.jsonl: "
        "runs/control/predictions.jsonl is empty (listed in the manifest)",
        "*",
        "runs/variant-a/stderr.txt: runs/variant-a/stderr.txt is empty",
    )


def test_empty_directory_a_run_relies_on(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write(before_manifest=lambda root: (root / "runs/variant-a/checkpoints").mkdir())
    result = itera("-k", "no-empty-files")
    expect(
        result,
        "runs/variant-a/checkpoints: "
        "directory runs/variant-a/checkpoints is empty, and a run relies on it",
    )
