"""The rules of ``config-identity`` (pytest_itera/checks/runs/config_identity.py): each break
refused, with its honest twin.
"""
from __future__ import annotations

import json

from tests.checks.campaigns import Campaign, record
from tests.factory import expect, sha256
from tests.runner import Itera

# ---------------------------------------- first written in test_run_checks.py


# ---------------------------------------------------------- config-identity


def test_config_identity_passes(itera: Itera, plan2_campaign: Campaign) -> None:
    itera.passes(plan2_campaign, "config-identity", passed=4)


def test_config_changed_under_the_same_id(itera: Itera, plan2_campaign: Campaign) -> None:
    # After a fix the config changed, but the run kept its planned ID (the manifest is consistent).
    fixed = json.dumps({"run": "variant-a", "lr": 0.001}).encode()
    plan2_campaign.files["configs/variant-a.json"] = fixed
    record(plan2_campaign, "variant-a")["config_sha256"] = sha256(fixed)
    result = itera.fails(plan2_campaign, "config-identity", passed=3)
    planned = plan2_campaign.plan["runs"][3]["config_sha256"]
    expect(result,
           "manifest.json $.runs[3].config (plan.json $.runs[3].config_sha256): run variant-a ran "
           "a configuration other than the one planned under its ID: a new configuration after a "
           "fix needs a new ID",
           f"    expected: {planned}",
           f"    found:    {sha256(fixed)} (configs/variant-a.json)",
           "    fix:      keep the planned config under the old ID*new run added by a decision*")


def test_config_edited_after_the_run(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    (plan2_campaign.root / "configs/control.json").write_text('{"run": "control", "lr": 0.5}')
    plan2_campaign.seal()
    result = itera(check="config-identity")
    result.assert_outcomes(passed=3, failed=1)
    expect(result, "*config-identity?control?: 2 problems*",
           "manifest.json $.runs[0].config_sha256: config configs/control.json of run control "
           "changed after the run recorded it",
           "*", "*", "*",
           "manifest.json $.runs[0].config (plan.json $.runs[0].config_sha256): run control ran "
           "a configuration other than the one planned under its ID*")


def test_run_without_config(itera: Itera, plan2_campaign: Campaign) -> None:
    del record(plan2_campaign, "variant-a")["config"]
    itera.fails(plan2_campaign, "config-identity",
                "manifest.json $.runs[3]: run variant-a records no config file",
                "    expected: config: the path of the configuration it ran with", passed=3)


def test_config_file_missing(itera: Itera, plan2_campaign: Campaign) -> None:
    record(plan2_campaign, "control")["config"] = "configs/gone.json"
    plan2_campaign.write()
    result = itera(check="config-identity")
    expect(result,
           "manifest.json $.runs[0].config: config configs/gone.json of run control is missing")


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
