"""The producer's arithmetic: the manifest's budget and schedule blocks from the record.

The recorder knows the plan's lots, which runs were accepted and on which
corpus, and how long each step took; a user who adds these up by hand gets them
wrong, and the plugin then rejects the sums. Every rule used here has its home
in :mod:`pytest_itera.core.money` or :mod:`pytest_itera.core.schedule`, the modules the
checks use: the producer and the judge cannot disagree on arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pytest_itera.core import money
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Plan

__all__ = ["RunOutcome", "budget_block", "schedule_block"]


@dataclass(frozen=True)
class RunOutcome:
    """What the tally needs of one recorded run."""

    id: str
    outcome: str | None
    corpus: str | None  # the plan corpus its predictions cover
    reason: str | None = None  # a stop reason or rejection, for the rejection cause


@dataclass(frozen=True)
class _Amount:
    amount: str


def budget_block(
    plan: Plan,
    runs: Iterable[RunOutcome],
    included: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The manifest's budget: every plan lot engaged, the included expenses, one
    deliverable per distinct corpus (by content) that an accepted control or variant
    delivers, and the engaged total per deliverable, or null with the cause."""
    currency = plan.budget.currency
    included = [dict(e) for e in included]
    total = money.engaged_total(
        plan.budget.lots, currency, [_Amount(e["amount"]) for e in included])
    runs = list(runs)
    delivered = money.deliverables_per_corpus(_deliveries(plan, runs))
    ratio = money.cost_per_deliverable(total, len(delivered))
    block: dict[str, Any] = {
        "currency": currency,
        "lots": [lot.id for lot in plan.budget.lots],
        "rental_total": str(money.rental_total(plan.budget.lots, currency)),
    }
    if included:
        block["included_expenses"] = included
    block.update(unit="corpus", accepted_deliverables=len(delivered),
                 cost_per_deliverable=None if ratio is None else str(ratio))
    if ratio is None:
        block["rejection_cause"] = rejection_cause(plan, runs, total)
    return block


def _deliveries(plan: Plan, runs: list[RunOutcome]) -> list[money.Delivery]:
    out = []
    for run in runs:
        planned = plan.run(run.id)
        corpus = plan.corpus_by_id(run.corpus) if run.corpus is not None else None
        if planned is None or corpus is None:
            continue
        out.append(money.Delivery(run.id, planned.role, corpus.id, corpus.sha256,
                                  passed=run.outcome == "accepted"))
    return out


def rejection_cause(plan: Plan, runs: list[RunOutcome], total: money.Money) -> str:
    """Why nothing was delivered, from the runs' own outcomes."""
    parts = []
    for run in runs:
        planned = plan.run(run.id)
        if planned is None or planned.role not in money.DELIVERING_ROLES:
            continue
        why = f": {run.reason}" if run.reason else ""
        parts.append(f"{run.id} {run.outcome or 'not recorded'}{why}")
    listed = "; ".join(parts) or "no control or variant run was recorded"
    return (f"no control or variant run was accepted ({listed}); {total.format()} "
            "were engaged all the same")


def schedule_block(
    plan: Plan,
    observed: Mapping[str, Decimal],
    explanations: Mapping[str, str],
) -> dict[str, Any]:
    """The manifest's actual schedule: observed hours per step (timed, or 0 h for a step
    that ``explanations`` says did not run), the hours the lots reserve (their windows' union), the
    observed makespan with the plan's dependencies, and one deviation per explanation."""
    # As written: a step that ran is never written as 0 h ("did not run"), however short.
    observed = {k: Decimal(str(_number(_ran(v)))) for k, v in observed.items()}
    steps = [s for s in plan.schedule.steps if s.id in observed]
    timeline = sched.makespan(sched.as_observed(plan.schedule.steps, observed))
    return {
        "reserved_hours": _reserved(plan),
        "observed_hours": _number(timeline.makespan),
        "steps": [{"id": s.id, "observed_hours": _number(observed[s.id])} for s in steps],
        "deviations": [{"step": step, "explanation": text}
                       for step, text in explanations.items()],
    }


def _reserved(plan: Plan) -> int | float:
    """The time reserved: the hours the plan's lots reserve for its schedule
    (:func:`pytest_itera.core.schedule.reserved_hours`, the figure plan-vs-actual accepts:
    lots that overlap count the overlap once, never as one lot's 72 h; a gap between two
    lots is not reserved), the plan's window without lots."""
    window = _number(sched.as_hours(plan.schedule.window_hours))
    lots = sched.reserved_hours(plan.budget.lots, plan.schedule.steps)
    return _number(lots) if lots else window


def unexplained(
    plan: Plan, observed: Mapping[str, Decimal], explained: Iterable[str],
    tolerance: Decimal | None = None,
) -> list[str]:
    """The steps plan-vs-actual will want explained: short, missing or off by more than
    the plan's tolerance (default 10 %)."""
    done = set(explained)
    steps = plan.schedule.steps
    tol = sched.bounded_tolerance(
        plan.schedule.deviation_tolerance if plan.schedule.deviation_tolerance is not None
        else (tolerance if tolerance is not None else sched.DEFAULT_TOLERANCE))
    need = [s.step for s in sched.short_steps(steps, observed)]
    need += [d.step for d in sched.deviations(steps, observed, tol)]
    return [s for s in dict.fromkeys(need) if s not in done]


_LEAST = Decimal("0.0001")  # the least hours written (under a second: 0.36 s)


def _ran(hours: Decimal) -> Decimal:
    """Hours that ran, at least the least written (0 stays 0: it did not run)."""
    return max(hours, _LEAST) if hours > 0 else hours


def _number(value: Decimal) -> int | float:
    """Hours as a JSON number (4 decimals: under a second)."""
    rounded = round(value, 4)
    return int(rounded) if rounded == rounded.to_integral_value() else float(rounded)
