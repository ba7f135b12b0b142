"""Properties of the plan gate's arithmetic (pure, no pytest session)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from hypothesis import given
from hypothesis import strategies as st

from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Lot, PlannedRun, Step
from pytest_itera.core.money import Catalogue, Money, Offer, lot_options

CATEGORIES: tuple[Literal["must", "useful", "exploratory"], ...] = (
    "must", "useful", "exploratory")


def lot(days: int) -> Lot:
    """The schedule's one lot ("L"), of ``days`` days."""
    return Lot("L", f"RTX 4090, {days} days", "RTX 4090", 1, days, "10", 1)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[Step], list[PlannedRun]]:
    """A schedule of 1-10 steps (dependencies only on earlier steps, so no cycle), on 1-3
    resources, serving 0-4 runs of any category."""
    runs = [PlannedRun(f"r{i}", "variant", draw(st.sampled_from(CATEGORIES)), "0" * 64)
            for i in range(draw(st.integers(0, 4)))]
    steps: list[Step] = []
    for i in range(draw(st.integers(1, 10))):
        after = draw(st.lists(st.sampled_from([s.id for s in steps]), unique=True, max_size=3)
                     if steps else st.just([]))
        steps.append(Step(
            f"s{i}", draw(st.sampled_from(["training", "validation", "output"])),
            draw(st.sampled_from(["gpu0", "gpu1", "human"])), draw(st.integers(0, 30)),
            after=tuple(after), lot="L",
            run=draw(st.sampled_from([None, *[r.id for r in runs]]))))
    return steps, runs


@given(plans())
def test_a_forecast_whose_observations_equal_the_plan_is_the_plan(
    plan: tuple[list[Step], list[PlannedRun]],
) -> None:
    steps, _ = plan
    for done in range(len(steps) + 1):
        fc = sched.forecast(steps, {s.id: s.hours for s in steps[:done]})
        assert fc.timeline == fc.planned
        assert fc.scaled == ()


@given(plans(), st.data())
def test_dropping_runs_never_lengthens_the_schedule(
    plan: tuple[list[Step], list[PlannedRun]], data: st.DataObject
) -> None:
    steps, runs = plan
    dropped = data.draw(st.sets(st.sampled_from([r.id for r in runs])) if runs else st.just(set()))
    before = sched.makespan(steps)
    after = sched.makespan(sched.without_runs(steps, dropped))
    assert after.makespan <= before.makespan
    for slot in after.slots:  # and no kept step ends later
        assert slot.end <= before.slot(slot.id).end


@given(plans(), st.integers(1, 150), st.integers(1, 4))
def test_the_advised_reduced_protocol_fits_and_drops_only_optional_runs(
    plan: tuple[list[Step], list[PlannedRun]], window: int, days: int
) -> None:
    steps, runs = plan
    lots = [lot(days)]
    reduction = sched.reduced_protocol(steps, runs, window, lots)
    if reduction is None:
        return
    categories = {r.id: r.category for r in runs}
    assert all(categories[r] in sched.DROPPABLE for r in reduction.dropped)
    assert sched.fits(window, lots, reduction.timeline) == reduction.fits
    # Exploratory first: no set of exploratory runs alone fits when a useful run is dropped.
    if reduction.fits and any(categories[r] == "useful" for r in reduction.dropped):
        explore = [r.id for r in runs if r.category == "exploratory"]
        alone = sched.makespan(sched.without_runs(steps, explore))
        assert not sched.fits(window, lots, alone)


offers = st.lists(
    st.builds(lambda days, cents: Offer(f"{days} days", "RTX 4090", 1, days,
                                        Money(Decimal(cents) / 100, "USD")),
              st.integers(1, 40), st.integers(1, 100_000)),
    max_size=6, unique_by=lambda o: o.days)


@given(offers, st.integers(0, 1000))
def test_the_advised_lot_is_the_cheapest_that_fits(found: list[Offer], hours: int) -> None:
    catalogue = Catalogue("Acme", "USD", tuple(found))
    options = lot_options(hours, catalogue)
    fitting = [o for o in found if o.days * 24 >= hours]
    assert {o.offer for o in options} == set(fitting)
    assert all(o.idle_hours == o.offer.days * 24 - hours >= 0 for o in options)
    if fitting:
        assert options[0].price.amount == min(o.price.amount for o in fitting)
    assert [o.price.amount for o in options] == sorted(o.price.amount for o in options)
