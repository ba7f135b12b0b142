"""Honest campaigns the checks refused (goodcamp's audit): each case as a user writes it,
accepted, beside the forgery the rule still refuses."""

from __future__ import annotations

from tests.checks.test_times_fit import only, problems
from tests.factory import CampaignBuilder

# ------------------------------------------------------ reload instructions' outputs


def test_reload_instructions_copying_saving_and_teeing_their_outputs_pass(
    campaign: CampaignBuilder
) -> None:
    """A newcomer's RELOAD.md: a console session whose commands write new files beside the
    shipped ones (a copy's destination, torch.save, tee): outputs of the reload, not files
    the campaign claims to hold."""
    campaign.files["RELOAD.md"] += (
        b"\n```console\n$ mkdir -p runs/variant-a/export\n"
        b"$ cp runs/variant-a/weights.pt runs/variant-a/export/copy.pt\n"
        b"$ cp -v ./runs/control/step-2.pt \"runs/control/backup.pt\" && ls runs/control\n"
        b"$ python -c \"import torch; torch.save(torch.load('runs/variant-a/weights.pt', "
        b"weights_only=True), 'runs/variant-a/export/fp32.pt')\"\n"
        b"$ python score.py runs/variant-a/weights.pt | tee runs/variant-a/export/eval.txt\n"
        b"accuracy 1.0\n```\n")
    assert problems(campaign, "analysis-present") == []


def test_copying_a_file_not_shipped_is_still_refused(campaign: CampaignBuilder) -> None:
    """The source of a copy is read, not written: it must be shipped."""
    campaign.files["RELOAD.md"] += (b"\n$ cp runs/variant-a/final.pt runs/variant-a/copy.pt\n"
                                    b"$ cp ./runs/control/final.pt .\n")
    found = only(problems(campaign, "analysis-present"),
                 "analysis-present.reload-path-missing").finding
    assert found.message == (
        "the reload instructions RELOAD.md name 2 file(s) the campaign folder does not hold: "
        "runs/variant-a/final.pt (line 6), runs/control/final.pt (line 7)")
