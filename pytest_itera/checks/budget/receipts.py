"""Receipts say what they prove (budget-consistent, R7): read, addressed, dated, issued by
the provider the expense names, and never the rental again.

- **Reading.** A receipt is read as UTF-8 text (at most 1 MiB), or, when it is a PDF, by its
  text layer through pypdf (pure Python, maintained by the py-pdf organisation; the first
  :data:`PDF_PAGES` pages, files up to :data:`PDF_MAX` bytes). A receipt that cannot be read
  (a scan without a text layer, an encrypted PDF, another binary format) is a finding that
  says so: what it proves cannot be checked.
- **Its recorded facts decide.** A receipt source may record ``issued_on`` (the receipt's
  ISO date), ``issued_by`` and ``amount_as_written`` (as the receipt writes them). Each text
  fact occurs in the receipt's text (whitespace and case aside), else a failing finding names
  the field, the value and the file (``receipt-issued-by``, ``receipt-amount-as-written``);
  ``issued_on`` falls between the plan's ``frozen_at`` and the manifest's ``closed_at``,
  give or take :data:`GRACE` (7 days), in whatever language the receipt is written
  (``receipt-issued-on``).
- **Its text advises** (checks/prose/receipts.py; advisories, failing only under
  ``--itera-strict-text``), each reading skipped where its fact is recorded: the issuer (a
  ``Seller:``/``Vendeur :``/``Verkäufer:``/``Vendedor:`` … line, else the letterhead) is the
  provider the label names (``receipt-issuer``; "AWS" is "Amazon Web Services EMEA SARL");
  the receipt names the campaign or that provider (``receipt-addressee``) and no other
  campaign as its buyer (``receipt-other-campaign``); the date its text states (EN, FR, DE,
  ES month names, numeric and ISO dates, ``2026年12月3日``) is in the window, and a receipt
  whose date cannot be read says "cannot prove the receipt's date from its text; record
  issued_on" (``receipt-date``).
- **Of its order.** An expense recording both a receipt file and an order reference has a
  receipt that states that reference (case and punctuation ignored: ``F2026-1207`` is
  stated by ``N° F-2026-1207``).
- **The rental is not an expense.** An included expense with the amount of an engaged lot
  (its price, or price x quantity) and the lot's provider (the catalogue's, or the lot's
  offer) in its label or its receipt, or whose receipt is the lot's own source file, is
  the rental counted twice; one naming the lot's provider and GPU whose amount is a
  catalogue offer's price for other whole hours (47.14 / 72 h x 24 h = 15.71: "one more
  day") is rental time billed by the hour.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from pytest_itera.checks.context import Context
from pytest_itera.checks.prose.receipts import (
    addressed_campaign,
    expense_provider,
    issue_dates,
    letterhead,
    names,
    receipt_dates,
    receipt_issuer,
    same_provider,
    words,
)
from pytest_itera.core.campaign import Expense, Lot, Manifest, Plan, Source
from pytest_itera.core.findings import Finding
from pytest_itera.core.money import Money, catalogue_offer, prorata_reading

GRACE = timedelta(days=7)
TEXT_MAX = 1 << 20  # a receipt read as text: at most 1 MiB
PDF_MAX = 32 << 20  # a PDF receipt: at most 32 MiB
PDF_PAGES = 5  # a receipt's text is on its first pages


@dataclass(frozen=True)
class Receipt:
    """A receipt's text, or why it cannot be read (``text`` None and ``problem`` set)."""

    text: str | None
    problem: str | None = None


def read_receipt(ctx: Context, relpath: str) -> Receipt | None:
    """The text of a listed receipt or quote (memoised), or None when the file itself is
    refused (missing, outside, empty: the source check says so)."""
    return ctx.memo(f"receipt:{relpath}", lambda: _read(ctx, relpath))


def _read(ctx: Context, relpath: str) -> Receipt | None:
    resolved = ctx.regular_file(relpath)
    if isinstance(resolved, str):
        return None
    try:
        with open(resolved, "rb") as fh:
            head = fh.read(TEXT_MAX + 1)
    except OSError as exc:
        return Receipt(None, f"cannot be read ({exc.strerror})")
    if not head:
        return None
    text = _as_text(head)
    if head.lstrip().startswith(b"%PDF") and (text is None or "stream" in text):
        return _pdf_text(Path(resolved))
    if text is None:
        return Receipt(None, "is neither text nor a PDF (a scanned image?)" if len(head) <= TEXT_MAX
                       else "is over 1 MiB and not a PDF")
    return Receipt(text)


def _as_text(data: bytes) -> str | None:
    if len(data) > TEXT_MAX or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _pdf_text(path: Path) -> Receipt:
    try:
        from pypdf import PdfReader
    except ImportError:
        return Receipt(None, "is a PDF and pypdf, which reads its text, is not installed "
                       "(pip install pypdf)")
    try:
        if path.stat().st_size > PDF_MAX:
            return Receipt(None, f"is a PDF over {PDF_MAX >> 20} MiB")
        reader = PdfReader(io.BytesIO(path.read_bytes()))
        if reader.is_encrypted:
            return Receipt(None, "is an encrypted PDF: its text cannot be read")
        text = "\n".join(page.extract_text() or "" for page in reader.pages[:PDF_PAGES])
    except Exception as exc:
        return Receipt(None, f"is a PDF whose text cannot be read ({type(exc).__name__}: "
                       f"{str(exc)[:80]})")
    if not text.strip():
        return Receipt(None, "is a PDF without a text layer (a scanned image?)")
    return Receipt(text)


# ------------------------------------------------------------- what a receipt proves


def receipt_findings(ctx: Context, expense: Expense, where: str,
                     what: str) -> Iterator[Finding]:
    """An included expense's receipt is readable and states the facts its source records
    (deciding); what its text is read to say (issuer, addressee, date) advises, each
    reading skipped when the matching structured field is recorded."""
    plan, man = ctx.documents()
    source = expense.source
    if source is None:
        return
    yield from _issued_on(plan, man, source, where, what)
    if source.file is None:
        return
    file = source.file
    receipt = read_receipt(ctx, file)
    if receipt is None:
        return
    if receipt.text is None:
        yield Finding(
            f"{what}: its receipt {file} {receipt.problem}, so what it proves (amount, "
            "campaign or provider, date) cannot be checked", where=f"{where}.source.file",
            expected="a receipt whose text can be read (a text file, or a PDF with a text "
            "layer)", found=receipt.problem, hint="ship the provider's receipt as text or as a "
            "PDF with its text (the one the provider sends, not a scan)",
            code="budget-consistent.receipt-unreadable")
        return
    text = receipt.text
    yield from _stated(file, what, where, source, text)
    yield from _referenced(file, what, where, source.reference, text)
    provider = expense_provider(expense.label)
    issuer = receipt_issuer(text)
    if source.issued_by is None:
        yield from _issuer(file, what, where, provider, issuer, expense.label, text)
    yield from _addressed(file, what, where, plan, provider, issuer, text,
                          issued_by=source.issued_by)
    if source.issued_on is None:
        yield from _dated(file, what, where, plan, man, text)


# The structured facts a receipt source records: each occurs in the receipt's text.
_STATED = (("issued_by", "issued-by", "the issuer"),
           ("amount_as_written", "amount-as-written", "the amount as written"))


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def _stated(file: str, what: str, where: str, source: Source,
            text: str) -> Iterator[Finding]:
    flat = _flat(text)
    for field, kind, name in _STATED:
        value = getattr(source, field)
        if value is None or _flat(value) in flat:
            continue
        yield Finding(
            f"{what}: its receipt {file} does not state its source.{field} {value!r}",
            where=f"{where}.source.{field}", expected=f"{value!r} in {file} ({name}, "
            "whitespace and case aside)", found="not stated",
            hint=f"record {name} exactly as the receipt writes it, or attach the receipt "
            "that states it", code=f"budget-consistent.receipt-{kind}")


def _window(plan: Plan, man: Manifest) -> tuple[date, date, str] | None:
    if plan.frozen_at is None:
        return None  # a draft: the manifest item says so
    start = (plan.frozen_at - GRACE).date()
    end = (man.closed_at + GRACE).date()
    return start, end, f"{plan.frozen_at.date()} (frozen_at) to {man.closed_at.date()} " \
        f"(closed_at), give or take {GRACE.days} days"


def _issued_on(plan: Plan, man: Manifest, source: Source, where: str,
               what: str) -> Iterator[Finding]:
    """The recorded ``issued_on`` (ISO) falls in the campaign's window: it decides, in
    whatever language the receipt is written."""
    if source.issued_on is None:
        return
    window = _window(plan, man)
    try:
        issued = date.fromisoformat(source.issued_on)
    except ValueError:
        yield Finding(
            f"{what}: its source.issued_on {source.issued_on!r} is not a calendar date",
            where=f"{where}.source.issued_on", expected="an ISO date (2026-12-03)",
            found=repr(source.issued_on), hint="record the receipt's date as YYYY-MM-DD",
            code="budget-consistent.receipt-issued-on")
        return
    if window is None or window[0] <= issued <= window[1]:
        return
    yield Finding(
        f"{what}: its receipt is issued on {issued} (source.issued_on), outside the "
        "campaign's window", where=f"{where}.source.issued_on",
        expected=f"a date from {window[2]}", found=str(issued),
        hint="attach the receipt of what this campaign paid: it is dated between the plan's "
        "freezing and the closure (an older or later receipt is another purchase)",
        code="budget-consistent.receipt-issued-on")


def _referenced(file: str, what: str, where: str, reference: str | None,
                text: str) -> Iterator[Finding]:
    """An expense naming both a receipt file and an order reference: the receipt is the
    document of that order, so it states the reference (case and punctuation ignored)."""
    if reference is None or not words(reference) or states_reference(text, reference):
        return
    yield Finding(
        f"{what}: its receipt {file} does not state its source reference {reference!r}",
        where=f"{where}.source.reference", expected=f"{reference!r} in {file}",
        found="not stated",
        hint="attach the receipt of the order the reference names (or record the reference "
        "the receipt states): a receipt and a reference that disagree prove two purchases",
        code="budget-consistent.receipt-reference")


def states_reference(text: str, reference: str) -> bool:
    """Whether ``text`` states ``reference``, case and punctuation ignored: "F2026-1207",
    "F-2026-1207" and "f 2026/1207" are one reference; its letters and digits stay whole
    (the one inside "XF-2026-12070" is another)."""
    chars = [c for c in reference.casefold() if c.isalnum()]
    if not chars:
        return False
    between = r"(?:[^\w\n]|_){0,3}"
    pattern = r"(?<![^\W_])" + between.join(map(re.escape, chars)) + r"(?![^\W_])"
    return re.search(pattern, text.casefold()) is not None


_RECORD = "; record source.issued_by (the issuer as the receipt writes it) to decide"


def _issuer(file: str, what: str, where: str, provider: str | None, issuer: str | None,
            label: str, text: str) -> Iterator[Finding]:
    """Advisory: the issuer line (or, without one, the letterhead) names another company
    than the label's provider."""
    headed = issuer if issuer is not None else letterhead(text)
    if provider is None or headed is None or same_provider(provider, headed) \
            or names(label, headed):
        return
    if issuer is not None and names(text, provider):
        return  # a reseller's receipt naming the provider, or a label's category word
    if issuer is None and (names(text, provider) or same_provider(provider, text)):
        return  # the letterhead is a logo line; the provider is named below it
    line = "issued by" if issuer is not None else "headed by"
    yield Finding(
        f"{what}: its receipt {file} is {line} {headed!r}, another provider than the "
        f"expense names ({provider!r})", where=f"{where}.source.file",
        expected=f"a receipt issued by {provider!r}", found=f"{line} {headed!r}",
        hint="attach the receipt of this expense, issued by the provider it was paid to (or "
        "name that provider in the label)" + _RECORD,
        code="budget-consistent.receipt-issuer", advisory=True)


def _addressed(file: str, what: str, where: str, plan: Plan, provider: str | None,
               issuer: str | None, text: str, *, issued_by: str | None) -> Iterator[Finding]:
    """Advisory: the receipt's buyer line names another campaign, or the receipt names
    neither the campaign nor the label's provider (not read when issued_by is recorded)."""
    other = addressed_campaign(text)
    if other is not None and not names(text, plan.campaign) \
            and any(p is not None and names(text, p) for p in (provider, issued_by)):
        yield Finding(
            f"{what}: its receipt {file} is addressed to campaign {other!r}, not "
            f"{plan.campaign!r}", where=f"{where}.source.file",
            expected=f"campaign {plan.campaign!r} (or no campaign) as the buyer",
            found=f"campaign {other!r}",
            hint="attach the receipt of this campaign's expense; another campaign's receipt "
            "is another campaign's cost", code="budget-consistent.receipt-other-campaign",
            advisory=True)
        return
    if issued_by is not None:
        return
    named = [n for n in (plan.campaign, provider) if n]
    if any(names(text, n) for n in named) or (
            provider is not None and same_provider(provider, text)):
        return
    if provider is not None and issuer is not None and same_provider(provider, issuer):
        return
    yield Finding(
        f"{what}: its receipt {file} names neither the campaign {plan.campaign!r} nor "
        + (f"the provider {provider!r}" if provider else
           "a provider the expense names (its label names none: write '<provider>: <item>')")
        + (f" (it is issued by {issuer!r})" if issuer else ""),
        where=f"{where}.source.file",
        expected=" or ".join(map(repr, named)) + " in the receipt",
        found="neither" if not issuer else f"issued by {issuer!r}, addressed to neither",
        hint="attach the receipt of this campaign's expense: it names the campaign (its id, "
        "as the buyer's reference) or the provider the label names" + _RECORD,
        code="budget-consistent.receipt-addressee", advisory=True)


def _dated(file: str, what: str, where: str, plan: Plan, man: Manifest,
           text: str) -> Iterator[Finding]:
    """Advisory: the date the text is read to state falls outside the window, or no date
    can be read."""
    window = _window(plan, man)
    if window is None:
        return
    start, end, span = window
    labelled = issue_dates(text)
    dates = [d for _, d in labelled] or receipt_dates(text)
    if any(start <= d <= end for d in dates):
        return
    if not dates:
        yield Finding(
            f"{what}: cannot prove the receipt's date from its text ({file}); record "
            "issued_on", where=f"{where}.source.file", expected=f"a date from {span}",
            found="no date read", hint="record source.issued_on, the receipt's date as "
            "YYYY-MM-DD (it is judged against the window in whatever language the receipt "
            "is written)", code="budget-consistent.receipt-date", advisory=True)
        return
    shown = ", ".join(str(d) for d in dates[:4]) + (", …" if len(dates) > 4 else "")
    lines = ", ".join(str(n) for n, _ in labelled[:4])
    told = labelled and set(dates) != set(receipt_dates(text))  # other dates it prints
    dated = f"is dated {shown}" + (f" (its issue date, line {lines})" if told else "")
    yield Finding(
        f"{what}: its receipt {file} {dated}, outside the campaign's window",
        where=f"{where}.source.file", expected=f"a date from {span}", found=shown,
        hint="attach the receipt of what this campaign paid: it is dated between the plan's "
        "freezing and the closure (an older or later receipt is another purchase); record "
        "source.issued_on to decide", code="budget-consistent.receipt-date", advisory=True)


# ------------------------------------------------------------- the rental, again


def rental_as_expense(ctx: Context, expense: Expense, where: str,
                      what: str) -> Iterator[Finding]:
    """An included expense that is an engaged lot: the rental listed twice."""
    plan, man = ctx.documents()
    engaged = {lot.id: lot for lot in plan.budget.lots if lot.id in man.budget.lots}
    for lot in engaged.values():
        reason = _is_lot(ctx, expense, lot)
        if reason is None:
            continue
        yield Finding(
            f"{what} is the rental lot {lot.id!r} ({lot.offer}, {lot.price} x {lot.quantity} "
            f"{man.budget.currency}): {reason}", where=where,
            expected="the lot in budget.lots only (the rental_total holds it)",
            found="listed again as an included expense",
            hint="a rental lot is paid once, as the rental: remove it from included_expenses "
            "(included expenses are what the campaign paid beside the lots)",
            code="budget-consistent.rental-as-expense")
        return
    for lot in engaged.values():
        reading = _rental_hours(ctx, expense, lot, man.budget.currency)
        if reading is None:
            continue
        yield Finding(
            f"{what} is rental time of lot {lot.id!r}'s provider billed by the hour: {reading}",
            where=f"{where}.amount",
            expected="rental time as whole catalogue lots, engaged in budget.lots",
            found=f"{expense.amount} {man.budget.currency}, a pro-rata",
            hint="lots are fixed-price for their duration (R4): more time is another lot (a "
            "longer one, or a second), engaged and paid whole; never a prorated day or hour",
            code="budget-consistent.expense-prorata")
        return


def _rental_hours(ctx: Context, expense: Expense, lot: Lot, currency: str) -> str | None:
    """How an included expense naming a lot's provider and GPU is a pro-rata of a same-GPU
    catalogue offer for whole hours ("15.71 USD = 47.14 USD / 72 h x 24 h, a pro-rata of
    the 3-day lot (47.14 USD)"), or None."""
    catalogue = ctx.catalogue()
    if isinstance(catalogue, str):
        return None
    file = expense.source.file if expense.source is not None else None
    receipt = read_receipt(ctx, file) if file is not None else None
    texts = [expense.label, *([receipt.text] if receipt is not None and receipt.text else [])]
    if not any(names(t, lot.gpu) for t in texts) or not any(
            names(t, name) for t in texts for name in _lot_provider(ctx, lot)):
        return None
    offers = [o for o in catalogue.offers if words(o.gpu) == words(lot.gpu)]
    price = Money(expense.amount, currency)
    longest = max((o.hours for o in offers), default=0)
    for hours in range(1, longest):
        reading = prorata_reading(price, hours, offers)
        if reading is not None:
            return reading
    return None


def _is_lot(ctx: Context, expense: Expense, lot: Lot) -> str | None:
    file = expense.source.file if expense.source is not None else None
    if file is not None and lot.source is not None and lot.source.file == file:
        return f"its receipt {file} is the lot's own source"
    amount = Money(expense.amount, "XXX")
    if amount not in (Money(lot.price, "XXX"), Money(lot.price, "XXX") * lot.quantity):
        return None
    receipt = read_receipt(ctx, file) if file is not None else None
    text = receipt.text if receipt is not None else None
    for name in _lot_provider(ctx, lot):
        if names(expense.label, name):
            return f"the same amount ({expense.amount}) and provider ({name!r}, in its label)"
        if text is not None and names(text, name):
            return f"the same amount ({expense.amount}), and its receipt {file} is {name!r}'s " \
                "invoice for the lot"
    return None


def _lot_provider(ctx: Context, lot: Lot) -> list[str]:
    """The names a lot's provider goes by: the catalogue's provider for a catalogue lot, and
    the lot's offer name."""
    names = [lot.offer]
    catalogue = ctx.catalogue()
    if not isinstance(catalogue, str) and catalogue_offer(
            catalogue, lot.offer, lot.gpu, lot.days, quoted=lot.source is not None) is not None:
        names.insert(0, catalogue.provider)
    return names
