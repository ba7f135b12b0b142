"""The expenses (R7): what was paid beside the lots, on the evidence.

Every included expense has a label and a source (:mod:`.sources`); an amount declared
estimated or derived is refused, and a tax, a percentage or a transfer cost needs its receipt
file: the expense's ``kind`` decides, without one its label's reading advises
(:mod:`pytest_itera.checks.prose.labels`). An external expense (plan or manifest) never comes
back as an included one, recognised by label, source file or reference, or amount and a word
of its label; the same receipt line is never counted twice. What the receipt itself proves
is :mod:`.receipts`'."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pytest_itera.checks.budget.lots import BUDGET, norm
from pytest_itera.checks.budget.receipts import receipt_findings, rental_as_expense
from pytest_itera.checks.budget.sources import SOURCE_SHAPE, amount_in_source, source_findings
from pytest_itera.checks.context import Context
from pytest_itera.checks.prose.labels import EXPENSE_KINDS, amount_markers, marker_text
from pytest_itera.core.campaign import (
    PLAN_FILE,
    BudgetReport,
    Expense,
    Manifest,
    Plan,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.money import (
    Money,
    placeholder_reference,
)
from pytest_itera.core.text import is_blank


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
        where = f"{BUDGET}.included_expenses[{i}]"
        what = f"included expense {expense.label!r} ({expense.amount} {budget.currency})"
        yield from _provenance(ctx, man, expense, where, what)
        yield from _made_up(expense, where, what)
        yield from _external_as_included(plan, man, expense, where, what)
        yield from rental_as_expense(ctx, expense, where, what)
        yield from receipt_findings(ctx, expense, where, what)
    for i, expense in enumerate(budget.external_expenses):
        # Kept apart from the rental, but still no invented tax rate or transfer cost (R7).
        yield from _made_up(expense, f"{BUDGET}.external_expenses[{i}]",
                            f"external expense {expense.label!r} ({expense.amount} "
                            f"{budget.currency})")
    yield from _counted_twice(budget)


def _all_expenses(plan: Plan, man: Manifest) -> Iterator[tuple[str, Expense]]:
    for i, e in enumerate(plan.budget.external_expenses):
        yield json_where(PLAN_FILE, "budget", "external_expenses", i), e
    for field_name in ("included_expenses", "external_expenses"):
        for i, e in enumerate(getattr(man.budget, field_name)):
            yield f"{BUDGET}.{field_name}[{i}]", e


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
    yield Finding(message, where=f"{where}.source", expected=SOURCE_SHAPE, found="no source",
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
    externals += [(f"{BUDGET}.external_expenses[{j}]", e)
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
    if norm(a.label) and norm(a.label) == norm(b.label):
        return "the same label"
    if a.source is not None and b.source is not None:
        if a.source.file is not None and a.source.file == b.source.file:
            return f"the same source file {a.source.file}"
        if (a.source.reference is not None and b.source.reference is not None
                and norm(a.source.reference) == norm(b.source.reference)
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
        reference = norm(e.source.reference or "")
        if not e.source.file and (not reference or placeholder_reference(e.source.reference)):
            continue  # no receipt named: nothing to tell two lines apart by
        key = (str(Money(e.amount, budget.currency)), e.source.file or "", reference)
        if key in seen:
            yield Finding(
                f"included expense {e.label!r} ({e.amount} {budget.currency}) is listed twice "
                f"(as included_expenses[{seen[key]}] too, same amount and same "
                f"{'receipt file' if e.source.file else 'order reference'}): the same receipt "
                "counted twice",
                where=f"{BUDGET}.included_expenses[{i}]",
                expected="each paid amount once", found="twice",
                hint="list each receipt line once",
                code="budget-consistent.expense-counted-twice",
            )
        else:
            seen[key] = i
