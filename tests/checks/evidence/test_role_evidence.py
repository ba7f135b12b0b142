"""The rules of ``role-evidence`` (pytest_itera/checks/evidence/role_evidence.py): each break
refused, with its honest twin.
"""
from __future__ import annotations

import pytest

from tests.checks.campaigns import (
    DATA_M,
    RESUME_M,
    Campaign,
    Pytester,
    add_rule,
    checked,
    long_resume,
    record,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    RESUME_CKPT,
    VARIANT_WEIGHTS,
    CampaignBuilder,
    expect,
    measurements_path,
)
from tests.runner import Itera

# ---------------------------------------- first written in test_evidence_runs.py


# ====================================================================== role-evidence


def test_role_evidence_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


def test_resume_check_diverges_after_the_resume(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["resume-check"][0]["loss"] = 0.65  # step 3: control has 0.6
    itera.fails(
        campaign, "role-evidence",
        f"{RESUME_M}:1: resume check resume-check does not reproduce its reference run: after "
        f"resuming {CONTROL_CKPT} at step 2, its 'loss' is 0.65 at step 3 where control's is "
        "0.6 (tolerance 0)",
        "    expected: the resumed series equal the reference run's at the same steps, within "
        "checkpoint_policy.resume_tolerance (0)",
        passed=1,
    )


def test_resume_within_the_declared_tolerance(itera: Itera, campaign: Campaign) -> None:
    campaign.plan["checkpoint_policy"]["resume_tolerance"] = 0.1
    campaign.measurements["resume-check"][0]["loss"] = 0.65
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


@pytest.mark.parametrize(("checkpoint", "why"), [
    (RESUME_CKPT, "its own checkpoint"),
    (VARIANT_WEIGHTS, "a weights checkpoint, which cannot resume training"),
    ("runs/control/step-9.pt", "which is not a checkpoint listed in the manifest"),
], ids=["own", "weights", "unlisted"])
def test_resume_check_resumed_from_the_wrong_checkpoint(
    itera: Itera, campaign: Campaign, checkpoint: str, why: str
) -> None:
    record(campaign, "resume-check")["resumed_from"]["checkpoint"] = checkpoint
    itera.fails(
        campaign, "role-evidence",
        "manifest.json $.runs[2].resumed_from.checkpoint: resume check resume-check does not "
        f"prove a resume: run resume-check resumed from {checkpoint}, {why}",
        f"    fix:      a resume check resumes a listed resume checkpoint of another run in a "
        f"new process (listed: {CONTROL_CKPT})",
        passed=1,
    )


def test_resume_check_without_resumed_from(itera: Itera, campaign: Campaign) -> None:
    del record(campaign, "resume-check")["resumed_from"]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, "manifest.json $.runs[2].resumed_from: resume check resume-check does not prove "
           "a resume: run resume-check records no resumed_from (the checkpoint it resumed from and "
           "its step)")


def test_v1_resume_check_cannot_prove_a_resume(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, "*resume check resume-check does not prove a resume: run resume-check records "
           "no resumed_from (the checkpoint it resumed from and its step); itera-manifest/1 cannot "
           "prove a resume: re-close the campaign with itera-manifest/2 (docs/contract-v2.md)")


def test_resume_check_with_nothing_to_compare(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["resume-check"] = [{"step": 3, "train_loss": 0.6}]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{RESUME_M}: resume check resume-check does not prove a resume: nothing to "
           "compare: after step 2 its series (train_loss) share no step with control's (loss)")


def test_data_check_measured_another_corpus(itera: Itera, campaign: Campaign) -> None:
    checked(campaign, sha256="b" * 64)
    result = itera.fails(campaign, "role-evidence", passed=1)
    frozen = campaign.plan["corpora"][0]["sha256"]
    expect(result,
           f"{DATA_M}:1: data check data-check measured corpus tiny-corpus with sha256 {'b' * 64}, "
           f"but the plan froze {frozen}",
           f"    expected: {frozen}", f"    found:    {'b' * 64}")


def test_data_check_records_nothing(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["data-check"] = [{"step": 1, "rows_read": 4}]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{DATA_M}: data check data-check records no check of corpus tiny-corpus "
           "(corpus/corpus.jsonl)")


def test_data_check_record_without_a_count(itera: Itera, campaign: Campaign) -> None:
    del checked(campaign)["examples"]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{DATA_M}:1: data check data-check's record of corpus tiny-corpus has no "
           "examples", "    expected: examples 4")


def test_data_check_records_every_declared_input(itera: Itera, campaign: Campaign) -> None:
    vocab = b"the\nof\nand\n"
    campaign.files["vocab/tokens.txt"] = vocab
    add_rule(campaign, "vocab-whole", "input_truncated", input="vocab/tokens.txt",
             bytes=len(vocab))
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{DATA_M}: data check data-check records no check of input "
           "'vocab/tokens.txt', which stop rule 'vocab-whole' declares indispensable")
    campaign.measurements["data-check"].append(
        {"checked_input": {"input": "vocab/tokens.txt", "bytes": len(vocab)}})
    campaign.files.pop(DATA_M)
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


# ---------------------------------------- first written in test_times_fit.py


def test_a_resume_logged_every_tenth_step_is_refused(campaign: CampaignBuilder) -> None:
    long_resume(campaign, range(10, 41, 10))
    found = expect_finding(
        judge(campaign, "role-evidence", target="resume-check"),
        "role-evidence.resume-resolution", where=measurements_path("resume-check"),
        says=("does not log 'loss' at the resolution of control",
              "the resume check at 4 of them; 34 missing: 3, 4, 5, 6, 7, …"))
    assert found.expected == "a 'loss' point at every step control logged from 3 to 40"


def test_a_resume_logged_at_every_step_passes(campaign: CampaignBuilder) -> None:
    long_resume(campaign, range(3, 41))
    expect_no_finding(judge(campaign, "role-evidence"))


def test_a_resume_shorter_than_its_reference_needs_only_its_own_steps(
    campaign: CampaignBuilder
) -> None:
    long_resume(campaign, range(3, 21))  # stops at step 20: steps 21..40 are not required
    expect_no_finding(judge(campaign, "role-evidence"))
