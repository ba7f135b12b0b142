"""The lots against the catalogue in force (R4), and the rental they add up to (R7).

The catalogue is ``Context.catalogue()``: ``Options.catalogue`` (the pytest layer fills it
from the ``pytest_itera_catalogue`` hook, else the ini ``itera_catalogue`` file), else the
shipped IteraGPU catalogue. A lot that is a catalogue offer (same offer name; or same GPU and
days, see :func:`pytest_itera.core.money.catalogue_offer`) carries the offer's price, days
and GPUs per lot: a prorated price is refused. Any other lot records a ``source``, never a
computed price. The rental is Σ price x quantity of the engaged lots, each engaged once:
GPUs per lot never multiply, expenses are listed apart. :data:`BUDGET` and :func:`norm` are
shared with the expense and deliverable modules."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from pytest_itera.checks.budget.sources import SOURCE_SHAPE, amount_in_source, source_findings
from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    BudgetReport,
    Lot,
    Manifest,
    Plan,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.money import (
    Catalogue,
    Money,
    catalogue_offer,
    expenses_total,
    hourly_reading,
    lot_hours,
    prorata_reading,
    rental_total,
    rental_total_problem,
)

BUDGET = json_where(MANIFEST_FILE, "budget")


def catalogue_in_force(ctx: Context) -> Catalogue | str:
    """The price catalogue lots are checked against (see the module docstring), or why the
    one given cannot be used."""
    return ctx.catalogue()


def lot_findings(ctx: Context) -> Iterator[Finding]:
    """Each planned lot is priced as the catalogue in force says, or by its recorded quote."""
    plan = ctx.campaign.plan
    assert plan is not None
    catalogue = catalogue_in_force(ctx)
    if isinstance(catalogue, str):
        yield Finding(
            f"the price catalogue in force cannot be used: {catalogue}",
            where="pytest_itera_catalogue hook",
            expected="a pytest_itera.core.money.Catalogue "
            "(e.g. pytest_itera.core.money.load_catalogue)",
            found=catalogue.split(" returned ", 1)[-1],
            hint="return a Catalogue, or None to use the ini itera_catalogue file or the "
            "shipped IteraGPU catalogue",
            code="budget-consistent.catalogue-unusable",
        )
        return
    for i, lot in enumerate(plan.budget.lots):
        yield from _lot_against(ctx, plan, catalogue, i, lot)


def _lot_against(
    ctx: Context, plan: Plan, catalogue: Catalogue, i: int, lot: Lot
) -> Iterator[Finding]:
    where = json_where(PLAN_FILE, "budget", "lots", i)
    if lot.source is not None:
        yield from source_findings(ctx, lot.source, f"{where}.source", f"lot {lot.id!r}")
        yield from amount_in_source(ctx, lot.source, Money(lot.price, plan.budget.currency),
                                    f"{where}.price", f"lot {lot.id!r}")
    match = catalogue_offer(catalogue, lot.offer, lot.gpu, lot.days, quoted=lot.source is not None)
    currency = plan.budget.currency
    price = Money(lot.price, currency)
    name = f"the {catalogue.provider} catalogue"
    if match is None:
        if lot.source is None:
            yield _unsourced_lot(catalogue, lot, price, where)
            return
        prorata = prorata_reading(price, lot_hours(lot), _same_gpu(catalogue, lot.gpu))
        if prorata is not None:
            yield Finding(
                f"lot {lot.id!r} (offer {lot.offer!r}: {lot.gpu}, {lot.days} days) is priced "
                f"as hours of a catalogue lot: {prorata}", where=f"{where}.price",
                expected=f"a fixed price for the lot, as its quote states it (the {name} has "
                f"no {lot.days}-day {lot.gpu} lot)", found=str(price),
                hint="lots are fixed-price (R4): engage catalogue lots whole (a longer one, or "
                "two), or record the quote of another offer with the price it states; a "
                "price is never hours x a rate",
                code="budget-consistent.lot-hourly")
        return
    offer, what = match.offer, f"lot {lot.id!r} is {name}'s offer {match.offer.offer!r}"
    how = f" (same {match.by})"
    if offer.price.currency != currency:
        yield Finding(
            f"{what}{how}, priced in {offer.price.currency}, but the plan's budget is in "
            f"{currency}",
            where=json_where(PLAN_FILE, "budget", "currency"),
            expected=f"{offer.price.format()} (no invented exchange rate)",
            found=price.format(),
            hint=f"write the budget in {offer.price.currency}, as the catalogue prices the lot",
            code="budget-consistent.lot-currency",
        )
        return
    fix = "name the offer and its terms as the catalogue does; an offer on other terms is " \
        "another offer: name it as its quote does and record the quote as its source"
    if norm(lot.gpu) != norm(offer.gpu):
        yield Finding(f"{what}{how}, a {offer.gpu} lot, not {lot.gpu}", where=f"{where}.gpu",
                      expected=repr(offer.gpu), found=repr(lot.gpu), hint=fix,
                      code="budget-consistent.lot-gpu")
    if lot.days != offer.days:
        yield Finding(f"{what}{how}, which lasts {offer.days} days, not {lot.days}",
                      where=f"{where}.days", expected=str(offer.days), found=str(lot.days),
                      hint=fix,
                      code="budget-consistent.lot-days")
    if lot.gpus_per_lot != offer.gpus_per_lot:
        yield Finding(
            f"{what}{how}, which holds {offer.gpus_per_lot} GPU(s) per lot, not "
            f"{lot.gpus_per_lot}", where=f"{where}.gpus_per_lot",
            expected=str(offer.gpus_per_lot), found=str(lot.gpus_per_lot), hint=fix,
            code="budget-consistent.lot-gpus-per-lot")
    if price != offer.price:
        reading = hourly_reading(price, lot_hours(lot), catalogue.for_gpu(offer.gpu).offers)
        yield Finding(
            f"{what}{how}, priced {offer.price.format()} for {offer.days} days, but the plan "
            f"prices it {price.format()}" + (f": {reading}" if reading else ""),
            where=f"{where}.price",
            expected=f"{offer.price} ({name}: {offer.offer!r}, {offer.days} days)",
            found=str(price),
            hint="a lot's price is its offer's fixed price for the whole duration, never "
            f"hours x a rate: write {offer.price}; a different quoted price is another offer "
            "(name it as its quote does and record the quote as its source)",
            code="budget-consistent.lot-price",
        )


def _unsourced_lot(catalogue: Catalogue, lot: Lot, price: Money, where: str) -> Finding:
    reading = hourly_reading(price, lot_hours(lot), _same_gpu(catalogue, lot.gpu))
    return Finding(
        f"lot {lot.id!r} (offer {lot.offer!r}: {lot.gpu}, {lot.days} days, {price.format()}) "
        f"is not in the {catalogue.provider} catalogue in force and records no source"
        + (f"; its price reads as hourly billing: {reading}" if reading else ""),
        where=f"{where}.source",
        expected=f"the quote or order of this price: {SOURCE_SHAPE}",
        found="no source",
        hint="record the quote or order the price comes from (budget.lots[].source), or give "
        "the catalogue that lists the offer (the pytest_itera_catalogue hook or the ini "
        "option itera_catalogue); a price is never computed from hours",
        code="budget-consistent.lot-unsourced",
    )


def _same_gpu(catalogue: Catalogue, gpu: str) -> tuple[Any, ...]:
    return tuple(o for o in catalogue.offers if norm(o.gpu) == norm(gpu))


def norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def currency_finding(plan: Plan, man: Manifest) -> Finding:
    return Finding(
        "the manifest's budget is not in the plan's currency",
        where=f"{BUDGET}.currency",
        expected=plan.budget.currency,
        found=man.budget.currency,
        hint="report the budget in the currency the lots were priced in; "
        "no invented exchange rate",
        code="budget-consistent.currency",
    )


def engaged_lots(plan: Plan, budget: BudgetReport) -> Iterator[tuple[int, Lot]]:
    by_id = {lot.id: lot for lot in plan.budget.lots}
    seen: set[str] = set()
    for i, lot_id in enumerate(budget.lots):
        if lot_id in by_id and lot_id not in seen:
            seen.add(lot_id)
            yield i, by_id[lot_id]


def lot_ids(plan: Plan, budget: BudgetReport) -> Iterator[Finding]:
    known = [lot.id for lot in plan.budget.lots]
    for lot_id, n in sorted(Counter(known).items()):
        if n > 1:
            yield Finding(f"lot id {lot_id!r} appears {n} times in the plan",
                          where=json_where(PLAN_FILE, "budget", "lots"),
                          expected="each lot id once", found=f"{n} times",
                          hint="give each lot its own id; quantity says how many are rented",
                          code="budget-consistent.lot-id-repeated")
    for i, lot_id in enumerate(budget.lots):
        if lot_id not in known:
            yield Finding(
                f"engaged lot {lot_id!r} is not a lot of the plan",
                where=f"{BUDGET}.lots[{i}]",
                expected=f"one of {', '.join(map(repr, known))}",
                found=repr(lot_id),
                hint="list the ids of plan.json budget.lots that were actually rented",
                code="budget-consistent.engaged-lot-unknown",
            )
        elif budget.lots.index(lot_id) != i:
            yield Finding(
                f"engaged lot {lot_id!r} is listed twice",
                where=f"{BUDGET}.lots[{i}]",
                expected="each engaged lot once",
                found=f"also at $.budget.lots[{budget.lots.index(lot_id)}]",
                hint="list each engaged lot once; its quantity says how many were rented",
                code="budget-consistent.engaged-lot-twice",
            )


def rental(budget: BudgetReport, lots: list[Lot]) -> Iterator[Finding]:
    currency = budget.currency
    stated = Money(budget.rental_total, currency)
    problem = rental_total_problem(stated, lots, budget.external_expenses)
    if problem is None:
        return
    expected = rental_total(lots, currency)
    included = expenses_total(budget.included_expenses, currency)
    if included.amount and stated == expected + included:
        problem += ": it adds the included expenses, which are listed apart"
    yield Finding(
        problem,
        where=f"{BUDGET}.rental_total",
        expected=f"{expected.format()} = "
        + (" + ".join(f"{lot.price} x {lot.quantity} ({lot.id})" for lot in lots) or "no lot"),
        found=stated.format(),
        hint="the rental is Σ price x quantity of the engaged lots; GPUs per lot never "
        "multiply a price, and expenses are listed apart",
        code="budget-consistent.rental-total",
    )
