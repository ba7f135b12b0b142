"""Hypothesis strategies for property-testing budget and schedule code.

Importing this module imports Hypothesis, so the plugin never imports it;
users and our own tests do::

    from hypothesis import given
    from pytest_itera import strategies as its
    from pytest_itera.core.money import rental_total

    @given(its.lots(currency="USD"))
    def test_total_is_exact(lots):
        assert rental_total(lots, "USD").amount == sum(
            Decimal(lot.price) * lot.quantity for lot in lots
        )

Every strategy yields values the contract accepts: money as decimal strings
with at most two decimals, ids matching the id pattern, schedules whose
dependencies only point at earlier steps (so they never deadlock), and
:func:`plans` whose JSON validates against ``plan.schema.json`` and whose
schedule and budget are self-consistent (a baseline to mutate).

Generated ``itera-plan/2`` plans obey the schedule rules the checks enforce: every
training step names its run and one run's machine steps are chained (never on two
resources at once); each lot has GPUs for the distinct GPU resources its steps use
(``gpus_per_lot x quantity``); retrieval comes after every output and checkpoint step
and restore after save, through ``after``; every required kind has positive hours.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from hypothesis import strategies as st

from pytest_itera.core.campaign import RESUME_PARTS, Lot, PlannedSchedule, Step
from pytest_itera.core.money import HOURS_PER_DAY, Amount, Catalogue, Money, Offer
from pytest_itera.core.schedule import (
    HUMAN,
    NETWORK,
    REQUIRED_KINDS,
    RETRIEVED_KINDS,
    is_gpu,
    is_off_machine,
    lot_of,
    makespan,
)

__all__ = [
    "CURRENCIES",
    "RUN_IDS",
    "STEP_KINDS",
    "catalogues",
    "currencies",
    "hours",
    "lot_dicts",
    "lots",
    "money",
    "money_amounts",
    "money_strings",
    "offers",
    "planned_schedules",
    "plans",
    "schedule_dicts",
    "step_lists",
]

CURRENCIES = ("USD", "EUR", "GBP", "CHF", "JPY")
STEP_KINDS = (
    "preparation", "setup", "data_load", "training", "validation", "evaluation",
    "checkpoint_save", "checkpoint_restore", "output", "retrieval", "decision", "other",
)
GPUS = ("RTX 4090", "B200", "H100", "L40S")
_RESOURCES = ("gpu0", "gpu1", "cpu", HUMAN)
_MACHINE = ("gpu0", "gpu1", "cpu")
RUN_IDS = ("control", "data-check", "resume-check")
_CENT = Decimal("0.01")


def currencies() -> st.SearchStrategy[str]:
    """Three-letter currency codes."""
    return st.sampled_from(CURRENCIES)


def money_amounts(
    min_value: Amount = 0, max_value: Amount = "99999.99"
) -> st.SearchStrategy[Decimal]:
    """Non-negative Decimals with exactly two decimals (cents), bounds included."""
    low = int(Money(min_value, "USD").amount * 100)
    high = int(Money(max_value, "USD").amount * 100)
    return st.integers(low, high).map(lambda cents: Decimal(cents).scaleb(-2))


def money(
    currency: str | None = None, min_value: Amount = 0, max_value: Amount = "99999.99"
) -> st.SearchStrategy[Money]:
    """:class:`Money` of ``currency`` (any of :data:`CURRENCIES` when None)."""
    codes = st.just(currency) if currency is not None else currencies()
    return st.builds(Money, money_amounts(min_value, max_value), codes)


def money_strings(
    min_value: Amount = 0, max_value: Amount = "99999.99"
) -> st.SearchStrategy[str]:
    """Decimal strings as a plan writes them: "47.14", "110", "110.0", "0.5"."""
    return st.tuples(money_amounts(min_value, max_value), st.sampled_from((2, 1, 0))).map(
        lambda pair: _money_text(*pair)
    )


def _money_text(amount: Decimal, places: int) -> str:
    # Fewer decimals only where no cent is lost: "110.00" may be "110" or "110.0".
    trimmed = amount.quantize(Decimal(1).scaleb(-places)) if places < 2 else amount
    return f"{trimmed:f}" if trimmed == amount else f"{amount:f}"


def hours(max_hours: int = 200) -> st.SearchStrategy[Decimal]:
    """Hours with at most two decimals, 0 to ``max_hours``."""
    return st.integers(0, max_hours * 100).map(lambda c: Decimal(c).scaleb(-2).normalize())


def offers(
    currency: str = "USD", gpu: str | None = None, max_days: int = 60
) -> st.SearchStrategy[Offer]:
    """Catalogue offers: a fixed price for 1..``max_days`` days, 1..8 GPUs per lot."""
    return st.builds(
        _offer,
        gpu=st.just(gpu) if gpu is not None else st.sampled_from(GPUS),
        gpus_per_lot=st.integers(1, 8),
        days=st.integers(1, max_days),
        price=money(currency, max_value="9999.99"),
    )


def _offer(gpu: str, gpus_per_lot: int, days: int, price: Money) -> Offer:
    return Offer(f"{gpu}, {days} days", gpu, gpus_per_lot, days, price)


def catalogues(currency: str | None = None, max_offers: int = 6) -> st.SearchStrategy[Catalogue]:
    """Catalogues with distinct (GPU, days) offers in one currency."""
    return (st.just(currency) if currency else currencies()).flatmap(
        lambda code: st.lists(
            offers(code), min_size=1, max_size=max_offers, unique_by=lambda o: (o.gpu, o.days)
        ).map(lambda found: Catalogue("Example", code, tuple(found)))
    )


@st.composite
def lot_dicts(draw: st.DrawFn, lot_id: str = "lot-0", max_quantity: int = 4) -> dict[str, Any]:
    """One ``budget.lots`` entry of plan.json (price as a decimal string)."""
    gpu = draw(st.sampled_from(GPUS))
    days = draw(st.integers(1, 60))
    return {
        "id": lot_id,
        "offer": f"{gpu}, {days} days",
        "gpu": gpu,
        "gpus_per_lot": draw(st.integers(1, 8)),
        "days": days,
        "price": draw(money_strings(max_value="9999.99")),
        "quantity": draw(st.integers(1, max_quantity)),
    }


def lots(min_size: int = 1, max_size: int = 5) -> st.SearchStrategy[list[Lot]]:
    """Lists of :class:`pytest_itera.core.campaign.Lot` with distinct ids."""
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(*(lot_dicts(f"lot-{i}") for i in range(n)))
    ).map(lambda found: [Lot(**d) for d in found])


@st.composite
def step_lists(
    draw: st.DrawFn,
    min_size: int = 1,
    max_size: int = 12,
    resources: Sequence[str] = _RESOURCES,
    lot_ids: Sequence[str] = (),
    max_hours: int = 48,
    run_ids: Sequence[str] = (),
) -> list[Step]:
    """Steps whose ``after`` only names earlier steps, so the schedule always computes.

    Machine steps name one of ``lot_ids`` when given; human steps name none. With
    ``run_ids``, every training step (and some others) names one of them; nothing
    chains one run's steps, so they may overlap (see :func:`schedule_dicts` for
    schedules that obey the rules).
    """
    count = draw(st.integers(min_size, max_size))
    return [draw(_step(f"step-{i}", i, resources, lot_ids, max_hours, run_ids=run_ids))
            for i in range(count)]


@st.composite
def _step(
    draw: st.DrawFn,
    step_id: str,
    index: int,
    resources: Sequence[str],
    lot_ids: Sequence[str],
    max_hours: int,
    kind: str | None = None,
    *,
    run_ids: Sequence[str] = (),
    min_hours: Decimal = Decimal(0),
) -> Step:
    resource = draw(st.sampled_from(resources))
    earlier = [f"step-{i}" for i in range(index)]
    after = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
    lot = draw(st.sampled_from(lot_ids)) if lot_ids and resource != HUMAN else None
    kind = kind or draw(st.sampled_from(STEP_KINDS))
    run = None
    if run_ids and (kind == "training" or draw(st.booleans())):
        run = draw(st.sampled_from(run_ids))
    return Step(
        id=step_id,
        kind=kind,
        resource=resource,
        hours=float(max(draw(hours(max_hours)), min_hours)),
        after=tuple(after),
        lot=lot,
        run=run,
    )


@st.composite
def schedule_dicts(
    draw: st.DrawFn,
    lot_ids: Sequence[str] = ("lot-0",),
    max_extra_steps: int = 6,
    run_ids: Sequence[str] = RUN_IDS,
) -> dict[str, Any]:
    """A plan's ``schedule``: every required kind, window >= makespan, stated hours exact.

    One step per required kind but retrieval comes first, chained in that order (setup
    by a human, the others on a machine of one of ``lot_ids``, each of positive hours),
    then extra steps of any kind, then the retrieval, after every output and checkpoint
    step. Every step depends only on earlier ones; a restore comes after the first save;
    every training step names one of ``run_ids``, and each run's machine steps are
    chained in listed order (one run is never on two resources at once).
    """
    required = [k for k in REQUIRED_KINDS if k != "retrieval"]
    steps = []
    for i, kind in enumerate(required):
        step = draw(_step(f"step-{i}", i, _required_resources(kind), lot_ids, 24, kind,
                          run_ids=run_ids, min_hours=Decimal("0.01")))
        chain = (f"step-{i - 1}",) if i else ()
        steps.append(dataclasses.replace(step, after=_union(step.after, chain)))
    save = f"step-{required.index('checkpoint_save')}"
    extra = draw(st.integers(0, max_extra_steps))
    for n in range(len(steps), len(steps) + extra):
        step = draw(_step(f"step-{n}", n, _RESOURCES, lot_ids, 24, run_ids=run_ids))
        if step.kind == "checkpoint_restore":
            step = dataclasses.replace(step, after=_union(step.after, (save,)))
        steps.append(step)
    last = len(steps)
    retrieval = draw(_step(f"step-{last}", last, (*_MACHINE, NETWORK), lot_ids, 24,
                           "retrieval", run_ids=run_ids, min_hours=Decimal("0.01")))
    fetched = tuple(s.id for s in steps if s.kind in RETRIEVED_KINDS)
    steps.append(dataclasses.replace(retrieval, after=_union(retrieval.after, fetched)))
    steps = _chain_runs(steps)
    timeline = makespan(steps)
    window = timeline.makespan + draw(hours(48))
    if window == 0:
        window = Decimal(1)  # the window is strictly positive
    return {
        "window_hours": _number(window),
        "sequential_hours": _number(timeline.makespan),
        "uncommitted_hours": _number(window - timeline.makespan),
        "deviation_tolerance": draw(st.sampled_from((0.05, 0.1, 0.2, 0.5))),
        "steps": [_step_dict(s) for s in steps],
    }


def _union(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


def _chain_runs(steps: list[Step]) -> list[Step]:
    """Each run's machine steps after the previous one of the run (listed order)."""
    last: dict[str, str] = {}
    chained = []
    for step in steps:
        run = step.run
        if run is not None and not is_off_machine(step.resource):
            if run in last:
                step = dataclasses.replace(step, after=_union(step.after, (last[run],)))
            last[run] = step.id
        chained.append(step)
    return chained


def _required_resources(kind: str) -> Sequence[str]:
    return (HUMAN,) if kind == "setup" else ("gpu0", "gpu1", "cpu")


def _step_dict(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": step.id, "kind": step.kind, "resource": step.resource, "hours": step.hours,
    }
    if step.after:
        out["after"] = list(step.after)
    if step.lot is not None:
        out["lot"] = step.lot
    if step.run is not None:
        out["run"] = step.run
    return out


def _number(value: Decimal) -> int | float:
    # JSON numbers whose shortest repr is the exact decimal (hours have <= 2 decimals).
    return int(value) if value == value.to_integral_value() else float(value)


def planned_schedules(
    lot_ids: Sequence[str] = ("lot-0",), run_ids: Sequence[str] = RUN_IDS
) -> st.SearchStrategy[PlannedSchedule]:
    """:func:`schedule_dicts` as :class:`pytest_itera.core.campaign.PlannedSchedule`."""
    return schedule_dicts(lot_ids, run_ids=run_ids).map(
        lambda d: PlannedSchedule(
            window_hours=float(d["window_hours"]),
            steps=tuple(_step_from(s) for s in d["steps"]),
            sequential_hours=float(d["sequential_hours"]),
            uncommitted_hours=float(d["uncommitted_hours"]),
            deviation_tolerance=d["deviation_tolerance"],
        )
    )


def _step_from(data: dict[str, Any]) -> Step:
    return Step(
        id=data["id"], kind=data["kind"], resource=data["resource"],
        hours=float(data["hours"]), after=tuple(data.get("after", ())), lot=data.get("lot"),
        run=data.get("run"),
    )


@st.composite
def plans(
    draw: st.DrawFn, max_lots: int = 3, max_runs: int = 4, version: int = 2
) -> dict[str, Any]:
    """Whole plan.json documents (``itera-plan/2``, or ``/1`` with ``version=1``):
    schema-valid and self-consistent.

    The schedule has every required kind and fits its window (see
    :func:`schedule_dicts` for the order and run rules it obeys); each lot lasts long
    enough for its steps and has a GPU for each GPU resource its steps use; the
    checkpoint interval plus the save cost stays within the tolerable loss. ``/2``
    plans name one or two corpora, machine-readable stop rules and each lot's quote
    (``source``). Mutate one field to test a check.
    """
    runs = draw(_runs(max_runs))
    lot_ids = [f"lot-{i}" for i in range(draw(st.integers(1, max_lots)))]
    schedule = draw(schedule_dicts(lot_ids, run_ids=[r["id"] for r in runs]))
    steps = [_step_from(s) for s in schedule["steps"]]
    spans = makespan(steps)
    budget_lots = [draw(lot_dicts(lot_id)) for lot_id in lot_ids]
    lots = [Lot(**lot) for lot in budget_lots]
    for lot in budget_lots:
        need = math.ceil(spans.lot_hours(lot["id"]) / HOURS_PER_DAY)
        lot["days"] = max(lot["days"], need, 1)
        lot["offer"] = f"{lot['gpu']}, {lot['days']} days"
        gpus = len({s.resource for s in steps
                    if is_gpu(s.resource) and lot_of(s, lots) == lot["id"]})
        lot["gpus_per_lot"] = max(lot["gpus_per_lot"], math.ceil(gpus / lot["quantity"]))
    corpus = {
        "id": "corpus-1", "path": "data/corpus.jsonl", "sha256": draw(_sha256()),
        "id_field": "id", "examples": draw(st.integers(1, 10_000)),
    }
    plan: dict[str, Any] = {
        "format": f"itera-plan/{version}",
        "campaign": draw(st.sampled_from(("camp-1", "lora-ablation", "ft.v2"))),
        "frozen_at": draw(_timestamps()),
        "question": "Does the variant beat the control on the frozen corpus?",
        "decision": {
            "metric": "accuracy",
            "direction": draw(st.sampled_from(("higher", "lower"))),
            "threshold": draw(st.floats(0, 1, allow_nan=False)),
        },
        "runs": runs,
        "stop_rules": [{"id": "nan-loss", "kind": "non_finite_loss"}],
        "checkpoint_policy": draw(_checkpoint_policies()),
        "schedule": schedule,
        "budget": {"currency": draw(currencies()), "lots": budget_lots},
    }
    if version < 2:
        plan["corpus"] = corpus
        return plan
    plan["stop_rules"][0]["parameters"] = {"series": "loss"}
    corpora = [corpus]
    if draw(st.booleans()):
        corpora.append({**corpus, "id": "corpus-2", "path": "data/corpus-2.jsonl",
                        "sha256": draw(_sha256().filter(lambda h: h != corpus["sha256"]))})
    plan["corpora"] = corpora
    for run in runs:
        if run["role"] in ("control", "variant"):
            run["corpus"] = draw(st.sampled_from([c["id"] for c in corpora]))
    for lot in budget_lots:
        lot["source"] = {"reference": f"Q-{lot['id']}"}
    return plan


def _timestamps() -> st.SearchStrategy[str]:
    moments = st.datetimes(datetime(2024, 1, 1), datetime(2030, 12, 31))
    return moments.map(lambda d: d.replace(microsecond=0, tzinfo=UTC).isoformat())


def _sha256() -> st.SearchStrategy[str]:
    return st.binary(max_size=16).map(lambda b: hashlib.sha256(b).hexdigest())


@st.composite
def _runs(draw: st.DrawFn, max_runs: int) -> list[dict[str, Any]]:
    must = [("control", "control"), ("data-check", "data_check"), ("resume-check", "resume_check")]
    variants = [(f"variant-{i}", "variant") for i in range(draw(st.integers(0, max_runs)))]
    return [
        {
            "id": run_id,
            "role": role,
            "category": "must" if role != "variant" else draw(
                st.sampled_from(("must", "useful", "exploratory"))
            ),
            "config_sha256": draw(_sha256()),
        }
        for run_id, role in must + variants
    ]


@st.composite
def _checkpoint_policies(draw: st.DrawFn) -> dict[str, Any]:
    # interval + save <= tolerable loss: save <= 0.5 h leaves >= 0.5 h of room.
    tolerable = draw(st.integers(1, 48))
    save = Decimal(draw(st.integers(0, 50))).scaleb(-2)
    share = Decimal(draw(st.integers(1, 100))).scaleb(-2)
    interval = max(((tolerable - save) * share).quantize(_CENT, ROUND_FLOOR), _CENT)
    return {
        "interval_hours": _number(interval),
        "tolerable_loss_hours": tolerable,
        "save_hours": _number(save),
        "resume_state": draw(st.lists(st.sampled_from(RESUME_PARTS), unique=True, min_size=1)),
    }
