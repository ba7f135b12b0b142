"""The rules of ``plan-forecast`` (pytest_itera/checks/plan/plan_forecast.py): the forecast
from the measured pilot, refused when it overflows, with its honest twin, judged in process as
``--itera-plan`` does (tests/checks/judging.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.plans import PILOT_JOURNAL, mid_way, seed_plan, write

CHECK = "plan-forecast"


def test_the_seeds_pilot_at_1_5x_still_fits(tmp_path: Path) -> None:
    """48 h, its 30 h of training x1.5: 63 h in the 72 h window and the 3-day lot."""
    expect_no_finding(judge(write(tmp_path / "out", seed_plan(), PILOT_JOURNAL), CHECK))


@pytest.mark.parametrize(
    ("code", "where", "says"),
    [
        ("plan-forecast.window", "itera-journal.jsonl",
         "the schedule now takes 81 h (5 steps measured; training steps x1.5), 9 h more than "
         "the 72 h window"),
        ("plan-forecast.lot-overflow", "plan.json $.schedule.steps (lot 'rtx4090-3d')",
         "81 h exceeds the 3-day lot (72 h) by 9 h"),
    ],
    ids=["window", "lot-overflow"],
)
def test_a_heavier_plan_at_1_5x_overflows(tmp_path: Path, code: str, where: str,
                                          says: str) -> None:
    """60 h, its 42 h of training x1.5: 81 h."""
    folder = write(tmp_path / "out", mid_way(), PILOT_JOURNAL)
    expect_finding(judge(folder, CHECK), code, where=where, says=says)


def test_no_forecast_from_a_journal_that_is_not_a_file(tmp_path: Path) -> None:
    folder = write(tmp_path / "out", seed_plan())
    (folder / "itera-journal.jsonl").mkdir()
    expect_finding(judge(folder, CHECK), "plan-forecast.no-forecast",
                   where="itera-journal.jsonl", says="no forecast: ")
