"""The rules of ``measurements-agree`` (pytest_itera/checks/evidence/measurements_agree.py): each
break refused, with its honest twin.
"""
from __future__ import annotations

import pytest

from tests.checks.campaigns import VARIANT_M, Campaign, Pytester, record
from tests.factory import (
    CampaignBuilder,
    expect,
)
from tests.runner import Itera

# ---------------------------------------- first written in test_evidence_runs.py


# ================================================================== measurements-agree


def test_measurements_agree_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="measurements-agree").assert_outcomes(passed=4)


def test_gain_inflated_in_the_manifest(itera: Itera, campaign: Campaign) -> None:
    campaign.set_metric("variant-a", "accuracy", 0.85)
    record(campaign, "variant-a")["metrics"]["accuracy"] = 0.95
    itera.fails(
        campaign, "measurements-agree",
        f"manifest.json $.runs[3].metrics.accuracy ({VARIANT_M}:5): run variant-a's accuracy "
        "is 0.95 in the manifest but 0.85 in its measurements",
        "    expected: 0.85 (to the file's 2 decimals)",
        "    found:    0.95",
        "    fix:      the measurements are the evidence and the manifest a copy*",
        passed=3,
    )


def test_metrics_without_measurements(itera: Itera, campaign: Campaign) -> None:
    del record(campaign, "variant-a")["measurements"]
    del campaign.measurements["variant-a"]
    itera.fails(
        campaign, "measurements-agree",
        "manifest.json $.runs[3].measurements: run variant-a reports metrics (accuracy) but "
        "records no measurements file",
        "    expected: the run's measurements JSON Lines, whose metrics line the manifest "
        "copies",
        passed=3,
    )


def test_v1_metrics_without_measurements(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    itera.fails(
        campaign, "measurements-agree",
        "manifest.json $.runs[0].measurements: run control reports metrics (accuracy) "
        "but records no measurements file; itera-manifest/1 cannot prove its metrics: re-close "
        "the campaign with itera-manifest/2 (docs/contract-v2.md)",
        failed=4,
    )


def test_metric_absent_from_the_file(itera: Itera, campaign: Campaign) -> None:
    record(campaign, "variant-a")["metrics"]["f1"] = 0.8
    campaign.write()
    result = itera(check="measurements-agree")
    expect(result, "manifest.json $.runs[3].metrics.f1: run variant-a's metric 'f1' is not in its "
           f"measurements {VARIANT_M}", "    found:    the file's metrics: ['accuracy']")


def test_file_without_a_metrics_line(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["variant-a"].pop()  # the metrics line
    campaign.write()
    result = itera(check="measurements-agree")
    expect(result, f"{VARIANT_M}: the measurements {VARIANT_M} of run variant-a have no metrics "
           "line: the manifest's metrics (accuracy) are not evidenced")


@pytest.mark.parametrize(
    ("path", "line"),
    [
        pytest.param("runs/control/measurements.jsonl",
                     "manifest.json $.runs[3].measurements: run variant-a shares its "
                     "measurements file runs/control/measurements.jsonl with control",
                     id="shared-by-two-runs"),
        pytest.param("runs/variant-a/gone.jsonl",
                     "runs/variant-a/gone.jsonl: the measurements runs/variant-a/gone.jsonl of "
                     "run variant-a is missing", id="file-missing"),
    ],
)
def test_measurements_file_not_the_runs_own(
    itera: Itera, campaign: Campaign, path: str, line: str
) -> None:
    record(campaign, "variant-a")["measurements"] = path
    campaign.write()
    expect(itera(check="measurements-agree"), line)
