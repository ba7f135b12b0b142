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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.checks.model import Options
from pytest_itera.core.money import parse_catalogue
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

# Where the findings are.
ACCEPTED = "manifest.json $.budget.accepted_deliverables"
COST = "manifest.json $.budget.cost_per_deliverable"
RENTAL = "manifest.json $.budget.rental_total"
LOT = "plan.json $.budget.lots[0]"
EXPENSE = "manifest.json $.budget.included_expenses[0]"

B200 = {"offer": "B200 x2, 3 days", "gpu": "B200", "gpus_per_lot": 2, "price": "120.00"}
QUOTE = "quotes/b200-offer.pdf"
DISK = {"label": "extra disk for the rental", "amount": "2.00"}  # disk() without its receipt
LAB = {"label": "annotation by the partner lab", "amount": "300.00",
       "source": {"reference": "PO-77"}}
ADDRESSED = ("Buyer: campaign tiny-2026-11", "Date: 2026-11-21")
STORAGE = "receipts/storage.txt"

# ================================================================ the arrangements


def then(*steps: Callable[[CampaignBuilder], object]) -> Callable[[CampaignBuilder], None]:
    """One break (or honest change) made of ``steps``, in turn."""
    def change(campaign: CampaignBuilder) -> None:
        for one in steps:
            one(campaign)
    return change


def reject_all(campaign: CampaignBuilder, **fields: object) -> None:
    """Every run rejected, the budget saying so (``fields``: the budget otherwise)."""
    for record in campaign.manifest["runs"]:
        record["outcome"] = "rejected"
        record["rejection"] = "predictions below chance"
    budget(campaign, **{"accepted_deliverables": 0, "cost_per_deliverable": None,
                        "rejection_cause": "every run predicted below chance", **fields})


def two_corpora_with(campaign: CampaignBuilder, **fields: object) -> None:
    """The guide's two corpora (tiny-corpus and corpus-b), the budget then changed."""
    two_corpora(campaign)
    budget(campaign, **fields)


def planned_run(campaign: CampaignBuilder, run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = next(r for r in campaign.plan["runs"] if r["id"] == run_id)
    return run


def lot(campaign: CampaignBuilder, **fields: object) -> None:
    """Change the plan's one lot and keep the manifest's totals consistent with its price."""
    planned = campaign.plan["budget"]["lots"][0]
    planned.update(fields)
    price = str(planned["price"])
    budget(campaign, rental_total=price, cost_per_deliverable=price)


def quote(campaign: CampaignBuilder, path: str = QUOTE) -> dict[str, str]:
    campaign.files[path] = b"%PDF-1.4 quote Q-2026-118: B200 x2, 3 days, 120.00 USD\n"
    return {"file": path}


def quoted_lot(campaign: CampaignBuilder) -> None:
    """The B200 lot outside the catalogue, its quote file its source."""
    lot(campaign, **B200, source=quote(campaign))


def conclude(campaign: CampaignBuilder, text: str) -> None:
    campaign.manifest["conclusion"]["text"] = text


def include(campaign: CampaignBuilder, *expenses: dict[str, object]) -> None:
    """Included expenses, with a consistent cost per deliverable (engaged total / 1)."""
    total = sum(float(str(e["amount"])) for e in expenses) + 47.14
    budget(campaign, included_expenses=list(expenses), cost_per_deliverable=f"{total:.2f}")


def storage_receipt(campaign: CampaignBuilder, text: bytes) -> None:
    """R7: an expense is what was paid, on the evidence of its receipt: the 12.00 USD bucket
    storage, its receipt ``text`` (a PDF's text layer), which names the campaign and is dated
    in its window (tests/checks/budget/test_receipts.py judges those)."""
    addressed = "".join(f"{line}\n" for line in ADDRESSED).encode()
    campaign.files[STORAGE] = text if text.startswith(b"%PDF") else addressed + text
    include(campaign, {"label": "bucket storage", "amount": "12.00",
                       "source": {"file": STORAGE}})


def analyst_time_twice(campaign: CampaignBuilder) -> None:
    """The plan's external analyst time, included again under the same label."""
    campaign.plan["budget"]["external_expenses"] = [{"label": "analyst time", "amount": "300"}]
    budget(campaign, rental_total="47.14", cost_per_deliverable="347.14",
           included_expenses=[{"label": "analyst time", "amount": "300",
                               "source": receipt(campaign, amount="300.00")}])


def lab_included_as(campaign: CampaignBuilder, label: str, source: dict[str, str]) -> None:
    """The plan's external annotation by the partner lab (its order and quote), included
    again: 300.00 USD under ``label``, its ``source``."""
    receipt(campaign)
    campaign.files["quotes/lab.pdf"] = b"%PDF-1.4 PO-77 annotation 300.00 USD\n"
    external = LAB | {"source": {"reference": "PO-77", "file": "quotes/lab.pdf"}}
    campaign.plan["budget"]["external_expenses"] = [external]
    include(campaign, {"label": label, "amount": "300.00", "source": source})


# An external expense included again: what the finding expects and finds, whatever gave it away.
AS_INCLUDED = ("listed under external_expenses only", "listed as an included expense", None)


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


def counted_with(campaign: CampaignBuilder, extra: str) -> None:
    """Two corpora declared, but variant-a delivers tiny-corpus: corpus-b is counted through
    the ``extra`` run (a pilot, or the data check)."""
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


def copy_as_corpus_b(campaign: CampaignBuilder) -> None:
    """variant-a delivers corpus-b, a relabelled copy of tiny-corpus (the same content)."""
    add_corpus(campaign, "corpus-b", data=campaign.files["corpus/corpus.jsonl"])
    deliver(campaign, "variant-a", "corpus-b")


def unaddressed(campaign: CampaignBuilder) -> None:
    """The storage receipt without its Buyer line."""
    campaign.files[STORAGE] = campaign.files[STORAGE].replace(
        b"Buyer: campaign tiny-2026-11\n", b"")


# ======================================================== each break refused, alone

# (the break, the code, where, a few words; the finding's expected, found and a few words of
# its hint, None where not asserted)
@pytest.mark.parametrize(("break_", "code", "where", "says", "expected", "found", "hint"), [
    # ---------------------------------------------------------- the source's numbers
    # The control and variant-a both deliver tiny-corpus: one deliverable, not two.
    pytest.param(lambda c: budget(c, accepted_deliverables=2, cost_per_deliverable="23.57"),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 ("is 2, but 1 distinct corpus(es)", "a corpus replayed counts once"),
                 "1 (tiny-corpus)", "2", None, id="replayed-corpus-counted-twice"),
    pytest.param(lambda c: budget(c, accepted_deliverables=2, cost_per_deliverable="23.57"),
                 "budget-consistent.cost-per-deliverable", COST,
                 "23.57 USD is not 47.14 USD / 1 = 47.14 USD", None, None, None,
                 id="replayed-corpus-its-ratio"),
    pytest.param(then(lambda c: lot(c, **B200, source={"reference": "Q-2026-118"}),
                      lambda c: budget(c, rental_total="240.00", cost_per_deliverable="240.00")),
                 "budget-consistent.rental-total", RENTAL,
                 "it multiplies prices by GPUs per lot, but a lot is priced once",
                 "120.00 USD = 120.00 x 1 (rtx4090-3d)", "240.00 USD",
                 "GPUs per lot never multiply a price, and expenses are listed apart",
                 id="b200-lot-multiplied-by-its-gpus"),
    # ------------------------------------------------------------------ zero accepted
    pytest.param(lambda c: reject_all(c, cost_per_deliverable="0.00"),
                 "budget-consistent.zero-accepted", COST,
                 "a cost per deliverable of 0.00 USD: the ratio is undefined (null)",
                 "null, 47.14 USD engaged and a rejection_cause", None, None,
                 id="zero-accepted-zero-ratio"),
    pytest.param(lambda c: reject_all(c, rejection_cause=None),
                 "budget-consistent.zero-accepted", COST,
                 "(47.14 USD engaged) without a rejection cause", None, None, None,
                 id="zero-accepted-without-cause"),
    # a placeholder is no cause
    pytest.param(lambda c: reject_all(c, rejection_cause="n/a"), "budget-consistent.zero-accepted",
                 COST, "('n/a' is a placeholder, not a cause)", None, None, None, id="cause-na"),
    pytest.param(lambda c: reject_all(c, rejection_cause="TBD"), "budget-consistent.zero-accepted",
                 COST, "('TBD' is a placeholder, not a cause)", None, None, None, id="cause-tbd"),
    pytest.param(lambda c: reject_all(c, rejection_cause="unknown"),
                 "budget-consistent.zero-accepted", COST,
                 "('unknown' is a placeholder, not a cause)",
                 None, None, None, id="cause-unknown"),
    pytest.param(then(lambda c: reject_all(c, rental_total="0.00"),
                      lambda c: c.plan["budget"]["lots"][0].update(
                          price="0", offer="Free tier, 3 days",
                          source={"reference": "promo FREE-72"})),
                 "budget-consistent.zero-accepted", COST,
                 "a zero engaged cost: show the cost actually engaged", None, None, None,
                 id="zero-accepted-zero-engaged-cost"),
    pytest.param(lambda c: reject_all(c, accepted_deliverables=1, cost_per_deliverable="47.14"),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "accepted_deliverables is 1, but 0 distinct corpus(es) were delivered",
                 "0", None, None, id="zero-accepted-declared-as-one"),
    pytest.param(lambda c: reject_all(c, accepted_deliverables=1, cost_per_deliverable="47.14"),
                 "budget-consistent.zero-accepted", COST,
                 "zero accepted deliverables but a cost per deliverable of 47.14 USD",
                 None, None, None, id="zero-accepted-declared-as-one-its-ratio"),
    # --------------------------------------------------------------- research decision
    pytest.param(lambda c: budget(c, unit="decision"),
                 "budget-consistent.cost-per-deliverable", COST,
                 "a research decision reports its conclusion, not a cost per deliverable",
                 "null (the conclusion is reported instead)", None, None,
                 id="research-decision-with-a-ratio"),
    # ------------------------------------------------------------ rental and expenses
    pytest.param(lambda c: budget(c, rental_total="50.00", cost_per_deliverable="50.00"),
                 "budget-consistent.rental-total", RENTAL,
                 "50.00 USD is not the sum of price * quantity, 47.14 USD", None, "50.00 USD",
                 None, id="rental-total-wrong"),
    pytest.param(lambda c: budget(c, rental_total="52.14", external_expenses=[
        {"label": "object storage, billed by the cloud account", "amount": "5.00"}]),
                 "budget-consistent.rental-total", RENTAL,
                 "it adds the external expenses (5.00 USD); list them apart", None, None, None,
                 id="external-expenses-added-to-the-rental"),
    pytest.param(lambda c: budget(c, rental_total="49.14", cost_per_deliverable="49.14",
                                  included_expenses=[disk(c)]),
                 "budget-consistent.rental-total", RENTAL,
                 "it adds the included expenses, which are listed apart", None, None, None,
                 id="included-expenses-added-to-the-rental"),
    pytest.param(lambda c: two_corpora_with(c, cost_per_deliverable="25.00",
                                            included_expenses=[disk(c)]),
                 "budget-consistent.cost-per-deliverable", COST,
                 "25.00 USD is not 49.14 USD / 2 = 24.57 USD", None, None, None,
                 id="a-ratio-neither-share"),
    pytest.param(analyst_time_twice, "budget-consistent.external-as-included",
                 "manifest.json $.budget.included_expenses[0]",
                 "is the external expense 'analyst time' (300 USD, plan.json "
                 "$.budget.external_expenses[0]): the same label",
                 "listed under external_expenses only", None, None,
                 id="external-expense-listed-as-included"),
    pytest.param(lambda c: budget(c, currency="EUR"), "budget-consistent.currency",
                 "manifest.json $.budget.currency", "not in the plan's currency", "USD", "EUR",
                 None, id="currencies-disagree"),
    pytest.param(lambda c: budget(c, lots=["rtx4090-3d", "rtx4090-7d", "rtx4090-3d"]),
                 "budget-consistent.engaged-lot-unknown", "manifest.json $.budget.lots[1]",
                 "engaged lot 'rtx4090-7d' is not a lot of the plan", "one of 'rtx4090-3d'",
                 None, None, id="engaged-lot-unknown"),
    pytest.param(lambda c: budget(c, lots=["rtx4090-3d", "rtx4090-7d", "rtx4090-3d"]),
                 "budget-consistent.engaged-lot-twice", "manifest.json $.budget.lots[2]",
                 "engaged lot 'rtx4090-3d' is listed twice", None, None, None,
                 id="engaged-lot-twice"),
    pytest.param(lambda c: two_corpora_with(c, cost_per_deliverable="23.00"),
                 "budget-consistent.cost-per-deliverable", COST,
                 "23.00 USD is not 47.14 USD / 2 = 23.57 USD", "23.57 USD = 47.14 USD / 2",
                 None, None, id="wrong-ratio"),
    pytest.param(lambda c: budget(c, cost_per_deliverable=None),
                 "budget-consistent.cost-per-deliverable", COST,
                 "1 accepted deliverable(s) but no cost per deliverable (47.14 USD)",
                 None, None, None, id="missing-ratio"),
    pytest.param(then(two_corpora, lambda c: c.run_record("variant-a").update(
        outcome="stopped", stop={"rule": "non-finite-loss", "reason": "loss was nan"})),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "accepted_deliverables is 2, but 1 distinct corpus(es)", "1 (tiny-corpus)",
                 None, None, id="a-stopped-run-counted-as-a-deliverable"),
    # ============================================================ lots and prices (R4)
    # 72 h x 0.65 USD/h instead of the lot's 47.14 USD
    pytest.param(lambda c: lot(c, price="46.80"), "budget-consistent.lot-price",
                 f"{LOT}.price",
                 "priced 47.14 USD for 3 days, but the plan prices it 46.80 USD: 46.80 USD = "
                 "72 h x 0.65 USD/h",
                 "47.14 (the IteraGPU catalogue: 'IteraGPU RTX 4090, 3 days', 3 days)", "46.80",
                 "never hours x a rate: write 47.14; a different quoted price is another offer",
                 id="3-day-lot-priced-by-the-hour"),
    pytest.param(lambda c: lot(c, offer="RTX 4090 three-day rental", price="50.00"),
                 "budget-consistent.lot-price", f"{LOT}.price",
                 "(same GPU and days), priced 47.14 USD for 3 days, but the plan prices it "
                 "50.00 USD", None, None, None, id="another-name-keeps-the-catalogue-price"),
    pytest.param(lambda c: lot(c, **B200), "budget-consistent.lot-unsourced", f"{LOT}.source",
                 "(offer 'B200 x2, 3 days': B200, 3 days, 120.00 USD) is not in the IteraGPU "
                 "catalogue in force and records no source",
                 'the quote or order of this price: {"file": "<a receipt or quote listed in '
                 'the campaign>"} and/or {"reference": "<order or quote reference>"}',
                 "no source", "record the quote or order the price comes from "
                 "(budget.lots[].source), or give the catalogue that lists the offer",
                 id="outside-the-catalogue-without-a-source"),
    pytest.param(lambda c: lot(c, offer="RTX 4090, 5 days", days=5, price="78.57"),
                 "budget-consistent.lot-unsourced", f"{LOT}.source",
                 "its price reads as hourly billing: 78.57 USD = 47.14 USD / 72 h x 120 h",
                 None, None, None, id="prorated-outside-the-catalogue"),
    pytest.param(lambda c: lot(c, **B200, source={"reference": "n/a"}),
                 "budget-consistent.source-placeholder", f"{LOT}.source.reference",
                 "its source reference 'n/a' is a placeholder", None, None, None,
                 id="lot-placeholder-reference"),
    pytest.param(lambda c: lot(c, days=4), "budget-consistent.lot-days", f"{LOT}.days",
                 "(same offer name), which lasts 3 days, not 4", None, None,
                 "name the offer and its terms as the catalogue does", id="catalogue-lot-days"),
    pytest.param(lambda c: lot(c, gpus_per_lot=2), "budget-consistent.lot-gpus-per-lot",
                 f"{LOT}.gpus_per_lot", "(same offer name), which holds 1 GPU(s) per lot, not 2",
                 None, None, "name the offer and its terms as the catalogue does",
                 id="catalogue-lot-gpus-per-lot"),
    pytest.param(lambda c: lot(c, gpu="RTX 3090"), "budget-consistent.lot-gpu", f"{LOT}.gpu",
                 "(same offer name), a RTX 4090 lot, not RTX 3090", None, None,
                 "name the offer and its terms as the catalogue does", id="catalogue-lot-gpu"),
    # R4: 62.85 = 47.14 / 72 h x 96 h. A reference does not make a pro-rata a fixed price.
    pytest.param(lambda c: lot(c, offer="IteraGPU RTX 4090, 4 days", days=4, price="62.85",
                               source={"reference": "Q-2026-4D"}),
                 "budget-consistent.lot-hourly", f"{LOT}.price",
                 "is priced as hours of a catalogue lot: 62.85 USD = 47.14 USD / 72 h x 96 h",
                 None, None, "lots are fixed-price (R4)",
                 id="quoted-lot-priced-as-hours-of-a-catalogue-lot"),
    pytest.param(then(quoted_lot, lambda c: c.files.pop(QUOTE)),
                 "budget-consistent.source-file", f"{LOT}.source.file",
                 "its source file quotes/b200-offer.pdf is missing",
                 "a receipt, invoice or quote file listed in manifest.json files, present and "
                 "non-empty", None, None, id="quote-file-missing"),
    pytest.param(then(quoted_lot, lambda c: c.unlisted.add(QUOTE)),
                 "budget-consistent.source-file", f"{LOT}.source.file",
                 "its source file quotes/b200-offer.pdf is not listed in the manifest's files",
                 "a receipt, invoice or quote file listed in manifest.json files, present and "
                 "non-empty", None, None, id="quote-file-unlisted"),
    pytest.param(then(quoted_lot, lambda c: c.files.update({QUOTE: b""})),
                 "budget-consistent.source-file", f"{LOT}.source.file",
                 "its source file quotes/b200-offer.pdf is empty",
                 "a receipt, invoice or quote file listed in manifest.json files, present and "
                 "non-empty", None, None, id="quote-file-empty"),
    pytest.param(then(lambda c: c.plan["budget"].update(currency="EUR"),
                      lambda c: budget(c, currency="EUR")),
                 "budget-consistent.lot-currency", "plan.json $.budget.currency",
                 "priced in USD, but the plan's budget is in EUR",
                 "47.14 USD (no invented exchange rate)", None, None,
                 id="lot-in-another-currency-than-its-catalogue"),
    # R4: the quote says 120.00 for the B200 lot of two GPUs; the plan prices it 240.00.
    pytest.param(lambda c: lot(c, **B200 | {"price": "240.00"}, source=quote(c)),
                 "budget-consistent.amount-not-in-source", f"{LOT}.price",
                 "its source file quotes/b200-offer.pdf does not state 240.00", None, None, None,
                 id="lot-price-its-quote-does-not-state"),
    pytest.param(lambda c: c.plan["budget"]["lots"].append(dict(c.plan["budget"]["lots"][0])),
                 "budget-consistent.lot-id-repeated", "plan.json $.budget.lots",
                 "lot id 'rtx4090-3d' appears 2 times in the plan", "each lot id once",
                 "2 times", None, id="lot-id-repeated-in-the-plan"),
    # ====================================================================== expenses (R7)
    pytest.param(lambda c: storage_receipt(c, b"Invoice INV-40715\nTotal: $1,212.00\n"),
                 "budget-consistent.amount-not-in-source", f"{EXPENSE}.amount",
                 "its source file receipts/storage.txt does not state 12.00", None, None, None,
                 id="receipt-stating-another-amount"),
    pytest.param(lambda c: storage_receipt(c, b"Invoice INV-40715\nStorage, November: 1.20 USD\n"),
                 "budget-consistent.amount-not-in-source", f"{EXPENSE}.amount",
                 "its source file receipts/storage.txt does not state 12.00", None, None, None,
                 id="receipt-stating-a-tenth-of-it"),
    pytest.param(lambda c: storage_receipt(c, text_pdf(*ADDRESSED, "Storage, November: 1.20 USD")),
                 "budget-consistent.amount-not-in-source", f"{EXPENSE}.amount",
                 "its source file receipts/storage.txt does not state 12.00", None, None, None,
                 id="pdf-receipt-stating-another-amount"),
    # Issue 26: "found: 5, 0.20" hid which number was the price; each amount keeps the unit or
    # currency the receipt writes with it.
    pytest.param(lambda c: storage_receipt(c, b"Bucket storage: 5 GB for the month, 0.20 USD\n"),
                 "budget-consistent.amount-not-in-source", f"{EXPENSE}.amount",
                 "does not state 12.00", "12.00, as receipts/storage.txt states it",
                 "5 GB, 0.20 USD", None, id="the-amounts-a-receipt-states-with-their-units"),
    pytest.param(then(lambda c: include(c, disk(c)), lambda c: c.files.pop(RECEIPT)),
                 "budget-consistent.source-file", f"{EXPENSE}.source.file",
                 ("'extra disk for the rental' (2.00 USD): its source file", "is missing"),
                 None, None, None, id="receipt-missing"),
    pytest.param(then(lambda c: include(c, disk(c)), lambda c: c.unlisted.add(RECEIPT)),
                 "budget-consistent.source-file", f"{EXPENSE}.source.file",
                 ("disk-invoice.pdf", "is not listed in the manifest's files"), None, None, None,
                 id="receipt-unlisted"),
    pytest.param(lambda c: include(c, disk(c) | {"source": {"file": "../" + RECEIPT}}),
                 "budget-consistent.source-file", f"{EXPENSE}.source.file",
                 ("disk-invoice.pdf", "leaves the campaign folder"), None, None, None,
                 id="receipt-outside-the-campaign"),
    pytest.param(lambda c: include(c, DISK | {"source": {"reference": "n/a"}}),
                 "budget-consistent.source-placeholder", f"{EXPENSE}.source.reference",
                 "its source reference 'n/a' is a placeholder", None, None, None,
                 id="placeholder-order-reference"),
    pytest.param(lambda c: include(c, disk(c) | {"label": " \u00a0"}),
                 "budget-consistent.expense-no-label", f"{EXPENSE}.label",
                 "an expense has no label", None, None, None, id="blank-label"),
    # An expense's kind decides, in any language.
    pytest.param(lambda c: include(c, disk(c) | {"label": "object storage", "kind": "estimate"}),
                 "budget-consistent.expense-made-up", EXPENSE,
                 "is declared estimated (its kind is 'estimate'): an expense included is an "
                 "amount that was paid", None, None, None, id="kind-estimate"),
    pytest.param(lambda c: include(c, disk(c) | {"kind": "refund"}),
                 "budget-consistent.expense-made-up", EXPENSE,
                 " is declared a refund (its kind is 'refund')", None, None, None,
                 id="kind-refund"),
    pytest.param(lambda c: include(c, DISK | {"label": "Steuer", "kind": "tax",
                                              "source": {"reference": "R-2026-7"}}),
                 "budget-consistent.expense-no-receipt", f"{EXPENSE}.source",
                 "'Steuer' (2.00 USD) is a tax (kind 'tax') without its receipt file",
                 None, None, None, id="kind-tax-without-its-receipt"),
    pytest.param(lambda c: include(c, disk(c), disk(c)),
                 "budget-consistent.expense-counted-twice",
                 "manifest.json $.budget.included_expenses[1]",
                 "'extra disk for the rental' (2.00 USD) is listed twice (as included_expenses[0] "
                 "too, same amount and same receipt file)", None, None, None,
                 id="the-same-receipt-counted-twice"),
    # A new label does not make a second payment: same amount, same receipt file.
    pytest.param(lambda c: include(c, disk(c), disk(c) | {"label": "bucket for the outputs"}),
                 "budget-consistent.expense-counted-twice",
                 "manifest.json $.budget.included_expenses[1]",
                 "'bucket for the outputs' (2.00 USD) is listed twice", None, None, None,
                 id="the-same-receipt-line-relabelled"),
    pytest.param(lambda c: lab_included_as(c, "labelling service", {"reference": "po 77"}),
                 "budget-consistent.external-as-included", EXPENSE,
                 "the same source reference 'po 77'", *AS_INCLUDED, id="lab-as-its-reference"),
    pytest.param(lambda c: lab_included_as(c, "labelling service", {"file": "quotes/lab.pdf"}),
                 "budget-consistent.external-as-included", EXPENSE,
                 "the same source file quotes/lab.pdf", *AS_INCLUDED, id="lab-as-its-quote-file"),
    pytest.param(lambda c: lab_included_as(c, "Annotation (partner lab)", {"file": RECEIPT}),
                 "budget-consistent.external-as-included", EXPENSE,
                 "the same amount and label word 'annotation'", *AS_INCLUDED,
                 id="lab-as-its-amount-and-label-word"),
    # ----------------------------------------------------- receipts (test_one_rule_breaks.py)
    pytest.param(lambda c: with_receipt(c, "Stockage : 12,00 EUR TTC\n"),
                 "budget-consistent.source-currency", f"{EXPENSE}.amount",
                 "states 12.00 EUR, not 12.00 USD (the budget's currency)", "12.00 USD",
                 "12.00 EUR", "record the amount in the budget's currency as the document states",
                 id="receipt-in-another-currency"),
    pytest.param(lambda c: with_receipt(c, "Order reference: ORD-11111\nStorage: 12.00 USD\n",
                                        "ORD-88213"),
                 "budget-consistent.receipt-reference", f"{EXPENSE}.source.reference",
                 "receipts/storage.txt does not state its source reference 'ORD-88213'",
                 "'ORD-88213' in receipts/storage.txt", None,
                 "attach the receipt of the order the reference names",
                 id="receipt-of-another-order"),
    # R4: no rental time billed by the hour
    pytest.param(lambda c: with_receipt(c, "Seller: IteraGPU\nRTX 4090, one more day: 15.71 USD\n",
                                        label="IteraGPU: RTX 4090 extension, 1 day",
                                        amount="15.71"),
                 "budget-consistent.expense-prorata", f"{EXPENSE}.amount",
                 "is rental time of lot 'rtx4090-3d''s provider billed by the hour: 15.71 USD = "
                 "47.14 USD / 72 h x 24 h", "rental time as whole catalogue lots, engaged in "
                 "budget.lots", None, "lots are fixed-price for their duration (R4)",
                 id="prorated-day-of-the-gpu-lot-as-an-expense"),
    pytest.param(lambda c: with_receipt(c, "Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: "
                                        "12.00 USD\n", amount="2.00"),
                 "budget-consistent.amount-is-tax", f"{EXPENSE}.amount",
                 "states 2.00 only as a tax (line 4: 'VAT 20%: 2.00 USD'), not as what was bought",
                 "the amount billed for the item the label names",
                 "VAT 20%: 2.00 USD; Total paid: 12.00 USD",
                 "record the amount the receipt bills for the item",
                 id="expense-recording-only-the-tax-line"),
    # ================================================================= deliverables (R7)
    pytest.param(lambda c: counted_with(c, "pilot"),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "accepted_deliverables is 2, but 1 distinct corpus(es) were delivered",
                 "1 (tiny-corpus)", None, None, id="counting-a-pilot"),
    pytest.param(lambda c: counted_with(c, "data-check"),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "accepted_deliverables is 2, but 1 distinct corpus(es) were delivered",
                 "1 (tiny-corpus)", None, None, id="counting-a-data-check"),
    pytest.param(then(copy_as_corpus_b, lambda c: deliver(c, "control", "tiny-corpus"),
                      lambda c: budget(c, accepted_deliverables=2, cost_per_deliverable="23.57")),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "one corpus under several ids (same content): 'corpus-b' is 'tiny-corpus'",
                 "1 (corpus-b = tiny-corpus)", None, None,
                 id="relabelled-copy-of-a-corpus"),
    pytest.param(then(two_corpora, lambda c: c.run_record("variant-a").update(corpus="corpus-b"),
                      lambda c: planned_run(c, "variant-a").update(corpus="tiny-corpus")),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 ("1 distinct corpus(es) were delivered", "; not counted: variant-a (it was "
                  "planned on corpus 'tiny-corpus', but the manifest says it delivers "
                  "'corpus-b')"), None, None, None, id="another-corpus-than-planned"),
    pytest.param(then(lambda c: c.run_record("variant-a").update(corpus="corpus-z"),
                      lambda c: budget(c, accepted_deliverables=2, cost_per_deliverable="23.57")),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "; not counted: variant-a (its corpus 'corpus-z' is not a corpus of the plan)",
                 None, None, None, id="a-corpus-the-plan-does-not-freeze"),
    pytest.param(then(two_corpora, lambda c: planned_run(c, "variant-a").pop("corpus"),
                      lambda c: c.run_record("variant-a").pop("corpus")),
                 "budget-consistent.accepted-deliverables", ACCEPTED,
                 "; not counted: variant-a (the plan freezes 2 corpora and neither the plan nor "
                 "the manifest says which one its predictions cover)", None, None, None,
                 id="several-corpora-a-run-saying-none"),
])
def test_each_break_is_refused(
    campaign: CampaignBuilder, break_: Callable[[CampaignBuilder], object], code: str,
    where: str, says: str | tuple[str, ...], expected: str | None, found: str | None,
    hint: str | None,
) -> None:
    break_(campaign)
    expect_finding(judge(campaign, BUDGET), code, where=where, says=says, expected=expected,
                   found=found, fix=hint)


# ===================================================================== the honest twins


@pytest.mark.parametrize("arrange", [
    # ---------------------------------------------------------- the source's numbers
    pytest.param(lambda c: None, id="one-3-day-lot-one-corpus"),
    pytest.param(then(lambda c: c.plan["budget"]["lots"][0].update(quantity=2),
                      lambda c: budget(c, rental_total="94.28", cost_per_deliverable="94.28")),
                 id="two-3-day-lots-cost-94.28"),
    pytest.param(two_corpora, id="47.14-for-two-distinct-corpora-is-23.57-each"),
    pytest.param(reject_all, id="zero-accepted-with-cost-and-cause"),
    pytest.param(lambda c: budget(c, unit="decision", cost_per_deliverable=None),
                 id="research-decision-reports-its-conclusion-not-a-ratio"),
    pytest.param(lambda c: two_corpora_with(c, cost_per_deliverable="24.57",
                                            included_expenses=[disk(c)]),
                 id="included-expenses-count-in-the-cost-per-deliverable"),
    # The source's own figure is the rental's share: 47.14 USD / 2 corpora = 23.57.
    pytest.param(lambda c: two_corpora_with(c, included_expenses=[disk(c)]),
                 id="the-rental-share-per-deliverable"),
    # ============================================================ lots and prices (R4)
    # The same offer name, written otherwise.
    pytest.param(lambda c: lot(c, offer="iteragpu rtx-4090, 3 DAYS"), id="catalogue-price"),
    pytest.param(lambda c: lot(c, offer="RTX 4090 three-day rental", gpu="rtx-4090"),
                 id="catalogue-offer-under-another-name-at-its-price"),
    pytest.param(lambda c: lot(c, offer="CloudX RTX 4090, 3 days", price="60.00",
                               source={"reference": "CX-ORDER-5521"}),
                 id="another-providers-quoted-lot-of-the-same-gpu-and-days"),
    pytest.param(quoted_lot, id="offer-outside-the-catalogue-with-its-quote-file"),
    # a B200 lot of two GPUs is priced once
    pytest.param(lambda c: lot(c, **B200, source={"reference": "Q-2026-118"}),
                 id="offer-outside-the-catalogue-with-its-quote-reference"),
    pytest.param(lambda c: lot(c, offer="CloudY RTX 4090, 4 days", days=4, price="60.00",
                               source={"reference": "Q-2026-4D"}),
                 id="quoted-lot-of-another-duration-at-its-own-price"),
    # ================================================================ hourly billing (R4)
    # hours in prose without a rate are not billing
    pytest.param(lambda c: conclude(c, "variant-a meets the 0.8 threshold. Checkpoints were "
                                       "saved hourly."), id="checkpoints-saved-hourly"),
    pytest.param(lambda c: conclude(c, "variant-a meets the threshold; the rental cost 47.14 "
                                       "USD. Losses were logged hourly."),
                 id="a-cost-and-losses-logged-hourly"),
    pytest.param(lambda c: conclude(c, "variant-a meets the threshold with hourly-resolution "
                                       "validation curves."), id="hourly-resolution-curves"),
    # ====================================================================== expenses (R7)
    # A receipt file shipped in the campaign, or an order reference.
    pytest.param(lambda c: include(c, disk(c)), id="included-expense-with-its-receipt"),
    pytest.param(lambda c: include(c, DISK | {"source": {"reference": "ORDER-2026-311"}}),
                 id="included-expense-with-its-order-reference"),
    pytest.param(lambda c: include(c, {
        "label": "VAT 20% (VAT invoice)", "amount": "9.43",
        "source": receipt(c, "receipts/vat-invoice.pdf", "9.43")}), id="tax-on-its-invoice"),
    pytest.param(lambda c: include(c, {
        "label": "egress of the outputs", "amount": "1.08",
        "source": receipt(c, "receipts/egress.pdf", "1.08")}),
                 id="transfer-cost-on-its-invoice"),
    pytest.param(lambda c: storage_receipt(c, b"Invoice INV-40715\nStorage, November: 12.00 USD\n"),
                 id="receipt-stating-the-amount"),
    pytest.param(lambda c: storage_receipt(c, b"Facture F-12\nStockage : 12,00 USD TTC\n"),
                 id="receipt-stating-it-with-a-decimal-comma"),
    pytest.param(lambda c: storage_receipt(c, text_pdf(*ADDRESSED, "Storage, November: 12.00 USD")),
                 id="receipt-stating-it-in-a-pdf-s-text-layer"),
    pytest.param(then(lambda c: include(c, disk(c), {"label": "egress", "amount": "1.00",
                                                     "source": {"file": RECEIPT}}),
                      lambda c: c.files.update({RECEIPT: b"Invoice INV-2026-311, 2026-11-21, "
                                                b"campaign tiny-2026-11\ndisk 2.00 USD\n"
                                                b"egress 1.00 USD\n"})),
                 id="two-amounts-of-one-receipt-are-two-lines"),
    pytest.param(then(lambda c: c.plan["budget"].update(external_expenses=[LAB]),
                      lambda c: budget(c, external_expenses=[LAB]),
                      lambda c: include(c, disk(c))),
                 id="included-expense-beside-an-external-one"),
    # ----------------------------------------------------- receipts (test_one_rule_breaks.py)
    pytest.param(lambda c: with_receipt(c, "Storage: 12.00 USD\n"), id="receipt-in-usd"),
    pytest.param(lambda c: with_receipt(c, "Storage: $12.00\n"), id="receipt-in-dollars"),
    pytest.param(lambda c: with_receipt(c, "Storage: 12.00\n"), id="receipt-without-currency"),
    pytest.param(lambda c: with_receipt(c, "Paid 12.00 EUR = 12.00 USD\n"),
                 id="receipt-converting-to-the-budgets-currency"),
    pytest.param(lambda c: with_receipt(c, "Order reference: ord 88213\nStorage: 12.00 USD\n",
                                        "ORD-88213"), id="receipt-of-its-order"),
    pytest.param(lambda c: with_receipt(c, "Seller: IteraGPU\nRTX 4090 image snapshot: 5.00 USD\n",
                                        label="IteraGPU: RTX 4090 image snapshot", amount="5.00"),
                 id="another-gpu-purchase-from-the-provider"),
    pytest.param(lambda c: with_receipt(c, "Storage: 12.00 USD\nCustomer since 2019-03-02.\n"),
                 id="receipt-dated-in-the-window-whatever-else-it-prints"),
    pytest.param(then(lambda c: with_receipt(c, "Seller: Northbridge\nCampaign folder storage: "
                                             "12.00 USD\n", label="Northbridge: bucket storage"),
                      unaddressed),
                 id="receipt-of-the-provider-naming-no-campaign"),
    # an expense recording what its receipt bills
    pytest.param(lambda c: with_receipt(c, "Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: "
                                        "12.00 USD\n", label="bucket storage", amount="12.00"),
                 id="bills-its-total"),
    pytest.param(lambda c: with_receipt(c, "Speicher: 10,00 USD\nMwSt 20 %: 2,00 USD\nGesamt: "
                                        "12,00 USD\n", label="Mehrwertsteuer Speicher",
                                        amount="2.00"), id="bills-the-mwst-its-label-names"),
    pytest.param(lambda c: with_receipt(c, "Almacenamiento: 10,00 USD\nIVA 20 %: 2,00 USD\nTotal: "
                                        "12,00 USD\n", label="IVA del almacenamiento",
                                        amount="2.00"), id="bills-the-iva-its-label-names"),
    pytest.param(lambda c: with_receipt(c, "Storage: 10.00 USD\nVAT 20%: 2.00 USD\nTotal paid: "
                                        "12.00 USD\n", label="VAT on storage", amount="2.00"),
                 id="bills-the-vat-its-label-names"),
    pytest.param(lambda c: with_receipt(c, "Storage, total incl. VAT: 12.00 USD\n",
                                        label="bucket storage", amount="12.00"),
                 id="bills-a-total-incl-vat"),
    # ================================================================= deliverables (R7)
    pytest.param(add_pilot, id="data-check-pilot-and-resume-check-deliver-nothing"),
    pytest.param(copy_as_corpus_b, id="relabelled-copy-declared-once"),
    # the plan says it: corpus-b
    pytest.param(then(two_corpora, lambda c: c.run_record("variant-a").pop("corpus")),
                 id="a-run-names-its-corpus-in-the-plan-or-the-manifest"),
])
def test_each_honest_twin_passes(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object]
) -> None:
    arrange(campaign)
    expect_no_finding(judge(campaign, BUDGET))


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


def test_selected_alone_the_budget_item_runs(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = itera("-rA", check=BUDGET)
    result.assert_outcomes(passed=1)
    expect(result, "PASSED out/manifest.json::budget-consistent")


# ================================================= the catalogue in force (R4)


ACME = """
from pytest_itera.core.money import parse_catalogue

def pytest_itera_catalogue(config):
    return parse_catalogue('''{"format": "itera-catalogue/1", "provider": "Acme",
        "currency": "USD", "offers": [
        {"offer": "Acme 4090, 4 days", "gpu": "RTX 4090", "gpus_per_lot": 1,
         "days": 4, "price": "60.00"}]}''')
"""


ACME_CATALOGUE = ACME.split("parse_catalogue('''")[1].split("''')")[0]
LAB_CATALOGUE = json.dumps({"format": "itera-catalogue/1", "provider": "Lab", "currency": "USD",
                            "offers": [{"offer": "Lab cluster 4090, 3 days", "gpu": "RTX 4090",
                                        "gpus_per_lot": 1, "days": 3, "price": "55.00"}]})


def write_prices(folder: Path, price: str = "55.00") -> None:
    offers = [{"offer": "Lab cluster 4090, 3 days", "gpu": "RTX 4090", "gpus_per_lot": 1,
               "days": 3, "price": price}]
    (folder / "prices.json").write_text(json.dumps(
        {"format": "itera-catalogue/1", "provider": "Lab", "currency": "USD", "offers": offers}))


def ini_catalogue(pytester: pytest.Pytester, price: str = "55.00") -> None:
    """The Lab catalogue (one offer, 'Lab cluster 4090, 3 days') given by the ini option."""
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    write_prices(pytester.path, price)


# (the catalogue given, the lot, what the failing budget says: None when it passes)
@pytest.mark.parametrize(("catalogue", "arrange", "fails"), [
    pytest.param(lambda p: p.makeconftest(ACME),
                 lambda c: lot(c, offer="Acme 4090, 4 days", days=4, price="60.00"), None,
                 id="the-hooks-catalogue-is-in-force"),
    pytest.param(lambda p: p.makeconftest(
        "def pytest_itera_catalogue(config):\n    return {'offers': []}\n"), lambda c: None,
                 "pytest_itera_catalogue hook: the price catalogue in force cannot be used: the "
                 "pytest_itera_catalogue hook returned dict, not a "
                 "pytest_itera.core.money.Catalogue", id="a-hook-that-returns-no-catalogue"),
    pytest.param(ini_catalogue, lambda c: lot(c, offer="Lab cluster 4090, 3 days", price="55.00"),
                 None, id="the-ini-catalogue-is-in-force"),
])
def test_the_catalogue_in_force_prices_the_lots(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder,
    catalogue: Callable[[pytest.Pytester], object], arrange: Callable[[CampaignBuilder], object],
    fails: str | None,
) -> None:
    catalogue(pytester)
    arrange(campaign)
    if fails is None:
        itera.passes(campaign, BUDGET)
    else:
        itera.fails(campaign, BUDGET, fails)


# The rule on a catalogue in force, judged in process (the hook's and the ini's wiring: the
# sessions above): the catalogue, the lot, the code, where, a few words.
@pytest.mark.parametrize(("catalogue", "arrange", "code", "where", "says"), [
    pytest.param(ACME_CATALOGUE, lambda c: None, "budget-consistent.lot-unsourced",
                 "plan.json $.budget.lots[0].source",
                 "is not in the Acme catalogue in force and records no source",
                 id="the-shipped-offer-needs-a-source-under-another-catalogue"),
    pytest.param(LAB_CATALOGUE,
                 lambda c: lot(c, offer="Lab cluster 4090, 3 days", price="47.14"),
                 "budget-consistent.lot-price", "plan.json $.budget.lots[0].price",
                 "priced 55.00 USD for 3 days, but the plan prices it 47.14 USD",
                 id="the-catalogue-refuses-another-price"),
])
def test_a_lot_the_catalogue_in_force_does_not_price_so_is_refused(
    campaign: CampaignBuilder, catalogue: str, arrange: Callable[[CampaignBuilder], object],
    code: str, where: str, says: str,
) -> None:
    arrange(campaign)
    expect_finding(judge(campaign, BUDGET, options=Options(catalogue=parse_catalogue(catalogue))),
                   code, where=where, says=says)


def test_a_bad_ini_catalogue_is_a_usage_error(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    ini_catalogue(pytester, price="55")
    (pytester.path / "prices.json").write_text(
        (pytester.path / "prices.json").read_text().replace('"55"', "55.5"))
    campaign.write()
    result = itera(check=BUDGET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*itera_catalogue = prices.json: *prices.json "
                                 "$.offers[[]0[]].price: 55.5 is a float*"])


# ================================================================ hourly billing (R4)


def hourly_label(campaign: CampaignBuilder, text: str) -> None:
    budget(campaign, included_expenses=[disk(campaign) | {"label": text}])


def hourly_reference(campaign: CampaignBuilder, text: str) -> None:
    budget(campaign, included_expenses=[disk(campaign) | {
        "source": {"file": RECEIPT, "reference": text}}])


# (where the text is written, the text, where the finding is)
@pytest.mark.parametrize(("write", "text", "where"), [
    pytest.param(lambda c, text: c.plan["budget"]["lots"][0].update(offer=text),
                 "IteraGPU RTX 4090, 3 days, 0.65 USD per GPU-hour",
                 "plan.json $.budget.lots[0].offer", id="offer"),
    pytest.param(hourly_label, "disk, 0.02 €/h",
                 "manifest.json $.budget.included_expenses[0].label", id="included"),
    pytest.param(lambda c, text: c.plan["budget"].update(
        external_expenses=[{"label": text, "amount": "300.00"}]), "analyst, 40 USD par heure",
                 "plan.json $.budget.external_expenses[0].label", id="plan-external"),
    pytest.param(hourly_reference, "contract: 72 GPU-hours at 0.65",
                 "manifest.json $.budget.included_expenses[0].source.reference", id="reference"),
    pytest.param(conclude, "variant-a meets the threshold; the overrun was billed 0.65 USD/hr.",
                 "manifest.json $.conclusion.text", id="conclusion"),
    pytest.param(lambda c, text: c.manifest["schedule"].update(
        deviations=[{"step": "setup", "explanation": text}]),
                 "6 h more than planned, charged hourly at 0.65 USD",
                 "manifest.json $.schedule.deviations[0].explanation", id="explanation"),
])
def test_hourly_billing_is_found_in_every_money_bearing_text(
    campaign: CampaignBuilder, write: Callable[[CampaignBuilder, str], object], text: str,
    where: str
) -> None:
    write(campaign, text)
    found = advises_then_fails(campaign, BUDGET, "budget-consistent.hourly-billing")
    assert found.render().startswith(f"{where}: hourly billing: {text!r} states a rate per hour")
    assert "    fix:      lots are fixed-price for their whole duration (R4)" in found.render()


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


# ======================================================= expenses read from labels (R7)


def advised_then_strict(campaign: CampaignBuilder, *lines: str) -> None:
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
    campaign: CampaignBuilder, label: str, found: str
) -> None:
    include(campaign, disk(campaign) | {"label": label})
    advised_then_strict(
        campaign,
        f"{EXPENSE}: included expense {label!r} (2.00 USD) is declared estimated ({found!r}): "
        "an expense included is an amount that was paid",
        "    fix:      list only what was paid, with its receipt or order; an estimated or "
        "computed amount is not an expense (no invented tax rate or transfer cost)*",
    )


# (the expense, the lines its strict finding renders: fnmatch patterns)
@pytest.mark.parametrize(("arrange", "lines"), [
    # an included expense without proof of payment
    pytest.param(lambda c: include(c, disk(c) | {"label": "storage, prorated over the 3 days"}), (
        f"{EXPENSE}: included expense 'storage, prorated over the 3 days' (2.00 USD) is "
        "declared derived from other figures ('prorated')*",), id="derived-amount"),
    pytest.param(lambda c: include(c, {"label": "VAT on the rental", "amount": "9.43",
                                       "source": {"reference": "rental Q-2026-118"}}), (
        f"{EXPENSE}.source: included expense 'VAT on the rental' (9.43 USD) is a tax ('VAT') "
        "without its receipt file",
        "    expected: source.file: the provider's invoice or receipt that states this "
        "amount, listed in the campaign",
        "    found:    reference 'rental Q-2026-118'",
        "    fix:      attach the invoice that states it; the campaign never computes a tax, "
        "a percentage or a transfer cost*"), id="invented-tax"),
    pytest.param(lambda c: include(c, {"label": "egress of the outputs", "amount": "1.08",
                                       "source": {"reference": "bucket eu-1"}}), (
        f"{EXPENSE}.source: included expense 'egress of the outputs' (1.08 USD) is a transfer "
        "cost ('egress') without its receipt file",), id="invented-transfer-cost"),
    pytest.param(lambda c: budget(c, external_expenses=[
        {"label": "VAT 20% on the rental, for the accounts", "amount": "9.43"}]), (
        "manifest.json $.budget.external_expenses[0].source: external expense 'VAT 20% on the "
        "rental, for the accounts' (9.43 USD) is * without its receipt file",),
                 id="an-external-tax-without-its-receipt"),
])
def test_an_expense_read_from_its_label_advises_then_fails_under_strict_text(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object],
    lines: tuple[str, ...]
) -> None:
    arrange(campaign)
    advised_then_strict(campaign, *lines)


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


def test_a_catalogue_in_force_that_cannot_be_used_is_refused(campaign: CampaignBuilder) -> None:
    """What the hook's wiring hands over (Options.catalogue: why the one given is unusable)."""
    why = "the pytest_itera_catalogue hook returned dict, not a pytest_itera.core.money.Catalogue"
    finding = expect_finding(judge(campaign, BUDGET, options=Options(catalogue=why)),
                             "budget-consistent.catalogue-unusable",
                             where="pytest_itera_catalogue hook",
                             says="the price catalogue in force cannot be used")
    assert finding.found == "dict, not a pytest_itera.core.money.Catalogue"


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
