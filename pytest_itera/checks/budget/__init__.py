"""Budget check: budget-consistent (R4, R7), on the evidence the folder holds.

Registered as the plugin ``itera.budget``. The arithmetic and the tables (estimate
markers, offer matching, deliverables per corpus) live in
:mod:`pytest_itera.core.money`; this module reads the campaign and words the findings.

What it checks, each finding with what, where (file and JSON path), expected/found
and a fix:

- **Lots against the catalogue in force (R4).** The catalogue is ``Context.catalogue()``:
  ``Options.catalogue`` (the pytest layer fills it from the ``pytest_itera_catalogue``
  hook, else the ini ``itera_catalogue`` file; a notebook passes its own), else the
  shipped IteraGPU catalogue.
  A lot that is a catalogue offer (same offer name; or same GPU and days, see
  :func:`pytest_itera.core.money.catalogue_offer`) carries the offer's price, days and GPUs
  per lot: a prorated price is refused. Any other lot records a ``source`` (a quote
  file listed in the campaign, or a reference), never a computed price.
- **Hourly billing (R4)**, in every string of both budgets (offers, GPU names, expense
  labels, source references) and, in the rest of both documents (notes, explanations,
  decisions, conclusion), in every sentence that also states an amount: a reading of
  words (:mod:`pytest_itera.checks.prose.hourly`), an advisory. A lot priced by the hour
  is refused from its structure: its price against its offer's, its hours.
- **Rental and ratio (R7).** Σ price x quantity of the engaged lots; GPUs per lot never
  multiply; external expenses never in the rental; the cost per deliverable.
- **Expenses (R7).** Every included expense has a source (a receipt file listed in the
  campaign, present and non-empty, and/or a reference that is not a placeholder); an
  amount declared estimated or derived is refused, and a tax, a percentage or a transfer
  cost needs its receipt file. An external expense (plan or manifest) never comes back
  as an included one, recognised by label, source file or reference, or amount and a
  word of its label.
- **Deliverables (R7).** A deliverable is a distinct corpus (by content: plan corpora
  with the same sha256, or the same example IDs and labels, are one; see
  :mod:`pytest_itera.checks.budget.corpora`) delivered by an accepted control or variant run that
  passed its own checks (``Context.run_failures``, predictions-cover-corpus included).
  The corpus a run delivers is its manifest ``runs[].corpus``, else the plan's corpus
  for it (:meth:`Plan.corpus_of`). A data check, pilot or resume check never delivers.
  An ``itera-manifest/1`` run's ``deliverable`` is a label, not evidence: a /1 campaign
  is counted on its one frozen corpus, and a count that only labels explain is refused
  saying that /1 cannot prove it.

What counts as an accepted deliverable is decided *here*, not read from other items'
reports: ``run_failures`` evaluates the same pure check functions the run's own items
run (memoised per process), so the answer is the same under pytest-xdist, with ``-k
budget-consistent`` alone, or in a notebook.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_itera.checks.budget.corpora import merge_same_content
from pytest_itera.checks.budget.receipts import read_receipt, receipt_findings, rental_as_expense
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.prose.hourly import HOURLY_PHRASES, HourlyMatcher, Phrase
from pytest_itera.checks.prose.labels import EXPENSE_KINDS, amount_markers, marker_text
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    BudgetReport,
    Corpus,
    Expense,
    Lot,
    Manifest,
    Plan,
    RunRecord,
    Source,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.money import (
    DELIVERING_ROLES,
    Catalogue,
    Delivery,
    Money,
    catalogue_offer,
    cost_per_deliverable,
    deliverables_per_corpus,
    engaged_total,
    expenses_total,
    hourly_reading,
    lot_hours,
    placeholder_reference,
    prorata_reading,
    ratio_matches,
    ratio_problem,
    rental_total,
    rental_total_problem,
)
from pytest_itera.core.text import is_blank

_BUDGET = json_where(MANIFEST_FILE, "budget")
COVERAGE_CHECK = "predictions-cover-corpus"
# Budget strings that are not money-bearing text: paths and codes. rejection_cause is
# prose (scanned as such).
_NOT_TEXT = frozenset({"file", "currency"})
_PROSE_KEYS = frozenset({"rejection_cause"})
_NOT_PROSE = frozenset({
    "format", "campaign", "frozen_at", "closed_at", "started_at", "ended_at", "at", "id",
    "path", "sha256", "config", "config_sha256", "predictions", "measurements", "outcome",
    "role", "category", "kind", "resource", "corpus", "run", "lot", "step", "after", "drops",
    "adds", "checkpoint", "claims", "resume_state", "files", "base_model", "base_revision",
    "base_path", "base_digest", "analysis", "reload_instructions", "rule", "metric",
    "direction", "meets_threshold", "id_field", "file", "plan", "metrics",
})
_SOURCE_SHAPE = '{"file": "<a receipt or quote listed in the campaign>"} and/or ' \
    '{"reference": "<order or quote reference>"}'


def budget_consistent(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Lots, expenses, the accepted count and the cost per deliverable, on the evidence."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None  # guaranteed by Check.needs
    assert man is not None
    yield from hourly_findings(ctx)
    yield from lot_findings(ctx)
    if man.budget.currency != plan.budget.currency:
        yield _currency_finding(plan, man)
        return  # every sum below would mix currencies
    lots = [lot for _, lot in _engaged_lots(plan, man.budget)]
    yield from _lot_ids(plan, man.budget)
    yield from _rental(man.budget, lots)
    yield from expense_findings(ctx)
    count = count_accepted(ctx, man)
    yield from _accepted_count(man.budget, count, man)
    yield from _ratio(man.budget, lots, count.accepted)


# --------------------------------------------------------------- hourly (R4)


def hourly_findings(ctx: Context) -> Iterator[Finding]:
    """Every text of plan.json and manifest.json that bills by the hour."""
    matcher = ctx.memo("hourly-phrases", lambda: _matcher(ctx))
    yield from hourly_billing_in(ctx.campaign.plan_data, ctx.campaign.manifest_data, matcher)


def hourly_billing_in(
    plan_data: Any, manifest_data: Any, matcher: HourlyMatcher | None = None
) -> Iterator[Finding]:
    """Every text of the two documents (parsed JSON) that writes a rate per hour: a reading
    of words, so an advisory. What decides is structure: the lot against its catalogue offer
    and its hours (lot_findings), an expense against a catalogue lot (expense-prorata)."""
    matcher = matcher or HourlyMatcher()
    for file, data in ((PLAN_FILE, plan_data), (MANIFEST_FILE, manifest_data)):
        for path, text, prose in _texts(data, "$", in_budget=False):
            hit = matcher.find(text, prose=prose)
            if hit is None:
                continue
            yield Finding(
                f"hourly billing: {text!r} states a rate per hour ({hit.found!r})",
                where=f"{file} {path}",
                expected="fixed prices: a lot's price covers its whole duration",
                found=repr(hit.found),
                hint="lots are fixed-price for their whole duration (R4): record the lot's "
                "price and days as its offer states them, never a rate per hour or hours x "
                "a rate",
                code="budget-consistent.hourly-billing",
                advisory=True,
            )


def _matcher(ctx: Context) -> HourlyMatcher:
    extra = tuple(Phrase.literal(p) for p in ctx.options.hourly_phrases)
    return HourlyMatcher((*HOURLY_PHRASES, *extra))


def _texts(node: Any, path: str, *, in_budget: bool) -> Iterator[tuple[str, str, bool]]:
    """(JSON path, string, is prose) for every text: strict inside a budget, prose outside.

    Identifiers, paths, digests, timestamps and enumerations are not text: their keys are
    skipped (outside a budget), any other key (a note, an explanation, a field this module
    does not know) is searched."""
    if isinstance(node, str):
        yield path, node, not in_budget
    elif isinstance(node, dict):
        for key, value in node.items():
            sub = f"{path}.{key}"
            if key in (_NOT_TEXT if in_budget else _NOT_PROSE):
                continue
            if in_budget and key in _PROSE_KEYS:
                yield from _texts(value, sub, in_budget=False)
            else:
                budget = in_budget or (path == "$" and key == "budget")
                yield from _texts(value, sub, in_budget=budget)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _texts(value, f"{path}[{i}]", in_budget=in_budget)


# -------------------------------------------------------- the catalogue (R4)


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
    if _norm(lot.gpu) != _norm(offer.gpu):
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
        expected=f"the quote or order of this price: {_SOURCE_SHAPE}",
        found="no source",
        hint="record the quote or order the price comes from (budget.lots[].source), or give "
        "the catalogue that lists the offer (the pytest_itera_catalogue hook or the ini "
        "option itera_catalogue); a price is never computed from hours",
        code="budget-consistent.lot-unsourced",
    )


def _same_gpu(catalogue: Catalogue, gpu: str) -> tuple[Any, ...]:
    return tuple(o for o in catalogue.offers if _norm(o.gpu) == _norm(gpu))


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


# --------------------------------------------------------------- sources


def source_findings(ctx: Context, source: Source, where: str, what: str) -> Iterator[Finding]:
    """A source's file is a listed, present, non-empty file of the campaign; its reference is
    a reference, not a placeholder, and says nothing of an estimate."""
    if source.file is not None:
        problem = _file_problem(ctx, source.file)
        if problem is not None:
            yield Finding(
                f"{what}: its source file {source.file} {problem}",
                where=f"{where}.file",
                expected="a receipt, invoice or quote file listed in manifest.json files, "
                "present and non-empty",
                found=problem,
                hint="ship the document in the campaign folder and list it in the manifest "
                "(the recorder lists every file it writes)",
                code="budget-consistent.source-file",
            )
    if source.reference is not None and placeholder_reference(source.reference):
        yield Finding(
            f"{what}: its source reference {source.reference!r} is a placeholder, not a "
            "reference", where=f"{where}.reference",
            expected="the order, invoice or quote number", found=repr(source.reference),
            hint="write the reference of the document the amount comes from, or list the "
            "document itself as source.file",
            code="budget-consistent.source-placeholder",
        )


# An amount as documents write it: 1,234.56 / 1.234,56 / 1 234,56 / 12.00 / 12,5 / 12.
# Not a part of a date, a time, a range or an identifier: "2026-12-03", "10:30", "INV-12".
_AMOUNT = re.compile(r"(?<![\w.,/:-])\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+(?:[.,]\d{1,2})?"
                     r"(?![\w/:-]|[.,]\d)"
                     r"|(?<![\w.,/:-])\d+(?:[.,]\d{1,4})?(?![\w/:-]|[.,]\d)")


# The unit written right after an amount ("5 GB", "0.20 USD", "20%"), or a currency sign
# or code right before it ("$1,212.00", "USD 12.00"): shown with the amount in a finding.
_UNIT_AFTER = re.compile(
    r"[ \u00a0\u202f]?(%|[$\u20ac\u00a3]|[A-Z][A-Za-z]{0,3}\b"
    r"|(?:h|hrs?|hours?|days?|months?|[kmgt]i?b)\b)")
_UNIT_BEFORE = re.compile(r"(?:[$\u20ac\u00a3]|\b[A-Z]{3}[ \u00a0\u202f])$")


def _amounts(text: str) -> dict[Decimal, str]:
    """Every amount a text states, each with the words that state it (the number as written,
    with its unit or currency: "5 GB", "0.20 USD"). The last '.' or ',' is the decimal mark
    when one, two or four digits follow it; with three it may also group thousands (both
    readings kept)."""
    out: dict[Decimal, str] = {}
    for match in _AMOUNT.finditer(text):
        raw = re.sub(r"[\u00a0\u202f ]", "", match.group(0))
        head, sep, tail = raw.replace(",", ".").rpartition(".")
        digits = head.replace(".", "")
        readings = [raw.replace(",", "").replace(".", "")] if not sep else []
        if sep and len(tail) != 3:
            readings.append(f"{digits}.{tail}")
        elif sep:
            readings += [f"{digits}.{tail}", digits + tail]
        shown = _as_written(text, match)
        for reading in readings:
            if reading:
                out.setdefault(Decimal(reading), shown)
    return out


def states_amount(text: str, amount: Decimal) -> bool:
    """Whether a document's text states ``amount`` as documents write it ("12,50 \u20ac",
    "1 234.56", "USD 12.00"): the reading :func:`amount_in_source` judges a receipt by."""
    return amount in _amounts(text)


def _as_written(text: str, match: re.Match[str]) -> str:
    """An amount as the text writes it, with the unit after it or the currency before it."""
    after = _UNIT_AFTER.match(text, match.end())
    if after is not None:
        return f"{match.group(0)} {after.group(1)}".replace(" %", "%")
    before = _UNIT_BEFORE.search(text, max(0, match.start() - 4), match.start())
    return f"{before.group(0)}{match.group(0)}" if before is not None else match.group(0)


def amount_in_source(
    ctx: Context, source: Source, amount: Money, where: str, what: str,
    kind: str | None = None,
) -> Iterator[Finding]:
    """A receipt or quote states the amount recorded from it (R7: an expense is what was
    paid, on the evidence of its source): its text, or a PDF's text layer
    (:func:`pytest_itera.checks.budget.receipts.read_receipt`). A document that cannot be read
    says so through the receipt checks; the amount then rests on the record."""
    if source.file is None or _file_problem(ctx, source.file) is not None:
        return
    receipt = read_receipt(ctx, source.file)
    if receipt is None or receipt.text is None:
        return
    if states_amount(receipt.text, amount.amount):
        yield from _currency_in_source(receipt.text, source.file, amount, where, what)
        if kind != "tax":  # an expense recorded as a tax is its receipt's tax line
            yield from _only_as_tax(receipt.text, source.file, amount, where, what, kind)
        return
    yield Finding(
        f"{what}: its source file {source.file} does not state {amount.amount}",
        where=where, expected=f"{amount.amount}, as {source.file} states it",
        found=", ".join(list(dict.fromkeys(_amounts(receipt.text).values()))[:6]) or "no amount",
        hint="record the amount the receipt or quote states (an expense is what was paid, a "
        "lot's price what was quoted), or name the document that states this one",
        code="budget-consistent.amount-not-in-source",
    )


# A tax line of a receipt: by its acronym ("VAT 20%: 1.20 USD", "TVA : 1,20 \u20ac", "MwSt"),
# which receipts write as a label in every language, or by the word ("Sales tax 1.20",
# "Steuer", "impuesto", "税"), a reading of words.
_TAX_ACRONYM = re.compile(
    r"\b(?:VAT|TVA|GST|HST|PST|QST|IVA|MwSt|USt|BTW|IGIC)\b|增值税|消费税|消費税", re.I)
_TAX_WORD = re.compile(r"\b(?:tax|taxes|taxe|\w*steuer\w*|impuestos?|imposta|imposto)\b|税",
                       re.I)
# A line of a total or an amount billed, tax included ("Total incl. VAT", "Total TTC").
_WITH_TAX = re.compile(r"\s*(?:total|amount|montant|gesamt\w*|importe|合计|总计)\b|"
                       r".*\b(?:incl\w*|including|TTC|inkl\w*|brutto|incluido|incluye)\b",
                       re.I)


def _tax_line(line: str) -> bool:
    return (_TAX_ACRONYM.search(line) is not None or _TAX_WORD.search(line) is not None) \
        and not _WITH_TAX.search(line)


def _only_as_tax(text: str, file: str, amount: Money, where: str, what: str,
                 kind: str | None) -> Iterator[Finding]:
    """An expense not recorded as a tax (its ``kind``; without one, a label naming no tax)
    records an amount its receipt states only on a tax line: the tax of a purchase is not the
    purchase. A line named by a tax's acronym (VAT, TVA, MwSt, IVA…) decides; a line the word
    "tax" alone names, or a label read for tax words, advises."""
    rows = text.splitlines()
    lines = [(n, line) for n, line in enumerate(rows, 1) if states_amount(line, amount.amount)]
    if not lines or not all(_tax_line(t) for _, t in lines):
        return
    if kind is None and (_TAX_ACRONYM.search(what) or _TAX_WORD.search(what)):
        return  # the label names the tax: the expense is its receipt's tax line
    exact = all(_TAX_ACRONYM.search(t) for _, t in lines)
    totals = [line.strip() for line in rows if _WITH_TAX.match(line)]
    yield Finding(
        f"{what}: its source file {file} states {amount.amount} only as a tax (line "
        f"{', '.join(str(n) for n, _ in lines)}: {lines[0][1].strip()!r}), not as what was "
        "bought",
        where=where, expected="the amount billed for the item the label names",
        found=lines[0][1].strip() + (f"; {'; '.join(totals[:3])}" if totals else ""),
        hint="record the amount the receipt bills for the item (with its tax, or the tax as "
        "an expense of its own: kind \"tax\")" + ("" if exact else "; a reading of words: it "
                                                  "fails only under --itera-strict-text"),
        code="budget-consistent.amount-is-tax", advisory=not exact,
    )


_SIGNS = {"$": "USD", "\u20ac": "EUR", "\u00a3": "GBP"}


def _currencies_of(text: str, amount: Decimal) -> list[str | None]:
    """The currency written with each statement of ``amount`` in ``text`` (a sign or a
    three-letter code right after or right before it), None where none is written."""
    out: list[str | None] = []
    for match in _AMOUNT.finditer(text):
        if amount not in _amounts(match.group(0)):
            continue
        after = _UNIT_AFTER.match(text, match.end())
        before = _UNIT_BEFORE.search(text, max(0, match.start() - 4), match.start())
        units = [u.strip() for u in (after.group(1) if after else "",
                                     before.group(0) if before else "")]
        codes = [_SIGNS.get(u, u) for u in units if u in _SIGNS or re.fullmatch(r"[A-Z]{3}", u)]
        out.append(codes[0] if codes else None)
    return out


def _currency_in_source(text: str, file: str, amount: Money, where: str,
                        what: str) -> Iterator[Finding]:
    """The document states the amount in the budget's currency: 1.20 EUR is not 1.20 USD.
    An amount written without a currency anywhere is taken as the budget's."""
    currencies = _currencies_of(text, amount.amount)
    if not currencies or None in currencies or amount.currency in currencies:
        return
    shown = ", ".join(f"{amount.amount} {c}" for c in dict.fromkeys(currencies))
    yield Finding(
        f"{what}: its source file {file} states {shown}, not {amount.amount} "
        f"{amount.currency} (the budget's currency)",
        where=where, expected=f"{amount.amount} {amount.currency}", found=shown,
        hint="record the amount in the budget's currency as the document states it (a "
        "conversion is an estimate: ship the document that states the converted amount, "
        "such as the card statement), or correct the currency",
        code="budget-consistent.source-currency",
    )


def _file_problem(ctx: Context, relpath: str) -> str | None:
    man = ctx.campaign.manifest
    resolved = ctx.regular_file(relpath)
    if isinstance(resolved, str):
        return resolved
    if man is not None and relpath not in ctx.memo("listed-files",
                                                   lambda: {f.path for f in man.files}):
        return "is not listed in the manifest's files"
    try:
        size = Path(resolved).stat().st_size
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return "is empty" if size == 0 else None


# ------------------------------------------------------------ expenses (R7)


def expense_findings(ctx: Context) -> Iterator[Finding]:
    """Provenance of included expenses, no made-up amount, external expenses kept apart."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None
    assert man is not None
    for where, expense in _all_expenses(plan, man):
        if is_blank(expense.label):
            yield Finding("an expense has no label", where=f"{where}.label",
                          expected="what was paid for", found=repr(expense.label),
                          hint="name each expense; an empty or blank label is missing",
                          code="budget-consistent.expense-no-label")
    budget = man.budget
    for i, expense in enumerate(budget.included_expenses):
        where = f"{_BUDGET}.included_expenses[{i}]"
        what = f"included expense {expense.label!r} ({expense.amount} {budget.currency})"
        yield from _provenance(ctx, man, expense, where, what)
        yield from _made_up(expense, where, what)
        yield from _external_as_included(plan, man, expense, where, what)
        yield from rental_as_expense(ctx, expense, where, what)
        yield from receipt_findings(ctx, expense, where, what)
    for i, expense in enumerate(budget.external_expenses):
        # Kept apart from the rental, but still no invented tax rate or transfer cost (R7).
        yield from _made_up(expense, f"{_BUDGET}.external_expenses[{i}]",
                            f"external expense {expense.label!r} ({expense.amount} "
                            f"{budget.currency})")
    yield from _counted_twice(budget)


def _all_expenses(plan: Plan, man: Manifest) -> Iterator[tuple[str, Expense]]:
    for i, e in enumerate(plan.budget.external_expenses):
        yield json_where(PLAN_FILE, "budget", "external_expenses", i), e
    for field_name in ("included_expenses", "external_expenses"):
        for i, e in enumerate(getattr(man.budget, field_name)):
            yield f"{_BUDGET}.{field_name}[{i}]", e


def _provenance(
    ctx: Context, man: Manifest, expense: Expense, where: str, what: str
) -> Iterator[Finding]:
    if expense.source is not None:
        yield from source_findings(ctx, expense.source, f"{where}.source", what)
        yield from amount_in_source(ctx, expense.source,
                                    Money(expense.amount, man.budget.currency),
                                    f"{where}.amount", what, expense.kind)
        return
    if man.version == 1:
        message = f"itera-manifest/1 cannot prove that {what} was paid: it records no source"
        hint = "re-close the campaign with itera-manifest/2, where every included expense " \
            "names its receipt file and/or order reference (source)"
    else:
        message = f"{what} has no source"
        hint = "name the receipt or invoice file (listed in the campaign) and/or the order " \
            "reference"
    yield Finding(message, where=f"{where}.source", expected=_SOURCE_SHAPE, found="no source",
                  hint=hint,
                  code="budget-consistent.expense-no-source")


def _made_up(expense: Expense, where: str, what: str) -> Iterator[Finding]:
    """An amount that was not paid as such: the expense's ``kind`` decides; without one,
    the label's reading advises (prose.labels, code ``label-marker``)."""
    reference = expense.source.reference if expense.source is not None else None
    has_file = expense.source is not None and expense.source.file is not None
    if expense.kind is not None:
        rule = EXPENSE_KINDS.get(expense.kind)
        if rule == "refused":
            yield _refused(what, where, f"its kind is {expense.kind!r}", repr(expense.kind),
                           _KIND[expense.kind], code="budget-consistent.expense-made-up")
        elif rule == "needs-receipt" and not has_file:
            yield _no_receipt(what, where, _KIND[expense.kind], f"kind {expense.kind!r}",
                              reference, code="budget-consistent.expense-no-receipt")
        return
    for marker in amount_markers(expense.label, reference):
        found = marker_text(marker, expense.label, reference)
        if not marker.needs_receipt:
            yield _refused(what, where, repr(found), repr(found), _KIND[marker.kind],
                           code="budget-consistent.label-marker", advisory=True)
        elif not has_file:
            yield _no_receipt(what, where, _KIND[marker.kind], repr(found), reference,
                              code="budget-consistent.label-marker", advisory=True)


def _refused(what: str, where: str, why: str, found: str, declared: str, *, code: str,
             advisory: bool = False) -> Finding:
    return Finding(
        f"{what} is declared {declared} ({why}): an expense included is an amount that was "
        "paid", where=where, expected="the amount paid, as its receipt states it", found=found,
        hint="list only what was paid, with its receipt or order; an estimated or computed "
        "amount is not an expense (no invented tax rate or transfer cost)"
        + ("; if the label only describes a paid amount, record kind 'paid'" if advisory
           else ""),
        code=code, advisory=advisory)


def _no_receipt(what: str, where: str, declared: str, found: str, reference: str | None, *,
                code: str, advisory: bool = False) -> Finding:
    return Finding(
        f"{what} is {declared} ({found}) without its receipt file", where=f"{where}.source",
        expected="source.file: the provider's invoice or receipt that states this amount, "
        "listed in the campaign",
        found=f"reference {reference!r}" if reference else "no source",
        hint="attach the invoice that states it; the campaign never computes a tax, a "
        "percentage or a transfer cost ('n'inventez ni taux de taxe ni coût de transfert non "
        "fourni')", code=code, advisory=advisory)


_KIND = {
    "estimate": "estimated",
    "derived": "derived from other figures",
    "rate": "computed from a rate",
    "tax": "a tax",
    "transfer": "a transfer cost",
    "refund": "a refund",
    "credit": "a credit",
}


def _external_as_included(
    plan: Plan, man: Manifest, expense: Expense, where: str, what: str
) -> Iterator[Finding]:
    """An external expense (plan or manifest) that comes back as an included one."""
    externals = [(json_where(PLAN_FILE, "budget", "external_expenses", j), e)
                 for j, e in enumerate(plan.budget.external_expenses)]
    externals += [(f"{_BUDGET}.external_expenses[{j}]", e)
                  for j, e in enumerate(man.budget.external_expenses)]
    for other_where, external in externals:
        reason = same_expense(expense, external)
        if reason is not None:
            yield Finding(
                f"{what} is the external expense {external.label!r} "
                f"({external.amount} {man.budget.currency}, {other_where}): {reason}",
                where=where,
                expected="listed under external_expenses only",
                found="listed as an included expense",
                hint="external expenses stay apart from the rental and from what the "
                "campaign included (list it under external_expenses only); a new label "
                "does not make it included",
                code="budget-consistent.external-as-included",
            )
            return


_STOP_WORDS = frozenset({"with", "from", "for", "the", "and", "cost", "costs", "fees", "time",
                         "paid", "bill", "billed", "invoice", "receipt", "order", "pour", "avec",
                         "frais"})


def same_expense(a: Expense, b: Expense) -> str | None:
    """Why expenses ``a`` and ``b`` are one (same label, same source file or reference, or
    the same amount and a word of their labels), or None."""
    if _norm(a.label) and _norm(a.label) == _norm(b.label):
        return "the same label"
    if a.source is not None and b.source is not None:
        if a.source.file is not None and a.source.file == b.source.file:
            return f"the same source file {a.source.file}"
        if (a.source.reference is not None and b.source.reference is not None
                and _norm(a.source.reference) == _norm(b.source.reference)
                and not placeholder_reference(a.source.reference)):
            return f"the same source reference {a.source.reference!r}"
    if Money(a.amount, "XXX") == Money(b.amount, "XXX"):
        shared = _words(a.label) & _words(b.label)
        if shared:
            return f"the same amount and label word {sorted(shared)[0]!r}"
    return None


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w{4,}", text.casefold()) if w not in _STOP_WORDS}


def _counted_twice(budget: BudgetReport) -> Iterator[Finding]:
    seen: dict[tuple[str, str, str], int] = {}
    for i, e in enumerate(budget.included_expenses):
        if e.source is None:
            continue
        # The receipt line, not its label: a relabelled copy is the same paid amount.
        reference = _norm(e.source.reference or "")
        if not e.source.file and (not reference or placeholder_reference(e.source.reference)):
            continue  # no receipt named: nothing to tell two lines apart by
        key = (str(Money(e.amount, budget.currency)), e.source.file or "", reference)
        if key in seen:
            yield Finding(
                f"included expense {e.label!r} ({e.amount} {budget.currency}) is listed twice "
                f"(as included_expenses[{seen[key]}] too, same amount and same "
                f"{'receipt file' if e.source.file else 'order reference'}): the same receipt "
                "counted twice",
                where=f"{_BUDGET}.included_expenses[{i}]",
                expected="each paid amount once", found="twice",
                hint="list each receipt line once",
                code="budget-consistent.expense-counted-twice",
            )
        else:
            seen[key] = i


# ------------------------------------------------------------- lots and rental


def _currency_finding(plan: Plan, man: Manifest) -> Finding:
    return Finding(
        "the manifest's budget is not in the plan's currency",
        where=f"{_BUDGET}.currency",
        expected=plan.budget.currency,
        found=man.budget.currency,
        hint="report the budget in the currency the lots were priced in; "
        "no invented exchange rate",
        code="budget-consistent.currency",
    )


def _engaged_lots(plan: Plan, budget: BudgetReport) -> Iterator[tuple[int, Lot]]:
    by_id = {lot.id: lot for lot in plan.budget.lots}
    seen: set[str] = set()
    for i, lot_id in enumerate(budget.lots):
        if lot_id in by_id and lot_id not in seen:
            seen.add(lot_id)
            yield i, by_id[lot_id]


def _lot_ids(plan: Plan, budget: BudgetReport) -> Iterator[Finding]:
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
                where=f"{_BUDGET}.lots[{i}]",
                expected=f"one of {', '.join(map(repr, known))}",
                found=repr(lot_id),
                hint="list the ids of plan.json budget.lots that were actually rented",
                code="budget-consistent.engaged-lot-unknown",
            )
        elif budget.lots.index(lot_id) != i:
            yield Finding(
                f"engaged lot {lot_id!r} is listed twice",
                where=f"{_BUDGET}.lots[{i}]",
                expected="each engaged lot once",
                found=f"also at $.budget.lots[{budget.lots.index(lot_id)}]",
                hint="list each engaged lot once; its quantity says how many were rented",
                code="budget-consistent.engaged-lot-twice",
            )


def _rental(budget: BudgetReport, lots: list[Lot]) -> Iterator[Finding]:
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
        where=f"{_BUDGET}.rental_total",
        expected=f"{expected.format()} = "
        + (" + ".join(f"{lot.price} x {lot.quantity} ({lot.id})" for lot in lots) or "no lot"),
        found=stated.format(),
        hint="the rental is Σ price x quantity of the engaged lots; GPUs per lot never "
        "multiply a price, and expenses are listed apart",
        code="budget-consistent.rental-total",
    )


# ------------------------------------------------------ accepted deliverables


@dataclass(frozen=True)
class Excluded:
    """An accepted control or variant that is not an accepted deliverable, and why."""

    run: str
    reason: str

    def describe(self) -> str:
        return f"{self.run} ({self.reason})"


@dataclass(frozen=True)
class Count:
    """The accepted deliverables as this session verified them."""

    deliverables: tuple[str, ...]  # one name per distinct corpus, sorted
    counted_runs: tuple[str, ...]  # accepted control/variant runs that passed their checks
    excluded: tuple[Excluded, ...]
    same_content: tuple[tuple[str, str], ...] = ()  # (corpus id, the corpus it is a copy of)
    # itera-manifest/1: the distinct `deliverable` labels of the accepted controls/variants,
    # and how many distinct corpora (by content) their predictions cover per the plan.
    labels: tuple[str, ...] = ()
    named: int = 0
    same_how: tuple[tuple[str, str], ...] = ()  # corpus id -> how it is one by content

    @property
    def accepted(self) -> int:
        return len(self.deliverables)


def corpus_contents(plan: Plan) -> dict[str, Corpus]:
    """Corpus id -> the first plan corpus with the same content (sha256) or the same path."""
    first: dict[str, Corpus] = {}
    out: dict[str, Corpus] = {}
    for corpus in plan.corpora:
        same = first.get(f"sha256:{corpus.sha256}") or first.get(f"path:{corpus.path}")
        canonical = same or corpus
        first.setdefault(f"sha256:{corpus.sha256}", canonical)
        first.setdefault(f"path:{corpus.path}", canonical)
        out.setdefault(corpus.id, canonical)
    return out


def planned_elsewhere(plan: Plan, run_id: str, corpus_id: str) -> str | None:
    """The corpus the plan gives ``run_id`` when it is another corpus than ``corpus_id`` (not
    the same content), else None: what the recorder refuses and delivered_corpus reports."""
    planned = plan.run(run_id)
    if planned is None or planned.corpus is None:
        return None
    contents = corpus_contents(plan)
    return None if contents.get(planned.corpus) is contents.get(corpus_id) else planned.corpus


def delivered_corpus(plan: Plan, run: RunRecord) -> Corpus | str:
    """The plan corpus an accepted control/variant delivers, or why it delivers none."""
    if run.predictions is None:
        return "it has no predictions"
    if run.corpus is not None:
        corpus = plan.corpus_by_id(run.corpus)
        if corpus is None:
            return f"its corpus {run.corpus!r} is not a corpus of the plan"
        planned = planned_elsewhere(plan, run.id, corpus.id)
        if planned is not None:
            return f"it was planned on corpus {planned!r}, but the manifest says it " \
                f"delivers {run.corpus!r}"
        return corpus
    found = plan.corpus_of(run.id)
    if found is None:
        return f"the plan freezes {len(plan.corpora)} corpora and neither the plan nor the " \
            "manifest says which one its predictions cover"
    return found


def count_accepted(ctx: Context, man: Manifest) -> Count:
    """Distinct corpora delivered by accepted control/variant runs that passed their checks."""
    plan = ctx.campaign.plan
    assert plan is not None
    contents = corpus_contents(plan)
    coverage = ctx.checks.get(COVERAGE_CHECK)
    covered = set(ctx.verdicts.targets(coverage)) if coverage is not None else set()
    deliveries: list[Delivery] = []
    excluded: list[Excluded] = []
    labels: set[str] = set()
    named: set[str] = set()
    for run in man.runs:
        planned = plan.run(run.id)
        if run.outcome != "accepted" or planned is None or planned.role not in DELIVERING_ROLES:
            continue  # a data check, pilot or resume check delivers nothing; unplanned: ids
        if run.deliverable is not None:
            labels.add(run.deliverable)
        corpus = delivered_corpus(plan, run)
        if isinstance(corpus, str):
            excluded.append(Excluded(run.id, corpus))
            continue
        named.add(contents[corpus.id].sha256)
        failures = ctx.verdicts.run_failures(run.id)
        if failures:
            first = ctx.verdicts.findings(*failures[0])
            failed = ", ".join(f"{check}[{target}]" for check, target in failures)
            excluded.append(Excluded(
                run.id, f"failed {failed}: {first[0].message if first else '?'}"))
            continue
        if run.id not in covered:
            excluded.append(Excluded(
                run.id, f"that its predictions cover corpus {corpus.id!r} is not verified: the "
                f"{COVERAGE_CHECK} check is not registered (itera.runs switched off?)"))
            continue
        deliveries.append(Delivery(run.id, planned.role, corpus.id,
                                   contents[corpus.id].sha256))
    deliveries, how = merge_same_content(ctx, plan, deliveries)
    per_content = deliverables_per_corpus(deliveries)
    corpus_of = {d.run: d.corpus for d in deliveries}
    names = []
    same: list[tuple[str, str]] = []
    for runs in per_content.values():
        ids = sorted({corpus_of[r] for r in runs})
        canonical = contents[min(ids, key=[c.id for c in plan.corpora].index)].id
        names.append(ids[0] if len(ids) == 1 else " = ".join(ids))
        same += [(i, canonical) for i in ids if i != canonical]
    counted = tuple(d.run for d in deliveries)
    return Count(tuple(sorted(names)), counted, tuple(excluded), tuple(same),
                 tuple(sorted(labels)), len(named), tuple(sorted(how.items())))


def _accepted_count(budget: BudgetReport, count: Count, man: Manifest) -> Iterator[Finding]:
    declared = budget.accepted_deliverables
    if declared == count.accepted:
        return
    if man.version == 1 and declared > count.accepted and len(count.labels) > count.named:
        message = (
            f"itera-manifest/1 cannot prove that the deliverables "
            f"{', '.join(map(repr, count.labels))} are {len(count.labels)} distinct corpora: "
            "runs[].deliverable is a label, and the runs' predictions cover "
            f"{count.named} corpus(es) of the plan{_diagnosis(declared, count, None)}"
        )
        hint = "re-close the campaign with itera-manifest/2: plan corpora for each corpus " \
            "and runs[].corpus naming the one each run's predictions cover"
    else:
        message = (
            f"accepted_deliverables is {declared}, but {count.accepted} distinct corpus(es) "
            f"were delivered by accepted control or variant runs that passed their checks in "
            f"this session{_diagnosis(declared, count, man)}"
        )
        hint = "count each distinct corpus once (by content) among the control and variant " \
            "runs accepted AND passing their checks; a data check, pilot or resume check " \
            "delivers nothing, a replay or a relabelled copy adds nothing, and a stopped run " \
            "is an expense, not a deliverable"
    yield Finding(
        message,
        where=f"{_BUDGET}.accepted_deliverables",
        expected=f"{count.accepted}" + (f" ({', '.join(count.deliverables)})"
                                        if count.deliverables else ""),
        found=str(declared),
        hint=hint,
        code="budget-consistent.accepted-deliverables",
    )


def _diagnosis(declared: int, count: Count, man: Manifest | None) -> str:
    notes = []
    if count.excluded:
        notes.append("not counted: " + "; ".join(e.describe() for e in count.excluded))
    if count.same_content:
        notes.append("one corpus under several ids (same content): " + ", ".join(
            f"{copy!r} is {original!r}{dict(count.same_how).get(copy, '')}"
            for copy, original in count.same_content))
    accepted_runs = -1 if man is None else sum(1 for r in man.runs if r.outcome == "accepted")
    if man is not None and declared > count.accepted and declared in (
            accepted_runs, len(count.counted_runs)):
        notes.append("the declared number counts runs, but a corpus replayed counts once")
    return "; " + "; ".join(notes) if notes else ""


# -------------------------------------------------------- cost per deliverable


def _ratio(budget: BudgetReport, lots: list[Lot], accepted: int) -> Iterator[Finding]:
    currency = budget.currency
    total = engaged_total(lots, currency, budget.included_expenses)
    stated = (
        None if budget.cost_per_deliverable is None
        else Money(budget.cost_per_deliverable, currency)
    )
    if accepted == 0:
        yield from _zero_accepted(budget, stated, total)
        return
    problem = ratio_problem(stated, total, accepted, budget.unit, budget.rejection_cause)
    if problem is None:
        return
    rental = rental_total(lots, currency)
    if budget.unit != "decision" and stated is not None and ratio_matches(stated, rental, accepted):
        return  # the source's own figure: the rental's share per deliverable (47.14 / 2 = 23.57)
    yield Finding(problem, where=f"{_BUDGET}.cost_per_deliverable",
                  expected=_expected_ratio(budget, total, accepted),
                  found=stated.format() if stated is not None else "null",
                  hint=_ratio_hint(budget),
                  code="budget-consistent.cost-per-deliverable")


def _zero_accepted(budget: BudgetReport, stated: Money | None, total: Money) -> Iterator[Finding]:
    # Same rule for a corpus and a decision: nothing accepted still cost money (R7).
    problem = ratio_problem(stated, total, 0, "corpus", budget.rejection_cause)
    if problem is None and is_blank(budget.rejection_cause):
        problem = f"zero accepted deliverables ({total.format()} engaged) without a " \
            "rejection cause"
    if problem is not None:
        yield Finding(problem, where=f"{_BUDGET}.cost_per_deliverable",
                      expected=f"null, {total.format()} engaged and a rejection_cause",
                      found=stated.format() if stated is not None else "null",
                      hint="with zero accepted deliverables the ratio is undefined: show the "
                      "engaged cost and why nothing was accepted, never a zero cost",
                      code="budget-consistent.zero-accepted")


def _expected_ratio(budget: BudgetReport, total: Money, accepted: int) -> str:
    if budget.unit == "decision":
        return "null (the conclusion is reported instead)"
    ratio = cost_per_deliverable(total, accepted)
    assert ratio is not None
    return f"{ratio.format()} = {total.format()} / {accepted}"


def _ratio_hint(budget: BudgetReport) -> str:
    if budget.unit == "decision":
        return "a research decision reports its conclusion (manifest conclusion.text), not an "\
            "artificial unit: set cost_per_deliverable to null"
    return "cost_per_deliverable is the rental (or the engaged total, lots + included "\
        "expenses) divided by the accepted deliverables, to the cent"


CHECKS = (
    Check(
        "budget-consistent",
        "lots priced as the catalogue or their quote, no hourly billing, expenses paid and "
        "apart, accepted corpora and the ratio verified",
        budget_consistent,
        order=60,
        reloads=True,  # a run is accepted when its checks pass, checkpoint reloads included
    ),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
