"""The rules of ``config-identity`` (pytest_itera/checks/runs/config_identity.py): each break
refused, with its honest twin, judged in-process (tests/checks/judging.py); a pytest session
where the items are the point.
"""
from __future__ import annotations

import json

from tests.checks.campaigns import Campaign, record
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import sha256
from tests.runner import Itera

CHECK = "config-identity"


def test_config_identity_passes(plan2_campaign: Campaign) -> None:
    expect_no_finding(judge(plan2_campaign, CHECK))


def test_config_changed_under_the_same_id(plan2_campaign: Campaign) -> None:
    # After a fix the config changed, but the run kept its planned ID (the manifest is consistent).
    fixed = json.dumps({"run": "variant-a", "lr": 0.001}).encode()
    plan2_campaign.files["configs/variant-a.json"] = fixed
    record(plan2_campaign, "variant-a")["config_sha256"] = sha256(fixed)
    found = judge(plan2_campaign, CHECK)
    planned = plan2_campaign.plan["runs"][3]["config_sha256"]
    finding = expect_finding(
        found, "config-identity.other-config",
        where="manifest.json $.runs[3].config (plan.json $.runs[3].config_sha256)",
        says="a new configuration after a fix needs a new ID")
    assert (finding.expected, finding.found) == (
        planned, f"{sha256(fixed)} (configs/variant-a.json)")
    assert "new run added by a decision" in (finding.hint or "")
    expect_no_finding(found, "config-identity.sha256")


def test_config_edited_after_the_run(plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    (plan2_campaign.root / "configs/control.json").write_text('{"run": "control", "lr": 0.5}')
    plan2_campaign.seal()
    found = judge(plan2_campaign, CHECK, target="control", write=False)
    expect_finding(found, "config-identity.sha256", where="manifest.json $.runs[0].config_sha256",
                   says="config configs/control.json of run control changed after the run "
                   "recorded it")
    expect_finding(found, "config-identity.other-config", where="manifest.json $.runs[0].config",
                   says="other than the one planned under its ID")


def test_run_without_config(plan2_campaign: Campaign) -> None:
    del record(plan2_campaign, "variant-a")["config"]
    finding = expect_finding(judge(plan2_campaign, CHECK), "config-identity.no-config",
                             where="manifest.json $.runs[3]",
                             says="run variant-a records no config file")
    assert finding.expected == "config: the path of the configuration it ran with"


def test_config_file_missing(plan2_campaign: Campaign) -> None:
    record(plan2_campaign, "control")["config"] = "configs/gone.json"
    expect_finding(judge(plan2_campaign, CHECK), "config-identity.unreadable",
                   where="manifest.json $.runs[0].config",
                   says="config configs/gone.json of run control is missing")


def test_dropped_run_without_config_has_no_item(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.manifest["runs"][3] = {
        "id": "variant-a", "outcome": "dropped", "decision": "after-pilot"}
    plan2_campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "variant-a is not needed", "drops": ["variant-a"]}]
    result = itera.passes(plan2_campaign, "config-identity", passed=3)
    result.stdout.no_fnmatch_line("*config-identity[[]variant-a]*")


def test_run_added_by_decision_has_no_planned_hash(itera: Itera, plan2_campaign: Campaign) -> None:
    fixed = json.dumps({"run": "variant-a2", "lr": 0.001}).encode()
    plan2_campaign.files["configs/variant-a2.json"] = fixed
    plan2_campaign.manifest["runs"].append(dict(
        record(plan2_campaign, "variant-a"), id="variant-a2", config="configs/variant-a2.json",
        config_sha256=sha256(fixed)))
    plan2_campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-fix", "text": "variant-a with lr 0.001 gets a new ID",
         "adds": ["variant-a2"]}]
    plan2_campaign.write()
    itera(check="config-identity or expected-ids").assert_outcomes(passed=6)
