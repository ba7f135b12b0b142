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
    measurements_path,
)
from tests.runner import Itera

# ---------------------------------------- first written in test_evidence_runs.py


# ====================================================================== role-evidence


CHECK = "role-evidence"
RESUMED = "manifest.json $.runs[2].resumed_from"


def test_role_evidence_passes(campaign: Campaign) -> None:
    expect_no_finding(judge(campaign, CHECK))


def test_one_item_per_role_run(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


def test_resume_check_diverges_after_the_resume(campaign: Campaign) -> None:
    campaign.measurements["resume-check"][0]["loss"] = 0.65  # step 3: control has 0.6
    finding = expect_finding(
        judge(campaign, CHECK, target="resume-check"), "role-evidence.resume-not-reproduced",
        where=f"{RESUME_M}:1", says=f"resume check resume-check does not reproduce its "
        f"reference run: after resuming {CONTROL_CKPT} at step 2, its 'loss' is 0.65 at step 3 "
        "where control's is 0.6 (tolerance 0)")
    assert finding.expected == ("the resumed series equal the reference run's at the same "
                                "steps, within checkpoint_policy.resume_tolerance (0)")
    expect_no_finding(judge(campaign, CHECK, target="data-check", write=False))


def test_resume_within_the_declared_tolerance(campaign: Campaign) -> None:
    campaign.plan["checkpoint_policy"]["resume_tolerance"] = 0.1
    campaign.measurements["resume-check"][0]["loss"] = 0.65
    expect_no_finding(judge(campaign, CHECK))


@pytest.mark.parametrize(("checkpoint", "why"), [
    (RESUME_CKPT, "its own checkpoint"),
    (VARIANT_WEIGHTS, "a weights checkpoint, which cannot resume training"),
    ("runs/control/step-9.pt", "which is not a checkpoint listed in the manifest"),
], ids=["own", "weights", "unlisted"])
def test_resume_check_resumed_from_the_wrong_checkpoint(
    campaign: Campaign, checkpoint: str, why: str
) -> None:
    record(campaign, "resume-check")["resumed_from"]["checkpoint"] = checkpoint
    finding = expect_finding(
        judge(campaign, CHECK, target="resume-check"), "role-evidence.resume-unproven",
        where=f"{RESUMED}.checkpoint", says="resume check resume-check does not prove a "
        f"resume: run resume-check resumed from {checkpoint}, {why}")
    assert finding.hint == ("a resume check resumes a listed resume checkpoint of another run "
                            f"in a new process (listed: {CONTROL_CKPT})")


def test_resume_check_without_resumed_from(campaign: Campaign) -> None:
    del record(campaign, "resume-check")["resumed_from"]
    expect_finding(judge(campaign, CHECK, target="resume-check"), "role-evidence.resume-unproven",
                   where=RESUMED, says="resume check resume-check does not prove a resume: run "
                   "resume-check records no resumed_from (the checkpoint it resumed from and its "
                   "step)")


def test_v1_resume_check_cannot_prove_a_resume(pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    expect_finding(judge(campaign, CHECK, target="resume-check"), "role-evidence.resume-unproven",
                   says="records no resumed_from (the checkpoint it resumed from and its step); "
                   "itera-manifest/1 cannot prove a resume: re-close the campaign with "
                   "itera-manifest/2 (docs/contract-v2.md)")


def test_resume_check_with_nothing_to_compare(campaign: Campaign) -> None:
    campaign.measurements["resume-check"] = [{"step": 3, "train_loss": 0.6}]
    expect_finding(judge(campaign, CHECK, target="resume-check"), "role-evidence.resume-unproven",
                   where=RESUME_M, says="resume check resume-check does not prove a resume: "
                   "nothing to compare: after step 2 its series (train_loss) share no step with "
                   "control's (loss)")


def test_data_check_measured_another_corpus(campaign: Campaign) -> None:
    checked(campaign, sha256="b" * 64)
    frozen = campaign.plan["corpora"][0]["sha256"]
    finding = expect_finding(
        judge(campaign, CHECK, target="data-check"), "role-evidence.corpus-differs",
        where=f"{DATA_M}:1", says=f"data check data-check measured corpus tiny-corpus with "
        f"sha256 {'b' * 64}, but the plan froze {frozen}")
    assert (finding.expected, finding.found) == (frozen, "b" * 64)
    expect_no_finding(judge(campaign, CHECK, target="resume-check", write=False))


def test_data_check_records_nothing(campaign: Campaign) -> None:
    campaign.measurements["data-check"] = [{"step": 1, "rows_read": 4}]
    expect_finding(judge(campaign, CHECK, target="data-check"), "role-evidence.corpus-unchecked",
                   where=DATA_M, says="data check data-check records no check of corpus "
                   "tiny-corpus (corpus/corpus.jsonl)")


def test_data_check_record_without_a_count(campaign: Campaign) -> None:
    del checked(campaign)["examples"]
    finding = expect_finding(judge(campaign, CHECK, target="data-check"),
                             "role-evidence.corpus-record-incomplete", where=f"{DATA_M}:1",
                             says="data check data-check's record of corpus tiny-corpus has no "
                             "examples")
    assert finding.expected == "examples 4"


def test_data_check_without_measurements(campaign: Campaign) -> None:
    del record(campaign, "data-check")["measurements"]
    del campaign.measurements["data-check"]
    expect_finding(judge(campaign, CHECK, target="data-check"), "role-evidence.data-unproven",
                   where="manifest.json $.runs[1].measurements",
                   says="data check data-check does not prove the data")


VOCAB = b"the\nof\nand\n"


def _vocab_rule(campaign: Campaign) -> None:
    campaign.files["vocab/tokens.txt"] = VOCAB
    add_rule(campaign, "vocab-whole", "input_truncated", input="vocab/tokens.txt",
             bytes=len(VOCAB))


def test_data_check_records_every_declared_input(campaign: Campaign) -> None:
    _vocab_rule(campaign)
    expect_finding(judge(campaign, CHECK, target="data-check"), "role-evidence.input-unchecked",
                   where=DATA_M, says="data check data-check records no check of input "
                   "'vocab/tokens.txt', which stop rule 'vocab-whole' declares indispensable")


@pytest.mark.parametrize(("measured", "code", "says"), [
    pytest.param({"bytes": len(VOCAB)}, None, "", id="as-declared"),
    pytest.param({"bytes": 3}, "role-evidence.input-differs",
                 "data check data-check measured input 'vocab/tokens.txt' with bytes 3; stop rule "
                 "'vocab-whole' expects 11", id="truncated"),
    pytest.param({}, "role-evidence.input-record-incomplete",
                 "data check data-check's record of input 'vocab/tokens.txt' has no bytes, which "
                 "stop rule 'vocab-whole' declares", id="no-count"),
])
def test_data_check_record_of_a_declared_input(campaign: Campaign, measured: dict[str, int],
                                               code: str | None, says: str) -> None:
    _vocab_rule(campaign)
    campaign.measurements["data-check"].append(
        {"checked_input": {"input": "vocab/tokens.txt", **measured}})
    found = judge(campaign, CHECK, target="data-check")
    if code is None:
        expect_no_finding(found)
    else:
        expect_finding(found, code, where=f"{DATA_M}:2", says=says)


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
