"""The check budget-consistent (R4, R7): one campaign item that applies, in order, the budget's
rules (hourly billing, lots, rental, expenses, accepted deliverables, cost per deliverable),
and the kinds of finding they report, so that a code's meaning is read here, in one table.

The currency comes before the sums: a manifest budget in another currency than the plan's
stops the check there, since every sum after it would mix currencies."""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.budget.deliverables import accepted_count, count_accepted, ratio
from pytest_itera.checks.budget.expenses import expense_findings
from pytest_itera.checks.budget.hourly import hourly_findings
from pytest_itera.checks.budget.lots import (
    currency_finding,
    engaged_lots,
    lot_findings,
    lot_ids,
    rental,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.findings import Finding

KINDS: dict[str, Kind] = {
    # hourly.py
    "budget-consistent.hourly-billing": Kind(
        rule="a text of plan.json or manifest.json writes a rate per hour (a reading of words)",
        fix="record the lot's fixed price and days as its offer states them, never a rate per "
        "hour", advisory=True),
    # lots.py
    "budget-consistent.catalogue-unusable": Kind(
        rule="the pytest_itera_catalogue hook returns something that is not a Catalogue",
        fix="return a Catalogue, or None to use the ini itera_catalogue file or the shipped "
        "catalogue"),
    "budget-consistent.lot-hourly": Kind(
        rule="a lot outside the catalogue is priced as the exact pro-rata (hours) of a "
        "same-GPU catalogue lot",
        fix="engage catalogue lots whole, or record another offer's quote with the price it "
        "states"),
    "budget-consistent.lot-currency": Kind(
        rule="a catalogue lot is priced in another currency than the plan's budget",
        fix="write the budget in the catalogue's currency (no invented exchange rate)"),
    "budget-consistent.lot-gpu": Kind(
        rule="a lot that is a catalogue offer names another GPU than the offer's",
        fix="name the offer's GPU; an offer on other terms is another offer, with its quote"),
    "budget-consistent.lot-days": Kind(
        rule="a lot that is a catalogue offer lasts other days than the offer's",
        fix="write the offer's days; an offer on other terms is another offer, with its quote"),
    "budget-consistent.lot-gpus-per-lot": Kind(
        rule="a lot that is a catalogue offer holds other GPUs per lot than the offer's",
        fix="write the offer's GPUs per lot; other terms are another offer, with its quote"),
    "budget-consistent.lot-price": Kind(
        rule="a lot that is a catalogue offer is not priced at the offer's fixed price for its "
        "whole duration",
        fix="write the offer's price; a different quoted price is another offer, with its "
        "quote as source"),
    "budget-consistent.lot-unsourced": Kind(
        rule="a lot outside the catalogue in force records no source (quote file or "
        "reference)",
        fix="record the quote or order of the price (budget.lots[].source), or give the "
        "catalogue that lists it"),
    "budget-consistent.currency": Kind(
        rule="the manifest's budget is not in the plan's currency",
        fix="report the budget in the currency the lots were priced in; no invented exchange "
        "rate"),
    "budget-consistent.lot-id-repeated": Kind(
        rule="a lot id appears more than once in the plan's budget.lots",
        fix="give each lot its own id; quantity says how many are rented"),
    "budget-consistent.engaged-lot-unknown": Kind(
        rule="an engaged lot of the manifest is not a lot of the plan",
        fix="list the ids of plan.json budget.lots that were actually rented"),
    "budget-consistent.engaged-lot-twice": Kind(
        rule="an engaged lot is listed twice in the manifest's budget.lots",
        fix="list each engaged lot once; its quantity says how many were rented"),
    "budget-consistent.rental-total": Kind(
        rule="rental_total is not Σ price x quantity of the engaged lots (GPUs per lot "
        "multiply, or expenses are added)",
        fix="write Σ price x quantity of the engaged lots; expenses are listed apart"),
    # sources.py
    "budget-consistent.source-file": Kind(
        rule="a source file is not a listed, present, non-empty file of the campaign",
        fix="ship the document in the campaign folder and list it in the manifest"),
    "budget-consistent.source-placeholder": Kind(
        rule="a source reference is a placeholder (n/a, tbd...), not a reference",
        fix="write the order, invoice or quote number, or list the document as source.file"),
    "budget-consistent.amount-not-in-source": Kind(
        rule="a receipt or quote file does not state the amount recorded from it",
        fix="record the amount the document states, or name the document that states this "
        "one"),
    "budget-consistent.amount-is-tax": Kind(
        rule="a receipt states an expense's amount only on a tax line while it is not recorded "
        "as a tax",
        advises_when="only the word tax, not a tax acronym, names the line",
        fix="record the amount billed for the item, or the tax as an expense of its own "
        "(kind \"tax\")"),
    "budget-consistent.source-currency": Kind(
        rule="a source document states the recorded amount only in another currency than the "
        "budget's",
        fix="record the amount in the budget's currency as a document states it, or correct "
        "the currency"),
    # expenses.py
    "budget-consistent.expense-no-label": Kind(
        rule="an expense (plan or manifest) has an empty or blank label",
        fix="name each expense: what was paid for"),
    "budget-consistent.expense-no-source": Kind(
        rule="an included expense records no source (receipt file or order reference)",
        fix="name the receipt or invoice file listed in the campaign and/or the order "
        "reference"),
    "budget-consistent.expense-made-up": Kind(
        rule="an expense's kind declares an amount that was not paid as such (estimate, "
        "derived, refund...)",
        fix="list only what was paid, with its receipt or order; an estimate is not an "
        "expense"),
    "budget-consistent.expense-no-receipt": Kind(
        rule="an expense whose kind is a tax, a rate or a transfer cost has no receipt file",
        fix="attach the invoice that states it; the campaign never computes a tax, a "
        "percentage or a transfer cost"),
    "budget-consistent.label-marker": Kind(
        rule="an expense's label or reference reads as estimated or derived, or as a tax or "
        "transfer cost without its receipt file",
        fix="list only what was paid, with its receipt; if the label only describes a paid "
        "amount, record kind 'paid'", advisory=True),
    "budget-consistent.external-as-included": Kind(
        rule="an external expense (plan or manifest) comes back as an included one (label, "
        "source, or amount and a label word)",
        fix="list it under external_expenses only; a new label does not make it included"),
    "budget-consistent.expense-counted-twice": Kind(
        rule="an included expense is listed twice: same amount and same receipt file or order "
        "reference",
        fix="list each receipt line once"),
    # receipts.py
    "budget-consistent.receipt-unreadable": Kind(
        rule="an included expense's receipt file cannot be read as text (a scan, an encrypted "
        "or broken PDF)",
        fix="ship the provider's receipt as text or as a PDF with its text layer"),
    "budget-consistent.receipt-issued-by": Kind(
        rule="a receipt does not state the issuer its source.issued_by records",
        fix="record the issuer exactly as the receipt writes it, or attach the receipt that "
        "states it"),
    "budget-consistent.receipt-amount-as-written": Kind(
        rule="a receipt does not state the amount its source.amount_as_written records",
        fix="record the amount exactly as the receipt writes it, or attach the receipt that "
        "states it"),
    "budget-consistent.receipt-issued-on": Kind(
        rule="a source's issued_on is not an ISO date, or falls outside frozen_at to "
        "closed_at, give or take 7 days",
        fix="record the receipt's date as YYYY-MM-DD; attach the receipt of what this "
        "campaign paid"),
    "budget-consistent.receipt-reference": Kind(
        rule="a receipt does not state the order reference its expense records beside it",
        fix="attach the receipt of the order the reference names, or record the reference it "
        "states"),
    "budget-consistent.receipt-issuer": Kind(
        rule="a receipt is issued (or headed) by another provider than the expense's label "
        "names",
        fix="attach the receipt issued by the provider paid, or record source.issued_by",
        advisory=True),
    "budget-consistent.receipt-other-campaign": Kind(
        rule="a receipt's buyer line names another campaign than the plan's",
        fix="attach the receipt of this campaign's expense", advisory=True),
    "budget-consistent.receipt-addressee": Kind(
        rule="a receipt names neither the campaign nor the provider the expense's label names",
        fix="attach a receipt naming the campaign or the label's provider, or record "
        "source.issued_by", advisory=True),
    "budget-consistent.receipt-date": Kind(
        rule="a receipt's text states no date, or only dates outside frozen_at to closed_at, "
        "give or take 7 days",
        fix="record source.issued_on (YYYY-MM-DD), or attach the receipt of what this "
        "campaign paid", advisory=True),
    "budget-consistent.rental-as-expense": Kind(
        rule="an included expense is an engaged lot (its amount and provider, or its source "
        "file): the rental counted twice",
        fix="remove it from included_expenses: a rental lot is paid once, as the rental"),
    "budget-consistent.expense-prorata": Kind(
        rule="an included expense is rental time of an engaged lot's provider priced as hours "
        "of its catalogue offer",
        fix="engage more time as another whole catalogue lot, never a prorated day or hour"),
    # deliverables.py
    "budget-consistent.accepted-deliverables": Kind(
        rule="accepted_deliverables is not the number of distinct corpora delivered by "
        "accepted control/variant runs passing their checks",
        fix="count each distinct corpus once (by content) among the accepted control and "
        "variant runs that pass"),
    "budget-consistent.cost-per-deliverable": Kind(
        rule="cost_per_deliverable is not the rental (or engaged total) divided by the "
        "accepted deliverables, or is set for a decision",
        fix="divide the rental (or lots + included expenses) by the accepted deliverables, to "
        "the cent; null for a decision"),
    "budget-consistent.zero-accepted": Kind(
        rule="zero accepted deliverables, with a ratio, a zero cost or no rejection cause",
        fix="set the ratio to null, show the engaged cost and why nothing was accepted"),
}


def budget_consistent(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Lots, expenses, the accepted count and the cost per deliverable, on the evidence."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None  # guaranteed by Check.needs
    assert man is not None
    yield from hourly_findings(ctx)
    yield from lot_findings(ctx)
    if man.budget.currency != plan.budget.currency:
        yield currency_finding(plan, man)
        return  # every sum below would mix currencies
    lots = [lot for _, lot in engaged_lots(plan, man.budget)]
    yield from lot_ids(plan, man.budget)
    yield from rental(man.budget, lots)
    yield from expense_findings(ctx)
    count = count_accepted(ctx, man)
    yield from accepted_count(man.budget, count, man)
    yield from ratio(man.budget, lots, count.accepted)


CHECK = Check(
    "budget-consistent",
    "lots priced as the catalogue or their quote, no hourly billing, expenses paid and "
    "apart, accepted corpora and the ratio verified",
    budget_consistent,
    reloads=True,  # a run is accepted when its checks pass, checkpoint reloads included
    kinds=KINDS,
)
