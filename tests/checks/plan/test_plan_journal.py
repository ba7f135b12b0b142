"""The rules of ``plan-journal`` (pytest_itera/checks/plan/plan_journal.py): each break of the
seed's journal after its pilot refused, with its honest twin, judged in process as
``--itera-plan`` does (tests/checks/judging.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.plans import PILOT_JOURNAL, seed_plan, write

CHECK = "plan-journal"


def test_the_journal_after_the_pilot_is_usable(tmp_path: Path) -> None:
    expect_no_finding(judge(write(tmp_path / "out", seed_plan(), PILOT_JOURNAL), CHECK))


@pytest.mark.parametrize(
    ("extra", "torn", "code", "says"),
    [
        ([], '{"event": "step", "st', "plan-journal.torn-line",
         "the last line of the journal is torn"),
        ([{"event": "step", "step": "setup", "hours": "two"}], "", "plan-journal.unused-line",
         "journal line 8 is not used: step 'setup': hours 'two' is not a number"),
        ([{"event": "step", "step": "lunch", "hours": 1}], "", "plan-journal.unknown-step",
         "journal step 'lunch' is not a step of the plan"),
    ],
    ids=["torn-last-line", "hours-not-a-number", "step-not-planned"],
)
def test_each_broken_line_is_refused(tmp_path: Path, extra: list[dict[str, Any]], torn: str,
                                     code: str, says: str) -> None:
    folder = write(tmp_path / "out", seed_plan(), [*PILOT_JOURNAL, *extra], torn=torn)
    expect_finding(judge(folder, CHECK), code, where="itera-journal.jsonl:8", says=says)


def test_a_journal_that_is_not_a_file_is_unreadable(tmp_path: Path) -> None:
    folder = write(tmp_path / "out", seed_plan())
    (folder / "itera-journal.jsonl").mkdir()
    expect_finding(judge(folder, CHECK), "plan-journal.unreadable",
                   where="itera-journal.jsonl", says="is not a regular file")
