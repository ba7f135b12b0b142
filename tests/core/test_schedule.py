"""Schedules: the source's 48 h / 72 h / 78 h example, serialisation, errors (R3, R4, R6, R9)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import ActualStep, CheckpointPolicy, Lot, Step
from pytest_itera.core.money import example_catalogue
from pytest_itera.core.schedule import (
    REQUIRED_KINDS,
    ScheduleError,
    as_hours,
    deviations,
    interval_respects_tolerable_loss,
    lot_overflows,
    makespan,
    max_save_interval,
    missing_kinds,
    observed_hours,
    retrieval_end,
    retrieval_inside_window,
    sequential_hours,
    uncommitted_hours,
    unknown_lots,
    unobserved_steps,
    unplanned_steps,
    window_overflow,
    worst_case_loss_hours,
)
from pytest_itera.core.text import is_blank, says_nothing

THREE_DAYS = Lot("A", "IteraGPU RTX 4090, 3 days", "RTX 4090", 1, 3, "47.14", 1)


def campaign_steps(training_hours: float = 20) -> list[Step]:
    """An illustrative 48-hour campaign run on the rented machine of lot A, end to end."""
    return [
        Step("setup", "setup", "gpu0", 4, lot="A"),
        Step("load", "data_load", "gpu0", 2, after=("setup",), lot="A"),
        Step("train", "training", "gpu0", training_hours, after=("load",), lot="A"),
        Step("save", "checkpoint_save", "gpu0", 1, after=("train",), lot="A"),
        Step("restore", "checkpoint_restore", "gpu0", 1, after=("save",), lot="A"),
        Step("validate", "validation", "gpu0", 10, after=("restore",), lot="A"),
        Step("write", "output", "gpu0", 6, after=("validate",), lot="A"),
        Step("fetch", "retrieval", "network", 4, after=("write",), lot="A"),
    ]


# -------------------------------------------------------- the source's numbers


def test_48_sequential_hours_in_a_72_hour_window_leave_24() -> None:
    timeline = makespan(campaign_steps())
    assert sequential_hours(timeline) == Decimal(48)
    assert uncommitted_hours(72, timeline) == Decimal(24)
    assert window_overflow(72, timeline) is None
    assert lot_overflows([THREE_DAYS], timeline) == []
    assert retrieval_inside_window(72, timeline)
    assert missing_kinds(campaign_steps()) == ()


def test_30_more_hours_overflow_the_3_day_lot_by_6_and_point_at_the_7_day_lot() -> None:
    timeline = makespan(campaign_steps(training_hours=50))
    assert timeline.makespan == Decimal(78)
    assert window_overflow(72, timeline) == Decimal(6)
    assert not retrieval_inside_window(72, timeline)
    [overflow] = lot_overflows([THREE_DAYS], timeline)
    assert (overflow.lot, overflow.capacity, overflow.excess) == ("A", 72, Decimal(6))
    assert overflow.advice(example_catalogue()) == (
        "lot 'A': 78 h exceeds the 3-day lot (72 h) by 6 h: consider the 7-day lot "
        "(110.00 USD) or a reduced protocol"
    )


def test_human_preparation_counts_in_the_window_but_not_in_the_lot() -> None:
    steps = [Step("prep", "preparation", "human", 30), *campaign_steps()]
    steps[1] = Step("setup", "setup", "gpu0", 4, after=("prep",), lot="A")
    timeline = makespan(steps)
    assert timeline.makespan == Decimal(78)
    assert timeline.lot_hours("A") == Decimal(48)
    assert lot_overflows([THREE_DAYS], timeline) == []
    assert window_overflow(72, timeline) == Decimal(6)
    assert (timeline.human_hours, timeline.machine_hours) == (Decimal(30), Decimal(48))
    assert sched.off_lot_text(timeline, "A") == (
        "the lot runs from 30 h to 78 h of the 78 h schedule; off the lot: prep, 30 h before it")
    assert sched.off_lot_text(timeline, "unused") is None


def test_a_lot_that_runs_the_whole_schedule_has_no_off_lot_hours() -> None:
    steps = [Step("setup", "setup", "gpu0", 4, lot="A"), Step("train", "training", "gpu0", 8,
                                                              after=("setup",), lot="A")]
    assert sched.off_lot_text(makespan(steps), "A") is None


# -------------------------------------------------------------- scheduling


def test_steps_on_one_gpu_never_run_in_parallel() -> None:
    timeline = makespan([Step("a", "training", "gpu0", 10), Step("b", "training", "gpu0", 10)])
    assert timeline.makespan == Decimal(20)
    assert (timeline.slot("b").start, timeline.slot("b").end) == (Decimal(10), Decimal(20))
    assert timeline.busy == {"gpu0": Decimal(20)}


def test_independent_steps_on_two_gpus_overlap() -> None:
    timeline = makespan([Step("a", "training", "gpu0", 10), Step("b", "training", "gpu1", 12)])
    assert timeline.makespan == Decimal(12)
    assert timeline.slot("b").start == Decimal(0)


def test_a_dependency_on_another_resource_delays_the_step() -> None:
    timeline = makespan(
        [
            Step("load", "data_load", "cpu", 3),
            Step("warm", "setup", "gpu0", 1),
            Step("train", "training", "gpu0", 5, after=("load",)),
        ]
    )
    assert timeline.slot("train").start == Decimal(3)
    assert timeline.makespan == Decimal(8)


def test_a_step_may_depend_on_a_step_listed_later_on_another_resource() -> None:
    steps = [Step("b", "training", "gpu0", 2, after=("a",)), Step("a", "setup", "cpu", 3)]
    timeline = makespan(steps)
    assert (timeline.slot("b").start, timeline.makespan) == (Decimal(3), Decimal(5))


def test_lot_span_runs_from_first_start_to_last_end() -> None:
    timeline = makespan(
        [
            Step("prep", "setup", "human", 5),
            Step("a", "training", "gpu0", 10, after=("prep",), lot="L"),
            Step("idle-wait", "decision", "human", 20, after=("a",)),
            Step("b", "validation", "gpu0", 1, after=("idle-wait",), lot="L"),
        ]
    )
    assert timeline.lot_spans["L"] == (Decimal(5), Decimal(36))
    assert timeline.lot_hours("L") == Decimal(31)  # the rental runs while the human decides
    assert timeline.lot_hours("unused") == Decimal(0)


def hours(windows: list[tuple[int, int]]) -> list[tuple[Decimal, Decimal]]:
    return [(Decimal(a), Decimal(b)) for a, b in windows]


def two_lots(second_after: str | None, second_hours: float = 60) -> list[Step]:
    """Lot A trains 60 h then evaluates 10 h; lot B trains after ``second_after``."""
    return [
        Step("train", "training", "gpu0", 60, lot="A"),
        Step("eval", "validation", "gpu0", 10, after=("train",), lot="A"),
        Step("read", "evaluation", "human", 18, after=("eval",)),
        Step("train-2", "training", "gpu1", second_hours,
             after=(second_after,) if second_after else (), lot="B"),
    ]


def test_lots_reserve_the_union_of_their_windows() -> None:
    """A lot's window runs from its first step for its days: side by side, two 3-day lots
    reserve 72 h; the second taken at 60 h, 12 h before the first ends, 132 h; taken at
    88 h, 16 h after the first ended, 144 h: the gap is not reserved."""
    lots = [THREE_DAYS, dataclasses.replace(THREE_DAYS, id="B")]
    side = makespan(two_lots(None))
    assert sched.lot_windows(lots, side) == hours([(0, 72), (0, 72)])
    assert sched.reserved_hours(lots, two_lots(None)) == 72
    overlap = makespan(two_lots("train"))
    assert sched.lot_windows(lots, overlap) == hours([(0, 72), (60, 132)])
    assert sched.reserved_hours(lots, two_lots("train")) == 132
    gap = makespan(two_lots("read"))
    assert sched.lot_windows(lots, gap) == hours([(0, 72), (88, 160)])
    assert sched.reserved_hours(lots, two_lots("read")) == 144
    assert sched.reserved_hours([THREE_DAYS], two_lots("read")) == 72
    assert sched.reserved_hours([], two_lots("read")) == 0


def test_a_lot_no_step_names_and_an_unschedulable_plan_start_at_0() -> None:
    lots = [THREE_DAYS, dataclasses.replace(THREE_DAYS, id="B", days=7)]
    unnamed = [Step("train", "training", "gpu0", 10)]
    assert sched.reserved_hours(lots, unnamed) == 168
    cycle = [Step("a", "setup", "gpu0", 1, after=("b",), lot="B"),
             Step("b", "setup", "gpu0", 1, after=("a",), lot="A")]
    assert sched.reserved_hours(lots, cycle) == 168


@pytest.mark.parametrize(
    ("windows", "union"),
    [
        ([], 0),
        ([(0, 72)], 72),
        ([(0, 72), (0, 72)], 72),
        ([(67, 139), (0, 72)], 139),
        ([(0, 72), (72, 144)], 144),
        ([(0, 72), (80, 152)], 144),
        ([(0, 168), (24, 96), (100, 172)], 172),
        ([(5, 5), (0, 2)], 2),
    ],
)
def test_union_hours_count_an_overlap_once_and_a_gap_not_at_all(
    windows: list[tuple[int, int]], union: int
) -> None:
    assert sched.union_hours(hours(windows)) == union


def test_float_hours_are_exact_decimals() -> None:
    timeline = makespan([Step("a", "setup", "gpu0", 0.1), Step("b", "setup", "gpu0", 0.2)])
    assert timeline.makespan == Decimal("0.3")
    assert uncommitted_hours(0.3, timeline) == 0
    assert as_hours("1.5") == Decimal("1.5")


def test_an_empty_schedule_has_no_makespan() -> None:
    assert makespan([]).makespan == 0


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            [Step("a", "setup", "gpu0", 1, after=("ghost",))],
            "step 'a' comes after 'ghost', which is not a step of the schedule",
        ),
        ([Step("a", "setup", "gpu0", 1, after=("a",))], "step 'a' is listed in its own 'after'"),
        (
            [Step("a", "setup", "gpu0", 1), Step("a", "training", "gpu1", 1)],
            "step id 'a' is used twice",
        ),
        ([Step("a", "setup", "gpu0", -1)], "step 'a': hours must be finite and non-negative"),
        ([Step("a", "setup", "gpu0", float("nan"))], "step 'a': hours must be finite"),
        (
            [
                Step("a", "setup", "gpu0", 1, after=("c",)),
                Step("b", "setup", "gpu1", 1, after=("a",)),
                Step("c", "setup", "cpu", 1, after=("b",)),
            ],
            "dependency cycle: 'a' waits for 'c' (after), 'c' waits for 'b' (after), "
            "'b' waits for 'a' (after); no order can run these steps",
        ),
        (
            [
                Step("train", "training", "gpu0", 1, after=("load",)),
                Step("load", "data_load", "gpu0", 1),
            ],
            "deadlock: 'train' waits for 'load' (after), 'load' waits for 'train' (listed before "
            "it on resource 'gpu0'); steps on one resource run in listed order, so list a step "
            "after the steps it depends on",
        ),
    ],
)
def test_unschedulable_steps_raise_a_clear_error(steps: list[Step], message: str) -> None:
    with pytest.raises(ScheduleError) as info:
        makespan(steps)
    assert message in str(info.value)


def test_as_hours_refuses_nonsense() -> None:
    with pytest.raises(TypeError, match="hours are a number"):
        as_hours(True)
    with pytest.raises(ValueError, match="not a number of hours"):
        as_hours("soon")


# ---------------------------------------------------------- required kinds


def test_every_required_kind_missing_is_named_in_order() -> None:
    steps = [s for s in campaign_steps() if s.kind not in {"checkpoint_restore", "retrieval"}]
    assert missing_kinds(steps) == ("checkpoint_restore", "retrieval")
    assert missing_kinds([]) == REQUIRED_KINDS


def test_without_a_retrieval_step_retrieval_is_not_inside_the_window() -> None:
    timeline = makespan([Step("a", "training", "gpu0", 1)])
    assert retrieval_end(timeline) is None
    assert not retrieval_inside_window(72, timeline)


def test_retrieval_ending_exactly_at_the_window_is_inside() -> None:
    timeline = makespan([Step("r", "retrieval", "network", 72)])
    assert retrieval_inside_window(72, timeline)
    assert not retrieval_inside_window(71.5, timeline)


def test_steps_naming_a_lot_absent_from_the_budget() -> None:
    steps = [Step("a", "training", "gpu0", 1, lot="A"), Step("b", "training", "gpu1", 1, lot="Z")]
    assert unknown_lots(steps, [THREE_DAYS]) == [("b", "Z")]


# --------------------------------------------------------------- checkpoints


def policy(interval: float, tolerable: float, save: float | None = None) -> CheckpointPolicy:
    return CheckpointPolicy(interval, tolerable, ("model", "optimizer", "progress"), save)


def test_interval_plus_save_cost_within_tolerable_loss() -> None:
    assert interval_respects_tolerable_loss(policy(2, 3, 0.5))
    assert interval_respects_tolerable_loss(policy(2.5, 3, 0.5))  # the boundary is allowed
    assert interval_respects_tolerable_loss(policy(3, 3))  # no save cost recorded


def test_interval_whose_worst_case_loss_exceeds_the_tolerable_loss() -> None:
    too_long = policy(3, 3, 0.5)
    assert not interval_respects_tolerable_loss(too_long)
    assert worst_case_loss_hours(too_long) == Decimal("3.5")
    assert max_save_interval(too_long) == Decimal("2.5")
    assert not interval_respects_tolerable_loss(policy(4, 3))


# --------------------------------------------------------- planned vs actual


def test_deviations_above_the_tolerance_both_ways() -> None:
    planned = [
        Step("a", "training", "gpu0", 10),
        Step("b", "training", "gpu0", 10),
        Step("c", "training", "gpu0", 10),
        Step("d", "setup", "human", 0),
    ]
    found = deviations(planned, {"a": 11, "b": 11.5, "c": 8, "d": 1})
    assert [(d.step, d.ratio) for d in found] == [
        ("b", Decimal("0.15")),
        ("c", Decimal("-0.2")),
        ("d", None),
    ]
    assert found[0].describe() == (
        "step 'b' took 11.5 h against 10 h planned (+15 %), above the 10 % tolerance"
    )
    assert found[2].describe(0.2) == (
        "step 'd' took 1 h against 0 h planned (unplanned time), above the 20 % tolerance"
    )


def test_a_deviation_exactly_at_the_tolerance_needs_no_explanation() -> None:
    planned = [Step("a", "training", "gpu0", 10)]
    assert deviations(planned, {"a": 11}, tolerance=0.1) == []
    assert [d.step for d in deviations(planned, {"a": 11}, tolerance=0.05)] == ["a"]


def test_observed_hours_and_steps_missing_on_either_side() -> None:
    observed = observed_hours(
        [ActualStep("a", 2.5), ActualStep("a", 1.0), ActualStep("extra", 1)]
    )
    planned = [Step("a", "training", "gpu0", 3), Step("b", "output", "gpu0", 1)]
    assert observed == {"a": Decimal("3.5"), "extra": Decimal(1)}
    assert unobserved_steps(planned, observed) == ["b"]
    assert unplanned_steps(planned, observed) == ["extra"]


# ------------------------------------------- machines, lots and runs (issue 12)


def two_gpu_steps(lot: str | None = "A") -> list[Step]:
    return [
        Step("train-a", "training", "gpu0", 10, lot=lot, run="a"),
        Step("train-b", "training", "gpu1", 10, lot=lot, run="b"),
        Step("notes", "evaluation", "human", 10),
        Step("tokenize", "data_load", "cpu", 10, lot=lot),
        Step("fetch", "retrieval", "network", 1, after=("train-a", "train-b"), lot=lot),
    ]


def test_resources_off_the_machine_on_the_host_and_gpus() -> None:
    names = ("human", " Network ", "cpu", "cpu1", "gpu0", "b200-0")
    assert [sched.is_off_machine(n) for n in names] == [True, True, False, False, False, False]
    assert [sched.is_host(n) for n in names] == [False, False, True, True, False, False]
    assert [sched.is_gpu(n) for n in names] == [False, False, False, False, True, True]


def test_a_1_gpu_lot_with_two_gpus_at_once_exceeds_its_capacity() -> None:
    steps = two_gpu_steps()
    [excess] = sched.capacity_excesses(steps, [THREE_DAYS], makespan(steps))
    assert (excess.lot, excess.capacity, excess.resources, excess.peak, excess.excess) == (
        "A", 1, ("gpu0", "gpu1"), 2, 1)


def test_gpus_per_lot_times_quantity_is_the_capacity() -> None:
    steps = two_gpu_steps()
    b200 = Lot("A", "B200, 3 days", "B200", 2, 3, "300.00", 1)
    pair = Lot("A", "IteraGPU RTX 4090, 3 days", "RTX 4090", 1, 3, "47.14", 2)
    assert sched.lot_capacity(b200) == sched.lot_capacity(pair) == 2
    assert sched.capacity_excesses(steps, [b200]) == []
    assert sched.capacity_excesses(steps, [pair]) == []


def test_two_lots_host_independent_variants() -> None:
    steps = [
        Step("train-a", "training", "gpu0", 10, lot="A", run="a"),
        Step("train-b", "training", "gpu1", 10, lot="B", run="b"),
    ]
    lots = [THREE_DAYS, Lot("B", "IteraGPU RTX 4090, 3 days", "RTX 4090", 1, 3, "47.14", 1)]
    timeline = makespan(steps)
    assert sched.capacity_excesses(steps, lots, timeline) == []
    assert sched.run_overlaps(timeline) == []
    assert timeline.makespan == 10


def test_a_gpu_step_without_lot_is_on_the_only_lot_or_unknown() -> None:
    steps = two_gpu_steps(lot=None)
    assert sched.lot_of(steps[0], [THREE_DAYS]) == "A"
    assert sched.lot_of(steps[2], [THREE_DAYS]) is None  # human time is on no lot
    assert [e.lot for e in sched.capacity_excesses(steps, [THREE_DAYS])] == ["A"]
    other = Lot("B", "IteraGPU RTX 4090, 3 days", "RTX 4090", 1, 3, "47.14", 1)
    assert sched.steps_without_lot(steps, [THREE_DAYS, other]) == ["train-a", "train-b"]
    assert sched.steps_without_lot(steps, [THREE_DAYS]) == []


def test_one_run_on_two_resources_at_once_and_its_chained_fix() -> None:
    steps = [
        Step("part-1", "training", "gpu0", 10, lot="A", run="control"),
        Step("part-2", "training", "gpu1", 10, lot="B", run="control"),
        Step("review", "evaluation", "human", 10, run="control"),  # off the machine: fine
    ]
    [overlap] = sched.run_overlaps(makespan(steps))
    assert (overlap.run, overlap.first.id, overlap.second.id, overlap.hours) == (
        "control", "part-1", "part-2", Decimal(10))
    chained = makespan(sched.chain_runs(steps))
    assert sched.run_overlaps(chained) == []
    assert chained.makespan == 20
    assert chained.slot("part-2").start == 10


def test_touching_steps_of_one_run_do_not_overlap() -> None:
    steps = [
        Step("part-1", "training", "gpu0", 10, run="control"),
        Step("part-2", "training", "gpu1", 10, after=("part-1",), run="control"),
        Step("nothing", "training", "gpu2", 0, run="control"),
    ]
    assert sched.run_overlaps(makespan(steps)) == []


def test_retrieval_comes_after_outputs_and_checkpoints_through_after() -> None:
    steps = campaign_steps()  # fetch <- write <- validate <- restore <- save: all covered
    assert sched.retrieval_gap(steps) is None
    assert sched.restores_without_save(steps) == []
    by_time_only = [*steps[:-1], Step("fetch", "retrieval", "gpu0", 4, lot="A")]
    gap = sched.retrieval_gap(by_time_only)
    assert gap is not None
    assert (gap.retrieval, gap.missing) == ("fetch", ("save", "restore", "write"))
    early = Step("copy-ckpt", "retrieval", "network", 1, after=("save",))
    assert sched.retrieval_gap([*steps, early]) is None  # one retrieval after everything
    assert sched.retrieval_gap([s for s in steps if s.kind != "retrieval"]) is None


def test_a_restore_before_any_save_through_after() -> None:
    steps = [
        Step("save", "checkpoint_save", "gpu0", 1),
        Step("restore", "checkpoint_restore", "gpu0", 1),  # after save only by listed order
    ]
    assert sched.restores_without_save(steps) == ["restore"]
    assert sched.ancestors(steps) == {"save": frozenset(), "restore": frozenset()}


def test_required_kinds_planned_at_0_h() -> None:
    steps = [*campaign_steps(), Step("save-2", "checkpoint_save", "gpu0", 0, lot="A")]
    assert sched.unplanned_kinds(steps) == ()  # the kind has hours
    zero = [Step(s.id, s.kind, s.resource, 0 if s.kind == "checkpoint_restore" else s.hours,
                 s.after, s.lot) for s in campaign_steps()]
    assert sched.unplanned_kinds(zero) == ("checkpoint_restore",)


def test_short_steps_need_an_explanation_whatever_the_tolerance() -> None:
    planned = [Step("a", "training", "gpu0", 10), Step("b", "output", "gpu0", 2),
               Step("c", "validation", "gpu0", 4), Step("d", "setup", "gpu0", 0)]
    short = sched.short_steps(planned, {"a": Decimal("4.99"), "b": 0, "d": 0})
    assert [(s.step, s.observed) for s in short] == [
        ("a", Decimal("4.99")), ("b", Decimal(0)), ("c", None)]
    assert [s.describe() for s in short] == [
        "step 'a' ran 4.99 h of 10 h planned, less than half",
        "step 'b' did not run (0 h observed against 2 h planned)",
        "planned step 'c' has no observed hours",
    ]
    assert sched.short_steps(planned[:1], {"a": 5}) == []  # exactly half


def test_the_tolerance_is_bounded_at_one_half() -> None:
    assert sched.bounded_tolerance(0.9) == Decimal("0.5")
    assert sched.bounded_tolerance("0.2") == Decimal("0.2")


@pytest.mark.parametrize(
    ("text", "blank"),
    [(None, True), ("", True), (" \t\n", True), ("\u00a0\u2003\u3000", True),
     ("\u200b\u200d\u2060\ufeff", True), ("\u00ad", True), ("x", False), (" ok ", False),
     ("\u200bno", False), ("0", False), ("*", False), (".", False)],
)
def test_one_rule_for_missing_text(text: str | None, blank: bool) -> None:
    assert is_blank(text) is blank
    assert says_nothing(text) is (blank or text in ("*", "."))


@pytest.mark.parametrize("text", [".", " - ", "?!…", "—", "€", "…\u200b"])
def test_punctuation_alone_says_nothing_but_is_not_blank(text: str) -> None:
    assert says_nothing(text)
    assert not is_blank(text)  # a waiver's target '*' is a pattern, not a missing text


@pytest.mark.parametrize("text", ["n/a", "OK.", "-1 h: GPU lost"])
def test_words_or_numbers_say_something(text: str) -> None:
    assert not says_nothing(text)
