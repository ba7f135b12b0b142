"""Property tests of the money and schedule arithmetic, deterministic in CI.

The "ci" profile derandomises Hypothesis (the same examples on every run and
every xdist worker) and keeps no example database, so a run writes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_itera import strategies as its
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Lot, Step, load_campaign, schema
from pytest_itera.core.money import (
    DELIVERING_ROLES,
    HALF_CENT,
    Catalogue,
    Delivery,
    Money,
    catalogue_from_data,
    cost_per_deliverable,
    deliverables_per_corpus,
    distinct_deliverables,
    lot_hours,
    ratio_matches,
    rental_total,
    smallest_covering,
)
from pytest_itera.core.schedule import (
    as_hours,
    interval_respects_tolerable_loss,
    lot_overflows,
    makespan,
    missing_kinds,
    retrieval_inside_window,
    uncommitted_hours,
)

settings.register_profile("ci", derandomize=True, max_examples=200, deadline=None, database=None)
settings.load_profile("ci")


# --------------------------------------------------------------------- money


@given(its.money())
def test_money_round_trips_through_its_string_form(amount: Money) -> None:
    assert Money(str(amount), amount.currency) == amount
    assert Money.parse(amount.format()) == amount


@given(its.money_strings())
def test_money_strings_match_the_contracts_pattern(text: str) -> None:
    assert re.fullmatch(schema("common")["$defs"]["money"]["pattern"], text)
    assert Money(text, "USD").amount == Decimal(text)


@given(its.lots())
def test_rental_total_is_the_exact_sum_of_price_times_quantity(lots: list[Lot]) -> None:
    expected = sum((Decimal(lot.price) * lot.quantity for lot in lots), Decimal(0))
    assert rental_total(lots, "USD").amount == expected


@given(its.lots(), st.data())
def test_price_never_depends_on_gpus_per_lot(lots: list[Lot], data: st.DataObject) -> None:
    regrouped = [
        dataclasses.replace(lot, gpus_per_lot=data.draw(st.integers(1, 16))) for lot in lots
    ]
    assert rental_total(regrouped, "USD") == rental_total(lots, "USD")


@given(its.money(), st.integers(1, 10_000))
def test_cost_per_deliverable_times_count_reconstructs_the_total(total: Money, n: int) -> None:
    cost = cost_per_deliverable(total, n)
    assert cost is not None
    assert abs(cost.amount * n - total.amount) <= HALF_CENT * n
    assert ratio_matches(cost, total, n)


@given(its.money())
def test_zero_accepted_never_yields_a_number(total: Money) -> None:
    assert cost_per_deliverable(total, 0) is None


@given(st.lists(st.sampled_from(["corpus-a", "corpus-b", "corpus-c"])), st.integers(1, 5))
def test_replays_never_add_deliverables(keys: list[str], replays: int) -> None:
    assert distinct_deliverables(keys * replays) == distinct_deliverables(keys) <= len(keys)


# ---------------------------------------------------------------- catalogues


@given(its.catalogues(), its.hours(800), its.hours(800))
def test_the_chosen_lot_covers_the_hours_and_is_monotone(
    catalogue: Catalogue, a: Decimal, b: Decimal
) -> None:
    low, high = sorted((a, b))
    for need in (low, high):
        chosen = smallest_covering(catalogue, need)
        covering = [o for o in catalogue.offers if lot_hours(o) >= need]
        assert (chosen is None) == (not covering)
        if chosen is not None:
            assert lot_hours(chosen) >= need
            assert chosen.days == min(o.days for o in covering)
    small, large = smallest_covering(catalogue, low), smallest_covering(catalogue, high)
    if large is not None:
        assert small is not None
        assert small.days <= large.days


@given(its.catalogues())
def test_catalogues_round_trip_through_json(catalogue: Catalogue) -> None:
    data = {
        "format": "itera-catalogue/1",
        "provider": catalogue.provider,
        "currency": catalogue.currency,
        "offers": [
            {
                "offer": o.offer, "gpu": o.gpu, "gpus_per_lot": o.gpus_per_lot,
                "days": o.days, "price": str(o.price),
            }
            for o in catalogue.offers
        ],
    }
    assert catalogue_from_data(json.loads(json.dumps(data))) == catalogue


# ----------------------------------------------------------------- schedules


def longest_chain(steps: list[Step]) -> Decimal:
    """The longest path through ``after`` alone (steps only depend on earlier ones)."""
    ends: dict[str, Decimal] = {}
    for step in steps:
        ends[step.id] = as_hours(step.hours) + max((ends[d] for d in step.after), default=0)
    return max(ends.values(), default=Decimal(0))


@given(its.step_lists())
def test_makespan_is_bounded_by_chains_and_by_the_total(steps: list[Step]) -> None:
    timeline = makespan(steps)
    total = sum((as_hours(s.hours) for s in steps), Decimal(0))
    assert timeline.makespan >= max(timeline.busy.values())
    assert timeline.makespan >= longest_chain(steps)
    assert timeline.makespan <= total


@given(its.step_lists())
def test_no_two_steps_overlap_on_one_resource(steps: list[Step]) -> None:
    slots = makespan(steps).slots
    for i, first in enumerate(slots):
        for second in slots[i + 1:]:
            if first.resource == second.resource:
                assert second.start >= first.end
    for slot, step in zip(slots, steps, strict=True):
        assert all(slot.start >= makespan(steps).slot(d).end for d in step.after)


@given(its.step_lists(max_size=10), st.data())
def test_adding_a_step_never_shrinks_the_makespan(steps: list[Step], data: st.DataObject) -> None:
    extra = data.draw(its.step_lists(min_size=len(steps) + 1, max_size=len(steps) + 1))[-1]
    assert makespan([*steps, extra]).makespan >= makespan(steps).makespan


@given(its.lots(max_size=3),
       its.step_lists(lot_ids=("lot-0", "lot-1", "lot-2"), max_hours=120))
def test_reserved_hours_lie_between_the_longest_lot_and_the_sum(
    lots: list[Lot], steps: list[Step]
) -> None:
    """The lots' union never exceeds the sum of their hours nor falls below the longest;
    it is the sum when no two windows overlap, and the sum less the overlap for two."""
    reserved = sched.reserved_hours(lots, steps)
    hours = [Decimal(lot_hours(lot)) for lot in lots]
    assert max(hours) <= reserved <= sum(hours)
    windows = sched.lot_windows(lots, makespan(steps))
    overlaps = [max(Decimal(0), min(a[1], b[1]) - max(a[0], b[0]))
                for i, a in enumerate(windows) for b in windows[i + 1:]]
    if not any(overlaps):
        assert reserved == sum(hours)
    if len(windows) == 2:
        assert reserved == sum(hours) - overlaps[0]


# --------------------------------------------------------------------- plans


def plan_validator() -> jsonschema.protocols.Validator:
    common = referencing.Resource.from_contents(schema("common"))
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(
        common.id() or "", common
    )
    return jsonschema.Draft202012Validator(schema("plan"), registry=registry)


VALIDATOR = plan_validator()


@given(its.plans())
def test_generated_plans_validate_and_are_self_consistent(plan: dict[str, Any]) -> None:
    assert [e.message for e in VALIDATOR.iter_errors(plan)] == []
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "plan.json").write_text(json.dumps(plan), "utf-8")
        loaded = load_campaign(Path(folder))
    assert loaded.errors_for("plan.json") == ()
    assert loaded.plan is not None
    schedule = loaded.plan.schedule
    timeline = makespan(schedule.steps)
    assert missing_kinds(schedule.steps) == ()
    assert as_hours(schedule.sequential_hours or 0) == timeline.makespan
    assert as_hours(schedule.uncommitted_hours or 0) == uncommitted_hours(
        schedule.window_hours, timeline
    )
    assert retrieval_inside_window(schedule.window_hours, timeline)
    assert lot_overflows(loaded.plan.budget.lots, timeline) == []
    assert interval_respects_tolerable_loss(loaded.plan.checkpoint_policy)


# ------------------------------------------- capacity and one run per resource (R3, R4)

_ANY_RESOURCE = ("gpu0", "gpu1", "gpu2", "cpu", "human", "network")


@given(its.lots(max_size=3), st.data())
def test_a_lot_is_refused_exactly_when_its_gpus_outnumber_gpus_per_lot_times_quantity(
    lots: list[Lot], data: st.DataObject
) -> None:
    steps = data.draw(its.step_lists(resources=_ANY_RESOURCE, lot_ids=[lot.id for lot in lots]))
    refused = {e.lot: e for e in sched.capacity_excesses(steps, lots, makespan(steps))}
    for lot in lots:
        gpus = {s.resource for s in steps
                if sched.is_gpu(s.resource) and sched.lot_of(s, lots) == lot.id}
        assert (lot.id in refused) == (len(gpus) > lot.gpus_per_lot * lot.quantity)
        if lot.id in refused:
            assert refused[lot.id].resources == tuple(sorted(gpus))
            assert 0 <= refused[lot.id].peak <= len(gpus)


@given(its.lots(max_size=3), st.data())
def test_off_machine_and_cpu_steps_never_use_a_lots_gpus(
    lots: list[Lot], data: st.DataObject
) -> None:
    ids = [lot.id for lot in lots]
    steps = data.draw(its.step_lists(resources=_ANY_RESOURCE, lot_ids=ids))
    extra = data.draw(its.step_lists(resources=("cpu", "human", "network"), lot_ids=ids))
    extra = [dataclasses.replace(s, id=f"x-{s.id}", after=()) for s in extra]
    before = [(e.lot, e.resources) for e in sched.capacity_excesses(steps, lots)]
    after = [(e.lot, e.resources) for e in sched.capacity_excesses([*steps, *extra], lots)]
    assert after == before


@given(its.lots(max_size=3), st.data())
def test_one_gpu_per_lot_always_fits(lots: list[Lot], data: st.DataObject) -> None:
    steps = data.draw(its.step_lists(resources=_ANY_RESOURCE, lot_ids=[lot.id for lot in lots]))
    merged = [dataclasses.replace(s, resource="gpu0") if sched.is_gpu(s.resource) else s
              for s in steps]
    assert sched.capacity_excesses(merged, lots) == []


@given(its.step_lists(run_ids=("control", "variant-a"), lot_ids=("lot-0", "lot-1")))
def test_overlaps_found_are_real_and_chaining_each_run_removes_them(steps: list[Step]) -> None:
    timeline = makespan(steps)
    for overlap in sched.run_overlaps(timeline):
        assert overlap.first.run == overlap.second.run == overlap.run
        assert overlap.hours > 0
        assert sched.is_gpu(overlap.first.resource)
        assert sched.is_gpu(overlap.second.resource)
    chained = makespan(sched.chain_runs(steps))
    assert sched.run_overlaps(chained) == []
    # Extra dependencies never shorten a schedule, and two lots never shorten one run.
    assert chained.makespan >= timeline.makespan
    for run in ("control", "variant-a"):
        own = sum((as_hours(s.hours) for s in steps
                   if s.run == run and sched.is_gpu(s.resource)), Decimal(0))
        assert chained.makespan >= own


@given(its.plans())
def test_generated_plans_obey_capacity_order_and_one_run_per_resource(
    plan: dict[str, Any]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "plan.json").write_text(json.dumps(plan), "utf-8")
        loaded = load_campaign(Path(folder))
    assert loaded.plan is not None, loaded.errors
    steps, lots = loaded.plan.schedule.steps, loaded.plan.budget.lots
    timeline = makespan(steps)
    assert sched.capacity_excesses(steps, lots, timeline) == []
    assert sched.run_overlaps(timeline) == []
    assert sched.retrieval_gap(steps) is None
    assert sched.restores_without_save(steps) == []
    assert sched.unplanned_kinds(steps) == ()
    assert all(s.run is not None for s in steps if s.kind == "training")


# ------------------------------------------------------- deliverables per corpus (R7)

ROLES = ("control", "variant", "data_check", "resume_check", "pilot")
CORPUS_IDS = ("corpus-a", "corpus-b", "corpus-c", "corpus-d")


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[dict[str, str], list[Delivery]]:
    """Plan corpora (id -> content: some ids share a sha256) and the runs that name them."""
    contents = {c: draw(st.sampled_from(["sha-1", "sha-2", "sha-3"])) for c in CORPUS_IDS}
    rows = draw(st.lists(st.tuples(st.sampled_from(ROLES), st.sampled_from(CORPUS_IDS),
                                   st.booleans()), max_size=12))
    return contents, [Delivery(f"run-{i}", role, corpus, contents[corpus], passed)
                      for i, (role, corpus, passed) in enumerate(rows)]


def _count(found: list[Delivery]) -> int:
    return len(deliverables_per_corpus(found))


@given(deliveries())
def test_deliverables_are_the_distinct_contents_of_passing_controls_and_variants(
    drawn: tuple[dict[str, str], list[Delivery]],
) -> None:
    contents, found = drawn
    delivering = [d for d in found if d.passed and d.role in DELIVERING_ROLES]
    per = deliverables_per_corpus(found)
    assert len(per) == len({d.content for d in delivering}) <= len(set(contents.values()))
    assert sorted(r for runs in per.values() for r in runs) == sorted(d.run for d in delivering)


@given(deliveries(), st.integers(1, 5), st.data())
def test_replays_and_relabelled_copies_never_add_deliverables(
    drawn: tuple[dict[str, str], list[Delivery]], replays: int, data: st.DataObject
) -> None:
    contents, found = drawn
    copies = []
    for n in range(replays):
        for d in found:  # the same corpus again, possibly under another id of the same content
            twins = [c for c in CORPUS_IDS if contents[c] == d.content]
            label = data.draw(st.sampled_from(twins))
            copies.append(dataclasses.replace(d, run=f"{d.run}-replay-{n}", corpus=label))
    assert _count(found + copies) == _count(found)


@given(deliveries(), st.lists(st.sampled_from(CORPUS_IDS), max_size=6))
def test_runs_that_deliver_nothing_never_change_the_count(
    drawn: tuple[dict[str, str], list[Delivery]], corpora: list[str]
) -> None:
    contents, found = drawn
    silent = [Delivery(f"check-{i}", role, c, contents[c])
              for i, c in enumerate(corpora) for role in ("data_check", "resume_check", "pilot")]
    failed = [Delivery(f"failed-{i}", "variant", c, contents[c], passed=False)
              for i, c in enumerate(corpora)]
    assert _count(found + silent + failed) == _count(found)


@given(its.money(currency="USD"), deliveries())
def test_the_cost_per_deliverable_divides_by_distinct_corpora(
    total: Money, drawn: tuple[dict[str, str], list[Delivery]]
) -> None:
    _, found = drawn
    n = _count(found)
    cost = cost_per_deliverable(total, n)
    assert (cost is None) == (n == 0)
    if cost is not None:
        assert ratio_matches(cost, total, n)

