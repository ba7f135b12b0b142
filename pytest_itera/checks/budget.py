"""Budget check: budget-consistent (R4, R7).

Registered as the plugin ``itera.budget``. The arithmetic lives in
:mod:`pytest_itera.money`; this module only reads the campaign and words the
findings.

What counts as an accepted deliverable is decided *here*, not read from other
items' reports: a run counts when its outcome is ``accepted`` and
``Context.run_failures(run)`` is empty. ``run_failures`` evaluates the same
pure check functions the run's own items run (memoised per process), so the
answer is the same in the item's worker under pytest-xdist, with ``-k
budget-consistent`` alone, or in a notebook: it never depends on which other
items ran, where, or in what order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_itera.campaign import MANIFEST_FILE, PLAN_FILE, BudgetReport, Lot, Manifest, Plan
from pytest_itera.checks import Check, Context
from pytest_itera.findings import Finding
from pytest_itera.money import (
    Money,
    cost_per_deliverable,
    engaged_total,
    expenses_total,
    hourly_rate_phrase,
    ratio_matches,
    ratio_problem,
    rental_total,
    rental_total_problem,
)

_BUDGET = f"{MANIFEST_FILE} $.budget"
# Free prose about why nothing was accepted is not billing; every other
# string of a budget (offers, GPU names, expense labels) is scanned.
_PROSE_KEYS = frozenset({"rejection_cause"})


@dataclass(frozen=True)
class Excluded:
    """An accepted run that is not an accepted deliverable: the checks it failed."""

    run: str
    failures: tuple[tuple[str, str], ...]
    first_message: str

    def describe(self) -> str:
        names = ", ".join(f"{check}[{target}]" for check, target in self.failures)
        return f"{self.run} (failed {names}: {self.first_message})"


@dataclass(frozen=True)
class Count:
    """The accepted deliverables as this session verified them."""

    deliverables: tuple[str, ...]  # distinct, sorted
    counted_runs: tuple[str, ...]  # accepted runs that passed their checks
    excluded: tuple[Excluded, ...]

    @property
    def accepted(self) -> int:
        return len(self.deliverables)


def budget_consistent(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Rental, expenses, the accepted count and the cost per deliverable add up (R4, R7)."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None  # guaranteed by Check.needs
    assert man is not None
    yield from hourly_billing(ctx.campaign.plan_data, ctx.campaign.manifest_data)
    if man.budget.currency != plan.budget.currency:
        yield _currency_finding(plan, man)
        return  # every sum below would mix currencies
    lots = list(_engaged_lots(plan, man.budget))
    yield from _lot_ids(plan, man.budget)
    yield from _rental(man.budget, [lot for _, lot in lots])
    yield from _expenses_apart(plan, man.budget)
    count = count_accepted(ctx, man)
    yield from _accepted_count(man.budget, count, man)
    yield from _ratio(man.budget, [lot for _, lot in lots], count.accepted)


# --------------------------------------------------------------- hourly (R4)


def hourly_billing(plan_data: Any, manifest_data: Any) -> Iterator[Finding]:
    """Every budget string that bills by the hour ("2.50 USD/h", "hourly")."""
    for file, data in ((PLAN_FILE, plan_data), (MANIFEST_FILE, manifest_data)):
        budget = data.get("budget") if isinstance(data, dict) else None
        for path, text in _strings(budget, "$.budget"):
            phrase = hourly_rate_phrase(text)
            if phrase is not None:
                yield Finding(
                    f"hourly billing in the budget: {text!r} ({phrase!r})",
                    where=f"{file} {path}",
                    hint="lots are fixed-price for their whole duration (R4): record the lot's "
                    "price and days, never a rate per hour",
                )


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            if key not in _PROSE_KEYS:
                yield from _strings(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, f"{path}[{i}]")


# ------------------------------------------------------------- lots and rental


def _currency_finding(plan: Plan, man: Manifest) -> Finding:
    return Finding(
        "the manifest's budget is not in the plan's currency",
        where=f"{_BUDGET}.currency",
        expected=plan.budget.currency,
        found=man.budget.currency,
        hint="report the budget in the currency the lots were priced in; "
        "no invented exchange rate",
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
                          where=f"{PLAN_FILE} $.budget.lots",
                          hint="give each lot its own id; quantity says how many are rented")
    for i, lot_id in enumerate(budget.lots):
        if lot_id not in known:
            yield Finding(
                f"engaged lot {lot_id!r} is not a lot of the plan",
                where=f"{_BUDGET}.lots[{i}]",
                expected=f"one of {', '.join(map(repr, known))}",
                found=repr(lot_id),
                hint="list the ids of plan.json budget.lots that were actually rented",
            )
        elif budget.lots.index(lot_id) != i:
            yield Finding(
                f"engaged lot {lot_id!r} is listed twice",
                where=f"{_BUDGET}.lots[{i}]",
                hint="list each engaged lot once; its quantity says how many were rented",
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
    )


def _expenses_apart(plan: Plan, budget: BudgetReport) -> Iterator[Finding]:
    """External expenses stay external: never listed as included (R7)."""
    external = {e.label for e in plan.budget.external_expenses}
    external |= {e.label for e in budget.external_expenses}
    for i, expense in enumerate(budget.included_expenses):
        if expense.label in external:
            yield Finding(
                f"external expense {expense.label!r} is listed as an included expense",
                where=f"{_BUDGET}.included_expenses[{i}]",
                hint="external expenses stay apart from the rental and from what the "
                "campaign included (list it under external_expenses only)",
            )


# ------------------------------------------------------ accepted deliverables


def count_accepted(ctx: Context, man: Manifest) -> Count:
    """Distinct deliverables of the accepted runs that passed their own checks."""
    counted: dict[str, str] = {}
    excluded = []
    for run in man.runs:
        if run.outcome != "accepted":
            continue
        failures = tuple(ctx.run_failures(run.id))
        if failures:
            first = ctx.findings(*failures[0])
            excluded.append(Excluded(run.id, failures, first[0].message if first else "?"))
        else:
            counted[run.id] = run.deliverable or run.id
    return Count(
        deliverables=tuple(sorted(set(counted.values()))),
        counted_runs=tuple(counted),
        excluded=tuple(excluded),
    )


def _accepted_count(budget: BudgetReport, count: Count, man: Manifest) -> Iterator[Finding]:
    declared = budget.accepted_deliverables
    if declared == count.accepted:
        return
    yield Finding(
        f"accepted_deliverables is {declared}, but {count.accepted} distinct deliverable(s) "
        f"passed their checks in this session{_diagnosis(declared, count, man)}",
        where=f"{_BUDGET}.accepted_deliverables",
        expected=f"{count.accepted}" + (f" ({', '.join(count.deliverables)})"
                                        if count.deliverables else ""),
        found=str(declared),
        hint="count each deliverable once (run.deliverable, else the run id) among the runs "
        "accepted AND passing their checks; a stopped run is an expense, not a deliverable",
    )


def _diagnosis(declared: int, count: Count, man: Manifest) -> str:
    notes = []
    if count.excluded:
        notes.append("not counted, accepted runs that failed their own checks: "
                     + "; ".join(e.describe() for e in count.excluded))
    accepted_runs = sum(1 for r in man.runs if r.outcome == "accepted")
    if declared > count.accepted and declared in (accepted_runs, len(count.counted_runs)):
        notes.append("the declared number counts runs, but the same deliverable replayed "
                     "counts once")
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
                  hint=_ratio_hint(budget))


def _zero_accepted(budget: BudgetReport, stated: Money | None, total: Money) -> Iterator[Finding]:
    # Same rule for a corpus and a decision: nothing accepted still cost money (R7).
    problem = ratio_problem(stated, total, 0, "corpus", budget.rejection_cause)
    if problem is not None:
        yield Finding(problem, where=f"{_BUDGET}.cost_per_deliverable",
                      expected=f"null, {total.format()} engaged and a rejection_cause",
                      found=stated.format() if stated is not None else "null",
                      hint="with zero accepted deliverables the ratio is undefined: show the "
                      "engaged cost and why nothing was accepted, never a zero cost")


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
        "rental = Σ price x quantity, expenses apart, accepted count and ratio verified",
        budget_consistent,
        order=60,
        reloads=True,  # a run is accepted when its checks pass, checkpoint reloads included
    ),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
