"""Campaigns that break one rule and keep every hash and total consistent (the "onerule"
audit): each break the checks accepted before, refused by the check that owns its rule, with
its honest twin accepted. Judged in process on the factory's good /2 campaign.

- R1: a compared run's predictions are its own file (predictions-cover-corpus);
- R5: a stop comes at or before the run's recorded end (stop-records); a stopped run logs
  nothing after its stop step (stop-rules-applied);
- R2/R9: the first decision is taken at the decision point, before the runs that follow it
  start (plan-vs-actual);
- R2/R9: a dropped run never ran: its steps are observed at 0 h (plan-vs-actual);
- R3/v3: times never run backwards: a run whose steps all follow another run's does not start
  before that run ended, a run saves checkpoints after it starts, and the runs of a lot were
  recorded within its days (plan-vs-actual);
- R4: rental time is never an expense priced as hours of a lot (budget-consistent);
- R7/v3: a receipt states the amount in the budget's currency and the order reference the
  expense records (budget-consistent);
- R6: the resume check trained after resuming: its own checkpoint is not the one it resumed
  from (bytes, model tensors) and stores a later step (resume-complete);
- R8: the reload instructions name files the folder holds (analysis-present);
- v3: a metric relative to the control compares the same examples: the where filter selects
  the same IDs in both runs' predictions (metrics-recomputed).

Round three (audit3):

- R5/v3: a stopped run's checkpoint stores no step after its stop (stop-rules-applied);
- v3: the numbers the conclusion and the analysis quote for a run are its measured metrics
  (conclusion-consistent, analysis-present);
- R3/v3: a run saves a checkpoint on its GPU: not while another run is recorded on that GPU
  (plan-vs-actual);
- R7/v3: a receipt is dated by its own date line, not by another date it prints, is not
  addressed to another campaign, and states the amount as what was bought, not only as its
  tax (budget-consistent);
- R2/R9/v3: a run ends, and a decision is taken, when the recorder's journal says: a pilot's
  end moved before the decision it informs, journal kept, is refused (journal-agrees).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.checks.test_journal_agrees import honest, journaled
from tests.checks.test_metrics import findings, plan3, rendered
from tests.checks.test_schedule_checks import drop_variant, never_ran
from tests.checks.test_schedule_evidence import restate, step
from tests.checks.test_times_fit import PVA, journal, only, problems, save, times
from tests.factory import (
    CONTROL_CKPT,
    CORPUS_IDS,
    RESUME_CKPT,
    RESUME_SAVED_AT,
    RESUMED_AT,
    CampaignBuilder,
)
from tests.runner import Itera

# ================================================================ R1: own predictions


def test_a_variant_naming_the_controls_predictions_file_is_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.run_record("variant-a")["predictions"] = "runs/control/predictions.jsonl"
    del campaign.files["runs/variant-a/predictions.jsonl"]
    found = problems(campaign, "predictions-cover-corpus")
    assert [(p.target, p.finding.code) for p in found] == [
        ("control", "predictions-cover-corpus.shared-file"),
        ("variant-a", "predictions-cover-corpus.shared-file")]
    variant = found[1].finding
    assert variant.message == ("run variant-a shares its predictions file "
                               "runs/control/predictions.jsonl with control: they are not its "
                               "own predictions")
    assert variant.where == "manifest.json $.runs[3].predictions"
    assert variant.hint is not None
    assert "in its own file" in variant.hint


def test_each_run_with_its_own_predictions_file_passes(campaign: CampaignBuilder) -> None:
    # Two files with the same bytes are not refused: two models may predict alike.
    campaign.files["runs/variant-a/predictions.jsonl"] = \
        campaign.files["runs/control/predictions.jsonl"]
    assert problems(campaign, "predictions-cover-corpus") == []


# ============================================================ R5: stop within the run


def stopped_at(campaign: CampaignBuilder, at: str) -> None:
    record = campaign.run_record("variant-a")
    record["outcome"] = "stopped"
    record["stop"] = {"rule": "non-finite-loss", "reason": "training loss was nan at step 4",
                      "step": 4, "at": at}
    for key in ("predictions", "corpus"):
        record.pop(key)
    campaign.measurements["variant-a"][3]["loss"] = "NaN"
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def test_a_stop_after_the_run_ended_is_refused(campaign: CampaignBuilder) -> None:
    stopped_at(campaign, "2026-11-21T19:30:00Z")  # variant-a ended at 18:00
    found = only(problems(campaign, "stop-records"), "stop-records.stop-after-end").finding
    assert found.message == ("run variant-a was stopped at 2026-11-21T19:30:00+00:00, after it "
                             "ended at 2026-11-21T18:00:00+00:00")
    assert found.where == "manifest.json $.runs[3].stop.at"
    assert found.expected == "at or before 2026-11-21T18:00:00+00:00 (ended_at)"


def test_a_stop_at_the_runs_end_passes(campaign: CampaignBuilder) -> None:
    stopped_at(campaign, "2026-11-21T18:00:00Z")
    assert problems(campaign, "stop-records") == []


def test_a_stopped_run_that_logged_past_its_stop_is_refused(campaign: CampaignBuilder) -> None:
    stopped_at(campaign, "2026-11-21T18:00:00Z")
    campaign.run_record("variant-a")["stop"]["step"] = 3  # NaN at step 3; step 4 logged too
    campaign.measurements["variant-a"][2]["loss"] = "NaN"
    found = only(problems(campaign, "stop-rules-applied"),
                 "stop-rules-applied.after-stop").finding
    assert found.message == ("stopped run variant-a logged 'loss' at 1 step(s) after its stop "
                             "at step 3 (up to step 4): it went on training past the rule "
                             "'non-finite-loss' that stopped it")
    assert found.where == "runs/variant-a/measurements.jsonl:4"
    assert found.expected == "no 'loss' point after step 3 (manifest.json $.runs[3].stop.step)"
    assert found.hint is not None
    assert found.hint.startswith("a run stops when its rule fires")


def test_a_stopped_run_whose_log_ends_at_its_stop_passes(campaign: CampaignBuilder) -> None:
    stopped_at(campaign, "2026-11-21T18:00:00Z")  # NaN at step 4, its last
    assert problems(campaign, "stop-rules-applied") == []


# ====================================== R2/R9: the decision at the decision point


def decision_point(campaign: CampaignBuilder, decided_at: str) -> None:
    """A decision step after the control's training, before the variant's, and its decision."""
    campaign.plan["schedule"]["steps"].append(
        {"id": "decide", "kind": "decision", "resource": "human", "hours": 1,
         "after": ["train-control"]})
    step(campaign, "train-variant-a")["after"] = ["train-control", "decide"]
    restate(campaign)
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-control", "text": "the control learns: the variant runs",
         "at": decided_at}]


def test_a_decision_taken_after_the_runs_it_precedes_started_is_refused(
    campaign: CampaignBuilder
) -> None:
    decision_point(campaign, "2026-11-21T05:00:00Z")  # variant-a started at 04:00
    found = only(problems(campaign, PVA), "plan-vs-actual.decision-after-point").finding
    assert found.message == (
        "run variant-a started at 2026-11-21T04:00:00+00:00, before the first decision, "
        "'after-control', dated 2026-11-21T05:00:00+00:00; its step 'train-variant-a' comes "
        "after the plan's decision point 'decide' (manifest.json $.runs[3].started_at)")
    assert found.where == "manifest.json $.schedule.decisions[0].at"
    assert found.expected == "a decision at or before 2026-11-21T04:00:00+00:00"
    assert found.hint is not None
    assert found.hint.startswith("decide at the decision point, before the runs that follow")


def test_a_decision_taken_before_the_runs_it_precedes_passes(campaign: CampaignBuilder) -> None:
    decision_point(campaign, "2026-11-21T04:00:00Z")
    assert problems(campaign, PVA) == []


# ======================================================== R2/R9: a dropped run never ran


def dropped(campaign: CampaignBuilder) -> None:
    drop_variant(campaign, "after-pilot")
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "the control already saturates: drop variant-a",
         "drops": ["variant-a"]}]
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def test_a_dropped_run_whose_step_was_observed_is_refused(campaign: CampaignBuilder) -> None:
    dropped(campaign)  # train-variant-a stays observed at its planned 14 h
    found = only(problems(campaign, PVA), "plan-vs-actual.dropped-step-ran").finding
    assert found.message == ("run variant-a is dropped by decision 'after-pilot', but step "
                             "'train-variant-a', which the plan gives to it, was observed to "
                             "take 14 h")
    assert found.where == "manifest.json $.schedule.steps[4].observed_hours"
    assert found.expected == ("0 h: a dropped run never ran (manifest.json $.runs[3].outcome "
                              "is 'dropped')")
    assert found.hint is not None
    assert found.hint.startswith("a run that started and was then abandoned is not dropped")


def test_a_dropped_run_whose_step_did_not_run_passes(campaign: CampaignBuilder) -> None:
    dropped(campaign)
    never_ran(campaign, "train-variant-a")
    assert problems(campaign, PVA) == []


# ================================================= R3/v3: times never run backwards


def resume_on_gpu1(campaign: CampaignBuilder) -> None:
    """The resume check's restore on a second GPU of the lot: only the order can be wrong."""
    campaign.plan["budget"]["lots"][0]["gpus_per_lot"] = 2
    step(campaign, "restore-ckpt")["resource"] = "gpu1"
    restate(campaign)


def test_a_run_recorded_before_the_run_its_steps_follow_is_refused(
    campaign: CampaignBuilder
) -> None:
    resume_on_gpu1(campaign)  # restore-ckpt comes after save-ckpt, after train-control
    times(campaign, "resume-check", "2026-11-20T20:00:00Z", "2026-11-20T21:00:00Z")
    found = only(problems(campaign, PVA), "plan-vs-actual.run-order").finding
    assert found.message == (
        "run resume-check started at 2026-11-20T20:00:00+00:00, 5 h before run control ended "
        "(ended_at 2026-11-21T01:00:00+00:00), but the plan puts every step of resume-check "
        "('restore-ckpt') after every step of control ('train-control', 'save-ckpt')")
    assert found.where == "manifest.json $.runs[2].started_at"
    assert found.expected == "at or after 2026-11-21T01:00:00+00:00"


def test_a_run_recorded_after_the_run_its_steps_follow_passes(
    campaign: CampaignBuilder
) -> None:
    resume_on_gpu1(campaign)
    times(campaign, "resume-check", "2026-11-21T01:00:00Z", "2026-11-21T02:00:00Z")
    assert problems(campaign, PVA) == []


def test_runs_recorded_over_more_than_their_lots_days_are_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["closed_at"] = "2026-11-24T00:00:00Z"
    times(campaign, "variant-a", "2026-11-23T08:00:00Z", "2026-11-23T22:00:00Z")
    found = only(problems(campaign, PVA), "plan-vs-actual.lot-recorded-span").finding
    assert found.message == (
        "the runs on lot 'rtx4090-3d' were recorded over 84 h, from control's start at "
        "2026-11-20T10:00:00+00:00 to variant-a's ended_at at 2026-11-23T22:00:00+00:00, "
        "longer than the lot's 3 days (72 h) by 12 h")
    assert found.where == "manifest.json $.runs[3].ended_at"


def test_runs_recorded_within_their_lots_days_pass(campaign: CampaignBuilder) -> None:
    campaign.manifest["closed_at"] = "2026-11-24T00:00:00Z"
    times(campaign, "variant-a", "2026-11-22T20:00:00Z", "2026-11-23T10:00:00Z")
    assert problems(campaign, PVA) == []


def test_a_save_timed_before_its_run_started_is_refused(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-20T09:30:00Z"))
    found = only(problems(campaign, PVA), "plan-vs-actual.save-before-start").finding
    assert found.message == ("checkpoint runs/control/step-2.pt of run control was saved at "
                             "2026-11-20T09:30:00+00:00, 0.5 h before the run started "
                             "(2026-11-20T10:00:00+00:00)")
    assert found.where == "itera-journal.jsonl:1"
    assert found.expected == ("a save at or after 2026-11-20T10:00:00+00:00 (manifest.json "
                              "$.runs[0].started_at)")


def test_a_save_at_the_runs_start_passes(campaign: CampaignBuilder) -> None:
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-20T10:00:00Z"))
    assert problems(campaign, PVA) == []


# ======================================================== R7/v3: the receipt agrees


def with_receipt(campaign: CampaignBuilder, text: str, reference: str | None = None, *,
                 label: str = "bucket storage", amount: str = "12.00") -> None:
    campaign.files["receipts/storage.txt"] = (
        "Buyer: campaign tiny-2026-11\nDate: 2026-11-21\n" + text).encode()
    source: dict[str, str] = {"file": "receipts/storage.txt"}
    if reference is not None:
        source["reference"] = reference
    campaign.manifest["budget"].update(
        included_expenses=[{"label": label, "amount": amount, "source": source}],
        cost_per_deliverable=f"{47.14 + float(amount):.2f}")


def test_a_receipt_in_another_currency_is_refused(itera: Itera, campaign: CampaignBuilder
                                                   ) -> None:
    with_receipt(campaign, "Stockage : 12,00 EUR TTC\n")
    itera.fails(campaign, "budget-consistent",
                "manifest.json $.budget.included_expenses[0].amount: included expense 'bucket "
                "storage' (12.00 USD): its source file receipts/storage.txt states 12.00 EUR, "
                "not 12.00 USD (the budget's currency)",
                "    expected: 12.00 USD", "    found:    12.00 EUR",
                "    fix:      record the amount in the budget's currency as the document "
                "states it*")


@pytest.mark.parametrize("text", ["Storage: 12.00 USD\n", "Storage: $12.00\n",
                                  "Storage: 12.00\n", "Paid 12.00 EUR = 12.00 USD\n"])
def test_a_receipt_stating_the_amount_in_the_budgets_currency_passes(
    itera: Itera, campaign: CampaignBuilder, text: str
) -> None:
    with_receipt(campaign, text)
    itera.passes(campaign, "budget-consistent")


def test_a_receipt_of_another_order_is_refused(itera: Itera, campaign: CampaignBuilder) -> None:
    with_receipt(campaign, "Order reference: ORD-11111\nStorage: 12.00 USD\n", "ORD-88213")
    itera.fails(campaign, "budget-consistent",
                "manifest.json $.budget.included_expenses[0].source.reference: included expense "
                "'bucket storage' (12.00 USD): its receipt receipts/storage.txt does not state "
                "its source reference 'ORD-88213'",
                "    expected: 'ORD-88213' in receipts/storage.txt",
                "    fix:      attach the receipt of the order the reference names*")


def test_a_receipt_of_its_order_passes(itera: Itera, campaign: CampaignBuilder) -> None:
    with_receipt(campaign, "Order reference: ord 88213\nStorage: 12.00 USD\n", "ORD-88213")
    itera.passes(campaign, "budget-consistent")


# ================================================= v3: a comparison on the same examples


SPLITS = ("train", "train", "test", "test")


def split_gain(root: Path, variant_splits: tuple[str, ...]) -> Path:
    """accuracy_gain where split=test, relative to the control; the corpus has no split:
    each prediction row carries its example's."""
    campaign = plan3(root, metric="accuracy_gain", relative_to="control")
    campaign.plan["decision"]["computation"]["where"] = {"split": "test"}
    for run_id, splits in (("control", SPLITS), ("variant-a", variant_splits)):
        path = f"runs/{run_id}/predictions.jsonl"
        rows = [json.loads(line) for line in campaign.files[path].splitlines()]
        for row, split in zip(rows, splits, strict=True):
            row["split"] = split
        campaign.files[path] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    scored: dict[str, Any] = {}
    for run_id, splits in (("control", SPLITS), ("variant-a", variant_splits)):
        rows = [json.loads(line) for line in
                campaign.files[f"runs/{run_id}/predictions.jsonl"].splitlines()]
        test = [r for r, s in zip(rows, splits, strict=True) if s == "test"]
        scored[run_id] = sum(r["label"] == r["prediction"] for r in test) / len(test)
    campaign.set_metric("variant-a", "accuracy_gain",
                        round(scored["variant-a"] - scored["control"], 4))
    return campaign.write()


def test_a_test_example_moved_to_train_in_one_runs_rows_is_refused(tmp_path: Path) -> None:
    root = split_gain(tmp_path / "out", ("train", "train", "test", "train"))
    found = findings(root, "metrics-recomputed", "variant-a")
    assert [f.code for f in found] == ["metrics-recomputed.filter-differs"], rendered(found)
    assert found[0].message == (
        f"run variant-a's accuracy_gain is relative to control's, but their predictions select "
        f"other examples where split=test: 1 only in control's ({CORPUS_IDS[3]})")
    assert found[0].where == "runs/variant-a/predictions.jsonl"


def test_the_same_split_in_both_runs_rows_passes(tmp_path: Path) -> None:
    root = split_gain(tmp_path / "out", SPLITS)
    assert findings(root, "metrics-recomputed", "variant-a") == ()


# ============================================== R4: no rental time billed by the hour


def test_a_prorated_day_of_the_gpu_lot_as_an_expense_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Seller: IteraGPU\nRTX 4090, one more day: 15.71 USD\n",
                 label="IteraGPU: RTX 4090 extension, 1 day", amount="15.71")
    itera.fails(campaign, "budget-consistent",
                "manifest.json $.budget.included_expenses[0].amount: included expense "
                "'IteraGPU: RTX 4090 extension, 1 day' (15.71 USD) is rental time of lot "
                "'rtx4090-3d''s provider billed by the hour: 15.71 USD = 47.14 USD / 72 h x "
                "24 h, a pro-rata of the 3-day lot (47.14 USD)",
                "    expected: rental time as whole catalogue lots, engaged in budget.lots",
                "    fix:      lots are fixed-price for their duration (R4)*")


def test_another_gpu_purchase_from_the_provider_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Seller: IteraGPU\nRTX 4090 image snapshot: 5.00 USD\n",
                 label="IteraGPU: RTX 4090 image snapshot", amount="5.00")
    itera.passes(campaign, "budget-consistent")


# ============================================== R8: instructions name shipped files


def test_reload_instructions_naming_a_file_not_shipped_are_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] += (b"\nThe variant's final model: "
                                    b"`torch.load('./runs/variant-a/final.pt')`.\n")
    found = only(problems(campaign, "analysis-present"),
                 "analysis-present.reload-path-missing").finding
    assert found.message == ("the reload instructions RELOAD.md name 1 file(s) the campaign "
                             "folder does not hold: runs/variant-a/final.pt (line 6)")
    assert found.where == "RELOAD.md:6"


def test_reload_instructions_naming_templates_urls_and_other_folders_pass(
    campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] += (
        b"\nAny run: `runs/<run>/step-<N>.pt`; the base: https://hub.example/runs/x/model.pt;"
        b" the model class: example_campaign/model.py; the copy: $OUT/runs/control/x.pt.\n"
        b"Export: `python export.py --output runs/control/model.onnx -o runs/x.pt`;"
        b" `python score.py > runs/control/scores.jsonl`.\n")
    assert problems(campaign, "analysis-present") == []


# ================================================== R6: the resume trained on


def edited(campaign: CampaignBuilder, source: str, **progress: int) -> bytes:
    """The torch checkpoint ``source`` of the campaign with its progress changed."""
    import io

    import torch

    payload = torch.load(io.BytesIO(campaign.files[source]), weights_only=True)
    payload["progress"].update(progress)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


NEVER_TRAINED = "resume-complete.never-trained"


def test_a_resume_checks_checkpoint_copied_from_the_one_it_resumed_is_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.files[RESUME_CKPT] = campaign.files[CONTROL_CKPT]
    found = only(problems(campaign, "resume-complete"), NEVER_TRAINED)
    assert found.target == RESUME_CKPT
    assert found.finding.message == (
        f"{RESUME_CKPT} of run resume-check is byte for byte {CONTROL_CKPT}, the checkpoint "
        "it resumed from, and the run lists no later checkpoint: the resume never trained, "
        "so it proves no resume")
    assert found.finding.where == "manifest.json $.checkpoints[1]"
    assert found.finding.expected == ("a checkpoint of run resume-check saved after training "
                                      f"past step {RESUMED_AT} in the new process")
    assert found.finding.hint is not None
    assert found.finding.hint.startswith("resume the checkpoint in a new process, train on")


def test_a_resume_checks_checkpoint_with_the_resumed_tensors_is_refused(
    campaign: CampaignBuilder
) -> None:
    # Its step says it trained on; its model is the one it resumed, tensor for tensor.
    campaign.files[RESUME_CKPT] = edited(campaign, CONTROL_CKPT, step=RESUME_SAVED_AT)
    found = only(problems(campaign, "resume-complete"), NEVER_TRAINED).finding
    assert found.message.startswith(
        f"{RESUME_CKPT} of run resume-check holds the same model tensors (names, shapes, "
        f"dtypes and checksums) as {CONTROL_CKPT}, the checkpoint it resumed from")
    assert found.found == f"the model tensors of {CONTROL_CKPT}"


def test_a_resume_checks_checkpoint_at_the_step_it_resumed_is_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.files[RESUME_CKPT] = edited(campaign, RESUME_CKPT, step=RESUMED_AT)
    found = only(problems(campaign, "resume-complete"), NEVER_TRAINED).finding
    assert found.message.startswith(
        f"{RESUME_CKPT} of run resume-check stores step {RESUMED_AT}, not after step "
        f"{RESUMED_AT} of {CONTROL_CKPT}, the checkpoint it resumed from")


def test_a_resume_check_that_trained_on_passes_even_with_a_save_at_the_restore(
    campaign: CampaignBuilder
) -> None:
    assert problems(campaign, "resume-complete") == []
    # A save right after the restore is no fault while a later checkpoint trained on.
    restored = "runs/resume-check/restored.pt"
    campaign.files[restored] = campaign.files[CONTROL_CKPT]
    campaign.manifest["checkpoints"].append(
        {"path": restored, "run": "resume-check", "format": "torch", "kind": "resume",
         "claims": ["model", "optimizer", "progress", "scheduler", "rng", "data"]})
    assert problems(campaign, "resume-complete") == []


# ========================== R2/R9/v3: the journal's moments are the manifest's (audit3)


def test_a_run_end_moved_from_the_journaled_outcome_is_refused(
    campaign: CampaignBuilder
) -> None:
    # The journal accepted control at 01:00; the manifest ends it at 00:00, so that what
    # followed it (a decision, the next run) seems to come after its end.
    campaign.run_record("control")["ended_at"] = "2026-11-21T00:00:00Z"
    found = only(journaled(campaign, *honest(campaign)), "journal-agrees.run-end").finding
    assert found.message == ("run control ended at 2026-11-21T01:00:00+00:00 by "
                             "itera-journal.jsonl (its accepted event), at "
                             "2026-11-21T00:00:00+00:00 by the manifest")
    assert found.where == "itera-journal.jsonl:10"
    assert found.hint is not None
    assert found.hint.startswith("write the end the recorder journaled (manifest.json "
                                 "$.runs[0].ended_at)")


def decided(campaign: CampaignBuilder, journaled_at: str) -> list[dict[str, Any]]:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-control", "text": "the control learns: the variant runs",
         "at": "2026-11-21T04:00:00Z"}]
    return [*honest(campaign), {"event": "decide", "id": "after-control",
                                "text": "the control learns: the variant runs", "drops": [],
                                "adds": [], "at": journaled_at}]


def test_a_decision_moment_moved_from_the_journal_is_refused(
    campaign: CampaignBuilder
) -> None:
    found = only(journaled(campaign, *decided(campaign, "2026-11-21T05:00:00Z")),
                 "journal-agrees.decision-at").finding
    assert found.message == ("decision after-control was taken at 2026-11-21T05:00:00+00:00 "
                             "by itera-journal.jsonl, at 2026-11-21T04:00:00+00:00 by the "
                             "manifest")
    assert found.where == "itera-journal.jsonl:11"


def test_run_ends_and_decisions_at_their_journaled_moments_pass(
    campaign: CampaignBuilder
) -> None:
    assert journaled(campaign, *decided(campaign, "2026-11-21T04:00:00Z")) == []


# ======================== R5/v3: a stopped run's evidence checkpoint is at its stop (audit3)


def evidence_checkpoint(campaign: CampaignBuilder, step: int) -> None:
    """variant-a stopped at step 4, shipping one checkpoint that stores ``step``."""
    stopped_at(campaign, "2026-11-21T18:00:00Z")
    path = "runs/variant-a/last.pt"
    campaign.files[path] = edited(campaign, CONTROL_CKPT, step=step)
    campaign.manifest["checkpoints"].append(
        {"path": path, "run": "variant-a", "format": "torch", "kind": "weights"})


def test_a_stopped_runs_checkpoint_saved_past_its_stop_is_refused(
    campaign: CampaignBuilder
) -> None:
    # Its measurements end at the stop; its model trained on to step 40.
    evidence_checkpoint(campaign, 40)
    found = only(problems(campaign, "stop-rules-applied"),
                 "stop-rules-applied.checkpoint-after-stop").finding
    assert found.message == ("stopped run variant-a's checkpoint runs/variant-a/last.pt "
                             "stores step 40, after its stop at step 4: the model went on "
                             "training past the rule 'non-finite-loss' that stopped it")
    assert found.where == "manifest.json $.checkpoints[3]"
    assert found.expected == "a step at or before 4 (manifest.json $.runs[3].stop.step)"
    assert found.hint is not None
    assert found.hint.startswith("a run stops when its rule fires: ship the checkpoint")


def test_a_stopped_runs_checkpoint_at_its_stop_passes(campaign: CampaignBuilder) -> None:
    evidence_checkpoint(campaign, 4)
    assert problems(campaign, "stop-rules-applied") == []


# ============ v3: the conclusion and the analysis quote the measured values (audit3)


def test_a_conclusion_quoting_a_value_no_metric_holds_is_refused(
    campaign: CampaignBuilder
) -> None:
    # Measurements, manifest and predictions say variant-a 1.0; the text quotes 0.95.
    campaign.manifest["conclusion"]["text"] = (
        "variant-a 0.95 meets the 0.8 accuracy threshold; control's 0.75 does not.")
    found = only(problems(campaign, "conclusion-consistent"),
                 "conclusion-consistent.quoted-value").finding
    # The clause names the run, its metric and a number: an exact reading, it decides.
    assert not found.advisory
    assert found.message == ("the conclusion's text quotes 0.95 for variant-a's accuracy, "
                             "which is 1")
    assert found.where == "manifest.json $.conclusion.text"
    assert found.expected == ("variant-a's accuracy 1 (runs/variant-a/measurements.jsonl)")
    assert found.hint is not None
    assert found.hint.startswith("quote the values the measurements hold")


def test_a_conclusion_quoting_the_measured_values_passes(campaign: CampaignBuilder) -> None:
    campaign.manifest["conclusion"]["text"] = (
        "variant-a 1.00 meets the 0.8 accuracy threshold; control's 75.0% does not "
        "(variant-a at 0.5 h more).")
    assert problems(campaign, "conclusion-consistent") == []


@pytest.mark.parametrize("text", [
    "variant-a 0.25 higher than control meets the accuracy threshold; control does not.",
    "variant-a 1.3 times control's accuracy meets the threshold; control does not.",
    "variant-a 0.5 dropout meets the accuracy threshold; control does not.",
    "control: 0.1 noise, 0.75 accuracy, under the threshold; variant-a meets it.",
])
def test_a_difference_a_ratio_or_a_setting_after_a_run_is_no_quoted_value(
    campaign: CampaignBuilder, text: str
) -> None:
    """An honest text writes numbers beside a run that no metric holds: only a value the run
    is said to have is judged against its measurements."""
    campaign.manifest["conclusion"]["text"] = text
    assert problems(campaign, "conclusion-consistent") == []


TABLE = "| run | accuracy | loss |\n| --- | --- | --- |\n| control | 0.75 | 0.9 |\n"


def test_an_analysis_table_quoting_a_value_no_metric_holds_advises(
    campaign: CampaignBuilder
) -> None:
    """A free table's column is a reading of words (its header may be a split, a step): it
    advises, and refuses under strict text."""
    from tests.checks.judging import advises_then_fails

    campaign.files["analysis.md"] += (TABLE + "| variant-a | 0.97 | 0.1 |\n").encode()
    found = advises_then_fails(campaign, "analysis-present", "analysis-present.quoted-value")
    assert found.message == ("the error analysis analysis.md quotes 0.97 for variant-a under "
                             "'accuracy' (line 7), a value none of its measured metrics holds")
    assert found.where == "analysis.md:7"
    assert found.hint is not None
    assert found.hint.startswith("write the analysis from the measurements")


METRICS_TABLE = ("<!-- itera-metrics -->\n| run | metric | value |\n| --- | --- | --- |\n"
                 "| control | accuracy | 0.75 |\n| variant-a | accuracy | {value} |\n"
                 "<!-- /itera-metrics -->\n")


def test_an_itera_metrics_table_quoting_another_value_is_refused(
    campaign: CampaignBuilder
) -> None:
    """The itera-metrics table is structured: each row is judged exactly, by default."""
    campaign.files["analysis.md"] += METRICS_TABLE.format(value="0.97").encode()
    found = only(problems(campaign, "analysis-present"),
                 "analysis-present.metrics-table").finding
    assert found.message == ("the error analysis analysis.md's itera-metrics table gives "
                             "variant-a's accuracy as 0.97 (line 8), which is 1")
    assert found.where == "analysis.md:8"
    assert (found.expected, found.found) == ("1", "0.97")


@pytest.mark.parametrize(("row", "message"), [
    ("| variant-z | accuracy | 1 |", " names run 'variant-z' (line 8), which the manifest does "
     "not record"),
    ("| variant-a | f1 | 1 |", " gives variant-a's 'f1' (line 8), a metric its measurements do "
     "not hold"),
    ("| variant-a | accuracy |", ": a row of 2 cells, not run | metric | value (line 8)"),
    ("| variant-a | accuracy | high |", " gives variant-a's accuracy as high (line 8), which "
     "is 1"),
])
def test_an_itera_metrics_table_row_that_is_no_measurement_is_refused(
    campaign: CampaignBuilder, row: str, message: str
) -> None:
    table = METRICS_TABLE.replace("| variant-a | accuracy | {value} |", row)
    campaign.files["analysis.md"] += table.encode()
    found = only(problems(campaign, "analysis-present"),
                 "analysis-present.metrics-table").finding
    assert found.message == f"the error analysis analysis.md's itera-metrics table{message}"


@pytest.mark.parametrize("value", ["1", "1.0", "1.000", "100 %", "1e0"])
def test_an_itera_metrics_table_with_the_measured_values_passes(
    campaign: CampaignBuilder, value: str
) -> None:
    campaign.files["analysis.md"] += METRICS_TABLE.format(value=value).encode()
    assert problems(campaign, "analysis-present") == []


def test_an_analysis_quoting_the_measured_values_passes(campaign: CampaignBuilder) -> None:
    # A column that names no metric (loss) is not judged; nor is a number with a unit.
    campaign.files["analysis.md"] += (TABLE + "| variant-a | 1.0 | 0.1 |\n\nvariant-a 1.000 "
                                      "on the corpus, control 0.7500; variant-a 2.5 h.\n"
                                      ).encode()
    assert problems(campaign, "analysis-present") == []


# ================================ R7/v3: a receipt is dated by its date line (audit3)


def _advised_then_strict(itera: Itera, campaign: CampaignBuilder, first: str) -> None:
    """A reading of a receipt's text (checks/prose/receipts.py): it advises by default and
    fails under strict text, its first line ``first``."""
    from pytest_itera.report.verify import check_campaign

    itera.passes(campaign, "budget-consistent")
    strict = check_campaign(campaign.write(), strict_text=True)
    assert [p.finding.render().splitlines()[0] for p in strict.findings
            if p.check == "budget-consistent"] == [first]


def test_a_receipt_issued_a_year_before_with_a_later_print_date_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Storage: 12.00 USD\nPrinted 2026-11-21.\n")
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(b"Date: 2026-11-21",
                                                              b"Date: 2025-11-21")
    _advised_then_strict(
        itera, campaign,
        "manifest.json $.budget.included_expenses[0].source.file: included expense "
        "'bucket storage' (12.00 USD): its receipt receipts/storage.txt is dated "
        "2025-11-21 (its issue date, line 2), outside the campaign's window")


def test_a_receipt_dated_in_the_window_whatever_else_it_prints_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Storage: 12.00 USD\nCustomer since 2019-03-02.\n")
    itera.passes(campaign, "budget-consistent")


# ======================== R3/v3: a save is never timed inside another run on its GPU (audit3)


def test_a_save_timed_while_another_run_held_the_gpu_is_refused(
    campaign: CampaignBuilder
) -> None:
    # variant-a ran on gpu0 from 04:00 to 18:00; the journal times a control save at 10:00.
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-21T10:00:00Z"))
    found = only(problems(campaign, PVA), "plan-vs-actual.save-during-run").finding
    assert found.message == ("checkpoint runs/control/step-2.pt of run control was saved at "
                             "2026-11-21T10:00:00+00:00, while run variant-a ran on the same "
                             "GPU ('gpu0') from 2026-11-21T04:00:00+00:00 to "
                             "2026-11-21T18:00:00+00:00")
    assert found.where == "itera-journal.jsonl:1"
    assert found.expected == ("a save outside variant-a's recorded span (manifest.json "
                              "$.runs[3].started_at to ended_at): one GPU trains one run at "
                              "a time")
    assert found.hint is not None
    assert found.hint.startswith("record when each run really started and ended")


def test_a_save_at_the_boundary_of_another_run_passes(campaign: CampaignBuilder) -> None:
    # An artifact of a run trained after it ended (an adapter) is saved between two runs.
    journal(campaign, save("control", "runs/control/step-2.pt", "2026-11-21T04:00:00Z"))
    assert problems(campaign, PVA) == []


def test_a_receipt_addressed_to_another_campaign_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    # Issued by the provider the label names (which alone would address it), but bought by
    # another campaign.
    with_receipt(campaign, "Seller: Northbridge\nStorage: 12.00 USD\n",
                 label="Northbridge: bucket storage")
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(
        b"Buyer: campaign tiny-2026-11", b"Buyer: campaign tiny-2025-03")
    _advised_then_strict(
        itera, campaign,
        "manifest.json $.budget.included_expenses[0].source.file: included expense "
        "'Northbridge: bucket storage' (12.00 USD): its receipt receipts/storage.txt is "
        "addressed to campaign 'tiny-2025-03', not 'tiny-2026-11'")


def test_a_receipt_of_the_provider_naming_no_campaign_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Seller: Northbridge\nCampaign folder storage: 12.00 USD\n",
                 label="Northbridge: bucket storage")
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(
        b"Buyer: campaign tiny-2026-11\n", b"")
    itera.passes(campaign, "budget-consistent")


def test_an_expense_recording_only_the_tax_line_of_its_receipt_is_refused(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: 12.00 USD\n",
                 amount="2.00")
    itera.fails(campaign, "budget-consistent",
                "manifest.json $.budget.included_expenses[0].amount: included expense 'bucket "
                "storage' (2.00 USD): its source file receipts/storage.txt states 2.00 only as "
                "a tax (line 4: 'VAT 20%: 2.00 USD'), not as what was bought",
                "    expected: the amount billed for the item the label names",
                "    found:    VAT 20%: 2.00 USD; Total paid: 12.00 USD",
                "    fix:      record the amount the receipt bills for the item*")


def test_an_expense_recorded_as_paid_that_is_its_receipts_vat_line_is_refused(
    campaign: CampaignBuilder
) -> None:
    """Recorded with its kind, the label is not read: "paid", and the receipt states the amount
    only on its MwSt line (an acronym, in any language the receipt is written)."""
    with_receipt(campaign, "Speicher: 10,00 USD\nMwSt 20 %: 2,00 USD\nGesamt: 12,00 USD\n",
                 label="Mehrwertsteuer-freier Speicher", amount="2.00")
    campaign.manifest["budget"]["included_expenses"][0]["kind"] = "paid"
    from tests.checks.judging import judged

    found = judged(campaign, "budget-consistent")
    assert found.codes() == (["budget-consistent.amount-is-tax"], [])
    assert found.deciding[0].found == "MwSt 20 %: 2,00 USD; Gesamt: 12,00 USD"


def test_a_line_only_the_word_tax_names_advises(campaign: CampaignBuilder) -> None:
    """"Tax" is a word a receipt may write for other things ("tax-exempt storage"): reading it
    advises, and decides under strict text."""
    from tests.checks.judging import advises_then_fails

    with_receipt(campaign, "Storage: 10.00 USD\nSales tax: 2.00 USD\nTotal paid: 12.00 USD\n",
                 amount="2.00")
    found = advises_then_fails(campaign, "budget-consistent", "budget-consistent.amount-is-tax")
    assert found.message.endswith("states 2.00 only as a tax (line 4: 'Sales tax: 2.00 USD'), "
                                  "not as what was bought")


@pytest.mark.parametrize(("text", "label", "amount"), [
    ("Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: 12.00 USD\n", "bucket storage",
     "12.00"),
    ("Speicher: 10,00 USD\nMwSt 20 %: 2,00 USD\nGesamt: 12,00 USD\n", "Mehrwertsteuer Speicher",
     "2.00"),
    ("Almacenamiento: 10,00 USD\nIVA 20 %: 2,00 USD\nTotal: 12,00 USD\n", "IVA del almacenamiento",
     "2.00"),
    ("Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: 12.00 USD\n", "VAT on storage",
     "2.00"),
    ("Storage, total incl. VAT: 12.00 USD\n", "bucket storage", "12.00"),
])
def test_an_expense_recording_what_its_receipt_bills_passes(
    itera: Itera, campaign: CampaignBuilder, text: str, label: str, amount: str
) -> None:
    with_receipt(campaign, text, label=label, amount=amount)
    itera.passes(campaign, "budget-consistent")
