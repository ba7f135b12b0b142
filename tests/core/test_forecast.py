"""The post-pilot forecast: measured steps, ratios by kind, the journal, and the gate on a
campaign mid-way (plan + journal, no manifest yet)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from pytest_itera.checks.plan.journal import read_journal
from pytest_itera.core.campaign import load_plan
from pytest_itera.core.schedule import forecast
from tests.factory import expect, tree_digest
from tests.plans import PILOT_JOURNAL, mid_way, seed_plan, write
from tests.runner import Itera


def plan_of(tmp_path: Path, data: dict[str, object]) -> object:
    plan = load_plan(write(tmp_path / "out", data) / "plan.json").plan
    assert plan is not None
    return plan


def test_measured_steps_take_their_hours_and_their_kind_scales_the_rest(tmp_path: Path) -> None:
    fc = forecast(plan_of(tmp_path, mid_way()), {"train-pilot": 6, "prepare": 2})  # type: ignore[arg-type]
    assert fc.ratios == {"training": Decimal("1.5"), "preparation": Decimal(1)}
    hours = {s.id: s.hours for s in fc.steps}
    assert hours["train-pilot"] == 6
    assert hours["train-control"] == 30  # 20 h planned, x1.5
    assert hours["validate"] == 2  # no validation step finished: its plan
    assert fc.scaled == ("train-control", "train-variant-a", "train-variant-b")
    assert (fc.planned.makespan, fc.makespan) == (Decimal(60), Decimal(81))
    assert fc.started_runs == {"pilot"}


def test_observations_equal_to_the_plan_forecast_the_plan(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, seed_plan())
    steps = plan.schedule.steps  # type: ignore[attr-defined]
    fc = forecast(plan, {s.id: s.hours for s in steps[:5]})  # type: ignore[arg-type]
    assert fc.makespan == fc.planned.makespan == 48
    assert fc.scaled == ()


def test_unknown_observed_steps_are_left_out(tmp_path: Path) -> None:
    fc = forecast(plan_of(tmp_path, seed_plan()), {"lunch": 1})  # type: ignore[arg-type]
    assert fc.unknown == ("lunch",)
    assert fc.makespan == 48


def test_a_torn_last_line_is_reported_and_not_used(tmp_path: Path) -> None:
    folder = write(tmp_path / "out", mid_way(), PILOT_JOURNAL,
                   torn='{"event": "step", "step": "decide", "hours": 1}')
    journal = read_journal(folder / "itera-journal.jsonl")
    assert not isinstance(journal, str)
    assert journal.torn == len(PILOT_JOURNAL) + 1
    assert "decide" not in journal.hours
    assert journal.hours["train-pilot"] == 6


def test_unreadable_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "itera-journal.jsonl"
    path.write_text('{"event": "step", "step": "setup", "hours": 2}\nnot json\n'
                    '{"event": "step", "step": "x", "hours": "two"}\n')
    journal = read_journal(path)
    assert not isinstance(journal, str)
    assert journal.unreadable == ((2, "not JSON"), (3, "step 'x': hours 'two' is not a number"))
    assert journal.hours == {"setup": 2}


def test_a_pilot_1_5x_slower_is_forecast_to_overflow_and_told_what_to_drop(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    folder = write(pytester.path / "out", mid_way(), PILOT_JOURNAL)
    before = tree_digest(folder)
    result = itera.gate("-rA")
    result.assert_outcomes(passed=4, failed=1)
    expect(result,
           "itera-journal.jsonl: forecast: the schedule now takes 81 h (5 steps measured; training "
           "steps x1.5), 9 h more than the 72 h window",
           "    fix:      reduce the protocol: drop exploratory run 'variant-b' (12 h of "
           "planned steps): the schedule then takes 69 h and fits the window and the lots*",
           "*forecast: lot 'rtx4090-3d': 81 h exceeds the 3-day lot (72 h) by 9 h: consider "
           "the 7-day lot (110.00 USD) or a reduced protocol",
           "*pytest-itera: before renting*",
           "plan out/plan.json (seed-2026-12): 60 h from preparation to retrieval in the 72 h "
           "window: 12 h uncommitted",
           "  forecast (5 steps measured; training steps x1.5): 81 h: 9 h OVER the window")
    expect(result, "PASSED out/plan.json::plan-journal[itera-journal.jsonl]",
           "FAILED out/plan.json::plan-forecast[itera-journal.jsonl]*")
    assert tree_digest(folder) == before  # the forecast writes nothing into the campaign


def test_a_torn_journal_fails_its_own_item_and_the_forecast_uses_complete_lines(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    write(pytester.path / "out", seed_plan(), PILOT_JOURNAL[:-1],
          torn='{"event": "step", "step": "train-pilot", "hou')
    result = itera.gate()
    result.assert_outcomes(passed=4, failed=1)
    expect(result, "itera-journal.jsonl:7: the last line of the journal is torn (no newline: an "
           "interrupted write); the forecast uses the 6 complete lines only")
