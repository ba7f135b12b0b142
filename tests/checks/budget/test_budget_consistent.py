"""The rules of ``budget-consistent`` (pytest_itera/checks/budget/budget_consistent.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

budget-consistent: the source's numbers pass, and each way of getting the money wrong fails.

The accepted count is re-derived in this session from the runs' own checks:
the tests prove it is the same with ``-k budget-consistent`` alone, with and
without pytest-xdist, and that a run failing its own checks is no deliverable.

budget-consistent on the evidence (issue 12): each rule broken alone, every total consistent.

Each rule has a failing campaign whose message is asserted and a passing twin: lots against
the catalogue in force (R4), hourly billing wherever it is written (R4), the provenance of
included expenses and no made-up amount (R7), and deliverables as distinct corpora (R7).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.checks.model import Options
from tests.checks.campaigns import (
    BUDGET,
    RECEIPT,
    add_corpus,
    budget,
    deliver,
    disk,
    receipt,
    two_corpora,
    with_receipt,
)
from tests.checks.judging import (
    advises_then_fails,
    expect_finding,
    expect_no_finding,
    judge,
    judged,
)
from tests.factory import CampaignBuilder, expect, sha256
from tests.pdfs import text_pdf
from tests.runner import Itera

# ---------------------------------------------------------- the source's numbers


def test_one_3_day_lot_one_corpus_passes(
    campaign: CampaignBuilder
) -> None:
    expect_no_finding(judge(campaign, BUDGET))


def test_two_3_day_lots_cost_94_28(campaign: CampaignBuilder) -> None:
    campaign.plan["budget"]["lots"][0]["quantity"] = 2
    budget(campaign, rental_total="94.28", cost_per_deliverable="94.28")
    expect_no_finding(judge(campaign, BUDGET))


def test_47_14_for_two_distinct_corpora_is_23_57_each(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    expect_no_finding(judge(campaign, BUDGET))


def test_a_corpus_replayed_by_every_run_counts_once(
    campaign: CampaignBuilder
) -> None:
    # The control and variant-a both deliver tiny-corpus: one deliverable, not two.
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    found = judge(campaign, BUDGET)
    finding = expect_finding(found, "budget-consistent.accepted-deliverables",
                             where="manifest.json $.budget.accepted_deliverables",
                             says="accepted_deliverables is 2, but 1 distinct corpus(es) were "
                                  "delivered by accepted control or variant runs that passed "
                                  "their checks in this session; the declared number counts "
                                  "runs, but a corpus replayed counts once")
    assert finding.expected == "1 (tiny-corpus)"
    assert finding.found == "2"
    expect_finding(found, "budget-consistent.cost-per-deliverable",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="cost per deliverable 23.57 USD is not 47.14 USD / 1 = 47.14 USD")


def test_a_b200_lot_of_two_gpus_is_priced_once(
    campaign: CampaignBuilder
) -> None:
    lot = campaign.plan["budget"]["lots"][0]
    lot.update(gpu="B200", gpus_per_lot=2, price="120.00", offer="B200 x2, 3 days",
               source={"reference": "Q-2026-118"})
    budget(campaign, rental_total="120.00", cost_per_deliverable="120.00")
    expect_no_finding(judge(campaign, BUDGET))


def test_a_b200_lot_multiplied_by_its_gpus_fails(
    campaign: CampaignBuilder
) -> None:
    lot = campaign.plan["budget"]["lots"][0]
    lot.update(gpu="B200", gpus_per_lot=2, price="120.00", offer="B200 x2, 3 days",
               source={"reference": "Q-2026-118"})
    budget(campaign, rental_total="240.00", cost_per_deliverable="240.00")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.rental-total",
                             where="manifest.json $.budget.rental_total",
                             says="rental total 240.00 USD is not the sum of price * quantity, "
                                  "120.00 USD: it multiplies prices by GPUs per lot, but a lot "
                                  "is priced once")
    assert finding.expected == "120.00 USD = 120.00 x 1 (rtx4090-3d)"
    assert finding.found == "240.00 USD"
    assert finding.hint == (
        "the rental is Σ price x quantity of the engaged lots; GPUs per lot never multiply a "
        "price, and expenses are listed apart")


# ------------------------------------------------------------------ zero accepted


def reject_all(campaign: CampaignBuilder) -> None:
    for record in campaign.manifest["runs"]:
        record["outcome"] = "rejected"
        record["rejection"] = "predictions below chance"
    budget(campaign, accepted_deliverables=0, cost_per_deliverable=None,
           rejection_cause="every run predicted below chance")


def test_zero_accepted_with_cost_and_cause_passes(
    campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    expect_no_finding(judge(campaign, BUDGET))


def test_zero_accepted_never_shows_a_zero_cost_per_deliverable(
    campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    budget(campaign, cost_per_deliverable="0.00")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.zero-accepted",
                             where="manifest.json $.budget.cost_per_deliverable",
                             says="zero accepted deliverables but a cost per deliverable of 0.00 "
                                  "USD: the ratio is undefined (null)")
    assert finding.expected == "null, 47.14 USD engaged and a rejection_cause"


def test_zero_accepted_needs_a_rejection_cause(
    campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    budget(campaign, rejection_cause=None)
    expect_finding(judge(campaign, BUDGET), "budget-consistent.zero-accepted",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="zero accepted deliverables (47.14 USD engaged) without a rejection cause")


@pytest.mark.parametrize("cause", ["n/a", "TBD", "unknown"])
def test_zero_accepted_with_a_placeholder_cause_has_no_cause(
    campaign: CampaignBuilder, cause: str
) -> None:
    reject_all(campaign)
    budget(campaign, rejection_cause=cause)
    expect_finding(judge(campaign, BUDGET), "budget-consistent.zero-accepted",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="zero accepted deliverables (47.14 USD engaged) without a rejection cause "
                   f"({cause!r} is a placeholder, not a cause)")


def test_zero_accepted_needs_a_non_zero_engaged_cost(
    campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    campaign.plan["budget"]["lots"][0].update(price="0", offer="Free tier, 3 days",
                                              source={"reference": "promo FREE-72"})
    budget(campaign, rental_total="0.00")
    expect_finding(judge(campaign, BUDGET), "budget-consistent.zero-accepted",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="zero accepted deliverables and a zero engaged cost: show the cost "
                        "actually engaged")


def test_zero_accepted_declared_as_one(
    campaign: CampaignBuilder
) -> None:
    reject_all(campaign)
    budget(campaign, accepted_deliverables=1, cost_per_deliverable="47.14")
    found = judge(campaign, BUDGET)
    finding = expect_finding(found, "budget-consistent.accepted-deliverables",
                             where="manifest.json $.budget.accepted_deliverables",
                             says="accepted_deliverables is 1, but 0 distinct corpus(es) were "
                                  "delivered")
    assert finding.expected == "0"
    expect_finding(found, "budget-consistent.zero-accepted",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="zero accepted deliverables but a cost per deliverable of 47.14 USD")


# --------------------------------------------------------------- research decision


def test_a_research_decision_reports_its_conclusion_not_a_ratio(
    campaign: CampaignBuilder
) -> None:
    budget(campaign, unit="decision", cost_per_deliverable=None)
    expect_no_finding(judge(campaign, BUDGET))


def test_a_research_decision_with_a_ratio_fails(
    campaign: CampaignBuilder
) -> None:
    budget(campaign, unit="decision")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.cost-per-deliverable",
                             where="manifest.json $.budget.cost_per_deliverable",
                             says="a research decision reports its conclusion, not a cost per "
                                  "deliverable (47.14 USD)")
    assert finding.expected == "null (the conclusion is reported instead)"


# ------------------------------------------------------------ rental and expenses


def test_rental_total_wrong(campaign: CampaignBuilder) -> None:
    budget(campaign, rental_total="50.00", cost_per_deliverable="50.00")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.rental-total",
                             where="manifest.json $.budget.rental_total",
                             says="rental total 50.00 USD is not the sum of price * quantity, "
                                  "47.14 USD")
    assert finding.found == "50.00 USD"


def test_external_expenses_added_to_the_rental(
    campaign: CampaignBuilder
) -> None:
    budget(campaign, rental_total="52.14", external_expenses=[
        {"label": "object storage, billed by the cloud account", "amount": "5.00"}])
    expect_finding(judge(campaign, BUDGET), "budget-consistent.rental-total",
                   where="manifest.json $.budget.rental_total",
                   says="rental total 52.14 USD is not the sum of price * quantity, 47.14 USD: "
                        "it adds the external expenses (5.00 USD); list them apart")


def test_included_expenses_added_to_the_rental(
    campaign: CampaignBuilder
) -> None:
    budget(campaign, rental_total="49.14", cost_per_deliverable="49.14",
           included_expenses=[disk(campaign)])
    expect_finding(judge(campaign, BUDGET), "budget-consistent.rental-total",
                   where="manifest.json $.budget.rental_total",
                   says="rental total 49.14 USD is not the sum of price * quantity, 47.14 USD: "
                        "it adds the included expenses, which are listed apart")


def test_included_expenses_count_in_the_cost_per_deliverable(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    budget(campaign, cost_per_deliverable="24.57", included_expenses=[disk(campaign)])
    expect_no_finding(judge(campaign, BUDGET))


def test_the_rental_share_per_deliverable_is_accepted_too(
    campaign: CampaignBuilder
) -> None:
    """The source's own figure is the rental's share: 47.14 USD / 2 corpora = 23.57."""
    two_corpora(campaign)
    budget(campaign, included_expenses=[disk(campaign)])
    expect_no_finding(judge(campaign, BUDGET))


def test_a_ratio_that_is_neither_share_fails(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    budget(campaign, cost_per_deliverable="25.00", included_expenses=[disk(campaign)])
    expect_finding(judge(campaign, BUDGET), "budget-consistent.cost-per-deliverable",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="cost per deliverable 25.00 USD is not 49.14 USD / 2 = 24.57 USD")


def test_an_external_expense_listed_as_included(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["budget"]["external_expenses"] = [{"label": "analyst time", "amount": "300"}]
    budget(campaign, rental_total="47.14", cost_per_deliverable="347.14",
           included_expenses=[{"label": "analyst time", "amount": "300",
                               "source": receipt(campaign, amount="300.00")}])
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.external-as-included",
                             where="manifest.json $.budget.included_expenses[0]",
                             says="included expense 'analyst time' (300 USD) is the external "
                                  "expense 'analyst time' (300 USD, plan.json "
                                  "$.budget.external_expenses[0]): the same label")
    assert finding.expected == "listed under external_expenses only"


def test_currencies_disagree(campaign: CampaignBuilder) -> None:
    budget(campaign, currency="EUR")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.currency",
                             where="manifest.json $.budget.currency",
                             says="the manifest's budget is not in the plan's currency")
    assert finding.expected == "USD"
    assert finding.found == "EUR"


def test_engaged_lot_unknown_or_listed_twice(
    campaign: CampaignBuilder
) -> None:
    budget(campaign, lots=["rtx4090-3d", "rtx4090-7d", "rtx4090-3d"])
    found = judge(campaign, BUDGET)
    finding = expect_finding(found, "budget-consistent.engaged-lot-unknown",
                             where="manifest.json $.budget.lots[1]",
                             says="engaged lot 'rtx4090-7d' is not a lot of the plan")
    assert finding.expected == "one of 'rtx4090-3d'"
    expect_finding(found, "budget-consistent.engaged-lot-twice",
                   where="manifest.json $.budget.lots[2]",
                   says="engaged lot 'rtx4090-3d' is listed twice")


def test_wrong_ratio(campaign: CampaignBuilder) -> None:
    two_corpora(campaign)
    budget(campaign, cost_per_deliverable="23.00")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.cost-per-deliverable",
                             where="manifest.json $.budget.cost_per_deliverable",
                             says="cost per deliverable 23.00 USD is not 47.14 USD / 2 = 23.57 "
                                  "USD")
    assert finding.expected == "23.57 USD = 47.14 USD / 2"


def test_missing_ratio(campaign: CampaignBuilder) -> None:
    budget(campaign, cost_per_deliverable=None)
    expect_finding(judge(campaign, BUDGET), "budget-consistent.cost-per-deliverable",
                   where="manifest.json $.budget.cost_per_deliverable",
                   says="1 accepted deliverable(s) but no cost per deliverable (47.14 USD)")


def test_stopped_runs_are_an_expense_not_a_deliverable(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    variant = campaign.manifest["runs"][3]
    variant.update(outcome="stopped", stop={"rule": "non-finite-loss", "reason": "loss was nan"})
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
                             where="manifest.json $.budget.accepted_deliverables",
                             says="accepted_deliverables is 2, but 1 distinct corpus(es)")
    assert finding.expected == "1 (tiny-corpus)"


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


def lot(campaign: CampaignBuilder, **fields: object) -> None:
    """Change the plan's one lot and keep the manifest's totals consistent with its price."""
    planned = campaign.plan["budget"]["lots"][0]
    planned.update(fields)
    price = str(planned["price"])
    budget(campaign, rental_total=price, cost_per_deliverable=price)


def quote(campaign: CampaignBuilder, path: str = "quotes/b200-offer.pdf") -> dict[str, str]:
    campaign.files[path] = b"%PDF-1.4 quote Q-2026-118: B200 x2, 3 days, 120.00 USD\n"
    return {"file": path}


# ============================================================ lots and prices (R4)


def test_a_3_day_lot_priced_by_the_hour_is_refused(
    campaign: CampaignBuilder
) -> None:
    lot(campaign, price="46.80")  # 72 h x 0.65 USD/h instead of the lot's 47.14 USD
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.lot-price",
                             where="plan.json $.budget.lots[0].price",
                             says="lot 'rtx4090-3d' is the IteraGPU catalogue's offer 'IteraGPU "
                                  "RTX 4090, 3 days' (same offer name), priced 47.14 USD for 3 "
                                  "days, but the plan prices it 46.80 USD: 46.80 USD = 72 h x "
                                  "0.65 USD/h")
    assert finding.expected == (
        "47.14 (the IteraGPU catalogue: 'IteraGPU RTX 4090, 3 days', 3 days)")
    assert finding.found == "46.80"
    assert (
        "a lot's price is its offer's fixed price for the whole duration, never hours x a rate: "
        "write 47.14; a different quoted price is another offer") in (finding.hint or "")


@pytest.mark.parametrize(
    "fields",
    [
        # The same offer name, written otherwise.
        pytest.param({"offer": "iteragpu rtx-4090, 3 DAYS"}, id="catalogue-price"),
        pytest.param({"offer": "RTX 4090 three-day rental", "gpu": "rtx-4090"},
                     id="catalogue-offer-under-another-name-at-its-price"),
        pytest.param({"offer": "CloudX RTX 4090, 3 days", "price": "60.00",
                      "source": {"reference": "CX-ORDER-5521"}},
                     id="another-providers-quoted-lot-of-the-same-gpu-and-days"),
    ],
)
def test_a_lot_at_its_offers_price_passes(
    campaign: CampaignBuilder, fields: dict[str, object]
) -> None:
    lot(campaign, **fields)
    expect_no_finding(judge(campaign, BUDGET))


B200 = {"offer": "B200 x2, 3 days", "gpu": "B200", "gpus_per_lot": 2, "price": "120.00"}


@pytest.mark.parametrize(
    ("fields", "code", "where", "says"),
    [
        pytest.param({"offer": "RTX 4090 three-day rental", "price": "50.00"},
                     "budget-consistent.lot-price", "plan.json $.budget.lots[0].price",
                     "lot 'rtx4090-3d' is the IteraGPU catalogue's offer 'IteraGPU RTX 4090, 3 "
                     "days' (same GPU and days), priced 47.14 USD for 3 days, but the plan "
                     "prices it 50.00 USD", id="another-name-keeps-the-catalogue-price"),
        pytest.param(B200, "budget-consistent.lot-unsourced", "plan.json $.budget.lots[0].source",
                     "lot 'rtx4090-3d' (offer 'B200 x2, 3 days': B200, 3 days, 120.00 USD) is "
                     "not in the IteraGPU catalogue in force and records no source",
                     id="outside-the-catalogue-without-a-source"),
        pytest.param({"offer": "RTX 4090, 5 days", "days": 5, "price": "78.57"},
                     "budget-consistent.lot-unsourced", "plan.json $.budget.lots[0].source",
                     "; its price reads as hourly billing: 78.57 USD = 47.14 USD / 72 h x 120 h, "
                     "a pro-rata of the 3-day lot (47.14 USD)",
                     id="prorated-outside-the-catalogue"),
        pytest.param(B200 | {"source": {"reference": "n/a"}},
                     "budget-consistent.source-placeholder",
                     "plan.json $.budget.lots[0].source.reference",
                     "lot 'rtx4090-3d': its source reference 'n/a' is a placeholder, not a "
                     "reference", id="placeholder-reference"),
    ],
)
def test_a_lot_priced_without_its_offer_is_refused(
    campaign: CampaignBuilder, fields: dict[str, object], code: str, where: str, says: str
) -> None:
    lot(campaign, **fields)
    expect_finding(judge(campaign, BUDGET), code, where=where, says=says)


def test_a_lot_outside_the_catalogue_is_told_to_record_its_source(
    campaign: CampaignBuilder,
) -> None:
    lot(campaign, **B200)
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.lot-unsourced")
    assert (finding.expected or "").startswith("the quote or order of this price: {\"file\": ")
    assert finding.found == "no source"
    assert finding.hint == (
        "record the quote or order the price comes from (budget.lots[].source), or give the "
        "catalogue that lists the offer (the pytest_itera_catalogue hook or the ini option "
        "itera_catalogue); a price is never computed from hours")


@pytest.mark.parametrize(
    ("field", "value", "code", "says"),
    [
        ("days", 4, "budget-consistent.lot-days", "lot 'rtx4090-3d' is the IteraGPU "
         "catalogue's offer 'IteraGPU RTX 4090, 3 days' (same offer name), which lasts 3 days, "
         "not 4"),
        ("gpus_per_lot", 2, "budget-consistent.lot-gpus-per-lot", "lot 'rtx4090-3d' is the "
         "IteraGPU catalogue's offer 'IteraGPU RTX 4090, 3 days' (same offer name), which holds "
         "1 GPU(s) per lot, not 2"),
        ("gpu", "RTX 3090", "budget-consistent.lot-gpu", "lot 'rtx4090-3d' is the IteraGPU "
         "catalogue's offer 'IteraGPU RTX 4090, 3 days' (same offer name), a RTX 4090 lot, not "
         "RTX 3090"),
    ],
)
def test_a_catalogue_offer_keeps_its_terms(
    campaign: CampaignBuilder, field: str, value: object, code: str, says: str
) -> None:
    lot(campaign, **{field: value})
    finding = expect_finding(judge(campaign, BUDGET), code,
                             where=f"plan.json $.budget.lots[0].{field}", says=says)
    assert (finding.hint or "").startswith(
        "name the offer and its terms as the catalogue does; an offer on other terms is "
        "another offer")


@pytest.mark.parametrize("kind", ["file", "reference"])
def test_an_offer_outside_the_catalogue_with_its_quote_passes(
    campaign: CampaignBuilder, kind: str
) -> None:
    source = quote(campaign) if kind == "file" else {"reference": "Q-2026-118"}
    lot(campaign, **B200, source=source)
    expect_no_finding(judge(campaign, BUDGET))


def test_a_quoted_lot_priced_as_hours_of_a_catalogue_lot_is_refused(
    campaign: CampaignBuilder
) -> None:
    """R4: 62.85 = 47.14 / 72 h x 96 h. A reference does not make a pro-rata a fixed price."""
    lot(campaign, offer="IteraGPU RTX 4090, 4 days", days=4, price="62.85",
        source={"reference": "Q-2026-4D"})
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.lot-hourly",
                             where="plan.json $.budget.lots[0].price",
                             says="lot 'rtx4090-3d' (offer 'IteraGPU RTX 4090, 4 days': RTX "
                                  "4090, 4 days) is priced as hours of a catalogue lot: 62.85 "
                                  "USD = 47.14 USD / 72 h x 96 h, a pro-rata of ")
    assert "lots are fixed-price (R4)" in (finding.hint or "")


def test_a_quoted_lot_of_another_duration_at_its_own_price_passes(
    campaign: CampaignBuilder
) -> None:
    lot(campaign, offer="CloudY RTX 4090, 4 days", days=4, price="60.00",
        source={"reference": "Q-2026-4D"})
    expect_no_finding(judge(campaign, BUDGET))


@pytest.mark.parametrize(
    ("breakage", "problem"),
    [
        ("missing", "is missing"),
        ("unlisted", "is not listed in the manifest's files"),
        ("empty", "is empty"),
    ],
)
def test_a_quote_file_is_a_listed_present_non_empty_file(
    campaign: CampaignBuilder, breakage: str, problem: str
) -> None:
    source = quote(campaign)
    if breakage == "missing":
        del campaign.files[source["file"]]
    elif breakage == "unlisted":
        campaign.unlisted.add(source["file"])
    else:
        campaign.files[source["file"]] = b""
    lot(campaign, **B200, source=source)
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.source-file",
                             where="plan.json $.budget.lots[0].source.file",
                             says=f"lot 'rtx4090-3d': its source file quotes/b200-offer.pdf "
                             f"{problem}")
    assert finding.expected == ("a receipt, invoice or quote file listed in manifest.json files, "
                                "present and non-empty")


ACME = """
from pytest_itera.core.money import parse_catalogue

def pytest_itera_catalogue(config):
    return parse_catalogue('''{"format": "itera-catalogue/1", "provider": "Acme",
        "currency": "USD", "offers": [
        {"offer": "Acme 4090, 4 days", "gpu": "RTX 4090", "gpus_per_lot": 1,
         "days": 4, "price": "60.00"}]}''')
"""


def test_the_hooks_catalogue_is_in_force(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeconftest(ACME)
    lot(campaign, offer="Acme 4090, 4 days", days=4, price="60.00")
    itera.passes(campaign, BUDGET)


def test_under_the_hooks_catalogue_the_shipped_offer_needs_a_source(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeconftest(ACME)
    itera.fails(
        campaign, BUDGET,
        "plan.json $.budget.lots[0].source: lot 'rtx4090-3d' (offer 'IteraGPU RTX 4090, 3 "
        "days': RTX 4090, 3 days, 47.14 USD) is not in the Acme catalogue in force and records "
        "no source",
    )


def test_a_hook_that_returns_no_catalogue_fails_the_budget(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeconftest("def pytest_itera_catalogue(config):\n    return {'offers': []}\n")
    itera.fails(campaign, BUDGET,
                "pytest_itera_catalogue hook: the price catalogue in force cannot be used: the "
                "pytest_itera_catalogue hook returned dict, not a "
                "pytest_itera.core.money.Catalogue")


def write_prices(folder: Path, price: str = "55.00") -> None:
    offers = [{"offer": "Lab cluster 4090, 3 days", "gpu": "RTX 4090", "gpus_per_lot": 1,
               "days": 3, "price": price}]
    (folder / "prices.json").write_text(json.dumps(
        {"format": "itera-catalogue/1", "provider": "Lab", "currency": "USD", "offers": offers}))


def test_the_ini_catalogue_is_in_force(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    write_prices(pytester.path)
    lot(campaign, offer="Lab cluster 4090, 3 days", price="55.00")
    itera.passes(campaign, BUDGET)


def test_the_ini_catalogue_refuses_another_price(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    write_prices(pytester.path)
    lot(campaign, offer="Lab cluster 4090, 3 days", price="47.14")
    itera.fails(
        campaign, BUDGET,
        "plan.json $.budget.lots[0].price: lot 'rtx4090-3d' is the Lab catalogue's offer 'Lab "
        "cluster 4090, 3 days' (same offer name), priced 55.00 USD for 3 days, but the plan "
        "prices it 47.14 USD",
    )


def test_a_bad_ini_catalogue_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    write_prices(pytester.path, price="55")
    (pytester.path / "prices.json").write_text(
        (pytester.path / "prices.json").read_text().replace('"55"', "55.5"))
    campaign.write()
    result = itera(check=BUDGET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*itera_catalogue = prices.json: *prices.json "
                                 "$.offers[[]0[]].price: 55.5 is a float*"])


def test_a_lot_in_another_currency_than_its_catalogue(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["budget"]["currency"] = "EUR"
    budget(campaign, currency="EUR")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.lot-currency",
                             where="plan.json $.budget.currency",
                             says="lot 'rtx4090-3d' is the IteraGPU catalogue's offer 'IteraGPU "
                                  "RTX 4090, 3 days' (same offer name), priced in USD, but the "
                                  "plan's budget is in EUR")
    assert finding.expected == "47.14 USD (no invented exchange rate)"


# ================================================================ hourly billing (R4)


def conclude(campaign: CampaignBuilder, text: str) -> None:
    campaign.manifest["conclusion"]["text"] = text


@pytest.mark.parametrize(
    ("place", "text", "where"),
    [
        ("offer", "IteraGPU RTX 4090, 3 days, 0.65 USD per GPU-hour",
         "plan.json $.budget.lots[0].offer"),
        ("included", "disk, 0.02 €/h", "manifest.json $.budget.included_expenses[0].label"),
        ("plan external", "analyst, 40 USD par heure",
         "plan.json $.budget.external_expenses[0].label"),
        ("reference", "contract: 72 GPU-hours at 0.65",
         "manifest.json $.budget.included_expenses[0].source.reference"),
        ("conclusion", "variant-a meets the threshold; the overrun was billed 0.65 USD/hr.",
         "manifest.json $.conclusion.text"),
        ("explanation", "6 h more than planned, charged hourly at 0.65 USD",
         "manifest.json $.schedule.deviations[0].explanation"),
    ],
)
def test_hourly_billing_is_found_in_every_money_bearing_text(
    campaign: CampaignBuilder, place: str, text: str, where: str
) -> None:
    if place == "offer":
        campaign.plan["budget"]["lots"][0]["offer"] = text
    elif place == "included":
        budget(campaign, included_expenses=[disk(campaign) | {"label": text}])
    elif place == "plan external":
        campaign.plan["budget"]["external_expenses"] = [{"label": text, "amount": "300.00"}]
    elif place == "reference":
        budget(campaign, included_expenses=[disk(campaign) | {
            "source": {"file": RECEIPT, "reference": text}}])
    elif place == "conclusion":
        conclude(campaign, text)
    else:
        campaign.manifest["schedule"]["deviations"] = [{"step": "setup", "explanation": text}]
    found = advises_then_fails(campaign, BUDGET, "budget-consistent.hourly-billing")
    assert found.render().startswith(f"{where}: hourly billing: {text!r} states a rate per hour")
    assert "    fix:      lots are fixed-price for their whole duration (R4)" in found.render()


@pytest.mark.parametrize(
    "text",
    [
        "variant-a meets the 0.8 threshold. Checkpoints were saved hourly.",
        "variant-a meets the threshold; the rental cost 47.14 USD. Losses were logged hourly.",
        "variant-a meets the threshold with hourly-resolution validation curves.",
    ],
)
def test_hours_in_prose_without_a_rate_are_not_billing(
    campaign: CampaignBuilder, text: str
) -> None:
    conclude(campaign, text)
    expect_no_finding(judge(campaign, BUDGET))


PHRASES_HOOK = "def pytest_itera_hourly_phrases(config):\n    return ['la hora']\n"


def test_users_add_hourly_phrases_through_the_hook(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """The users' phrases are readings too: they advise, and decide under strict text."""
    pytester.makeconftest(PHRASES_HOOK)
    budget(campaign, external_expenses=[{"label": "soporte, 20 USD la hora", "amount": "40.00"}])
    expect_no_finding(judge(campaign, BUDGET))
    result = itera("--itera-strict-text", check=BUDGET)
    result.assert_outcomes(failed=1)
    expect(result,
           "manifest.json $.budget.external_expenses[0].label: hourly billing: 'soporte, 20 USD "
           "la hora' states a rate per hour ('la hora')")
    found = advises_then_fails(campaign, BUDGET, "budget-consistent.hourly-billing",
                               Options(hourly_phrases=("la hora",)))
    assert found.found == "'la hora'"


def test_without_the_hook_the_users_phrase_is_not_looked_for(
    campaign: CampaignBuilder
) -> None:
    budget(campaign, external_expenses=[{"label": "soporte, 20 USD la hora", "amount": "40.00"}])
    expect_no_finding(judge(campaign, BUDGET))
    assert judged(campaign, BUDGET, strict=True).deciding == ()


# ====================================================================== expenses (R7)


def advised_then_strict(itera: Itera, campaign: CampaignBuilder, *lines: str) -> None:
    """A label's reading (prose.labels): the item passes by default, with advisories coded
    ``label-marker``; under strict text the same findings fail it, saying ``lines``
    (fnmatch patterns, each matching a line of its rendering, in order)."""
    from fnmatch import fnmatchcase

    expect_no_finding(judge(campaign, BUDGET))
    advised = judge(campaign, BUDGET).advisories
    assert advised
    assert {f.code for f in advised} == {"budget-consistent.label-marker"}
    failed = [f.render() for f in judge(campaign, BUDGET, strict=True, write=False)]
    assert failed == [f.render() for f in advised]
    rendered = "\n".join(failed).splitlines()
    at = 0
    for line in lines:
        while at < len(rendered) and not fnmatchcase(rendered[at], line.replace("[", "[[]")):
            at += 1
        assert at < len(rendered), (line, rendered)


def include(campaign: CampaignBuilder, *expenses: dict[str, object]) -> None:
    """Included expenses, with a consistent cost per deliverable (engaged total / 1)."""
    total = sum(float(str(e["amount"])) for e in expenses) + 47.14
    budget(campaign, included_expenses=list(expenses), cost_per_deliverable=f"{total:.2f}")


@pytest.mark.parametrize(
    ("label", "amount", "proof"),
    [
        pytest.param("extra disk for the rental", "2.00", RECEIPT, id="receipt"),
        pytest.param("extra disk for the rental", "2.00", {"reference": "ORDER-2026-311"},
                     id="order-reference"),
        pytest.param("VAT 20% (VAT invoice)", "9.43", "receipts/vat-invoice.pdf",
                     id="tax-on-its-invoice"),
        pytest.param("egress of the outputs", "1.08", "receipts/egress.pdf",
                     id="transfer-cost-on-its-invoice"),
    ],
)
def test_an_included_expense_with_its_proof_passes(
    campaign: CampaignBuilder, label: str, amount: str, proof: str | dict[str, str]
) -> None:
    """A receipt file shipped in the campaign (a str here), or an order reference."""
    source = receipt(campaign, proof, amount) if isinstance(proof, str) else proof
    include(campaign, {"label": label, "amount": amount, "source": source})
    expect_no_finding(judge(campaign, BUDGET))


ADDRESSED = ("Buyer: campaign tiny-2026-11", "Date: 2026-11-21")


@pytest.mark.parametrize(
    ("text", "states"),
    [
        pytest.param(b"Invoice INV-40715\nStorage, November: 12.00 USD\n", True, id="stated"),
        pytest.param(b"Facture F-12\nStockage : 12,00 USD TTC\n", True, id="decimal-comma"),
        pytest.param(b"Invoice INV-40715\nTotal: $1,212.00\n", False, id="another-amount"),
        pytest.param(b"Invoice INV-40715\nStorage, November: 1.20 USD\n", False,
                     id="a-tenth-of-it"),
        pytest.param(text_pdf(*ADDRESSED, "Storage, November: 12.00 USD"), True,
                     id="a-pdf-s-text-layer"),
        pytest.param(text_pdf(*ADDRESSED, "Storage, November: 1.20 USD"), False,
                     id="a-pdf-stating-another-amount"),
    ],
)
def test_a_text_receipt_states_the_amount_recorded_from_it(
    campaign: CampaignBuilder, text: bytes, states: bool
) -> None:
    """R7: an expense is what was paid, on the evidence of its receipt: a receipt's text (a
    PDF's text layer) must state the recorded amount. Each receipt names the campaign and is
    dated in its window (tests/checks/budget/test_receipts.py judges those)."""
    addressed = "".join(f"{line}\n" for line in ADDRESSED).encode()
    campaign.files["receipts/storage.txt"] = text if text.startswith(b"%PDF") else \
        addressed + text
    include(campaign, {"label": "bucket storage", "amount": "12.00",
                       "source": {"file": "receipts/storage.txt"}})
    if states:
        expect_no_finding(judge(campaign, BUDGET))
    else:
        expect_finding(judge(campaign, BUDGET), "budget-consistent.amount-not-in-source",
                       where="manifest.json $.budget.included_expenses[0].amount",
                       says="included expense 'bucket storage' (12.00 USD): its source file "
                            "receipts/storage.txt does not state 12.00")


def test_the_amounts_a_receipt_states_are_shown_with_their_units(
    campaign: CampaignBuilder
) -> None:
    """Issue 26: "found: 5, 0.20" hid which number was the price; each amount keeps the unit or
    currency the receipt writes with it."""
    addressed = "".join(f"{line}\n" for line in ADDRESSED)
    campaign.files["receipts/storage.txt"] = (
        f"{addressed}Bucket storage: 5 GB for the month, 0.20 USD\n").encode()
    include(campaign, {"label": "bucket storage", "amount": "12.00",
                       "source": {"file": "receipts/storage.txt"}})
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.amount-not-in-source",
                             where="manifest.json $.budget.included_expenses[0].amount",
                             says="its source file receipts/storage.txt does not state 12.00")
    assert finding.expected == "12.00, as receipts/storage.txt states it"
    assert finding.found == "5 GB, 0.20 USD"


def test_a_lot_price_its_quote_does_not_state_is_refused(
    campaign: CampaignBuilder
) -> None:
    """R4: the quote says 120.00 for the B200 lot of two GPUs; the plan prices it 240.00."""
    lot(campaign, **{**B200, "price": "240.00"}, source=quote(campaign))
    expect_finding(judge(campaign, BUDGET), "budget-consistent.amount-not-in-source",
                   where="plan.json $.budget.lots[0].price",
                   says="lot 'rtx4090-3d': its source file quotes/b200-offer.pdf does not state "
                        "240.00")


@pytest.mark.parametrize(
    ("breakage", "problem"),
    [("missing", "is missing"), ("unlisted", "is not listed in the manifest's files"),
     ("outside", "*leaves the campaign folder")],
)
def test_a_receipt_is_a_listed_present_file_of_the_campaign(
    campaign: CampaignBuilder, breakage: str, problem: str
) -> None:
    expense = disk(campaign)
    if breakage == "missing":
        del campaign.files[RECEIPT]
    elif breakage == "unlisted":
        campaign.unlisted.add(RECEIPT)
    else:
        expense["source"] = {"file": "../receipts/disk-invoice.pdf"}  # '..' leaves it
    include(campaign, expense)
    expect_finding(judge(campaign, BUDGET), "budget-consistent.source-file",
                   where="manifest.json $.budget.included_expenses[0].source.file",
                   says=["included expense 'extra disk for the rental' (2.00 USD): its source file",
                         "disk-invoice.pdf", problem.lstrip("*")])


@pytest.mark.parametrize(
    ("label", "found"),
    [
        ("object storage, estimated", "estimated"),
        ("object storage (approx.)", "approx."),
        ("object storage ~2 USD", "~"),
        ("stockage, environ 2 USD", "environ"),
        ("stockage estimé", "estimé"),
    ],
)
def test_an_estimated_amount_is_refused_even_with_a_receipt(
    itera: Itera, campaign: CampaignBuilder, label: str, found: str
) -> None:
    include(campaign, disk(campaign) | {"label": label})
    advised_then_strict(
        itera, campaign,
        f"manifest.json $.budget.included_expenses[0]: included expense {label!r} (2.00 USD) "
        f"is declared estimated ({found!r}): an expense included is an amount that was paid",
        "    fix:      list only what was paid, with its receipt or order; an estimated or "
        "computed amount is not an expense (no invented tax rate or transfer cost)*",
    )


@pytest.mark.parametrize(
    ("changes", "code", "lines"),
    [
        pytest.param({"label": "storage, prorated over the 3 days"}, None, (
            "manifest.json $.budget.included_expenses[0]: included expense 'storage, prorated "
            "over the 3 days' (2.00 USD) is declared derived from other figures ('prorated')*",),
            id="derived-amount"),
        pytest.param({"label": "VAT on the rental", "amount": "9.43",
                      "source": {"reference": "rental Q-2026-118"}}, None, (
            "manifest.json $.budget.included_expenses[0].source: included expense 'VAT on the "
            "rental' (9.43 USD) is a tax ('VAT') without its receipt file",
            "    expected: source.file: the provider's invoice or receipt that states this "
            "amount, listed in the campaign",
            "    found:    reference 'rental Q-2026-118'",
            "    fix:      attach the invoice that states it; the campaign never computes a tax, "
            "a percentage or a transfer cost*"), id="invented-tax"),
        pytest.param({"label": "egress of the outputs", "amount": "1.08",
                      "source": {"reference": "bucket eu-1"}}, None, (
            "manifest.json $.budget.included_expenses[0].source: included expense 'egress of "
            "the outputs' (1.08 USD) is a transfer cost ('egress') without its receipt file",),
            id="invented-transfer-cost"),
        pytest.param({"source": {"reference": "n/a"}}, "budget-consistent.source-placeholder", (
            "manifest.json $.budget.included_expenses[0].source.reference: included expense "
            "'extra disk for the rental' (2.00 USD): its source reference 'n/a' is a "
            "placeholder, not a reference",), id="placeholder-order-reference"),
        pytest.param({"label": " \u00a0"}, "budget-consistent.expense-no-label", (
            "manifest.json $.budget.included_expenses[0].label: an expense has no label",),
            id="blank-label"),
    ],
)
def test_an_included_expense_without_proof_of_payment_is_refused(
    itera: Itera, campaign: CampaignBuilder, changes: dict[str, object], code: str | None,
    lines: tuple[str, ...],
) -> None:
    """The disk expense, changed: a receipt file stays its source unless ``changes`` says."""
    expense = {"label": "extra disk for the rental", "amount": "2.00"} | changes
    if "source" not in expense:
        expense["source"] = receipt(campaign)
    include(campaign, expense)
    if code is None:
        advised_then_strict(itera, campaign, *lines)  # read from the label: it advises
    else:
        where, says = lines[0].split(": ", 1)
        expect_finding(judge(campaign, BUDGET), code, where=where, says=says)


@pytest.mark.parametrize(
    ("changes", "code", "where", "says"),
    [
        pytest.param({"label": "object storage", "kind": "estimate"},
                     "budget-consistent.expense-made-up",
                     "manifest.json $.budget.included_expenses[0]", "included expense 'object "
                     "storage' (2.00 USD) is declared estimated (its kind is 'estimate'): an "
                     "expense included is an amount that was paid", id="estimate"),
        pytest.param({"kind": "refund"}, "budget-consistent.expense-made-up",
                     "manifest.json $.budget.included_expenses[0]",
                     " is declared a refund (its kind is 'refund')", id="refund"),
        pytest.param({"label": "Steuer", "kind": "tax", "source": {"reference": "R-2026-7"}},
                     "budget-consistent.expense-no-receipt",
                     "manifest.json $.budget.included_expenses[0].source", "included expense "
                     "'Steuer' (2.00 USD) is a tax (kind 'tax') without its receipt file",
                     id="tax-without-its-receipt"),
    ],
)
def test_an_expense_s_kind_decides_in_any_language(
    campaign: CampaignBuilder, changes: dict[str, object], code: str, where: str, says: str
) -> None:
    expense = {"label": "extra disk for the rental", "amount": "2.00"} | changes
    if "source" not in expense:
        expense["source"] = receipt(campaign)
    include(campaign, expense)
    expect_finding(judge(campaign, BUDGET), code, where=where, says=says)


@pytest.mark.parametrize(
    ("label", "kind"),
    [("storage, estimated on the quote, paid as billed", "paid"),
     ("Mehrwertsteuer", "tax"), ("Northbridge: 2 TB x 1 month", None),
     ("IteraGPU: 1 GPU x 3 days extension", None)],
)
def test_an_expense_s_kind_is_not_second_guessed_by_its_label(
    campaign: CampaignBuilder, label: str, kind: str | None
) -> None:
    include(campaign, disk(campaign) | {"label": label}
            | ({"kind": kind} if kind is not None else {}))
    expect_no_finding(judge(campaign, BUDGET, strict=True))


def test_the_same_receipt_counted_twice(
    campaign: CampaignBuilder
) -> None:
    include(campaign, disk(campaign), disk(campaign))
    expect_finding(judge(campaign, BUDGET), "budget-consistent.expense-counted-twice",
                   where="manifest.json $.budget.included_expenses[1]",
                   says="included expense 'extra disk for the rental' (2.00 USD) is listed twice "
                        "(as included_expenses[0] too, same amount and same receipt file): the "
                        "same receipt counted twice")


def test_the_same_receipt_line_relabelled_is_still_counted_twice(
    campaign: CampaignBuilder
) -> None:
    """A new label does not make a second payment: same amount, same receipt file."""
    include(campaign, disk(campaign), {**disk(campaign), "label": "bucket for the outputs"})
    expect_finding(judge(campaign, BUDGET), "budget-consistent.expense-counted-twice",
                   where="manifest.json $.budget.included_expenses[1]",
                   says="included expense 'bucket for the outputs' (2.00 USD) is listed twice "
                        "(as included_expenses[0] too, same amount and same receipt file): the "
                        "same receipt counted twice")


def test_two_amounts_of_one_receipt_are_two_lines(
    campaign: CampaignBuilder
) -> None:
    first = disk(campaign)
    campaign.files[RECEIPT] = b"Invoice INV-2026-311, 2026-11-21, campaign tiny-2026-11\n" \
        b"disk 2.00 USD\negress 1.00 USD\n"
    include(campaign, first, {"label": "egress", "amount": "1.00", "source": {"file": RECEIPT}})
    expect_no_finding(judge(campaign, BUDGET))


def test_an_external_tax_without_its_receipt_is_invented(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    budget(campaign, external_expenses=[{"label": "VAT 20% on the rental, for the accounts",
                                         "amount": "9.43"}])
    advised_then_strict(
        itera, campaign,
        "manifest.json $.budget.external_expenses[0].source: external expense 'VAT 20% on the "
        "rental, for the accounts' (9.43 USD) is * without its receipt file",
    )


LAB = {"label": "annotation by the partner lab", "amount": "300.00",
       "source": {"reference": "PO-77"}}


@pytest.mark.parametrize(
    ("included", "reason"),
    [
        ({"label": "labelling service", "amount": "300.00", "source": {"reference": "po 77"}},
         "the same source reference 'po 77'"),
        ({"label": "labelling service", "amount": "300.00",
          "source": {"file": "quotes/lab.pdf"}}, "the same source file quotes/lab.pdf"),
        ({"label": "Annotation (partner lab)", "amount": "300.00",
          "source": {"file": RECEIPT}}, "the same amount and label word 'annotation'"),
    ],
)
def test_an_external_expense_relabelled_as_included_is_refused(
    campaign: CampaignBuilder, included: dict[str, object],
    reason: str
) -> None:
    receipt(campaign)
    campaign.files["quotes/lab.pdf"] = b"%PDF-1.4 PO-77 annotation 300.00 USD\n"
    external = LAB | {"source": {"reference": "PO-77", "file": "quotes/lab.pdf"}}
    campaign.plan["budget"]["external_expenses"] = [external]
    include(campaign, included)
    finding = expect_finding(
        judge(campaign, BUDGET), "budget-consistent.external-as-included",
        where="manifest.json $.budget.included_expenses[0]",
        says=f"included expense {included['label']!r} (300.00 USD) is the external expense "
        "'annotation by the partner lab' (300.00 USD, plan.json $.budget.external_expenses[0]): "
        f"{reason}")
    assert (finding.expected, finding.found) == ("listed under external_expenses only",
                                                 "listed as an included expense")


def test_an_included_expense_beside_an_external_one_passes(
    campaign: CampaignBuilder
) -> None:
    campaign.plan["budget"]["external_expenses"] = [LAB]
    budget(campaign, external_expenses=[LAB])
    include(campaign, disk(campaign))
    expect_no_finding(judge(campaign, BUDGET))


def test_itera_manifest_1_cannot_prove_an_expense_was_paid(
    pytester: pytest.Pytester
) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    include(campaign, {"label": "extra disk for the rental", "amount": "2.00"})
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.expense-no-source",
                             where="manifest.json $.budget.included_expenses[0].source",
                             says="itera-manifest/1 cannot prove that included expense 'extra "
                                  "disk for the rental' (2.00 USD) was paid: it records no source")
    assert finding.hint == (
        "re-close the campaign with itera-manifest/2, where every included expense names its "
        "receipt file and/or order reference (source)")


# ================================================================= deliverables (R7)


def add_pilot(campaign: CampaignBuilder) -> None:
    """An accepted pilot whose predictions cover the corpus: still no deliverable."""
    config = json.dumps({"run": "pilot", "lr": 0.01}).encode()
    campaign.files["configs/pilot.json"] = config
    campaign.files["runs/pilot/predictions.jsonl"] = campaign.files[
        "runs/control/predictions.jsonl"]
    campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "must",
                                  "config_sha256": sha256(config)})
    campaign.manifest["runs"].append(
        dict(campaign.run_record("control"), id="pilot", config="configs/pilot.json",
             config_sha256=sha256(config), predictions="runs/pilot/predictions.jsonl",
             measurements="runs/control/measurements.jsonl"))


def test_data_check_pilot_and_resume_check_deliver_nothing(
    campaign: CampaignBuilder
) -> None:
    add_pilot(campaign)
    expect_no_finding(judge(campaign, BUDGET))


@pytest.mark.parametrize("extra", ["pilot", "data-check"])
def test_counting_a_pilot_or_a_data_check_is_refused(
    campaign: CampaignBuilder, extra: str
) -> None:
    two_corpora(campaign)
    if extra == "pilot":
        add_pilot(campaign)
        campaign.run_record("pilot")["corpus"] = "corpus-b"
    else:  # the data check even names a corpus and ships predictions
        campaign.files["runs/data-check/predictions.jsonl"] = campaign.files[
            "runs/control/predictions.jsonl"]
        campaign.run_record("data-check").update(
            corpus="corpus-b", predictions="runs/data-check/predictions.jsonl")
    deliver(campaign, "variant-a", "tiny-corpus")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
                             where="manifest.json $.budget.accepted_deliverables",
                             says="accepted_deliverables is 2, but 1 distinct corpus(es) were "
                                  "delivered")
    assert finding.expected == "1 (tiny-corpus)"


def test_two_distinct_corpora_are_two_deliverables(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    expect_no_finding(judge(campaign, BUDGET))


def test_a_relabelled_copy_of_a_corpus_is_the_same_deliverable(
    campaign: CampaignBuilder
) -> None:
    add_corpus(campaign, "corpus-b", data=campaign.files["corpus/corpus.jsonl"])
    deliver(campaign, "control", "tiny-corpus")
    deliver(campaign, "variant-a", "corpus-b")
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
                             where="manifest.json $.budget.accepted_deliverables",
                             says="accepted_deliverables is 2, but 1 distinct corpus(es) were "
                                  "delivered by accepted control or variant runs that passed "
                                  "their checks in this session; one corpus under several ids "
                                  "(same content): 'corpus-b' is 'tiny-corpus'")
    assert finding.expected == "1 (corpus-b = tiny-corpus)"


def test_the_same_relabelled_copy_declared_once_passes(
    campaign: CampaignBuilder
) -> None:
    add_corpus(campaign, "corpus-b", data=campaign.files["corpus/corpus.jsonl"])
    deliver(campaign, "variant-a", "corpus-b")
    expect_no_finding(judge(campaign, BUDGET))


def test_a_run_delivering_another_corpus_than_planned_is_not_counted(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    campaign.run_record("variant-a")["corpus"] = "corpus-b"
    next(r for r in campaign.plan["runs"] if r["id"] == "variant-a")["corpus"] = "tiny-corpus"
    expect_finding(judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
                   where="manifest.json $.budget.accepted_deliverables",
                   says=["accepted_deliverables is 2, but 1 distinct corpus(es) were delivered",
                         "; not counted: variant-a (it was planned on corpus 'tiny-corpus', but "
                         "the manifest says it delivers 'corpus-b')"])


def test_a_corpus_the_plan_does_not_freeze_is_not_counted(
    campaign: CampaignBuilder
) -> None:
    campaign.run_record("variant-a")["corpus"] = "corpus-z"
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    expect_finding(judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
                   where="manifest.json $.budget.accepted_deliverables",
                   says="; not counted: variant-a (its corpus 'corpus-z' is not a corpus of the "
                        "plan)")


def test_with_several_corpora_a_run_must_say_which_it_delivers(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    del next(r for r in campaign.plan["runs"] if r["id"] == "variant-a")["corpus"]
    del campaign.run_record("variant-a")["corpus"]
    expect_finding(judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
                   where="manifest.json $.budget.accepted_deliverables",
                   says="; not counted: variant-a (the plan freezes 2 corpora and neither the "
                        "plan nor the manifest says which one its predictions cover)")


def test_a_run_names_its_corpus_in_the_plan_or_the_manifest(
    campaign: CampaignBuilder
) -> None:
    two_corpora(campaign)
    del campaign.run_record("variant-a")["corpus"]  # the plan says it: corpus-b
    expect_no_finding(judge(campaign, BUDGET))


# ---------------------------------------------------------------- itera-manifest/1

# A /1 campaign's runs fail the checks /1 cannot satisfy (no measurements, no artifacts...), so
# through pytest it delivers nothing; the budget's own reading of /1 is tested on a Context
# with the budget and the predictions check only (the run's other checks are not registered).


def budget_alone(root: Path) -> list[str]:
    from pytest_itera.checks import Context, Options
    from pytest_itera.checks import budget as budget_checks
    from pytest_itera.checks import runs as run_checks
    from pytest_itera.core.campaign import load_campaign

    wanted = (BUDGET, "predictions-cover-corpus")
    checks = {c.id: c for c in (*budget_checks.CHECKS, *run_checks.CHECKS) if c.id in wanted}
    ctx = Context(load_campaign(root), Options(), checks)
    try:
        return [f.render() for f in engine_judge(ctx).findings(BUDGET)]
    finally:
        ctx.close()


def v1_labelled(pytester: pytest.Pytester) -> CampaignBuilder:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    for record in campaign.manifest["runs"]:
        record["deliverable"] = "corpus-b" if record["id"] == "variant-a" else "corpus-a"
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    return campaign


V1_CANNOT_PROVE = (
    "manifest.json $.budget.accepted_deliverables: itera-manifest/1 cannot prove that the "
    "deliverables 'corpus-a', 'corpus-b' are 2 distinct corpora: runs[].deliverable is a label, "
    "and the runs' predictions cover 1 corpus(es) of the plan"
)


def test_itera_manifest_1_honest_campaign_counts_its_one_corpus(
    pytester: pytest.Pytester,
) -> None:
    # Every run is labelled tiny-corpus; the data check and resume check deliver nothing.
    assert budget_alone(CampaignBuilder(pytester.path / "out", version=1).write()) == []


def test_itera_manifest_1_without_deliverable_labels_counts_its_one_corpus(
    pytester: pytest.Pytester,
) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    for record in campaign.manifest["runs"]:
        del record["deliverable"]
    assert budget_alone(campaign.write()) == []


def test_itera_manifest_1_cannot_prove_labels_are_distinct_corpora(
    pytester: pytest.Pytester,
) -> None:
    findings = budget_alone(v1_labelled(pytester).write())
    assert findings[0].splitlines() == [
        V1_CANNOT_PROVE,
        "    expected: 1 (tiny-corpus)",
        "    found:    2",
        "    fix:      re-close the campaign with itera-manifest/2: plan corpora for each corpus "
        "and runs[].corpus naming the one each run's predictions cover",
    ]


def test_itera_manifest_1_labels_through_pytest(pytester: pytest.Pytester) -> None:
    expect_finding(judge(v1_labelled(pytester), BUDGET), "budget-consistent.accepted-deliverables",
                   where="manifest.json $.budget.accepted_deliverables",
                   says="itera-manifest/1 cannot prove that the deliverables 'corpus-a', "
                        "'corpus-b' are 2 distinct corpora: runs[].deliverable is a label, and "
                        "the runs' predictions cover 1 corpus(es) of the plan")


def test_selected_alone_the_budget_item_runs(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("-rA", check=BUDGET)
    result.assert_outcomes(passed=1)
    expect(result, "PASSED out/manifest.json::budget-consistent")


# ---------------------------------------- first written in test_one_rule_breaks.py


def test_a_receipt_in_another_currency_is_refused(campaign: CampaignBuilder
                                                   ) -> None:
    with_receipt(campaign, "Stockage : 12,00 EUR TTC\n")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.source-currency",
                             where="manifest.json $.budget.included_expenses[0].amount",
                             says="included expense 'bucket storage' (12.00 USD): its source "
                                  "file receipts/storage.txt states 12.00 EUR, not 12.00 USD "
                                  "(the budget's currency)")
    assert finding.expected == "12.00 USD"
    assert finding.found == "12.00 EUR"
    assert "record the amount in the budget's currency as the document states it" in (
        finding.hint or "")


@pytest.mark.parametrize("text", ["Storage: 12.00 USD\n", "Storage: $12.00\n",
                                  "Storage: 12.00\n", "Paid 12.00 EUR = 12.00 USD\n"])
def test_a_receipt_stating_the_amount_in_the_budgets_currency_passes(
    campaign: CampaignBuilder, text: str
) -> None:
    with_receipt(campaign, text)
    expect_no_finding(judge(campaign, BUDGET))


def test_a_receipt_of_another_order_is_refused(campaign: CampaignBuilder) -> None:
    with_receipt(campaign, "Order reference: ORD-11111\nStorage: 12.00 USD\n", "ORD-88213")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.receipt-reference",
                             where="manifest.json "
                                        "$.budget.included_expenses[0].source.reference",
                             says="included expense 'bucket storage' (12.00 USD): its receipt "
                                  "receipts/storage.txt does not state its source reference "
                                  "'ORD-88213'")
    assert finding.expected == "'ORD-88213' in receipts/storage.txt"
    assert (
        "attach the receipt of the order the reference names") in (finding.hint or "")


def test_a_receipt_of_its_order_passes(campaign: CampaignBuilder) -> None:
    with_receipt(campaign, "Order reference: ord 88213\nStorage: 12.00 USD\n", "ORD-88213")
    expect_no_finding(judge(campaign, BUDGET))


# ============================================== R4: no rental time billed by the hour


def test_a_prorated_day_of_the_gpu_lot_as_an_expense_is_refused(
    campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Seller: IteraGPU\nRTX 4090, one more day: 15.71 USD\n",
                 label="IteraGPU: RTX 4090 extension, 1 day", amount="15.71")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.expense-prorata",
                             where="manifest.json $.budget.included_expenses[0].amount",
                             says="included expense 'IteraGPU: RTX 4090 extension, 1 day' (15.71 "
                                  "USD) is rental time of lot 'rtx4090-3d''s provider billed by "
                                  "the hour: 15.71 USD = 47.14 USD / 72 h x 24 h, a pro-rata of "
                                  "the 3-day lot (47.14 USD)")
    assert finding.expected == "rental time as whole catalogue lots, engaged in budget.lots"
    assert "lots are fixed-price for their duration (R4)" in (finding.hint or "")


def test_another_gpu_purchase_from_the_provider_passes(
    campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Seller: IteraGPU\nRTX 4090 image snapshot: 5.00 USD\n",
                 label="IteraGPU: RTX 4090 image snapshot", amount="5.00")
    expect_no_finding(judge(campaign, BUDGET))


def test_a_receipt_dated_in_the_window_whatever_else_it_prints_passes(
    campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Storage: 12.00 USD\nCustomer since 2019-03-02.\n")
    expect_no_finding(judge(campaign, BUDGET))


def test_a_receipt_of_the_provider_naming_no_campaign_passes(
    campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Seller: Northbridge\nCampaign folder storage: 12.00 USD\n",
                 label="Northbridge: bucket storage")
    receipt = "receipts/storage.txt"
    campaign.files[receipt] = campaign.files[receipt].replace(
        b"Buyer: campaign tiny-2026-11\n", b"")
    expect_no_finding(judge(campaign, BUDGET))


def test_an_expense_recording_only_the_tax_line_of_its_receipt_is_refused(
    campaign: CampaignBuilder
) -> None:
    with_receipt(campaign, "Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: 12.00 USD\n",
                 amount="2.00")
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.amount-is-tax",
                             where="manifest.json $.budget.included_expenses[0].amount",
                             says="included expense 'bucket storage' (2.00 USD): its source file "
                                  "receipts/storage.txt states 2.00 only as a tax (line 4: 'VAT "
                                  "20%: 2.00 USD'), not as what was bought")
    assert finding.expected == "the amount billed for the item the label names"
    assert finding.found == "VAT 20%: 2.00 USD; Total paid: 12.00 USD"
    assert "record the amount the receipt bills for the item" in (finding.hint or "")


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
    campaign: CampaignBuilder, text: str, label: str, amount: str
) -> None:
    with_receipt(campaign, text, label=label, amount=amount)
    expect_no_finding(judge(campaign, BUDGET))


def test_a_lot_id_repeated_in_the_plan_is_refused(campaign: CampaignBuilder) -> None:
    lots = campaign.plan["budget"]["lots"]
    lots.append(dict(lots[0]))
    finding = expect_finding(judge(campaign, BUDGET), "budget-consistent.lot-id-repeated",
                             where="plan.json $.budget.lots",
                             says="lot id 'rtx4090-3d' appears 2 times in the plan")
    assert (finding.expected, finding.found) == ("each lot id once", "2 times")


def test_a_catalogue_in_force_that_cannot_be_used_is_refused(campaign: CampaignBuilder) -> None:
    """What the hook's wiring hands over (Options.catalogue: why the one given is unusable)."""
    why = "the pytest_itera_catalogue hook returned dict, not a pytest_itera.core.money.Catalogue"
    finding = expect_finding(judge(campaign, BUDGET, options=Options(catalogue=why)),
                             "budget-consistent.catalogue-unusable",
                             where="pytest_itera_catalogue hook",
                             says="the price catalogue in force cannot be used")
    assert finding.found == "dict, not a pytest_itera.core.money.Catalogue"
