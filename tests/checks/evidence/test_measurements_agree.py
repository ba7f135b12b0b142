"""The rules of ``measurements-agree`` (pytest_itera/checks/evidence/measurements_agree.py): each
break refused, with its honest twin, judged in-process (tests/checks/judging.py).
"""
from __future__ import annotations

import pytest

from tests.checks.campaigns import MALFORMED, VARIANT_M, Campaign, Pytester, record
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder

CHECK = "measurements-agree"


def test_measurements_agree_passes(campaign: Campaign) -> None:
    expect_no_finding(judge(campaign, CHECK))


def test_gain_inflated_in_the_manifest(campaign: Campaign) -> None:
    campaign.set_metric("variant-a", "accuracy", 0.85)
    record(campaign, "variant-a")["metrics"]["accuracy"] = 0.95
    finding = expect_finding(
        judge(campaign, CHECK), "measurements-agree.metric-differs",
        where=f"manifest.json $.runs[3].metrics.accuracy ({VARIANT_M}:5)",
        says="run variant-a's accuracy is 0.95 in the manifest but 0.85 in its measurements")
    assert (finding.expected, finding.found) == ("0.85 (to the file's 2 decimals)", "0.95")


def test_metrics_without_measurements(campaign: Campaign) -> None:
    del record(campaign, "variant-a")["measurements"]
    del campaign.measurements["variant-a"]
    expect_finding(judge(campaign, CHECK, target="variant-a"),
                   "measurements-agree.no-measurements",
                   where="manifest.json $.runs[3].measurements",
                   says="run variant-a reports metrics (accuracy) but records no measurements "
                   "file")


def test_v1_metrics_without_measurements(pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    assert [f.code for f in judge(campaign, CHECK)] == ["measurements-agree.no-measurements"] * 4
    expect_finding(judge(campaign, CHECK, target="control", write=False),
                   "measurements-agree.no-measurements",
                   where="manifest.json $.runs[0].measurements",
                   says="itera-manifest/1 cannot prove its metrics")


def test_metric_absent_from_the_file(campaign: Campaign) -> None:
    record(campaign, "variant-a")["metrics"]["f1"] = 0.8
    finding = expect_finding(judge(campaign, CHECK), "measurements-agree.metric-missing",
                             where="manifest.json $.runs[3].metrics.f1",
                             says=f"run variant-a's metric 'f1' is not in its measurements "
                             f"{VARIANT_M}")
    assert finding.found == "the file's metrics: ['accuracy']"


def test_file_without_a_metrics_line(campaign: Campaign) -> None:
    campaign.measurements["variant-a"].pop()  # the metrics line
    expect_finding(judge(campaign, CHECK), "measurements-agree.no-metrics-line", where=VARIANT_M,
                   says="have no metrics line: the manifest's metrics (accuracy) are not "
                   "evidenced")


def test_malformed_measurements(campaign: Campaign) -> None:
    campaign.files[VARIANT_M] = MALFORMED
    found = judge(campaign, CHECK, target="variant-a")
    assert [(f.code, f.where) for f in found] == [
        *(("measurements-agree.unreadable", f"{VARIANT_M}:{n}") for n in (2, 3, 4, 5, 7)),
        ("measurements-agree.more", "manifest.json $.runs[3].measurements")]
    assert "are not usable: not JSON (Expecting value)" in found[0].message
    assert found[-1].message == f"... and 2 more problems in {VARIANT_M}"


@pytest.mark.parametrize(("path", "code", "where", "says"), [
    pytest.param("runs/control/measurements.jsonl", "measurements-agree.shared-file",
                 "manifest.json $.runs[3].measurements",
                 "run variant-a shares its measurements file runs/control/measurements.jsonl "
                 "with control", id="shared-by-two-runs"),
    pytest.param("runs/variant-a/gone.jsonl", "measurements-agree.unreadable",
                 "runs/variant-a/gone.jsonl",
                 "the measurements runs/variant-a/gone.jsonl of run variant-a is missing",
                 id="file-missing"),
])
def test_measurements_file_not_the_runs_own(campaign: Campaign, path: str, code: str,
                                            where: str, says: str) -> None:
    record(campaign, "variant-a")["measurements"] = path
    expect_finding(judge(campaign, CHECK, target="variant-a"), code, where=where, says=says)
