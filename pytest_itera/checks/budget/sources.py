"""What a budget's amount rests on: its source (R4, R7), a receipt or quote file listed in the
campaign, present and non-empty, and/or a reference that is not a placeholder; and that the
document states the amount recorded from it, in the budget's currency, not only as a tax.

Lots (:mod:`.lots`) and included expenses (:mod:`.expenses`) are judged by the same rules;
:func:`states_amount` is also the recorder's reading of a receipt."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

from pytest_itera.checks.budget.receipts import read_receipt
from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import (
    Source,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.money import (
    Money,
    placeholder_reference,
)

SOURCE_SHAPE = '{"file": "<a receipt or quote listed in the campaign>"} and/or ' \
    '{"reference": "<order or quote reference>"}'


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
