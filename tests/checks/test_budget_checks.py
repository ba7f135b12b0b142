"""budget-consistent: the source's numbers pass, and each way of getting the money wrong fails.

The accepted count is re-derived in this session from the runs' own checks:
the tests prove it is the same with ``-k budget-consistent`` alone, with and
without pytest-xdist, and that a run failing its own checks is no deliverable.
"""

from __future__ import annotations

import json

import pytest

from tests.checks.judging import advises_then_fails
from tests.factory import PREDICTED, CampaignBuilder, expect, sha256
from tests.runner import Itera

BUDGET = "budget-consistent"
RECEIPT = "receipts/disk-invoice.pdf"


def budget(campaign: CampaignBuilder, **fields: object) -> None:
    campaign.manifest["budget"].update(fields)


def add_corpus(campaign: CampaignBuilder, corpus_id: str, data: bytes | None = None) -> None:
    """A second frozen corpus: other example IDs, other content (unless ``data`` says). With
    the same IDs it would be the same corpus by content (no label field is declared)."""
    if data is None:
        data = campaign.files["corpus/corpus.jsonl"].replace(b"example", b"sample").replace(
            b'"ex-', b'"b-')
    path = f"corpus/{corpus_id}.jsonl"
    campaign.files[path] = data
    campaign.plan["corpora"].append({"id": corpus_id, "path": path, "sha256": sha256(data),
                                     "id_field": "id", "examples": 4})


def deliver(campaign: CampaignBuilder, run_id: str, corpus_id: str) -> None:
    """``run_id`` is planned on, and its predictions cover, ``corpus_id``."""
    next(r for r in campaign.plan["runs"] if r["id"] == run_id)["corpus"] = corpus_id
    campaign.run_record(run_id)["corpus"] = corpus_id
    corpus = next(c for c in campaign.plan["corpora"] if c["id"] == corpus_id)
    ids = [json.loads(line)["id"] for line in campaign.files[corpus["path"]].splitlines()]
    # The run's own prediction for each example (ex-3 or b-3: the third), in whatever order
    # the corpus lists them: its recorded metric still recomputes.
    predicted = PREDICTED.get(run_id, ("pos",) * len(ids))
    campaign.files[f"runs/{run_id}/predictions.jsonl"] = "".join(
        json.dumps({"id": i, "prediction": predicted[int(i.rsplit("-", 1)[1]) - 1]}) + "\n"
        for i in ids).encode()


def two_corpora(campaign: CampaignBuilder) -> None:
    """The guide's example: the control delivers tiny-corpus, variant-a corpus-b."""
    add_corpus(campaign, "corpus-b")
    deliver(campaign, "control", "tiny-corpus")
    deliver(campaign, "variant-a", "corpus-b")
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")


def test_predictions_of_another_corpus_than_planned(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """R1: variant-a was planned on tiny-corpus; the manifest says its predictions cover
    corpus-b (another content). predictions-cover-corpus says so, whatever the budget."""
    two_corpora(campaign)
    next(r for r in campaign.plan["runs"] if r["id"] == "variant-a")["corpus"] = "tiny-corpus"
    campaign.write()
    result = itera(check="predictions-cover-corpus")
    result.assert_outcomes(passed=1, failed=1)
    expect(result,
           "manifest.json $.runs[3].corpus: run variant-a was planned on corpus 'tiny-corpus', "
           "but the manifest says its predictions cover 'corpus-b'",
           "    expected: 'tiny-corpus'", "    found:    'corpus-b'")


def test_predictions_of_the_same_bytes_under_another_corpus_id_are_the_planned_corpus(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    add_corpus(campaign, "corpus-b", data=campaign.files["corpus/corpus.jsonl"])
    deliver(campaign, "variant-a", "tiny-corpus")
    campaign.run_record("variant-a")["corpus"] = "corpus-b"
    campaign.write()
    itera(check="predictions-cover-corpus").assert_outcomes(passed=2)


def receipt(campaign: CampaignBuilder, path: str = RECEIPT, amount: str = "2.00") -> dict[str, str]:
    """A receipt file shipped and listed in the campaign, stating ``amount``; returns the
    source naming it."""
    campaign.files[path] = (f"%PDF-1.4 invoice INV-2026-311: {amount} USD\n"
                            "Buyer: campaign tiny-2026-11\nDate: 2026-11-21\n").encode()
    return {"file": path}


def disk(campaign: CampaignBuilder, amount: str = "2.00") -> dict[str, object]:
    """An included expense with its receipt."""
    return {"label": "extra disk for the rental", "amount": amount, "source": receipt(campaign)}


# ---------------------------------------------------------- the source's numbers


def test_one_3_day_lot_one_corpus_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    itera.passes(campaign, BUDGET)


def test_two_3_day_lots_cost_94_28(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["quantity"] = 2
    budget(campaign, rental_total="94.28", cost_per_deliverable="94.28")
    itera.passes(campaign, BUDGET)


def test_47_14_for_two_distinct_corpora_is_23_57_each(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    itera.passes(campaign, BUDGET)


def test_a_corpus_replayed_by_every_run_counts_once(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    # The control and variant-a both deliver tiny-corpus: one deliverable, not two.
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.accepted_deliverables: accepted_deliverables is 2, but 1 distinct "
        "corpus(es) were delivered by accepted control or variant runs that passed their checks "
        "in this session; the declared number counts runs, but a corpus replayed counts once",
        "    expected: 1 (tiny-corpus)",
        "    found:    2",
        "manifest.json $.budget.cost_per_deliverable: cost per deliverable 23.57 USD is not "
        "47.14 USD / 1 = 47.14 USD",
    )


def test_a_b200_lot_of_two_gpus_is_priced_once(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    lot = campaign.plan["budget"]["lots"][0]
    lot.update(gpu="B200", gpus_per_lot=2, price="120.00", offer="B200 x2, 3 days",
               source={"reference": "Q-2026-118"})
    budget(campaign, rental_total="120.00", cost_per_deliverable="120.00")
    itera.passes(campaign, BUDGET)


def test_a_b200_lot_multiplied_by_its_gpus_fails(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    lot = campaign.plan["budget"]["lots"][0]
    lot.update(gpu="B200", gpus_per_lot=2, price="120.00", offer="B200 x2, 3 days",
               source={"reference": "Q-2026-118"})
    budget(campaign, rental_total="240.00", cost_per_deliverable="240.00")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.rental_total: rental total 240.00 USD is not the sum of price * "
        "quantity, 120.00 USD: it multiplies prices by GPUs per lot, but a lot is priced once",
        "    expected: 120.00 USD = 120.00 x 1 (rtx4090-3d)",
        "    found:    240.00 USD",
        "    fix:      the rental is Σ price x quantity of the engaged lots; GPUs per lot never "
        "multiply a price, and expenses are listed apart",
    )


# ------------------------------------------------------------------ zero accepted


def reject_all(campaign: CampaignBuilder) -> None:
    for record in campaign.manifest["runs"]:
        record["outcome"] = "rejected"
        record["rejection"] = "predictions below chance"
    budget(campaign, accepted_deliverables=0, cost_per_deliverable=None,
           rejection_cause="every run predicted below chance")


def test_zero_accepted_with_cost_and_cause_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    itera.passes(campaign, BUDGET)


def test_zero_accepted_never_shows_a_zero_cost_per_deliverable(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    budget(campaign, cost_per_deliverable="0.00")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.cost_per_deliverable: zero accepted deliverables but a cost per "
        "deliverable of 0.00 USD: the ratio is undefined (null)",
        "    expected: null, 47.14 USD engaged and a rejection_cause",
    )


def test_zero_accepted_needs_a_rejection_cause(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    budget(campaign, rejection_cause=None)
    itera.fails(campaign, BUDGET, "*: zero accepted deliverables (47.14 USD engaged) without a "
                "rejection cause")


@pytest.mark.parametrize("cause", ["n/a", "TBD", "unknown"])
def test_zero_accepted_with_a_placeholder_cause_has_no_cause(
    itera: Itera, campaign: CampaignBuilder, cause: str
) -> None:
    reject_all(campaign)
    budget(campaign, rejection_cause=cause)
    itera.fails(campaign, BUDGET, "*: zero accepted deliverables (47.14 USD engaged) without a "
                f"rejection cause ({cause!r} is a placeholder, not a cause)")


def test_zero_accepted_needs_a_non_zero_engaged_cost(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    campaign.plan["budget"]["lots"][0].update(price="0", offer="Free tier, 3 days",
                                              source={"reference": "promo FREE-72"})
    budget(campaign, rental_total="0.00")
    itera.fails(campaign, BUDGET, "*: zero accepted deliverables and a zero engaged cost: show the "
                "cost actually engaged")


def test_zero_accepted_declared_as_one(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    budget(campaign, accepted_deliverables=1, cost_per_deliverable="47.14")
    itera.fails(
        campaign, BUDGET,
        "*: accepted_deliverables is 1, but 0 distinct corpus(es) were delivered*",
        "    expected: 0", "*zero accepted deliverables but a cost per deliverable of 47.14 USD*",
    )


# --------------------------------------------------------------- research decision


def test_a_research_decision_reports_its_conclusion_not_a_ratio(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    budget(campaign, unit="decision", cost_per_deliverable=None)
    itera.passes(campaign, BUDGET)


def test_a_research_decision_with_a_ratio_fails(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    budget(campaign, unit="decision")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.cost_per_deliverable: a research decision reports its "
        "conclusion, not a cost per deliverable (47.14 USD)",
        "    expected: null (the conclusion is reported instead)",
    )


# ------------------------------------------------------------ rental and expenses


def test_rental_total_wrong(itera: Itera, campaign: CampaignBuilder) -> None:
    budget(campaign, rental_total="50.00", cost_per_deliverable="50.00")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.rental_total: rental total 50.00 USD is not the sum of price * "
        "quantity, 47.14 USD", "    found:    50.00 USD",
    )


def test_external_expenses_added_to_the_rental(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    budget(campaign, rental_total="52.14", external_expenses=[
        {"label": "object storage, billed by the cloud account", "amount": "5.00"}])
    itera.fails(campaign, BUDGET,
                "*: rental total 52.14 USD is not the sum of price * quantity, 47.14 USD: it adds "
                "the external expenses (5.00 USD); list them apart")


def test_included_expenses_added_to_the_rental(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    budget(campaign, rental_total="49.14", cost_per_deliverable="49.14",
           included_expenses=[disk(campaign)])
    itera.fails(campaign, BUDGET,
                "*: rental total 49.14 USD is not the sum of price * quantity, 47.14 USD: it adds "
                "the included expenses, which are listed apart")


def test_included_expenses_count_in_the_cost_per_deliverable(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    budget(campaign, cost_per_deliverable="24.57", included_expenses=[disk(campaign)])
    itera.passes(campaign, BUDGET)


def test_the_rental_share_per_deliverable_is_accepted_too(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    """The source's own figure is the rental's share: 47.14 USD / 2 corpora = 23.57."""
    two_corpora(campaign)
    budget(campaign, included_expenses=[disk(campaign)])
    itera.passes(campaign, BUDGET)


def test_a_ratio_that_is_neither_share_fails(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    budget(campaign, cost_per_deliverable="25.00", included_expenses=[disk(campaign)])
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.cost_per_deliverable: cost per deliverable 25.00 USD is not "
        "49.14 USD / 2 = 24.57 USD*",
    )


def test_an_external_expense_listed_as_included(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.plan["budget"]["external_expenses"] = [{"label": "analyst time", "amount": "300"}]
    budget(campaign, rental_total="47.14", cost_per_deliverable="347.14",
           included_expenses=[{"label": "analyst time", "amount": "300",
                               "source": receipt(campaign, amount="300.00")}])
    itera.fails(campaign, BUDGET,
                "manifest.json $.budget.included_expenses[0]: included expense 'analyst time' "
                "(300 USD) is the external expense 'analyst time' (300 USD, plan.json "
                "$.budget.external_expenses[0]): the same label",
                "    expected: listed under external_expenses only")


@pytest.mark.parametrize(
    ("where", "text"),
    [("manifest", "GPU time at 0.65 USD/h"), ("manifest", "RTX 4090, billed hourly"),
     ("plan", "IteraGPU RTX 4090 per hour")],
)
def test_hourly_billing_is_refused(
    itera: Itera, campaign: CampaignBuilder, where: str, text: str
) -> None:
    """A rate per hour written in words advises; under --itera-strict-text it decides."""
    if where == "plan":
        campaign.plan["budget"]["lots"][0]["offer"] = text
        path = "plan.json $.budget.lots[0].offer"
    else:
        budget(campaign, external_expenses=[{"label": text, "amount": "3.00"}])
        path = "manifest.json $.budget.external_expenses[0].label"
    found = advises_then_fails(campaign, BUDGET, "budget-consistent.hourly-billing")
    assert found.render().startswith(f"{path}: hourly billing: {text!r} states a rate per hour")
    assert "    fix:      lots are fixed-price for their whole duration (R4)" in found.render()
    result = itera("--itera-strict-text", check=BUDGET)
    result.assert_outcomes(failed=1)
    expect(result, f"{path}: hourly billing: {text!r} states a rate per hour*")


def test_currencies_disagree(itera: Itera, campaign: CampaignBuilder) -> None:
    budget(campaign, currency="EUR")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.currency: the manifest's budget is not in the plan's currency",
        "    expected: USD", "    found:    EUR",
    )


def test_engaged_lot_unknown_or_listed_twice(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    budget(campaign, lots=["rtx4090-3d", "rtx4090-7d", "rtx4090-3d"])
    itera.fails(campaign, BUDGET,
                "manifest.json $.budget.lots[1]: engaged lot 'rtx4090-7d' is not a lot of the plan",
                "    expected: one of 'rtx4090-3d'",
                "manifest.json $.budget.lots[2]: engaged lot 'rtx4090-3d' is listed twice")


def test_wrong_ratio(itera: Itera, campaign: CampaignBuilder) -> None:
    two_corpora(campaign)
    budget(campaign, cost_per_deliverable="23.00")
    itera.fails(
        campaign, BUDGET,
        "manifest.json $.budget.cost_per_deliverable: cost per deliverable 23.00 USD is not "
        "47.14 USD / 2 = 23.57 USD", "    expected: 23.57 USD = 47.14 USD / 2",
    )


def test_missing_ratio(itera: Itera, campaign: CampaignBuilder) -> None:
    budget(campaign, cost_per_deliverable=None)
    itera.fails(campaign, BUDGET, "*: 1 accepted deliverable(s) but no cost per deliverable "
                "(47.14 USD)")


def test_stopped_runs_are_an_expense_not_a_deliverable(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    variant = campaign.manifest["runs"][3]
    variant.update(outcome="stopped", stop={"rule": "non-finite-loss", "reason": "loss was nan"})
    itera.fails(campaign, BUDGET, "*: accepted_deliverables is 2, but 1 distinct corpus(es)*",
                "    expected: 1 (tiny-corpus)")


# ------------------------------------- accepted = passed its own checks, this session


def corrupt_variant_predictions(campaign: CampaignBuilder, declared: int = 2) -> None:
    """variant-a's predictions change after closure: its files-intact item fails."""
    two_corpora(campaign)
    budget(campaign, accepted_deliverables=declared,
           cost_per_deliverable={1: "47.14", 2: "23.57"}[declared])
    campaign.write()
    path = campaign.root / "runs/variant-a/predictions.jsonl"
    # Other bytes of the same size, the same predictions (its metric still recomputes): only
    # files-intact fails, on the sha256.
    data = path.read_bytes()
    assert b'"prediction": "pos"}' in data
    path.write_bytes(data.replace(b'"prediction": "pos"}', b'"prediction":"pos" }', 1))
    campaign.seal()


NOT_AN_ACCEPTED_DELIVERABLE = (
    "manifest.json $.budget.accepted_deliverables: accepted_deliverables is 2, but 1 distinct "
    "corpus(es) were delivered by accepted control or variant runs that passed their checks in "
    "this session; not counted: variant-a (failed files-intact[runs/variant-a/predictions.jsonl]"
    ": runs/variant-a/predictions.jsonl does not have the sha256 recorded in the manifest*",
    "    expected: 1 (tiny-corpus)",
    "    found:    2",
)


def test_a_run_that_failed_its_checks_is_not_an_accepted_deliverable(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    corrupt_variant_predictions(campaign)
    result = itera(check=f"{BUDGET} or files-intact")
    result.assert_outcomes(failed=2, passed=len(campaign.files) - 1)
    expect(result, *NOT_AN_ACCEPTED_DELIVERABLE)


def test_selected_alone_the_budget_still_sees_the_failing_run(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    # Only the budget item runs: the files-intact item that fails is deselected.
    corrupt_variant_predictions(campaign)
    result = itera(check=BUDGET)
    result.assert_outcomes(failed=1)
    expect(result, *NOT_AN_ACCEPTED_DELIVERABLE)


def test_the_declared_count_without_the_failing_run_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    corrupt_variant_predictions(campaign, declared=1)
    itera(check=BUDGET).assert_outcomes(passed=1)
